import {
  DEFAULT_THIRD_PARTY_MODE,
  type TConnectedApp,
  type TConnectedAppList,
  type TConnectedAppRef,
  type TRevokedConnectedApp,
  type TSetThirdPartyAccessRequest,
  type TThirdPartyAccess,
  thirdPartyClientAllowed,
} from '@svc/contracts/connected-apps';
import { AppError } from '@svc/contracts/errors';
import type { Db, DbOrTx } from '@svc/db/client';
import {
  findThirdPartyAccess,
  listThirdPartyGrants,
  revokeThirdPartyGrant,
  setThirdPartyAccess,
  type ThirdPartyAccessRow,
  type ThirdPartyGrantRow,
} from '@svc/db/queries/connected-apps';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';

/**
 * Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third
 * parties an organization allows"): read with connected_apps.read, chosen by an org admin
 * (connected_apps.manage). The OpenID Provider asks `mayConnect` before a third-party client's
 * consent, when its grant is used, and when its refresh token is.
 */

function toAccess(organizationId: string, row: ThirdPartyAccessRow | undefined): TThirdPartyAccess {
  return row
    ? { organizationId, mode: row.mode, clients: row.clients, updatedAt: row.updatedAt.toISOString() }
    : { organizationId, mode: DEFAULT_THIRD_PARTY_MODE, clients: [], updatedAt: null };
}

/** GET /v1/third-party-access. */
export async function getThirdPartyAccess(db: Db, { organization }: Access): Promise<TThirdPartyAccess> {
  return toAccess(organization.id, await findThirdPartyAccess(db, { tenantId: organization.id }));
}

/** PATCH /v1/third-party-access: the organization's choice, audited as `third_party_access.updated` (an event too). */
export async function setThirdPartyAccessFor(
  db: Db,
  { organization, principal }: Access,
  request: RequestMeta,
  input: TSetThirdPartyAccessRequest,
): Promise<TThirdPartyAccess> {
  const tenantId = organization.id;
  return db.transaction(async (tx) => {
    const before = toAccess(tenantId, await findThirdPartyAccess(tx, { tenantId }));
    const clients = input.clients === undefined ? before.clients : [...new Set(input.clients)];
    const row = await setThirdPartyAccess(tx, { tenantId, mode: input.mode, clients });
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'third_party_access.updated',
      target: { type: 'organization', id: tenantId },
      summary: { mode: { from: before.mode, to: row.mode }, clients: { from: before.clients, to: row.clients } },
    });
    return toAccess(tenantId, row);
  });
}

/** Whether the organization lets `clientId` (a third-party client) connect now. */
export async function mayConnect(db: DbOrTx, opts: { organizationId: string; clientId: string }): Promise<boolean> {
  const row = await findThirdPartyAccess(db, { tenantId: opts.organizationId });
  return thirdPartyClientAllowed(row ?? { mode: DEFAULT_THIRD_PARTY_MODE, clients: [] }, opts.clientId);
}

/** The most grants GET /v1/connected-apps answers (newest first). */
const MAX_CONNECTED_APPS = 500;

const NOT_FOUND = 'connected app not found';

/** The client id's host (a metadata document URL); the id itself should it not parse. */
function hostOf(clientId: string): string {
  try {
    return new URL(clientId).host;
  } catch {
    return clientId;
  }
}

function toConnectedApp(row: ThirdPartyGrantRow): TConnectedApp {
  return {
    id: row.grantId,
    clientId: row.clientId,
    clientHost: hostOf(row.clientId),
    user: { id: row.userId, email: row.email },
    scopes: row.scope === '' ? [] : row.scope.split(' '),
    permissions: Object.fromEntries(
      Object.entries(row.resources).map(([resource, scope]) => [resource, scope === '' ? [] : scope.split(' ')]),
    ),
    grantedAt: row.grantedAt.toISOString(),
    expiresAt: row.expiresAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  };
}

/** GET /v1/connected-apps: what the organization's people allowed third-party apps and agents, newest first. */
export async function listConnectedApps(db: Db, { organization }: Access): Promise<TConnectedAppList> {
  const rows = await listThirdPartyGrants(db, { tenantId: organization.id, limit: MAX_CONNECTED_APPS });
  return { data: rows.map(toConnectedApp) };
}

/**
 * DELETE /v1/connected-apps/{id}: ends the grant and everything issued under it, so its refresh
 * tokens stop at once (its access tokens verify until they expire). A grant of another
 * organization, or none, is 404. Audited as `connected_app.revoked` (an event too).
 */
export async function revokeConnectedApp(
  db: Db,
  { organization, principal }: Access,
  request: RequestMeta,
  input: TConnectedAppRef,
): Promise<TRevokedConnectedApp> {
  const tenantId = organization.id;
  return db.transaction(async (tx) => {
    const revoked = await revokeThirdPartyGrant(tx, { tenantId, grantId: input.id });
    if (!revoked) {
      throw new AppError('not_found', NOT_FOUND);
    }
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'connected_app.revoked',
      target: { type: 'connected_app', id: input.id },
      summary: { clientId: revoked.clientId, userId: revoked.userId },
    });
    return { id: input.id, revoked: true as const };
  });
}
