import { ID_PREFIXES } from '@svc/contracts/ids';
import { sql } from 'drizzle-orm';
import { type DbOrTx, executePrepared } from '../client.ts';
import { addJobSql } from '../jobs.ts';

/**
 * 20 random base62 characters computed in SQL (the shape newId gives), for ids of rows whose
 * number is only known inside the statement. gen_random_uuid is core PostgreSQL (13+).
 */
const SQL_BASE62_20 = sql.raw(
  "substr(translate(encode(decode(md5(gen_random_uuid()::text) || md5(gen_random_uuid()::text), 'hex'), 'base64'), '+/=', ''), 1, 20)",
);

/** One waiting sync job at a time; it drains every queued log in batches. */
export const BILLING_SYNC_JOB_KEY = 'billing:sync';

/**
 * Queues a sync log for each (usage event x billing mapping of its type) and wakes the sync task,
 * through the ingesting transaction: mapped usage reaches the provider if and only if the event
 * commits. One statement; nothing is queued (and no job added) when no mapping matches.
 * `events` are the newly created events only (a duplicate was queued the first time).
 */
export async function queueBillingSync(tx: DbOrTx, tenantId: string, events: { id: string; eventType: string }[]): Promise<number> {
  if (events.length === 0) {
    return 0;
  }
  const rows = await executePrepared<{ queued: number }>(
    tx,
    sql`
    with e as (
      select * from unnest(${sql.param(events.map((e) => e.id))}::text[], ${sql.param(events.map((e) => e.eventType))}::text[]) as e(id, event_type)
    ),
    logs as (
      insert into billing_sync_logs (id, tenant_id, provider, mapping_id, usage_event_id, status)
      select ${`${ID_PREFIXES.billingSyncLog}_`} || ${SQL_BASE62_20}, m.tenant_id, m.provider, m.id, e.id, 'queued'
      from e join billing_mappings m on m.tenant_id = ${tenantId} and m.event_type = e.event_type
      on conflict (usage_event_id, mapping_id) do nothing
      returning 1
    ),
    n as (select count(*)::int as queued from logs)
    select n.queued, case when n.queued > 0 then ${addJobSql('billing:sync', {}, { jobKey: BILLING_SYNC_JOB_KEY })} end as job
    from n`,
  );
  return rows[0]?.queued ?? 0;
}
