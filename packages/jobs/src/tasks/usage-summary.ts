import { ZTaskPayloads } from '@svc/db/jobs';
import { claimUsageSummaryHour } from '@svc/db/queries/usage';
import { recordEvents } from '@svc/db/queries/webhook-events';
import type { JobContext } from '../context.ts';

const HOUR_MS = 3_600_000;

/** The hour a run summarizes: the one given, else the last whole hour before the crontab tick (or now). */
export function summaryHourOf(payload: { hour?: string; _cron?: { ts?: string } }, now = Date.now()): Date {
  if (payload.hour !== undefined) {
    return new Date(Math.floor(Date.parse(payload.hour) / HOUR_MS) * HOUR_MS);
  }
  const tick = payload._cron?.ts !== undefined ? Date.parse(payload._cron.ts) : now;
  return new Date(Math.floor(tick / HOUR_MS) * HOUR_MS - HOUR_MS);
}

/**
 * Records one `usage.summary` event per organization that recorded usage events in the hour:
 * per event type, the events recorded (by when svc recorded them, not their occurredAt) and
 * their quantity, so the summaries of consecutive hours add up to every event once. The crontab
 * runs it five minutes after each hour (a transaction still writing that hour's events has long
 * committed by then). The hour is claimed in the same transaction as the events: a second run
 * for it, on any worker, records nothing.
 */
export async function summarizeUsage(payload: unknown, ctx: JobContext): Promise<void> {
  const hour = summaryHourOf(ZTaskPayloads['usage:summarize'].parse(payload ?? {}));
  const end = new Date(hour.getTime() + HOUR_MS);
  if (end.getTime() > Date.now()) {
    // Claimed now, the hour's later events would be in no summary.
    throw new Error(`usage:summarize: the hour ${hour.toISOString()} has not ended yet`);
  }
  const summarized = await ctx.db.transaction(async (tx) => {
    const organizations = await claimUsageSummaryHour(tx, hour);
    if (!organizations) {
      return undefined;
    }
    await recordEvents(
      tx,
      organizations.map((o) => ({
        tenantId: o.tenantId,
        type: 'usage.summary',
        data: {
          object: 'usage_summary',
          organizationId: o.tenantId,
          periodStart: hour.toISOString(),
          periodEnd: end.toISOString(),
          totals: o.totals,
        },
      })),
    );
    return organizations.length;
  });
  ctx.logger.debug({ hour: hour.toISOString(), organizations: summarized ?? null }, 'usage summaries recorded');
}
