import { REGISTERED_CLIENTS_LIST_LIMIT, type TRegisteredClientList } from '@svc/contracts/registered-clients';
import type { Db } from '@svc/db/client';
import { listRegisteredClients } from '@svc/db/queries/oidc-provider';

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/**
 * GET /v1/platform/registered-clients: the clients that registered themselves (docs/oidc.md
 * "Dynamic client registration"), for platform admins, newest first: what each said about itself
 * (never its secret), when it registered, when a token was last issued to it, and when the worker
 * deletes it unless one is.
 */
export async function registeredClientList(db: Db, settings: { enabled: boolean; unusedDays: number }): Promise<TRegisteredClientList> {
  const rows = await listRegisteredClients(db, { limit: REGISTERED_CLIENTS_LIST_LIMIT });
  return {
    registrationEnabled: settings.enabled,
    unusedDays: settings.unusedDays,
    data: rows.map((row) => {
      const redirects = row.metadata.redirect_uris;
      const lastUse = row.lastUsedAt ?? row.registeredAt;
      return {
        id: row.id,
        name: text(row.metadata.client_name),
        clientUri: text(row.metadata.client_uri),
        redirectUris: Array.isArray(redirects) ? redirects.filter((u): u is string => typeof u === 'string') : [],
        tokenEndpointAuthMethod: text(row.metadata.token_endpoint_auth_method) ?? 'client_secret_basic',
        registeredAt: row.registeredAt.toISOString(),
        lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
        deletedAfter: new Date(lastUse.getTime() + settings.unusedDays * 86_400_000).toISOString(),
      };
    }),
  };
}
