import { newId } from '@svc/contracts/ids';
import { sql } from 'drizzle-orm';
import { type DbOrTx, executePrepared } from '../client.ts';
import { addJobSql } from '../jobs.ts';

/**
 * One queued dispatch job at a time: a second event while one waits updates it instead of adding
 * another, and the job sends every due delivery in batches, not one job per delivery.
 */
export const WEBHOOK_DISPATCH_JOB_KEY = 'webhooks:dispatch';

export type RecordedEvent = { id: string; deliveryIds: string[] };

/**
 * Records an event and one pending delivery per enabled endpoint of the organization subscribed
 * to its type, and wakes the dispatcher, all through the caller's transaction: the event exists,
 * and will be delivered, if and only if the mutation commits. Two statements; the second only
 * when some endpoint is subscribed (recordEvents with one event: the same prepared statements).
 */
export async function recordEvent(
  tx: DbOrTx,
  event: { tenantId: string; type: string; data: Record<string, unknown> },
): Promise<RecordedEvent> {
  const [recorded] = await recordEvents(tx, [event]);
  if (!recorded) {
    throw new Error('recordEvents recorded nothing for one event');
  }
  return recorded;
}

/**
 * recordEvent for many events at once (usage ingestion records thousands per transaction): per
 * event its row and one pending delivery per enabled endpoint of its organization subscribed to
 * its type, and one keyed dispatch job, in two statements whatever the number of events,
 * organizations or types; the second only when some endpoint is subscribed. Results are in the
 * order of `events`. An event's `id` may be chosen beforehand (newId('event')) by a caller that
 * stores it elsewhere in the same transaction.
 */
export async function recordEvents(
  tx: DbOrTx,
  events: readonly { id?: string; tenantId: string; type: string; data: Record<string, unknown> }[],
): Promise<RecordedEvent[]> {
  if (events.length === 0) {
    return [];
  }
  const ids = events.map((e) => e.id ?? newId('event'));
  const tenantIds = [...new Set(events.map((e) => e.tenantId))];
  const types = [...new Set(events.map((e) => e.type))];
  // One JSON parameter: postgres.js would escape every quote of every `data` into an array literal.
  let rows = '[';
  for (const [i, e] of events.entries()) {
    rows += `${i === 0 ? '' : ','}{"id":${JSON.stringify(ids[i])},"tenant_id":${JSON.stringify(e.tenantId)},"type":${JSON.stringify(e.type)},"data":${JSON.stringify(e.data)}}`;
  }
  rows += ']';
  const endpoints = await executePrepared<{ id: string; tenantId: string; eventTypes: string[] }>(
    tx,
    sql`
    with ev as (
      insert into webhook_events (id, tenant_id, type, data)
      select e.id, e.tenant_id, e.type, e.data
      from json_to_recordset(${rows}::text::json) as e(id text, tenant_id text, type text, data jsonb)
    )
    select id, tenant_id as "tenantId", event_types as "eventTypes" from webhook_endpoints
    where tenant_id = any(${sql.param(tenantIds)}::text[]) and enabled and event_types && ${sql.param(types)}::text[]`,
  );
  const results: RecordedEvent[] = ids.map((id) => ({ id, deliveryIds: [] }));
  if (endpoints.length === 0) {
    return results;
  }
  const deliveryIds: string[] = [];
  const endpointIds: string[] = [];
  const eventIds: string[] = [];
  const deliveryTenants: string[] = [];
  const deliveryTypes: string[] = [];
  events.forEach((event, i) => {
    for (const endpoint of endpoints) {
      if (endpoint.tenantId === event.tenantId && endpoint.eventTypes.includes(event.type)) {
        const deliveryId = newId('webhookDelivery');
        (results[i] as RecordedEvent).deliveryIds.push(deliveryId);
        deliveryIds.push(deliveryId);
        endpointIds.push(endpoint.id);
        eventIds.push(ids[i] as string);
        deliveryTenants.push(event.tenantId);
        deliveryTypes.push(event.type);
      }
    }
  });
  if (deliveryIds.length === 0) {
    return results;
  }
  await executePrepared(
    tx,
    sql`
    with d as (
      insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, status, next_attempt_at)
      select d.id, d.tenant_id, d.endpoint_id, d.event_id, d.event_type, 'pending', now()
      from unnest(
        ${sql.param(deliveryIds)}::text[],
        ${sql.param(deliveryTenants)}::text[],
        ${sql.param(endpointIds)}::text[],
        ${sql.param(eventIds)}::text[],
        ${sql.param(deliveryTypes)}::text[]
      ) as d(id, tenant_id, endpoint_id, event_id, event_type)
      returning 1
    )
    select ${addJobSql('webhooks:dispatch', {}, { jobKey: WEBHOOK_DISPATCH_JOB_KEY })} from (select count(*) from d) as inserted`,
  );
  return results;
}

/** The job key of a detached delivery's jobs: this, then `<event id>:<endpoint id>` (one chain per delivery). */
export const WEBHOOK_SEND_DETACHED_JOB_KEY_PREFIX = 'webhooks:send_detached:';

/**
 * Hands an event's pending deliveries over to self-contained jobs, for an event whose
 * organization is about to be deleted: deleting it cascades to its endpoints, events and
 * deliveries, so the delivery engine (which reads those rows) would find nothing to send. Each
 * job carries what one send needs: the endpoint's URL, its signing secret still sealed with
 * SVC_ENCRYPTION_KEY and bound to the endpoint id exactly as webhook_endpoints stores it (the
 * previous secret too while its grace period lasts), and the event as it goes out. Never a
 * plaintext secret. Call it in the deleting transaction, after recordEvent and before the
 * delete: the jobs exist if and only if the deletion commits. Returns the number of jobs.
 */
export async function detachEventDeliveries(tx: DbOrTx, opts: { tenantId: string; eventId: string }): Promise<number> {
  const rows = await tx.execute(sql`
    select ${addJobSql(
      'webhooks:send_detached',
      sql`json_build_object(
        'tenantId', d.tenant_id,
        'endpointId', e.id,
        'url', e.url,
        'secretCiphertext', e.secret_ciphertext,
        'previousSecretCiphertext', case when e.previous_secret_expires_at > now() then e.previous_secret_ciphertext end,
        'event', json_build_object(
          'id', ev.id,
          'type', ev.type,
          'createdAtMs', (extract(epoch from ev.created_at) * 1000)::float8,
          'dataJson', ev.data::text
        ),
        'attempt', 1
      )`,
      { jobKey: sql`${WEBHOOK_SEND_DETACHED_JOB_KEY_PREFIX}::text || ev.id || ':' || e.id` },
    )}
    from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id and e.tenant_id = d.tenant_id
    join webhook_events ev on ev.id = d.event_id and ev.tenant_id = d.tenant_id
    where d.tenant_id = ${opts.tenantId} and d.event_id = ${opts.eventId} and e.enabled`);
  return rows.length;
}
