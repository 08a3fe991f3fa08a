import {
  DEFAULT_THIRD_PARTY_MODE,
  type TGetThirdPartyAccessRequest,
  type TSetThirdPartyAccessRequest,
  type TThirdPartyAccess,
  thirdPartyClientAllowed,
} from '@svc/contracts/connected-apps';
import type { Db, DbOrTx } from '@svc/db/client';
import { findThirdPartyAccess, setThirdPartyAccess, type ThirdPartyAccessRow } from '@svc/db/queries/connected-apps';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { authorize } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';

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
export async function getThirdPartyAccess(db: Db, principal: Principal, input: TGetThirdPartyAccessRequest): Promise<TThirdPartyAccess> {
  const { organization } = await authorize(db, principal, {
    organization: { slug: input.organization_slug },
    permission: 'connected_apps.read',
  });
  return toAccess(organization.id, await findThirdPartyAccess(db, { tenantId: organization.id }));
}

/** PATCH /v1/third-party-access: the organization's choice, audited as `third_party_access.updated` (an event too). */
export async function setThirdPartyAccessFor(
  db: Db,
  principal: Principal,
  request: RequestMeta,
  input: TSetThirdPartyAccessRequest,
): Promise<TThirdPartyAccess> {
  const access = await authorize(db, principal, {
    organization: { slug: input.organization_slug },
    permission: 'connected_apps.manage',
    adminOnly: true,
  });
  const tenantId = access.organization.id;
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
