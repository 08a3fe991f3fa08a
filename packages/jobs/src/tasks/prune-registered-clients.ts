import { ZTaskPayloads } from '@svc/db/jobs';
import { pruneUnusedRegisteredClients } from '@svc/db/queries/oidc-provider';
import type { JobContext } from '../context.ts';

/** Days without a token after which a registered client is deleted when the worker is not told (OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS). */
export const DEFAULT_REGISTERED_CLIENT_UNUSED_DAYS = 30;

/**
 * Deletes the clients dynamic client registration made (docs/oidc.md "Dynamic client
 * registration") that no token was issued to for OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS, with their
 * grants: anonymous registrations would otherwise pile up. Idempotent.
 */
export async function pruneRegisteredClients(payload: unknown, ctx: JobContext): Promise<void> {
  ZTaskPayloads['maintenance:prune_registered_clients'].parse(payload ?? {});
  const days = ctx.oidc?.registeredClientUnusedDays ?? DEFAULT_REGISTERED_CLIENT_UNUSED_DAYS;
  const deleted = await pruneUnusedRegisteredClients(ctx.db, new Date(Date.now() - days * 86_400_000));
  if (deleted.length > 0) {
    ctx.logger.info({ clients: deleted, unusedDays: days }, 'deleted dynamically registered clients unused for too long');
  }
}
