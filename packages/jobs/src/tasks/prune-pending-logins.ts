import { ZTaskPayloads } from '@svc/db/jobs';
import { prunePendingLogins as deleteExpired } from '@svc/db/queries/pending-logins';
import type { JobContext } from '../context.ts';

/** Deletes pending sign-ins past their expiry (the callback refuses them anyway). Idempotent. */
export async function prunePendingLogins(payload: unknown, ctx: JobContext): Promise<void> {
  ZTaskPayloads['maintenance:prune_pending_logins'].parse(payload ?? {});
  const deleted = await deleteExpired(ctx.db, new Date());
  ctx.logger.debug({ deleted }, 'pruned expired pending logins');
}
