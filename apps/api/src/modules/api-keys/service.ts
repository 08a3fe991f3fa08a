import type {
  TApiKey,
  TApiKeyActionRequest,
  TApiKeyPage,
  TApiKeyStatus,
  TApiKeyWithSecret,
  TCreateApiKeyRequest,
  TListApiKeysRequest,
} from '@svc/contracts/api-keys';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type ApiKeyRow,
  type CreatorKeysScope,
  findApiKey,
  findApiKeyTenant,
  insertApiKey,
  listApiKeys as listApiKeyRows,
  listUnrevokedKeysOfCreator,
  lockApiKeyCreatorStanding,
  revokeApiKey as revokeApiKeyRow,
  rotateApiKeySecret,
} from '@svc/db/queries/api-keys';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable, creatorAccessOf } from '../access/authorize.ts';
import type { Principal, UserPrincipal } from '../access/principal.ts';
import { newSecretKey } from '../applications/keys.ts';

const KEY_NOT_FOUND = 'API key not found';

export function statusOf(row: Pick<ApiKeyRow, 'revokedAt' | 'expiresAt'>, now = new Date()): TApiKeyStatus {
  if (row.revokedAt) {
    return 'revoked';
  }
  return row.expiresAt && row.expiresAt.getTime() <= now.getTime() ? 'expired' : 'active';
}

/** The safe view of a key row: never the hash (docs/architecture.md section 5). */
export function toApiKey(row: ApiKeyRow, now = new Date()): TApiKey {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes,
    secretPrefix: row.secretPrefix,
    status: statusOf(row, now),
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    rotatedAt: row.rotatedAt?.toISOString() ?? null,
    createdBy: row.createdByUserId,
  };
}

/**
 * The `{id}`-only routes: the key names its organization, which is then authorized. A key of an
 * organization the caller cannot see answers exactly like an unknown id (same code, same
 * message), so ids of other tenants cannot be probed. Their input is the id alone (no
 * `organization_slug`), so the organization is always the one the key claims.
 */
export const API_KEY_RECORD: RecordSource = { tenantOf: findApiKeyTenant, notFound: KEY_NOT_FOUND };

/** Access resolved for a signed-in person (the routes that hand out a secret: `userControlProcedure`). */
export type UserAccess = Access & { principal: UserPrincipal };

/** The key an `{id}` route names, in the organization its access resolved. */
function keyOf(db: Db, access: Access, input: TApiKeyActionRequest): Promise<ApiKeyRow> {
  return recordIn(db, access, findApiKey, input.id, KEY_NOT_FOUND);
}

export async function listApiKeys(db: Db, { organization }: Access, input: TListApiKeysRequest): Promise<TApiKeyPage> {
  const scope = `api_keys:${organization.id}`;
  const cursor = decodeCursor(scope, input.cursor);
  const rows = await listApiKeyRows(db, { tenantId: organization.id, limit: input.limit, cursor });
  const now = new Date();
  return toPage(scope, rows, input.limit, (row) => toApiKey(row, now));
}

/** GET /v1/api-keys/{id}: one key's metadata (never its secret); another organization's key is 404. */
export async function getApiKey(db: Db, access: Access, input: TApiKeyActionRequest): Promise<TApiKey> {
  return toApiKey(await keyOf(db, access, input), new Date());
}

/** Creates a key; its raw secret is in this answer and nowhere else, ever. Session callers only. */
export async function createApiKey(
  db: Db,
  access: UserAccess,
  request: RequestMeta,
  input: TCreateApiKeyRequest,
): Promise<TApiKeyWithSecret> {
  const { principal } = access;
  // Never more than the creator may do directly (admin-only scopes need an org admin); at use,
  // the key stays bounded by what its creator may do then.
  assertGrantable(access, input.scopes, 'you cannot create a key with scopes you may not use yourself');
  const { secretKey, secretKeyHash, secretKeyPrefix } = newSecretKey();
  return db.transaction(async (tx) => {
    // The creator's standing again, serialised with its removal or suspension (which revokes the
    // keys it finds): otherwise a key created while the person is being removed would be missed
    // by that revocation and come back to life when they return. Gone meanwhile: the 404 the
    // next request would get from authorize.
    const standing = await lockApiKeyCreatorStanding(tx, { userId: principal.user.id, tenantId: access.organization.id });
    if (!standing || !creatorAccessOf(standing)) {
      throw new AppError('not_found', 'organization not found');
    }
    const row = await insertApiKey(tx, {
      id: newId('apiKey'),
      tenantId: access.organization.id,
      name: input.name,
      scopes: input.scopes,
      secretHash: secretKeyHash,
      secretPrefix: secretKeyPrefix,
      createdByUserId: principal.user.id,
      expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
    });
    await recordAudit(tx, principal, request, {
      tenantId: row.tenantId,
      action: 'api_key.created',
      target: { type: 'api_key', id: row.id },
      summary: { name: row.name, scopes: row.scopes, expiresAt: row.expiresAt },
    });
    return { apiKey: toApiKey(row), secretKey };
  });
}

/**
 * A new secret for a live key, shown once; the old one stops authenticating when this commits
 * (every request reads the key row, on every process). A revoked or expired key: 409.
 */
export async function rotateApiKey(
  db: Db,
  access: UserAccess,
  request: RequestMeta,
  input: TApiKeyActionRequest,
): Promise<TApiKeyWithSecret> {
  const { principal } = access;
  const key = await keyOf(db, access, input);
  assertGrantable(access, key.scopes, 'you cannot rotate a key with scopes you may not use yourself');
  const { secretKey, secretKeyHash, secretKeyPrefix } = newSecretKey();
  const now = new Date();
  return db.transaction(async (tx) => {
    const row = await rotateApiKeySecret(tx, {
      tenantId: access.organization.id,
      id: key.id,
      secretHash: secretKeyHash,
      secretPrefix: secretKeyPrefix,
      now,
    });
    if (!row) {
      const current = await findApiKey(tx, { tenantId: access.organization.id, id: key.id });
      const status = current ? statusOf(current, now) : 'revoked';
      throw new AppError('conflict', `this API key is ${status}: create a new key instead`);
    }
    await recordAudit(tx, principal, request, {
      tenantId: row.tenantId,
      action: 'api_key.rotated',
      target: { type: 'api_key', id: row.id },
      summary: { name: row.name },
    });
    return { apiKey: toApiKey(row, now), secretKey };
  });
}

/**
 * Revokes a key: its next request is 401 on every process. Idempotent: revoking a revoked key
 * answers the key as it is (the first revocation time) and writes nothing, so a retried call
 * after a lost answer is safe.
 */
export async function revokeApiKey(db: Db, access: Access, request: RequestMeta, input: TApiKeyActionRequest): Promise<TApiKey> {
  const { principal } = access;
  const key = await keyOf(db, access, input);
  // A narrow caller cannot switch off a broader key (a key may always revoke itself).
  if (!(principal.kind === 'api_key' && principal.apiKey.id === key.id)) {
    assertGrantable(access, key.scopes, 'you cannot revoke a key with scopes you may not use yourself');
  }
  const now = new Date();
  return db.transaction(async (tx) => {
    const row = await revokeInTransaction(tx, principal, request, { tenantId: access.organization.id, id: key.id, now });
    if (!row) {
      const current = await findApiKey(tx, { tenantId: access.organization.id, id: key.id });
      if (!current) {
        throw new AppError('not_found', KEY_NOT_FOUND);
      }
      return toApiKey(current, now);
    }
    return toApiKey(row, now);
  });
}

/**
 * Why svc revoked a key on its own: its creator's standing where the key belongs ended. The
 * `reason` of the key's api_key.revoked audit entry and event.
 */
export type CreatorDeparture = 'membership_removed' | 'membership_suspended' | 'account_suspended' | 'platform_admin_left';

/**
 * The one revocation: marks the key revoked and records api_key.revoked (audit entry and webhook
 * event) in `tx`. Undefined, and nothing written, when the key is unknown or already revoked (a
 * concurrent revocation won: it wrote the entry).
 */
async function revokeInTransaction(
  tx: DbOrTx,
  principal: Principal | null,
  request: RequestMeta,
  opts: { tenantId: string; id: string; now: Date; reason?: CreatorDeparture },
): Promise<ApiKeyRow | undefined> {
  const row = await revokeApiKeyRow(tx, { tenantId: opts.tenantId, id: opts.id, now: opts.now });
  if (row) {
    await recordAudit(tx, principal, request, {
      tenantId: row.tenantId,
      action: 'api_key.revoked',
      target: { type: 'api_key', id: row.id },
      summary: { name: row.name, ...(opts.reason ? { reason: opts.reason } : {}) },
    });
  }
  return row;
}

/**
 * Revokes, in the caller's transaction, the keys `userId` created in `scope` because their
 * standing there just ended (`reason`). Such a key is void already (every request bounds a key by
 * what its creator may do now, access/principal.ts), but only while the standing stays ended:
 * re-invited and accepted, reactivated, or back in the platform admin group, the person would
 * bring it back to life. Revoked, it stays dead, and the key list says so at once. Each key is an
 * ordinary revocation (audit entry and api_key.revoked event, by `principal`, or by svc when null).
 * Returns how many were revoked.
 */
export async function revokeKeysOfCreator(
  tx: DbOrTx,
  principal: Principal | null,
  request: RequestMeta,
  opts: { userId: string; scope: CreatorKeysScope; reason: CreatorDeparture },
  now = new Date(),
): Promise<number> {
  let revoked = 0;
  for (const key of await listUnrevokedKeysOfCreator(tx, { userId: opts.userId, scope: opts.scope })) {
    if (await revokeInTransaction(tx, principal, request, { tenantId: key.tenantId, id: key.id, now, reason: opts.reason })) {
      revoked++;
    }
  }
  return revoked;
}
