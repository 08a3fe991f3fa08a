import { ZTaskPayloads } from '@svc/db/jobs';
import { pruneOidcPayloads, pruneSigningKeys } from '@svc/db/queries/oidc-provider';
import type { JobContext } from '../context.ts';

/** Deletes the OpenID Provider's expired artifacts (the adapter already ignores them) and long-retired keys. Idempotent. */
export async function pruneOidc(payload: unknown, ctx: JobContext): Promise<void> {
  const { supersededKeysKeepDays } = ZTaskPayloads['maintenance:prune_oidc'].parse(payload ?? {});
  const now = Date.now();
  const payloads = await pruneOidcPayloads(ctx.db, new Date(now));
  const keys = await pruneSigningKeys(ctx.db, new Date(now - supersededKeysKeepDays * 86_400_000));
  ctx.logger.debug({ payloads, keys }, 'pruned expired OpenID Provider artifacts and retired keys');
}
