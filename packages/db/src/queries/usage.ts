import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, executePrepared } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';

/**
 * Usage events, hourly totals and plan limits. The ingestion statements take whole batches as
 * arrays (`unnest`), so a transaction of thousands of events is a handful of statements. Times
 * leave the database as epoch milliseconds (float8): parsing timestamp text costs more CPU than
 * the rest of a row.
 */

/** A usage event as the queries return it (times in epoch milliseconds). */
export type UsageEventRecord = {
  id: string;
  tenantId: string;
  idempotencyKey: string;
  requestHash: string;
  eventType: string;
  quantity: number;
  occurredAt: number;
  properties: Record<string, unknown>;
  sourceId: string | null;
  channel: 'usage' | 'metering';
  createdAt: number;
};

/** A new event, ready to insert. `properties` is its JSON text. */
export type NewUsageEvent = Omit<UsageEventRecord, 'properties' | 'createdAt'> & { propertiesJson: string };

const EVENT_COLUMNS = sql.raw(`
  id, tenant_id as "tenantId", idempotency_key as "idempotencyKey", request_hash as "requestHash",
  event_type as "eventType", quantity::float8 as quantity, (extract(epoch from occurred_at) * 1000)::float8 as "occurredAt",
  properties, source_id as "sourceId", channel, (extract(epoch from created_at) * 1000)::float8 as "createdAt"`);

const EVENT_COLUMNS_OF_E = sql.raw(`
  e.id, e.tenant_id as "tenantId", e.idempotency_key as "idempotencyKey", e.request_hash as "requestHash",
  e.event_type as "eventType", e.quantity::float8 as quantity, (extract(epoch from e.occurred_at) * 1000)::float8 as "occurredAt",
  e.properties, e.source_id as "sourceId", e.channel, (extract(epoch from e.created_at) * 1000)::float8 as "createdAt"`);

/**
 * Inserts the events that are new, in one statement. Each (organization, idempotency key) is
 * claimed first in usage_event_keys (usage_events is partitioned by month and cannot hold that
 * uniqueness): a key that exists is skipped, and when its row belongs to a transaction still
 * running PostgreSQL waits for it, so concurrent duplicates (in any process, in any month)
 * produce one event. Keys are claimed sorted by (organization, key), so two batches lock keys in
 * the same order and cannot deadlock each other. Returns the created events' ids and creation times.
 */
export async function insertUsageEvents(tx: DbOrTx, events: readonly NewUsageEvent[]): Promise<{ id: string; createdAt: number }[]> {
  if (events.length === 0) {
    return [];
  }
  const sorted = [...events].sort((a, b) =>
    a.tenantId === b.tenantId ? compare(a.idempotencyKey, b.idempotencyKey) : compare(a.tenantId, b.tenantId),
  );
  // One JSON parameter rather than ten arrays: postgres.js escapes array elements one character
  // class at a time in JavaScript, JSON.stringify is native; `properties` is already JSON text.
  let rows = '[';
  for (const [i, e] of sorted.entries()) {
    rows += `${i === 0 ? '' : ','}{"id":${JSON.stringify(e.id)},"tenant_id":${JSON.stringify(e.tenantId)},"idempotency_key":${JSON.stringify(e.idempotencyKey)},"request_hash":${JSON.stringify(e.requestHash)},"event_type":${JSON.stringify(e.eventType)},"quantity":${e.quantity},"occurred_ms":${e.occurredAt},"properties":${e.propertiesJson},"source_id":${JSON.stringify(e.sourceId)},"channel":${JSON.stringify(e.channel)}}`;
  }
  rows += ']';
  return await executePrepared<{ id: string; createdAt: number }>(
    tx,
    sql`
    with t as materialized (
      select * from json_to_recordset(${rows}::text::json) as t(
        id text, tenant_id text, idempotency_key text, request_hash text, event_type text, quantity bigint, occurred_ms float8,
        properties jsonb, source_id text, channel text
      )
    ),
    claimed as (
      insert into usage_event_keys (tenant_id, idempotency_key, event_id)
      -- A function scan emits the array in order: keys are claimed (and locked) sorted.
      select tenant_id, idempotency_key, id from t
      on conflict (tenant_id, idempotency_key) do nothing
      returning event_id
    )
    insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, properties, source_id, channel)
    select t.id, t.tenant_id, t.idempotency_key, t.request_hash, t.event_type, t.quantity, to_timestamp(t.occurred_ms / 1000), t.properties,
      t.source_id, t.channel
    from t join claimed c on c.event_id = t.id
    returning id, (extract(epoch from created_at) * 1000)::float8 as "createdAt"`,
  );
}

/** The hour (UTC) an instant falls in, epoch ms. */
export function hourOf(ms: number): number {
  return Math.floor(ms / 3_600_000) * 3_600_000;
}

/**
 * Adds created events to the hourly totals: one upsert of the rows aggregated per (organization,
 * type, hour). Every hot counter row is locked here until the transaction ends, so callers run
 * it last; rows are upserted in (organization, type, hour) order, the same in every transaction.
 */
export async function addToHourlyTotals(
  tx: DbOrTx,
  events: readonly { tenantId: string; eventType: string; occurredAt: number; quantity: number }[],
): Promise<void> {
  const totals = new Map<string, { tenantId: string; eventType: string; hour: number; events: number; quantity: number }>();
  for (const e of events) {
    const hour = hourOf(e.occurredAt);
    const key = `${e.tenantId}\u0000${e.eventType}\u0000${hour}`;
    const total = totals.get(key);
    if (total) {
      total.events += 1;
      total.quantity += e.quantity;
    } else {
      totals.set(key, { tenantId: e.tenantId, eventType: e.eventType, hour, events: 1, quantity: e.quantity });
    }
  }
  if (totals.size === 0) {
    return;
  }
  const rows = [...totals.values()].sort((a, b) =>
    a.tenantId !== b.tenantId
      ? compare(a.tenantId, b.tenantId)
      : a.eventType !== b.eventType
        ? compare(a.eventType, b.eventType)
        : a.hour - b.hour,
  );
  await executePrepared(
    tx,
    sql`
    insert into usage_hourly (tenant_id, event_type, hour, events, quantity)
    select tenant_id, event_type, to_timestamp(hour_ms / 1000), events, quantity
    from unnest(
      ${sql.param(rows.map((r) => r.tenantId))}::text[],
      ${sql.param(rows.map((r) => r.eventType))}::text[],
      ${sql.param(rows.map((r) => r.hour))}::float8[],
      ${sql.param(rows.map((r) => r.events))}::bigint[],
      ${sql.param(rows.map((r) => r.quantity))}::bigint[]
    ) with ordinality as t(tenant_id, event_type, hour_ms, events, quantity, n)
    order by n
    on conflict (tenant_id, event_type, hour) do update
      set events = usage_hourly.events + excluded.events, quantity = usage_hourly.quantity + excluded.quantity`,
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The recorded events of these (organization, idempotency key) pairs: found by usage_event_keys,
 * whose `created_at` names the event's partition.
 */
export async function findUsageEventsByKeys(
  db: DbOrTx,
  keys: readonly { tenantId: string; idempotencyKey: string }[],
): Promise<UsageEventRecord[]> {
  if (keys.length === 0) {
    return [];
  }
  return (await db.execute(sql`
    select ${EVENT_COLUMNS_OF_E} from usage_event_keys k
    join usage_events e on e.id = k.event_id and e.created_at = k.created_at and e.tenant_id = k.tenant_id
    where (k.tenant_id, k.idempotency_key) in (
      select * from unnest(${sql.param(keys.map((k) => k.tenantId))}::text[], ${sql.param(keys.map((k) => k.idempotencyKey))}::text[])
    )`)) as unknown as UsageEventRecord[];
}

/** Each organization's plan (its key) and usage limits (event type -> quantity per calendar month); `{}` is unlimited. */
export async function findUsageLimits(
  db: DbOrTx,
  tenantIds: readonly string[],
): Promise<Map<string, { plan: string; limits: Record<string, number>; thresholds: number[] }>> {
  const rows = (await db.execute(sql`
    select s.tenant_id as "tenantId", p.key as plan, p.usage_limits as limits, p.usage_thresholds as thresholds
    from subscriptions s join subscription_plans p on p.id = s.plan_id
    where s.tenant_id = any(${sql.param([...tenantIds])}::text[])`)) as unknown as {
    tenantId: string;
    plan: string;
    limits: Record<string, number> | null;
    thresholds: number[] | null;
  }[];
  return new Map(rows.map((r) => [r.tenantId, { plan: r.plan, limits: r.limits ?? {}, thresholds: r.thresholds ?? [] }]));
}

/** A usage threshold an ingesting transaction saw reached (usage_threshold_crossings). */
export type ThresholdCrossing = {
  tenantId: string;
  eventType: string;
  /** Epoch ms: the first instant of the calendar month (UTC). */
  periodStart: number;
  threshold: number;
  limit: number;
  used: number;
  plan: string;
  eventId: string;
};

/**
 * Claims crossings: inserts the rows that do not exist yet and returns those it inserted. A row
 * another transaction inserted and has not committed makes this one wait for it (the primary
 * key's conflict rule), so of concurrent claims of one crossing exactly one returns it.
 */
export async function claimThresholdCrossings(tx: DbOrTx, crossings: readonly ThresholdCrossing[]): Promise<ThresholdCrossing[]> {
  if (crossings.length === 0) {
    return [];
  }
  const rows = (await tx.execute(sql`
    insert into usage_threshold_crossings (tenant_id, event_type, period_start, threshold, usage_limit, used, plan, event_id)
    select c.tenant_id, c.event_type, to_timestamp(c.period_start / 1000), c.threshold, c.usage_limit, c.used, c.plan, c.event_id
    from json_to_recordset(${JSON.stringify(
      crossings.map((c) => ({
        tenant_id: c.tenantId,
        event_type: c.eventType,
        period_start: c.periodStart,
        threshold: c.threshold,
        usage_limit: c.limit,
        used: c.used,
        plan: c.plan,
        event_id: c.eventId,
      })),
    )}::text::json) as c(tenant_id text, event_type text, period_start float8, threshold int, usage_limit bigint, used bigint, plan text, event_id text)
    order by 1, 2, 3, 4
    on conflict do nothing
    returning event_id as "eventId"`)) as unknown as { eventId: string }[];
  const inserted = new Set(rows.map((r) => r.eventId));
  return crossings.filter((c) => inserted.has(c.eventId));
}

/**
 * The month's quantity of every event type that a plan with usage thresholds limits, for one
 * organization or every organization on one plan: what a change of plan or limits is checked
 * against. From the hourly totals, hours in [from, to).
 */
export async function findThresholdTotals(
  db: DbOrTx,
  opts: { tenantId: string } | { planId: string },
  period: { from: number; to: number },
): Promise<{ tenantId: string; eventType: string; total: number; limit: number; thresholds: number[]; plan: string }[]> {
  const target = 'tenantId' in opts ? sql`s.tenant_id = ${opts.tenantId}` : sql`s.plan_id = ${opts.planId}`;
  return (await db.execute(sql`
    select s.tenant_id as "tenantId", l.key as "eventType", l.value::float8 as "limit", p.usage_thresholds as thresholds,
      p.key as plan, coalesce((
        select sum(h.quantity) from usage_hourly h
        where h.tenant_id = s.tenant_id and h.event_type = l.key
          and h.hour >= to_timestamp(${period.from}::float8 / 1000) and h.hour < to_timestamp(${period.to}::float8 / 1000)
      ), 0)::float8 as total
    from subscriptions s
    join subscription_plans p on p.id = s.plan_id
    cross join lateral jsonb_each_text(p.usage_limits) l
    where ${target} and cardinality(p.usage_thresholds) > 0`)) as unknown as {
    tenantId: string;
    eventType: string;
    total: number;
    limit: number;
    thresholds: number[];
    plan: string;
  }[];
}

/** The thresholds an organization reached in the calendar month starting at `periodStart` (epoch ms). */
export async function findThresholdCrossings(
  db: DbOrTx,
  opts: { tenantId: string; periodStart: number },
): Promise<{ eventType: string; threshold: number; reachedAt: Date }[]> {
  const rows = (await db.execute(sql`
    select event_type as "eventType", threshold, reached_at as "reachedAt"
    from usage_threshold_crossings
    where tenant_id = ${opts.tenantId} and period_start = to_timestamp(${opts.periodStart}::float8 / 1000)
    order by event_type, threshold`)) as unknown as { eventType: string; threshold: number; reachedAt: string | Date }[];
  return rows.map((r) => ({ ...r, reachedAt: new Date(r.reachedAt) }));
}

/**
 * Claims an hour for its `usage.summary` events and reads what to summarize: per organization
 * and event type, the events recorded (created_at, not occurred_at) in [hour, hour + 1 h). Empty
 * when the hour was claimed before (by another worker or an earlier run). Call it in the
 * transaction that records the summaries, so the claim and the events commit together.
 */
export async function claimUsageSummaryHour(
  tx: DbOrTx,
  hour: Date,
): Promise<{ tenantId: string; totals: { eventType: string; events: number; quantity: number }[] }[] | undefined> {
  const claimed = (await tx.execute(sql`
    insert into usage_summary_hours (hour, organizations) values (${hour.toISOString()}::timestamptz, 0)
    on conflict do nothing returning hour`)) as unknown as unknown[];
  if (claimed.length === 0) {
    return undefined;
  }
  // One index range scan per organization (usage_events_tenant_created_idx).
  const rows = (await tx.execute(sql`
    select o.id as "tenantId", t.event_type as "eventType", t.events::float8 as events, t.quantity::float8 as quantity
    from organizations o
    cross join lateral (
      select e.event_type, count(*) as events, sum(e.quantity) as quantity
      from usage_events e
      where e.tenant_id = o.id and e.created_at >= ${hour.toISOString()}::timestamptz
        and e.created_at < ${hour.toISOString()}::timestamptz + interval '1 hour'
      group by e.event_type
    ) t
    order by 1, 2`)) as unknown as { tenantId: string; eventType: string; events: number; quantity: number }[];
  const byTenant = new Map<string, { eventType: string; events: number; quantity: number }[]>();
  for (const r of rows) {
    const list = byTenant.get(r.tenantId) ?? [];
    list.push({ eventType: r.eventType, events: r.events, quantity: r.quantity });
    byTenant.set(r.tenantId, list);
  }
  await tx.execute(sql`update usage_summary_hours set organizations = ${byTenant.size} where hour = ${hour.toISOString()}::timestamptz`);
  return [...byTenant].map(([tenantId, totals]) => ({ tenantId, totals }));
}

/**
 * Transaction-scoped advisory locks, taken in ascending order (so two transactions never wait on
 * each other in a cycle), released at commit or rollback.
 */
export async function lockAdvisory(tx: DbOrTx, keys: readonly bigint[]): Promise<void> {
  if (keys.length === 0) {
    return;
  }
  const sorted = [...new Set(keys)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);
  await executePrepared(
    tx,
    sql`
    select count(pg_advisory_xact_lock(k)) from (
      select k from unnest(${sql.param(sorted)}::bigint[]) with ordinality as t(k, n) order by n offset 0
    ) s`,
  );
}

/** Quantity recorded per (organization, type) in [from, to), from the hourly totals. */
export async function sumUsageQuantities(
  db: DbOrTx,
  items: readonly { tenantId: string; eventType: string; from: number; to: number }[],
): Promise<number[]> {
  if (items.length === 0) {
    return [];
  }
  const rows = await executePrepared<{ n: number; quantity: number }>(
    db,
    sql`
    select t.n::int as n, coalesce((
      select sum(h.quantity) from usage_hourly h
      where h.tenant_id = t.tenant_id and h.event_type = t.event_type
        and h.hour >= to_timestamp(t.from_ms / 1000) and h.hour < to_timestamp(t.to_ms / 1000)
    ), 0)::float8 as quantity
    from unnest(
      ${sql.param(items.map((i) => i.tenantId))}::text[],
      ${sql.param(items.map((i) => i.eventType))}::text[],
      ${sql.param(items.map((i) => i.from))}::float8[],
      ${sql.param(items.map((i) => i.to))}::float8[]
    ) with ordinality as t(tenant_id, event_type, from_ms, to_ms, n)`,
  );
  const out = new Array<number>(items.length).fill(0);
  for (const row of rows) {
    out[row.n - 1] = row.quantity;
  }
  return out;
}

/**
 * The event types an organization has ever used, read from the hourly totals' primary key one
 * type at a time (a loose index scan): cost grows with the number of types, not of rows.
 */
function eventTypesOf(tenantId: string) {
  return sql`
    with recursive types as (
      select min(event_type) as event_type from usage_hourly where tenant_id = ${tenantId}
      union all
      select (select min(h.event_type) from usage_hourly h where h.tenant_id = ${tenantId} and h.event_type > types.event_type)
      from types where types.event_type is not null
    )
    select event_type from types where event_type is not null`;
}

/**
 * Usage events recorded in [from, to) over every event type, from the hourly totals, one range
 * scan per type the organization uses: a scalar subquery for a statement that reads more.
 */
export function usageEventCount(opts: { tenantId: string; from: Date; to: Date }): SQL {
  return sql`(
    select coalesce(sum(x.events), 0) from (${eventTypesOf(opts.tenantId)}) t
    cross join lateral (
      select sum(h.events) as events from usage_hourly h
      where h.tenant_id = ${opts.tenantId} and h.event_type = t.event_type
        and h.hour >= ${opts.from.toISOString()}::timestamptz and h.hour < ${opts.to.toISOString()}::timestamptz
    ) x
  )`;
}

/**
 * The monthly limits of the organization's subscription plan, one per limited event type (by
 * name), each with the quantity recorded in [from, to), as a JSON array `[{ eventType, limit,
 * quantity }]`: empty without a subscription or when the plan limits nothing. A scalar subquery.
 */
export function usageAgainstPlanLimits(opts: { tenantId: string; from: Date; to: Date }): SQL {
  return sql`(
    select coalesce(json_agg(json_build_object('eventType', l.key, 'limit', l.value::bigint, 'quantity', coalesce(u.quantity, 0)) order by l.key), '[]'::json)
    from subscriptions s
    join subscription_plans p on p.id = s.plan_id
    cross join jsonb_each_text(p.usage_limits) l
    cross join lateral (
      select sum(h.quantity) as quantity from usage_hourly h
      where h.tenant_id = s.tenant_id and h.event_type = l.key
        and h.hour >= ${opts.from.toISOString()}::timestamptz and h.hour < ${opts.to.toISOString()}::timestamptz
    ) u
    where s.tenant_id = ${opts.tenantId}
  )`;
}

export type UsageEventFilter = {
  tenantId: string;
  eventType?: string;
  /** Inclusive, epoch ms. */
  from?: number;
  /** Exclusive, epoch ms. */
  to?: number;
  idempotencyKey?: string;
};

/**
 * One page of events, newest `occurred_at` first (ties by id), strictly after `after`. With a
 * type it is one range scan of (tenant_id, event_type, occurred_at desc, id desc); without one,
 * the same scan per type the organization uses, each stopped after `limit` rows, merged: a page
 * deep in millions of events costs what the first one costs.
 */
export async function listUsageEvents(
  db: DbOrTx,
  opts: { filter: UsageEventFilter; after?: { at: number; id: string }; limit: number },
): Promise<UsageEventRecord[]> {
  const { filter, after, limit } = opts;
  const conditions = sql.join(
    [
      sql`e.tenant_id = ${filter.tenantId}`,
      filter.idempotencyKey !== undefined ? sql`e.idempotency_key = ${filter.idempotencyKey}` : undefined,
      filter.from !== undefined ? sql`e.occurred_at >= to_timestamp(${filter.from}::float8 / 1000)` : undefined,
      filter.to !== undefined ? sql`e.occurred_at < to_timestamp(${filter.to}::float8 / 1000)` : undefined,
      after ? sql`(e.occurred_at, e.id) < (to_timestamp(${after.at}::float8 / 1000), ${after.id})` : undefined,
    ].filter((c) => c !== undefined),
    sql` and `,
  );
  const order = sql`order by e.occurred_at desc, e.id desc limit ${limit}`;
  if (filter.eventType !== undefined || filter.idempotencyKey !== undefined) {
    return (await db.execute(sql`
      select ${EVENT_COLUMNS} from usage_events e
      where ${conditions} ${filter.eventType !== undefined ? sql`and e.event_type = ${filter.eventType}` : sql``}
      ${order}`)) as unknown as UsageEventRecord[];
  }
  return (await db.execute(sql`
    select ${EVENT_COLUMNS} from (
      select e.* from (${eventTypesOf(filter.tenantId)}) t
      cross join lateral (
        select e.* from usage_events e where ${conditions} and e.event_type = t.event_type ${order}
      ) e
    ) e
    ${order}`)) as unknown as UsageEventRecord[];
}

/**
 * Totals per event type and bucket (UTC days or hours) over hours in [from, to), from the hourly
 * totals only: at most (hours in range x types) rows are read, whatever the number of events,
 * through the primary key (tenant_id, event_type, hour) one type at a time. Buckets are whole
 * multiples of their length since the epoch (UTC days and hours are), so no per-row time zone
 * arithmetic is needed.
 */
export async function summarizeUsage(
  db: DbOrTx,
  opts: { tenantId: string; from: number; to: number; bucket: 'day' | 'hour'; eventType?: string },
): Promise<{ eventType: string; start: number; events: number; quantity: number }[]> {
  const types = opts.eventType !== undefined ? sql`select ${opts.eventType}::text as event_type` : eventTypesOf(opts.tenantId);
  const seconds = opts.bucket === 'day' ? 86_400 : 3_600;
  return (await db.execute(sql`
    select t.event_type as "eventType", b.bucket * ${seconds * 1000}::float8 as start,
           b.events::float8 as events, b.quantity::float8 as quantity
    from (${types}) t
    cross join lateral (
      select floor(extract(epoch from h.hour) / ${seconds}::int)::bigint as bucket, sum(h.events) as events, sum(h.quantity) as quantity
      from usage_hourly h
      where h.tenant_id = ${opts.tenantId} and h.event_type = t.event_type
        and h.hour >= to_timestamp(${opts.from}::float8 / 1000) and h.hour < to_timestamp(${opts.to}::float8 / 1000)
      group by 1
    ) b
    order by 1, 2`)) as unknown as { eventType: string; start: number; events: number; quantity: number }[];
}

/** An organization's subscription as the usage counters show it (null without one). */
export async function findSubscriptionForUsage(
  db: DbOrTx,
  tenantId: string,
): Promise<{
  planKey: string;
  planName: string;
  status: string;
  seatLimit: number | null;
  seats: number | null;
  usageLimits: Record<string, number>;
  usageThresholds: number[];
} | null> {
  const [row] = (await db.execute(sql`
    select p.key as "planKey", p.name as "planName", s.status, p.seat_limit as "seatLimit", s.seats, p.usage_limits as "usageLimits",
      p.usage_thresholds as "usageThresholds"
    from subscriptions s join subscription_plans p on p.id = s.plan_id
    where s.tenant_id = ${tenantId}`)) as unknown as {
    planKey: string;
    planName: string;
    status: string;
    seatLimit: number | null;
    seats: number | null;
    usageLimits: Record<string, number> | null;
    usageThresholds: number[] | null;
  }[];
  return row ? { ...row, usageLimits: row.usageLimits ?? {}, usageThresholds: row.usageThresholds ?? [] } : null;
}

/** Members of the organization (the seats in use). */
export async function countMembers(db: DbOrTx, tenantId: string): Promise<number> {
  const [row] = (await db.execute(sql`select count(*)::int as n from memberships where tenant_id = ${tenantId}`)) as unknown as {
    n: number;
  }[];
  return row?.n ?? 0;
}

/** In an export (queries/exports.ts): hourly usage totals, up to the snapshot's instant. */
export const usageHourlyExportSection: ExportSection = {
  key: 'usageHourly',
  resource: 'usage_hourly',
  shape: 'many',
  source: 'table',
  from: 'usage_hourly t',
  tenantColumn: 't.tenant_id',
  asOfColumn: 't.hour',
  orderBy: 't.event_type, t.hour',
  fields: [
    exportField.text('eventType', 't.event_type'),
    exportField.time('hour', 't.hour'),
    exportField.number('events', 't.events'),
    exportField.number('quantity', 't.quantity'),
  ],
};

/**
 * In an export (queries/exports.ts): usage events, up to the snapshot's instant; never their
 * request hashes.
 */
export const usageEventsExportSection: ExportSection = {
  key: 'usageEvents',
  resource: 'usage_event',
  shape: 'many',
  source: 'table',
  from: 'usage_events t',
  tenantColumn: 't.tenant_id',
  asOfColumn: 't.created_at',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('idempotencyKey', 't.idempotency_key'),
    exportField.text('eventType', 't.event_type'),
    exportField.number('quantity', 't.quantity'),
    exportField.time('occurredAt', 't.occurred_at'),
    exportField.json('properties', 't.properties'),
    exportField.text('sourceId', 't.source_id'),
    exportField.text('channel', 't.channel'),
    exportField.time('createdAt', 't.created_at'),
  ],
};
