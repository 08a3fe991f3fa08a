import { ZTaskPayloads } from '@svc/db/jobs';
import { pruneRateLimitCounters } from '@svc/db/queries/rate-limits';
import type { JobContext } from '../context.ts';

/** Drops expired rate-limit windows. Idempotent: a re-run deletes nothing more. */
export async function pruneRateLimits(payload: unknown, ctx: JobContext): Promise<void> {
  const { keepSeconds } = ZTaskPayloads['maintenance:prune_rate_limits'].parse(payload ?? {});
  const before = Math.floor(Date.now() / 1000) - keepSeconds;
  const deleted = await pruneRateLimitCounters(ctx.db, before);
  ctx.logger.debug({ deleted }, 'pruned rate-limit counters');
}
