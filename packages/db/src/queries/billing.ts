import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import { addJob, addJobSql } from '../jobs.ts';
import { limitLiteral } from '../limit-literal.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { type BillingProvider, type BillingSyncStatus, billingMappings, billingProviders, billingSyncLogs } from '../schema/billing.ts';
import { BILLING_SYNC_JOB_KEY } from './billing-sync-queue.ts';

export type BillingProviderRow = typeof billingProviders.$inferSelect;
export type BillingMappingRow = typeof billingMappings.$inferSelect;
export type BillingSyncLogRow = typeof billingSyncLogs.$inferSelect;
/** A sync log with what its mapping says (event type, provider item), as the lists show it. */
export type BillingSyncLogView = BillingSyncLogRow & { eventType: string; providerItemId: string };

// Billing handoff records, mappings and sync logs (docs/api.md "Billing handoff"). Every statement carries the
// tenant predicate, except `findBillingSyncLogTenant` (how the tenant of an id from the request is
// learnt, before the caller is authorized there) and the sync task's claim, which serves every
// organization and joins each row to its own organization's mapping, event and connection.

export async function listBillingProviders(db: DbOrTx, opts: { tenantId: string }): Promise<BillingProviderRow[]> {
  return db
    .select()
    .from(billingProviders)
    .where(eq(billingProviders.tenantId, opts.tenantId))
    .orderBy(sql`${billingProviders.createdAt} desc`, sql`${billingProviders.id} desc`);
}

export async function findBillingProvider(
  db: DbOrTx,
  opts: { tenantId: string; provider: BillingProvider },
): Promise<BillingProviderRow | undefined> {
  const [row] = await db
    .select()
    .from(billingProviders)
    .where(and(eq(billingProviders.tenantId, opts.tenantId), eq(billingProviders.provider, opts.provider)))
    .limit(1);
  return row;
}

/** Inserts a handoff record; undefined when the organization already has one for the provider. */
export async function insertBillingProvider(
  db: DbOrTx,
  values: typeof billingProviders.$inferInsert,
): Promise<BillingProviderRow | undefined> {
  const [row] = await db.insert(billingProviders).values(values).onConflictDoNothing().returning();
  return row;
}

/**
 * Creates or updates the organization's record for a provider (connect). An external account id
 * left out keeps the one already recorded. `created` tells which happened.
 */
export async function upsertBillingProvider(
  db: DbOrTx,
  opts: {
    id: string;
    tenantId: string;
    provider: BillingProvider;
    externalAccountId: string | undefined;
    mode: 'sandbox' | 'live';
  },
): Promise<{ row: BillingProviderRow; created: boolean }> {
  const account = opts.externalAccountId ?? null;
  const rows = (await db.execute(sql`
    insert into billing_providers as p (id, tenant_id, provider, external_account_id, mode, status)
    values (${opts.id}, ${opts.tenantId}, ${opts.provider}, ${account}, ${opts.mode},
      case when ${account}::text is null then 'pending' else 'connected' end)
    on conflict (tenant_id, provider) do update set
      external_account_id = coalesce(excluded.external_account_id, p.external_account_id),
      mode = excluded.mode,
      status = case when coalesce(excluded.external_account_id, p.external_account_id) is null then 'pending' else 'connected' end,
      updated_at = now()
    returning p.id, (p.xmax = 0) as created`)) as unknown as { id: string; created: boolean }[];
  const result = rows[0];
  if (!result) {
    throw new Error('billing provider upsert returned nothing');
  }
  const row = await findBillingProvider(db, { tenantId: opts.tenantId, provider: opts.provider });
  if (!row) {
    throw new Error('billing provider upsert: the row is gone');
  }
  return { row, created: result.created };
}

/**
 * Creates the mapping of (provider, event type), or re-points it to another provider item.
 * Logs already queued are sent to the item the mapping names when they are sent.
 */
export async function upsertBillingMapping(
  db: DbOrTx,
  opts: { id: string; tenantId: string; provider: BillingProvider; eventType: string; providerItemId: string },
): Promise<{ row: BillingMappingRow; created: boolean; previousItemId: string | null }> {
  const previous = await db
    .select({ providerItemId: billingMappings.providerItemId })
    .from(billingMappings)
    .where(
      and(
        eq(billingMappings.tenantId, opts.tenantId),
        eq(billingMappings.provider, opts.provider),
        eq(billingMappings.eventType, opts.eventType),
      ),
    )
    .for('update');
  const [row] = await db
    .insert(billingMappings)
    .values({
      id: opts.id,
      tenantId: opts.tenantId,
      provider: opts.provider,
      eventType: opts.eventType,
      providerItemId: opts.providerItemId,
    })
    .onConflictDoUpdate({
      target: [billingMappings.tenantId, billingMappings.provider, billingMappings.eventType],
      set: { providerItemId: opts.providerItemId, updatedAt: sql`now()` },
    })
    .returning();
  if (!row) {
    throw new Error('billing mapping upsert returned nothing');
  }
  return { row, created: row.id === opts.id, previousItemId: previous[0]?.providerItemId ?? null };
}

/** One page of an organization's mappings, newest first (`limit + 1` rows: the extra says "more"). */
export async function listBillingMappings(
  db: DbOrTx,
  opts: { tenantId: string; limit: number; cursor?: Cursor },
): Promise<BillingMappingRow[]> {
  return db
    .select()
    .from(billingMappings)
    .where(and(eq(billingMappings.tenantId, opts.tenantId), afterCursor(billingMappings.createdAt, billingMappings.id, opts.cursor)))
    .orderBy(sql`${billingMappings.createdAt} desc`, sql`${billingMappings.id} desc`)
    .limit(opts.limit + 1);
}

const syncLogView = {
  id: billingSyncLogs.id,
  tenantId: billingSyncLogs.tenantId,
  provider: billingSyncLogs.provider,
  mappingId: billingSyncLogs.mappingId,
  usageEventId: billingSyncLogs.usageEventId,
  status: billingSyncLogs.status,
  attempts: billingSyncLogs.attempts,
  reason: billingSyncLogs.reason,
  providerRecordId: billingSyncLogs.providerRecordId,
  createdAt: billingSyncLogs.createdAt,
  updatedAt: billingSyncLogs.updatedAt,
  eventType: billingMappings.eventType,
  providerItemId: billingMappings.providerItemId,
};

/** One page of an organization's sync logs, newest first, filtered. */
export async function listBillingSyncLogs(
  db: DbOrTx,
  opts: { tenantId: string; status?: BillingSyncStatus; provider?: BillingProvider; limit: number; cursor?: Cursor },
): Promise<BillingSyncLogView[]> {
  const where: (SQL | undefined)[] = [
    eq(billingSyncLogs.tenantId, opts.tenantId),
    opts.status !== undefined ? eq(billingSyncLogs.status, opts.status) : undefined,
    opts.provider !== undefined ? eq(billingSyncLogs.provider, opts.provider) : undefined,
    afterCursor(billingSyncLogs.createdAt, billingSyncLogs.id, opts.cursor),
  ];
  return db
    .select(syncLogView)
    .from(billingSyncLogs)
    .innerJoin(billingMappings, and(eq(billingMappings.id, billingSyncLogs.mappingId), eq(billingMappings.tenantId, opts.tenantId)))
    .where(and(...where))
    .orderBy(sql`${billingSyncLogs.createdAt} desc`, sql`${billingSyncLogs.id} desc`)
    .limit(opts.limit + 1);
}

/** The organization of a sync log, by an id from the request (read without a tenant predicate: it is how the tenant is learnt). */
export async function findBillingSyncLogTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: billingSyncLogs.tenantId })
    .from(billingSyncLogs)
    .where(eq(billingSyncLogs.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findBillingSyncLog(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<BillingSyncLogView | undefined> {
  const [row] = await db
    .select(syncLogView)
    .from(billingSyncLogs)
    .innerJoin(billingMappings, and(eq(billingMappings.id, billingSyncLogs.mappingId), eq(billingMappings.tenantId, opts.tenantId)))
    .where(and(eq(billingSyncLogs.tenantId, opts.tenantId), eq(billingSyncLogs.id, opts.id)))
    .limit(1);
  return row;
}

/**
 * A failed or skipped log goes back to the queue with a fresh round of attempts; undefined when
 * it is in another state (the caller answers 409). The sync task is woken by the same transaction.
 */
export async function requeueBillingSyncLog(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<BillingSyncLogRow | undefined> {
  const [row] = await db
    .update(billingSyncLogs)
    .set({ status: 'queued', attempts: 0, reason: null, updatedAt: sql`now()` })
    .where(
      and(
        eq(billingSyncLogs.tenantId, opts.tenantId),
        eq(billingSyncLogs.id, opts.id),
        inArray(billingSyncLogs.status, ['failed', 'skipped']),
      ),
    )
    .returning();
  if (row) {
    await wakeBillingSync(db);
  }
  return row;
}

/** Queues a `billing:sync` run now (one waiting run at a time, as queueBillingSync does). */
export async function wakeBillingSync(db: DbOrTx): Promise<void> {
  await addJob(db, 'billing:sync', {}, { jobKey: BILLING_SYNC_JOB_KEY });
}

// ---- The sync task's side ----------------------------------------------------------------------

/**
 * When a queued log is due. The table keeps no lease or next-attempt column, so both are derived
 * from `attempts` and `updated_at`: a claim counts the attempt and stamps `updated_at`; a log
 * that has been attempted n times is due again once `updated_at` is older than the n-th retry
 * delay (or the lease, whichever is longer). A live claimer therefore keeps its rows for the
 * lease; a claimer that died gives them up when it ends.
 */
export type BillingSyncTiming = {
  /** `retryDelaysMs[n - 1]`: the wait after attempt n before attempt n + 1. Its length + 1 is the number of attempts. */
  retryDelaysMs: number[];
  /** How long a claim lasts: longer than one provider call and the write of its outcome. */
  leaseMs: number;
};

function dueAfterAttemptsMs(timing: BillingSyncTiming): SQL {
  const delays = timing.retryDelaysMs.map((d) => Math.max(0, Math.round(d)));
  const last = delays[delays.length - 1] ?? 0;
  return sql`greatest(coalesce((${`{${delays.join(',')}}`}::int[])[${billingSyncLogs.attempts}], ${last}::int), ${Math.round(timing.leaseMs)}::int)`;
}

/** A claimed log with everything its provider call needs. */
export type ClaimedBillingSync = {
  id: string;
  tenantId: string;
  provider: BillingProvider;
  mappingId: string;
  usageEventId: string;
  /** Counting this attempt. */
  attempts: number;
  /** An earlier attempt was claimed but recorded no outcome (its worker died mid-call). */
  previousOutcomeUnknown: boolean;
  eventType: string;
  providerItemId: string;
  quantity: number;
  occurredAt: Date;
  /** The organization's handoff record for the provider; null without one. */
  connection: { externalAccountId: string | null; mode: 'sandbox' | 'live'; status: 'connected' | 'pending' | 'disconnected' } | null;
};

/**
 * Claims up to `limit` due logs, oldest first, across all organizations (`for update skip
 * locked`: concurrent workers take disjoint rows). Each claim counts an attempt and clears the
 * reason, so a claimed row whose reason is still null at the next claim had no outcome recorded.
 */
export async function claimBillingSyncLogs(
  db: DbOrTx,
  opts: BillingSyncTiming & {
    limit: number /** Logs this run already attempted: at most one attempt each per run. */;
    excludeIds?: string[];
  },
): Promise<ClaimedBillingSync[]> {
  const rows = (await db.execute(sql`
    with picked as (
      select billing_sync_logs.id, billing_sync_logs.attempts as previous_attempts, billing_sync_logs.reason as previous_reason
      from billing_sync_logs
      where billing_sync_logs.status = 'queued'
        and billing_sync_logs.id <> all(${`{${(opts.excludeIds ?? []).join(',')}}`}::text[])
        and (billing_sync_logs.attempts = 0
          or billing_sync_logs.updated_at <= now() - ${dueAfterAttemptsMs(opts)} * interval '1 millisecond')
      order by billing_sync_logs.created_at, billing_sync_logs.id
      limit ${limitLiteral(opts.limit)}
      for update skip locked
    ),
    claimed as (
      update billing_sync_logs l set attempts = l.attempts + 1, reason = null, updated_at = now()
      from picked where l.id = picked.id
      returning l.id, l.tenant_id, l.provider, l.mapping_id, l.usage_event_id, l.attempts,
        picked.previous_attempts, picked.previous_reason
    )
    select c.id, c.tenant_id, c.provider, c.mapping_id, c.usage_event_id, c.attempts,
      (c.previous_attempts > 0 and c.previous_reason is null) as previous_outcome_unknown,
      m.event_type, m.provider_item_id, e.quantity, e.occurred_at,
      p.external_account_id, p.mode, p.status as connection_status
    from claimed c
    join billing_mappings m on m.id = c.mapping_id and m.tenant_id = c.tenant_id
    join usage_events e on e.id = c.usage_event_id and e.tenant_id = c.tenant_id
    left join billing_providers p on p.tenant_id = c.tenant_id and p.provider = c.provider
    order by c.id`)) as unknown as {
    id: string;
    tenant_id: string;
    provider: BillingProvider;
    mapping_id: string;
    usage_event_id: string;
    attempts: number;
    previous_outcome_unknown: boolean;
    event_type: string;
    provider_item_id: string;
    quantity: string | number;
    occurred_at: string | Date;
    external_account_id: string | null;
    mode: 'sandbox' | 'live' | null;
    connection_status: 'connected' | 'pending' | 'disconnected' | null;
  }[];
  return rows.map((r) => ({
    id: r.id,
    tenantId: r.tenant_id,
    provider: r.provider,
    mappingId: r.mapping_id,
    usageEventId: r.usage_event_id,
    attempts: Number(r.attempts),
    previousOutcomeUnknown: r.previous_outcome_unknown,
    eventType: r.event_type,
    providerItemId: r.provider_item_id,
    quantity: Number(r.quantity),
    occurredAt: new Date(r.occurred_at),
    connection:
      r.mode && r.connection_status ? { externalAccountId: r.external_account_id, mode: r.mode, status: r.connection_status } : null,
  }));
}

/** An attempt's outcome: final (succeeded, failed, skipped), or queued again for a later attempt. */
export type BillingSyncResult = {
  status: BillingSyncStatus;
  /** In svc's words; never a key. */
  reason: string | null;
  providerRecordId?: string | null;
};

/**
 * Records an attempt's outcome while the claim still holds (the log is queued and no later
 * claim has counted another attempt); undefined when the claim was lost.
 */
export async function recordBillingSyncResult(
  db: DbOrTx,
  claim: { tenantId: string; id: string; attempts: number },
  result: BillingSyncResult,
): Promise<BillingSyncLogRow | undefined> {
  const [row] = await db
    .update(billingSyncLogs)
    .set({
      status: result.status,
      reason: result.reason,
      ...(result.providerRecordId !== undefined ? { providerRecordId: result.providerRecordId } : {}),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncLogs.tenantId, claim.tenantId),
        eq(billingSyncLogs.id, claim.id),
        eq(billingSyncLogs.status, 'queued'),
        eq(billingSyncLogs.attempts, claim.attempts),
      ),
    )
    .returning();
  return row;
}

/**
 * After a run: when the earliest queued log that is waiting (for its retry delay, or for a claim
 * to end) becomes due, a wake-up run is queued for that moment. Null when nothing waits.
 */
export async function scheduleBillingSyncWake(db: DbOrTx, timing: BillingSyncTiming): Promise<Date | null> {
  const rows = (await db.execute(sql`
    with w as (
      select min(${billingSyncLogs.updatedAt} + ${dueAfterAttemptsMs(timing)} * interval '1 millisecond') as wake_at
      from billing_sync_logs
      where status = 'queued' and attempts > 0
    )
    select w.wake_at, case when w.wake_at is not null then (${addJobSql(
      'billing:sync',
      {},
      { runAt: sql`greatest(w.wake_at, now())`, jobKey: `${BILLING_SYNC_JOB_KEY}:wake` },
    )}).id end as job
    from w`)) as unknown as { wake_at: string | Date | null }[];
  const at = rows[0]?.wake_at;
  return at ? new Date(at) : null;
}

/** In an export (queries/exports.ts): the organization's billing providers. */
export const billingProvidersExportSection: ExportSection = {
  key: 'billingProviders',
  resource: 'billing_provider',
  shape: 'many',
  source: 'snapshot',
  from: 'billing_providers t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('provider', 't.provider'),
    exportField.text('externalAccountId', 't.external_account_id'),
    exportField.text('mode', 't.mode'),
    exportField.text('status', 't.status'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};

/** In an export (queries/exports.ts): the organization's billing mappings. */
export const billingMappingsExportSection: ExportSection = {
  key: 'billingMappings',
  resource: 'billing_mapping',
  shape: 'many',
  source: 'snapshot',
  from: 'billing_mappings t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('provider', 't.provider'),
    exportField.text('eventType', 't.event_type'),
    exportField.text('providerItemId', 't.provider_item_id'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};

/**
 * In an export (queries/exports.ts): the billing sync log; never the failure reasons (they may
 * quote a provider).
 */
export const billingSyncLogsExportSection: ExportSection = {
  key: 'billingSyncLogs',
  resource: 'billing_sync_log',
  shape: 'many',
  source: 'table',
  from: 'billing_sync_logs t',
  tenantColumn: 't.tenant_id',
  asOfColumn: 't.created_at',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('provider', 't.provider'),
    exportField.text('mappingId', 't.mapping_id'),
    exportField.text('usageEventId', 't.usage_event_id'),
    exportField.text('status', 't.status'),
    exportField.number('attempts', 't.attempts'),
    exportField.text('providerRecordId', 't.provider_record_id'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
