import { AppError } from '@svc/contracts/errors';
import {
  MAX_SUMMARY_RANGE_MS,
  type TListUsageEventsRequest,
  type TUsageCounters,
  type TUsageEventPage,
  type TUsageSummary,
  type TUsageSummaryRequest,
} from '@svc/contracts/usage';
import type { Db } from '@svc/db/client';
import { decodeCursor, encodeCursor } from '@svc/db/pagination';
import {
  countMembers,
  findSubscriptionForUsage,
  findThresholdCrossings,
  listUsageEvents as listUsageEventRows,
  summarizeUsage,
} from '@svc/db/queries/usage';
import type { Access } from '../access/authorize.ts';
import { instantOf } from '../audit-logs/service.ts';
import { toUsageEvent } from './ingest.ts';
import { thresholdQuantity } from './thresholds.ts';

/** The calendar month (UTC) around `now`: [start, end). */
export function monthOf(now: number): { start: number; end: number } {
  const d = new Date(now);
  return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/**
 * GET /v1/tenants/{id}/usage/events (usage.read): newest occurredAt first, keyset paging. A cursor
 * only continues the list (organization and filters) it came from.
 */
export async function listUsageEvents(db: Db, { organization }: Access, input: TListUsageEventsRequest): Promise<TUsageEventPage> {
  const from = input.from !== undefined ? instantOf(input.from).getTime() : undefined;
  const to = input.to !== undefined ? instantOf(input.to).getTime() : undefined;
  // Validated values never contain `|` except idempotency keys, which come last and whole.
  const scope = ['usage_events', organization.id, input.event_type ?? '', from ?? '', to ?? '', input.idempotency_key ?? ''].join('|');
  const cursor = decodeCursor(scope, input.cursor);
  const rows = await listUsageEventRows(db, {
    filter: { tenantId: organization.id, eventType: input.event_type, from, to, idempotencyKey: input.idempotency_key },
    after: cursor ? { at: cursor.createdAt.getTime(), id: cursor.id } : undefined,
    limit: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toUsageEvent),
    // The cursor's time slot carries the last event's occurredAt (the list's order).
    nextCursor: rows.length > input.limit && last ? encodeCursor(scope, { createdAt: new Date(last.occurredAt), id: last.id }) : null,
  };
}

/**
 * GET /v1/tenants/{id}/usage/summary (usage.read): totals per event type over [from, to) with
 * day or hour buckets, read from the hourly totals only (its cost does not grow with the number
 * of events). Default range: the current calendar month (UTC).
 */
export async function getUsageSummary(
  db: Db,
  { organization }: Access,
  input: TUsageSummaryRequest,
  now = Date.now(),
): Promise<TUsageSummary> {
  const month = monthOf(now);
  const from =
    input.from !== undefined
      ? Date.parse(input.from)
      : input.to !== undefined
        ? Date.parse(input.to) - (month.end - month.start)
        : month.start;
  const to =
    input.to !== undefined
      ? Date.parse(input.to)
      : input.from !== undefined
        ? Math.min(from + (month.end - month.start), from + MAX_SUMMARY_RANGE_MS[input.bucket])
        : month.end;
  if (to < from) {
    throw new AppError('validation_failed', 'from must not be after to');
  }
  if (to - from > MAX_SUMMARY_RANGE_MS[input.bucket]) {
    const days = MAX_SUMMARY_RANGE_MS[input.bucket] / 86_400_000;
    throw new AppError(
      'validation_failed',
      `a summary with ${input.bucket} buckets covers at most ${days} days: narrow from/to or use bigger buckets`,
    );
  }
  const rows = await summarizeUsage(db, { tenantId: organization.id, from, to, bucket: input.bucket, eventType: input.event_type });
  const byType = new Map<string, TUsageSummary['data'][number]>();
  for (const row of rows) {
    let entry = byType.get(row.eventType);
    if (!entry) {
      entry = { eventType: row.eventType, events: 0, quantity: 0, points: [] };
      byType.set(row.eventType, entry);
    }
    entry.events += row.events;
    entry.quantity += row.quantity;
    entry.points.push({ start: new Date(row.start).toISOString(), events: row.events, quantity: row.quantity });
  }
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket: input.bucket, data: [...byType.values()] };
}

/**
 * GET /v1/usage?organization_slug= (usage.read): this calendar month's quantity per event type
 * against the plan's limits, and seats used against the subscription's.
 */
export async function getUsageCounters(db: Db, { organization }: Access, now = Date.now()): Promise<TUsageCounters> {
  const period = monthOf(now);
  const [rows, subscription, members, crossings] = await Promise.all([
    summarizeUsage(db, { tenantId: organization.id, from: period.start, to: period.end, bucket: 'day' }),
    findSubscriptionForUsage(db, organization.id),
    countMembers(db, organization.id),
    findThresholdCrossings(db, { tenantId: organization.id, periodStart: period.start }),
  ]);
  const reachedAt = new Map(crossings.map((c) => [`${c.eventType}\u0000${c.threshold}`, c.reachedAt.toISOString()]));
  const totals = new Map<string, { events: number; quantity: number }>();
  for (const row of rows) {
    const t = totals.get(row.eventType) ?? { events: 0, quantity: 0 };
    t.events += row.events;
    t.quantity += row.quantity;
    totals.set(row.eventType, t);
  }
  const limits = subscription?.usageLimits ?? {};
  const types = [...new Set([...totals.keys(), ...Object.keys(limits)])].sort();
  return {
    organization: { id: organization.id, slug: organization.slug, name: organization.name },
    period: { start: new Date(period.start).toISOString(), end: new Date(period.end).toISOString() },
    plan: subscription ? { key: subscription.planKey, name: subscription.planName } : null,
    status: subscription?.status ?? null,
    usage: types.map((eventType) => {
      const { events, quantity } = totals.get(eventType) ?? { events: 0, quantity: 0 };
      const limit = limits[eventType] ?? null;
      return {
        eventType,
        events,
        quantity,
        limit,
        remaining: limit === null ? null : Math.max(0, limit - quantity),
        reached: limit !== null && quantity >= limit,
        thresholds:
          limit === null
            ? []
            : (subscription?.usageThresholds ?? []).map((threshold) => ({
                threshold,
                quantity: thresholdQuantity(threshold, limit),
                reachedAt: reachedAt.get(`${eventType}\u0000${threshold}`) ?? null,
              })),
      };
    }),
    seats: { used: members, limit: subscription ? (subscription.seats ?? subscription.seatLimit) : null },
  };
}
