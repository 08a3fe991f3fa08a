import { newId } from '@svc/contracts/ids';
import { and, asc, eq, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import { addJob } from '../jobs.ts';
import { limitLiteral } from '../limit-literal.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints, webhookEvents } from '../schema/webhooks.ts';
import { WEBHOOK_DISPATCH_JOB_KEY } from './webhook-events.ts';

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
export type WebhookDeliveryAttemptRow = typeof webhookDeliveryAttempts.$inferSelect;
export type WebhookEventRow = typeof webhookEvents.$inferSelect;

// Management reads and writes of webhook endpoints and deliveries. Every statement carries the
// tenant predicate, except the two `find...Tenant` reads that learn the tenant of an id from the
// request (the caller authorizes against it before anything else).

/**
 * The organization a webhook endpoint belongs to, by an id from the request: the one read
 * without a tenant predicate, because it is how the tenant is learnt.
 */
export async function findWebhookEndpointTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: webhookEndpoints.tenantId })
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findWebhookEndpoint(
  db: DbOrTx,
  opts: { tenantId: string; id: string; forUpdate?: boolean },
): Promise<WebhookEndpointRow | undefined> {
  const query = db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.tenantId, opts.tenantId), eq(webhookEndpoints.id, opts.id)))
    .limit(1);
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  return row;
}

/** One page of an organization's endpoints, newest first (`limit + 1` rows: the extra says "more"). */
export async function listWebhookEndpoints(
  db: DbOrTx,
  opts: { tenantId: string; limit: number; cursor?: Cursor },
): Promise<WebhookEndpointRow[]> {
  return db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.tenantId, opts.tenantId), afterCursor(webhookEndpoints.createdAt, webhookEndpoints.id, opts.cursor)))
    .orderBy(sql`${webhookEndpoints.createdAt} desc nulls last`, sql`${webhookEndpoints.id} desc nulls last`)
    .limit(opts.limit + 1);
}

export async function insertWebhookEndpoint(db: DbOrTx, values: typeof webhookEndpoints.$inferInsert): Promise<WebhookEndpointRow> {
  const [row] = await db.insert(webhookEndpoints).values(values).returning();
  if (!row) {
    throw new Error('webhook endpoint insert returned nothing');
  }
  return row;
}

/** The columns an update may set (never the secrets: see rotateWebhookEndpointSecret). */
export type WebhookEndpointChanges = Partial<
  Pick<WebhookEndpointRow, 'url' | 'description' | 'eventTypes' | 'enabled' | 'disabledReason' | 'disabledAt'>
>;

export async function updateWebhookEndpoint(
  db: DbOrTx,
  opts: { tenantId: string; id: string; changes: WebhookEndpointChanges; now: Date },
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({ ...opts.changes, updatedAt: opts.now })
    .where(and(eq(webhookEndpoints.tenantId, opts.tenantId), eq(webhookEndpoints.id, opts.id)))
    .returning();
  return row;
}

/** Deletes an endpoint; its deliveries and their attempts go with it (foreign keys cascade). */
export async function deleteWebhookEndpoint(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<boolean> {
  const rows = await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.tenantId, opts.tenantId), eq(webhookEndpoints.id, opts.id)))
    .returning({ id: webhookEndpoints.id });
  return rows.length > 0;
}

/**
 * Puts a new sealed secret in place. In the same statement the current secret becomes the
 * previous one, signing beside the new one until `previousSecretExpiresAt` (null: it stops at
 * once). A secret from before an earlier rotation is dropped.
 */
export async function rotateWebhookEndpointSecret(
  db: DbOrTx,
  opts: { tenantId: string; id: string; secretCiphertext: string; previousSecretExpiresAt: Date | null; now: Date },
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      // The right-hand side reads the row as it was before this UPDATE.
      previousSecretCiphertext: opts.previousSecretExpiresAt ? sql`${webhookEndpoints.secretCiphertext}` : null,
      previousSecretExpiresAt: opts.previousSecretExpiresAt,
      secretCiphertext: opts.secretCiphertext,
      secretRotatedAt: opts.now,
      updatedAt: opts.now,
    })
    .where(and(eq(webhookEndpoints.tenantId, opts.tenantId), eq(webhookEndpoints.id, opts.id)))
    .returning();
  return row;
}

/** Queues (or updates the queued) dispatch job in the caller's transaction, as recordEvent does. */
export async function wakeWebhookDispatcher(db: DbOrTx): Promise<void> {
  await addJob(db, 'webhooks:dispatch', {}, { jobKey: WEBHOOK_DISPATCH_JOB_KEY });
}

/**
 * Records an event for one endpoint only (the test event: no other endpoint receives it), its
 * pending delivery due now, and wakes the dispatcher: all in the caller's transaction.
 */
export async function insertEventForEndpoint(
  db: DbOrTx,
  opts: { tenantId: string; endpointId: string; eventId: string; deliveryId: string; type: string; data: Record<string, unknown> },
): Promise<WebhookDeliveryRow> {
  await db.insert(webhookEvents).values({ id: opts.eventId, tenantId: opts.tenantId, type: opts.type, data: opts.data });
  const [row] = await db
    .insert(webhookDeliveries)
    .values({
      id: opts.deliveryId,
      tenantId: opts.tenantId,
      endpointId: opts.endpointId,
      eventId: opts.eventId,
      eventType: opts.type,
      status: 'pending',
      nextAttemptAt: sql`now()`,
    })
    .returning();
  if (!row) {
    throw new Error('webhook delivery insert returned nothing');
  }
  await wakeWebhookDispatcher(db);
  return row;
}

/** The organization a delivery belongs to, by an id from the request (see findWebhookEndpointTenant). */
export async function findWebhookDeliveryTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: webhookDeliveries.tenantId })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findWebhookDelivery(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.tenantId, opts.tenantId), eq(webhookDeliveries.id, opts.id)))
    .limit(1);
  return row;
}

export type WebhookDeliveryFilter = {
  tenantId: string;
  endpointId?: string;
  status?: WebhookDeliveryRow['status'];
  eventType?: string;
};

/**
 * One page of an organization's deliveries, newest first, `limit + 1` rows. With an endpoint the
 * scan runs on (endpoint_id, created_at desc, id desc), else on (tenant_id, created_at desc, id
 * desc); the cursor is a row comparison so that it is where the index scan starts (see
 * listAuditLogs), and the order is spelled as the indexes are built.
 */
export async function listWebhookDeliveries(
  db: DbOrTx,
  opts: { filter: WebhookDeliveryFilter; cursor?: Cursor; limit: number },
): Promise<WebhookDeliveryRow[]> {
  const { filter, cursor } = opts;
  const conditions: (SQL | undefined)[] = [
    eq(webhookDeliveries.tenantId, filter.tenantId),
    filter.endpointId !== undefined ? eq(webhookDeliveries.endpointId, filter.endpointId) : undefined,
    filter.status !== undefined ? eq(webhookDeliveries.status, filter.status) : undefined,
    filter.eventType !== undefined ? eq(webhookDeliveries.eventType, filter.eventType) : undefined,
    cursor
      ? sql`(${webhookDeliveries.createdAt}, ${webhookDeliveries.id}) < (${cursor.createdAt.toISOString()}::timestamptz, ${cursor.id})`
      : undefined,
  ];
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(...conditions))
    .orderBy(sql`${webhookDeliveries.createdAt} desc nulls last`, sql`${webhookDeliveries.id} desc nulls last`)
    .limit(opts.limit + 1);
}

/** A delivery's attempts, oldest first. */
export async function listWebhookDeliveryAttempts(
  db: DbOrTx,
  opts: { tenantId: string; deliveryId: string },
): Promise<WebhookDeliveryAttemptRow[]> {
  return db
    .select()
    .from(webhookDeliveryAttempts)
    .where(and(eq(webhookDeliveryAttempts.tenantId, opts.tenantId), eq(webhookDeliveryAttempts.deliveryId, opts.deliveryId)))
    .orderBy(asc(webhookDeliveryAttempts.attemptNumber));
}

export async function findWebhookEvent(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<WebhookEventRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.tenantId, opts.tenantId), eq(webhookEvents.id, opts.id)))
    .limit(1);
  return row;
}

/**
 * Moves a failed or retrying delivery back to pending, due now; attempts and the attempt count
 * are kept. Undefined when the delivery is in another state, or a worker holds it right now
 * (an attempt in flight: its outcome would overwrite the retry).
 */
export async function retryWebhookDelivery(
  db: DbOrTx,
  opts: { tenantId: string; id: string; now: Date },
): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db
    .update(webhookDeliveries)
    .set({ status: 'pending', nextAttemptAt: opts.now, updatedAt: opts.now })
    .where(
      and(
        eq(webhookDeliveries.tenantId, opts.tenantId),
        eq(webhookDeliveries.id, opts.id),
        sql`${webhookDeliveries.status} in ('failed', 'retrying')`,
        sql`(${webhookDeliveries.lockedUntil} is null or ${webhookDeliveries.lockedUntil} <= ${opts.now.toISOString()}::timestamptz)`,
      ),
    )
    .returning();
  return row;
}

/** What endpoint health is made of (the api's TWebhookEndpointHealth, dates as Date). */
export type WebhookEndpointHealthRow = {
  endpointId: string;
  attempted: number;
  succeeded: number;
  unsucceeded: number;
  failing: boolean;
  lastError: { at: Date; deliveryId: string; statusCode: number | null; outcome: string; error: string | null } | null;
};

/**
 * Health of each endpoint of `endpointIds`, over its deliveries created in the last `windowHours`
 * (a range of webhook_deliveries_endpoint_created_idx per endpoint): how many were attempted,
 * succeeded, are failed or retrying now; whether the most recent attempt failed; and the most
 * recent failed attempt. One statement for a page of endpoints.
 */
export async function listWebhookEndpointHealth(
  db: DbOrTx,
  opts: { tenantId: string; endpointIds: readonly string[]; windowHours: number },
): Promise<Map<string, WebhookEndpointHealthRow>> {
  const result = new Map<string, WebhookEndpointHealthRow>();
  if (opts.endpointIds.length === 0) {
    return result;
  }
  const rows = (await db.execute(sql`
    select e.id as "endpointId",
      coalesce(s.attempted, 0)::int as attempted,
      coalesce(s.succeeded, 0)::int as succeeded,
      coalesce(s.unsucceeded, 0)::int as unsucceeded,
      coalesce(latest.last_outcome <> 'succeeded', false) as failing,
      le.started_at as "lastErrorAt", le.delivery_id as "lastErrorDeliveryId", le.status_code as "lastErrorStatusCode",
      le.outcome as "lastErrorOutcome", le.error as "lastError"
    from unnest(${sql.param([...opts.endpointIds])}::text[]) as e(id)
    left join lateral (
      select count(*) filter (where d.attempt_count > 0) as attempted,
        count(*) filter (where d.status = 'succeeded') as succeeded,
        count(*) filter (where d.status in ('failed', 'retrying')) as unsucceeded
      from webhook_deliveries d
      where d.tenant_id = ${opts.tenantId} and d.endpoint_id = e.id
        and d.created_at >= now() - make_interval(hours => ${opts.windowHours})
    ) s on true
    left join lateral (
      select d.last_outcome
      from webhook_deliveries d
      where d.tenant_id = ${opts.tenantId} and d.endpoint_id = e.id and d.last_attempt_at is not null
        and d.created_at >= now() - make_interval(hours => ${opts.windowHours})
      order by d.last_attempt_at desc
      limit 1
    ) latest on true
    left join lateral (
      select a.started_at, a.delivery_id, a.status_code, a.outcome, a.error
      from webhook_deliveries d
      join webhook_delivery_attempts a on a.tenant_id = d.tenant_id and a.delivery_id = d.id
      where d.tenant_id = ${opts.tenantId} and d.endpoint_id = e.id and a.outcome <> 'succeeded'
        and d.created_at >= now() - make_interval(hours => ${opts.windowHours})
      order by a.started_at desc
      limit 1
    ) le on true`)) as unknown as {
    endpointId: string;
    attempted: number;
    succeeded: number;
    unsucceeded: number;
    failing: boolean;
    lastErrorAt: Date | string | null;
    lastErrorDeliveryId: string | null;
    lastErrorStatusCode: number | null;
    lastErrorOutcome: string | null;
    lastError: string | null;
  }[];
  for (const row of rows) {
    result.set(row.endpointId, {
      endpointId: row.endpointId,
      attempted: row.attempted,
      succeeded: row.succeeded,
      unsucceeded: row.unsucceeded,
      failing: row.failing,
      lastError:
        row.lastErrorAt && row.lastErrorDeliveryId && row.lastErrorOutcome
          ? {
              at: new Date(row.lastErrorAt),
              deliveryId: row.lastErrorDeliveryId,
              statusCode: row.lastErrorStatusCode,
              outcome: row.lastErrorOutcome,
              error: row.lastError,
            }
          : null,
    });
  }
  return result;
}

/**
 * Moves up to `limit` of an endpoint's failed and retrying deliveries (oldest first) back to
 * pending, due now, as retryWebhookDelivery does one: attempts kept, none a worker holds right
 * now. Returns the ids moved, and whether any failed or retrying delivery is left.
 */
export async function retryFailedWebhookDeliveries(
  db: DbOrTx,
  opts: { tenantId: string; endpointId: string; now: Date; limit: number },
): Promise<{ ids: string[]; more: boolean }> {
  const rows = (await db.execute(sql`
    update webhook_deliveries d
    set status = 'pending', next_attempt_at = ${opts.now.toISOString()}::timestamptz, updated_at = ${opts.now.toISOString()}::timestamptz
    where d.id in (
      select c.id from webhook_deliveries c
      where c.tenant_id = ${opts.tenantId} and c.endpoint_id = ${opts.endpointId}
        and c.status in ('failed', 'retrying')
        and (c.locked_until is null or c.locked_until <= ${opts.now.toISOString()}::timestamptz)
      order by c.created_at, c.id
      limit ${limitLiteral(opts.limit)}
      for update skip locked
    ) and d.tenant_id = ${opts.tenantId}
    returning d.id`)) as unknown as { id: string }[];
  const [left] = (await db.execute(sql`
    select exists (
      select 1 from webhook_deliveries c
      where c.tenant_id = ${opts.tenantId} and c.endpoint_id = ${opts.endpointId} and c.status in ('failed', 'retrying')
    ) as more`)) as unknown as { more: boolean }[];
  return { ids: rows.map((r) => r.id), more: left?.more ?? false };
}

/** An event a replay re-sends: its id and type. */
export type ReplayEvent = { id: string; type: string };

/**
 * The organization's events with `from <= created_at < to` of `types`, oldest first (created_at,
 * then id), at most `limit` (a caller asks for one more than it allows, to tell "too many"). Read
 * type by type along webhook_events_tenant_type_created_idx, at most `limit` of each, then merged:
 * the events of other types in the range (a busy organization's usage events, say) are never
 * read, and a type with more than `limit` events in the range costs `limit` index entries.
 */
export async function listReplayEvents(
  db: DbOrTx,
  opts: { tenantId: string; from: Date; to: Date; types: readonly string[]; limit: number },
): Promise<ReplayEvent[]> {
  const limit = limitLiteral(opts.limit);
  return (await db.execute(sql`
    select e.id, e.type
    from unnest(${sql.param([...opts.types])}::text[]) as t(type)
    cross join lateral (
      select ev.id, ev.type, ev.created_at
      from webhook_events ev
      where ev.tenant_id = ${opts.tenantId} and ev.type = t.type
        and ev.created_at >= ${opts.from.toISOString()}::timestamptz and ev.created_at < ${opts.to.toISOString()}::timestamptz
      order by ev.created_at, ev.id
      limit ${limit}
    ) e
    order by e.created_at, e.id
    limit ${limit}`)) as unknown as ReplayEvent[];
}

/**
 * A replay: one new pending delivery to `endpointId` per event (`replay` true, beside the event's
 * live delivery), in the caller's transaction, with its own attempt count and log; the dispatcher
 * sends it like any delivery, with the event id as `webhook-id`. In the order given and never
 * ahead of what is already due: `next_attempt_at` is now plus one millisecond (the column's
 * precision) per event, so deliveries due before the replay (live ones, retries) are claimed
 * first, those of events recorded while it goes out are interleaved by time, and one replay goes
 * out at most 1,000 deliveries per second. Events not of `tenantId` are skipped. One statement
 * whatever the number of events; returns the new delivery ids in order.
 */
export async function insertReplayDeliveries(
  db: DbOrTx,
  opts: { tenantId: string; endpointId: string; eventIds: readonly string[] },
): Promise<string[]> {
  if (opts.eventIds.length === 0) {
    return [];
  }
  const deliveryIds = opts.eventIds.map(() => newId('webhookDelivery'));
  const rows = (await db.execute(sql`
    insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, replay, status, next_attempt_at)
    select u.delivery_id, ev.tenant_id, ${opts.endpointId}, ev.id, ev.type, true, 'pending',
      now() + u.n * interval '1 millisecond'
    from unnest(${sql.param(deliveryIds)}::text[], ${sql.param([...opts.eventIds])}::text[])
      with ordinality as u(delivery_id, event_id, n)
    join webhook_events ev on ev.id = u.event_id and ev.tenant_id = ${opts.tenantId}
    order by u.n
    returning id`)) as unknown as { id: string }[];
  return rows.map((r) => r.id);
}

/**
 * In an export (queries/exports.ts): the organization's webhook endpoints; never the signing
 * secret ciphertexts (current and previous).
 */
export const webhookEndpointsExportSection: ExportSection = {
  key: 'webhookEndpoints',
  resource: 'webhook_endpoint',
  shape: 'many',
  source: 'snapshot',
  from: 'webhook_endpoints t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('url', 't.url'),
    exportField.text('description', 't.description'),
    exportField.json('eventTypes', 't.event_types'),
    exportField.boolean('enabled', 't.enabled'),
    exportField.text('disabledReason', 't.disabled_reason'),
    exportField.time('disabledAt', 't.disabled_at'),
    exportField.time('secretRotatedAt', 't.secret_rotated_at'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};

/** In an export (queries/exports.ts): the organization's events, up to the snapshot's instant. */
export const webhookEventsExportSection: ExportSection = {
  key: 'webhookEvents',
  resource: 'webhook_event',
  shape: 'many',
  source: 'table',
  from: 'webhook_events t',
  tenantColumn: 't.tenant_id',
  asOfColumn: 't.created_at',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('type', 't.type'),
    exportField.json('data', 't.data'),
    exportField.time('createdAt', 't.created_at'),
  ],
};

/**
 * In an export (queries/exports.ts): deliveries of the organization's events; never the attempts'
 * response excerpts or the claim columns (locked_until, locked_by).
 */
export const webhookDeliveriesExportSection: ExportSection = {
  key: 'webhookDeliveries',
  resource: 'webhook_delivery',
  shape: 'many',
  source: 'table',
  from: 'webhook_deliveries t',
  tenantColumn: 't.tenant_id',
  asOfColumn: 't.created_at',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('endpointId', 't.endpoint_id'),
    exportField.text('eventId', 't.event_id'),
    exportField.text('eventType', 't.event_type'),
    exportField.text('status', 't.status'),
    exportField.number('attemptCount', 't.attempt_count'),
    exportField.time('nextAttemptAt', 't.next_attempt_at'),
    exportField.time('lastAttemptAt', 't.last_attempt_at'),
    exportField.number('lastStatusCode', 't.last_status_code'),
    exportField.text('lastOutcome', 't.last_outcome'),
    exportField.time('succeededAt', 't.succeeded_at'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
