import { lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { rateLimitCounters } from '../schema/rate-limits.ts';

/**
 * Adds `want` to the window's counter atomically and returns the new total. The caller knows
 * the total before its own increment exactly (`total - want`), because the row lock serialises
 * concurrent increments, so the tokens it was granted are `clamp(limit - (total - want), 0, want)`.
 */
export async function incrementRateLimitCounter(db: DbOrTx, opts: { key: string; windowStart: number; want: number }): Promise<number> {
  const [row] = await db
    .insert(rateLimitCounters)
    .values({ key: opts.key, windowStart: opts.windowStart, granted: opts.want })
    .onConflictDoUpdate({
      target: [rateLimitCounters.key, rateLimitCounters.windowStart],
      set: { granted: sql`${rateLimitCounters.granted} + ${opts.want}` },
    })
    .returning({ total: rateLimitCounters.granted });
  return row?.total ?? opts.want;
}

/** Deletes the counters of windows that started before `beforeWindowStart`; returns how many. */
export async function pruneRateLimitCounters(db: DbOrTx, beforeWindowStart: number): Promise<number> {
  const result = await db.delete(rateLimitCounters).where(lt(rateLimitCounters.windowStart, beforeWindowStart));
  return result.count;
}
