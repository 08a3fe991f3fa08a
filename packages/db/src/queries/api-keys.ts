import { and, desc, eq, gt, isNotNull, isNull, or, type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import { type AnyPgColumn, alias } from 'drizzle-orm/pg-core';
import { type DbOrTx, leanRead } from '../client.ts';
import { type ExportSection, exportField, exportSqlText } from '../export-section.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { apiKeys } from '../schema/api-keys.ts';
import { productRoles } from '../schema/authorization.ts';
import { memberships, users } from '../schema/identity.ts';
import { organizations } from '../schema/organizations.ts';
import { roles } from '../schema/roles.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/**
 * What authenticating a request with a tenant API key reads of the key: who it is, where it
 * belongs, what it may do, whether it is live, and whose standing bounds it. Nothing else (no
 * secret hash, no usage or audit timestamps): this read runs on every request a key makes.
 */
const credentialColumns = {
  id: apiKeys.id,
  tenantId: apiKeys.tenantId,
  name: apiKeys.name,
  scopes: apiKeys.scopes,
  createdByUserId: apiKeys.createdByUserId,
  expiresAt: apiKeys.expiresAt,
  revokedAt: apiKeys.revokedAt,
};

export type ApiKeyCredential = Pick<ApiKeyRow, keyof typeof credentialColumns>;

/** The key whose secret hashes to this value, revoked or not (callers decide). */
export function prepareFindApiKeyBySecretHash(db: DbOrTx): (secretHash: string) => Promise<ApiKeyCredential | undefined> {
  const query = db
    .select(credentialColumns)
    .from(apiKeys)
    .where(eq(apiKeys.secretHash, sql.placeholder('secretHash')))
    .limit(1)
    .prepare('svc_find_api_key');
  const read = leanRead<ApiKeyCredential>(query, credentialColumns);
  return (secretHash) => read.first({ secretHash });
}

/**
 * Where a key's creator stands now: what a key may do is bounded by it on every request.
 * `roleKey` is the creator's role in the key's organization (null: not a member there);
 * `rolePermissions` are that role's permissions when it is a custom role; `isPlatformAdmin` says
 * the creator is an org admin of the platform workspace.
 */
export type ApiKeyCreatorStanding = {
  status: 'active' | 'suspended';
  roleKey: string | null;
  rolePermissions: string[] | null;
  /** The role key is a product role of the platform (not a built-in one's product row). */
  isProductRole: boolean;
  isPlatformAdmin: boolean;
};

/**
 * The memberships that give a person standing in an organization. Every membership read below
 * goes through this one predicate, so a membership state that must not count (an invitation not
 * yet accepted, a suspension within the organization) is excluded here, once.
 */
function countingMembership(
  m: { userId: AnyPgColumn; tenantId: AnyPgColumn; status: AnyPgColumn },
  userId: SQLWrapper,
  tenantId: SQLWrapper,
): SQL {
  return sql`(${m.userId} = ${userId} and ${m.tenantId} = ${tenantId} and ${m.status} = 'active')`;
}

const platformMemberships = alias(memberships, 'platform_memberships');
const platformOrganizations = alias(organizations, 'platform_organizations');

/**
 * The read of a creator's standing, over placeholders (the prepared per-request read) or values
 * (a read inside a transaction): one statement, so both ask exactly the same question.
 */
function creatorStandingQuery(db: DbOrTx, userId: SQLWrapper, tenantId: SQLWrapper) {
  const platformAdmin = db
    .select({ one: sql`1` })
    .from(platformMemberships)
    .innerJoin(platformOrganizations, eq(platformOrganizations.id, platformMemberships.tenantId))
    .where(
      and(
        countingMembership(platformMemberships, users.id, platformOrganizations.id),
        eq(platformOrganizations.kind, 'platform'),
        eq(platformMemberships.roleKey, 'org_admin'),
      ),
    );
  const fields = {
    status: users.status,
    roleKey: memberships.roleKey,
    rolePermissions: roles.permissions,
    isProductRole: sql<boolean>`exists (select 1 from ${productRoles} where ${productRoles.key} = ${memberships.roleKey} and not ${productRoles.builtin})`,
    isPlatformAdmin: sql<boolean>`exists (${platformAdmin})`,
  };
  const query = db
    .select(fields)
    .from(users)
    .leftJoin(memberships, countingMembership(memberships, users.id, tenantId))
    .leftJoin(roles, and(eq(roles.tenantId, tenantId), eq(roles.key, memberships.roleKey)))
    .where(eq(users.id, userId))
    .limit(1);
  return { query, fields };
}

/**
 * Reads a key creator's standing in the key's organization: one indexed read (users by id, the
 * membership by (tenant, user), the custom role by (tenant, key), and an existence probe of a
 * platform workspace membership). Undefined when the user no longer exists.
 */
export function prepareFindApiKeyCreatorStanding(
  db: DbOrTx,
): (opts: { userId: string; tenantId: string }) => Promise<ApiKeyCreatorStanding | undefined> {
  const { query, fields } = creatorStandingQuery(db, sql.placeholder('userId'), sql.placeholder('tenantId'));
  return leanRead<ApiKeyCreatorStanding>(query.prepare('svc_find_api_key_creator'), fields).first;
}

/**
 * A would-be key creator's standing in `tenantId`, read inside the transaction that creates the
 * key, after taking a share lock on the person's users row. Every change that ends a standing
 * writes that row in its transaction (a membership's insert, update or delete bumps
 * users.memberships_version by trigger; an account suspension sets users.status), so the two
 * serialise: a change already made is seen here (READ COMMITTED reads it once it commits), and a
 * change made after waits for the key to commit and then finds it to revoke. Undefined when the
 * user no longer exists.
 */
export async function lockApiKeyCreatorStanding(
  tx: DbOrTx,
  opts: { userId: string; tenantId: string },
): Promise<ApiKeyCreatorStanding | undefined> {
  await tx.execute(sql`select 1 from ${users} where ${users.id} = ${opts.userId} for share`);
  const { query } = creatorStandingQuery(tx, sql`${opts.userId}`, sql`${opts.tenantId}`);
  const [row] = await query;
  return row;
}

/**
 * Records when keys were last used, many at once: `used` maps key id to time. Never moves a
 * time backwards (two processes flushing out of order).
 */
export async function recordApiKeysUsed(db: DbOrTx, used: Map<string, Date>): Promise<void> {
  if (used.size === 0) {
    return;
  }
  const rows = [...used].map(([id, at]) => ({ id, at: at.toISOString() }));
  await db.execute(sql`
    update ${apiKeys} set last_used_at = u.at
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as u(id text, at timestamptz)
    where ${apiKeys.id} = u.id and (${apiKeys.lastUsedAt} is null or ${apiKeys.lastUsedAt} < u.at)`);
}

export async function findApiKey(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, opts.tenantId), eq(apiKeys.id, opts.id)))
    .limit(1);
  return row;
}

/**
 * The organization an API key belongs to, by an id from the request (the `{id}`-only routes):
 * the one read without a tenant predicate, because it is how the tenant is learnt. The caller
 * authorizes against that tenant before reading or changing anything of the key.
 */
export async function findApiKeyTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db.select({ tenantId: apiKeys.tenantId }).from(apiKeys).where(eq(apiKeys.id, opts.untrustedId)).limit(1);
  return row?.tenantId;
}

/** One page of an organization's keys, newest first (`limit + 1` rows: the extra says "more"). */
export async function listApiKeys(db: DbOrTx, opts: { tenantId: string; limit: number; cursor?: Cursor }): Promise<ApiKeyRow[]> {
  return db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, opts.tenantId), afterCursor(apiKeys.createdAt, apiKeys.id, opts.cursor)))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
    .limit(opts.limit + 1);
}

export async function insertApiKey(db: DbOrTx, values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
  const [row] = await db.insert(apiKeys).values(values).returning();
  if (!row) {
    throw new Error('api key insert returned nothing');
  }
  return row;
}

/**
 * A key that is live at `now` (a time, or SQL such as `now()`): not revoked, not expired; the
 * `active` of modules/api-keys statusOf. Over `apiKeys` or an alias of it.
 */
function liveKey(k: { revokedAt: AnyPgColumn; expiresAt: AnyPgColumn }, now: Date | SQL): SQL | undefined {
  return and(isNull(k.revokedAt), or(isNull(k.expiresAt), gt(k.expiresAt, now)));
}

/** A key's status as one SQL value (the export's `status`), by liveKey. */
function apiKeyStatusSql(k: { revokedAt: AnyPgColumn; expiresAt: AnyPgColumn }, now: SQL): SQL {
  return sql`case when ${isNotNull(k.revokedAt)} then 'revoked' when not ${liveKey(k, now)} then 'expired' else 'active' end`;
}

/**
 * Replaces the secret of a live key (not revoked, not expired at `now`); undefined when there is
 * no such live key. The old hash is overwritten in the same statement, so the old secret stops
 * authenticating with this commit.
 */
export async function rotateApiKeySecret(
  db: DbOrTx,
  opts: { tenantId: string; id: string; secretHash: string; secretPrefix: string; now: Date },
): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ secretHash: opts.secretHash, secretPrefix: opts.secretPrefix, rotatedAt: opts.now })
    .where(and(eq(apiKeys.tenantId, opts.tenantId), eq(apiKeys.id, opts.id), liveKey(apiKeys, opts.now)))
    .returning();
  return row;
}

/**
 * Where a person's keys are revoked because their standing there ended (modules/api-keys
 * revokeKeysOfCreator): one organization (its membership was removed or suspended), every
 * organization (their account was suspended), or every organization where they hold no active
 * membership now (they left the platform admin group, which let them act anywhere).
 */
export type CreatorKeysScope = { tenantId: string } | 'all_organizations' | 'organizations_not_active_in';

/**
 * The keys `userId` created in `scope` that are not revoked yet, oldest first. For one
 * organization the tenant predicate leads; the other scopes read across organizations by the
 * creator, which is the question asked (what did this person create, anywhere). Each key found is
 * then revoked by (tenant, id), so every write keeps its tenant predicate.
 */
export async function listUnrevokedKeysOfCreator(
  db: DbOrTx,
  opts: { userId: string; scope: CreatorKeysScope },
): Promise<{ id: string; tenantId: string }[]> {
  const { scope } = opts;
  return db
    .select({ id: apiKeys.id, tenantId: apiKeys.tenantId })
    .from(apiKeys)
    .where(
      and(
        typeof scope === 'object' ? eq(apiKeys.tenantId, scope.tenantId) : undefined,
        eq(apiKeys.createdByUserId, opts.userId),
        isNull(apiKeys.revokedAt),
        scope === 'organizations_not_active_in'
          ? sql`not exists (select 1 from ${memberships} where ${countingMembership(memberships, apiKeys.createdByUserId, apiKeys.tenantId)})`
          : undefined,
      ),
    )
    .orderBy(apiKeys.createdAt, apiKeys.id);
}

/** Marks a key revoked; undefined when it is unknown or already revoked (the first time stays). */
export async function revokeApiKey(db: DbOrTx, opts: { tenantId: string; id: string; now: Date }): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: opts.now })
    .where(and(eq(apiKeys.tenantId, opts.tenantId), eq(apiKeys.id, opts.id), isNull(apiKeys.revokedAt)))
    .returning();
  return row;
}

/**
 * In an export (queries/exports.ts): the organization's API keys; never the secret hashes or their
 * `sk_live_` display prefixes.
 */
export const apiKeysExportSection: ExportSection = {
  key: 'apiKeys',
  resource: 'api_key',
  shape: 'many',
  source: 'snapshot',
  from: 'api_keys t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('name', 't.name'),
    exportField.json('scopes', 't.scopes'),
    // Not revoked and not live is expired (liveKey), at the snapshot's instant.
    exportField.text('status', exportSqlText(apiKeyStatusSql(alias(apiKeys, 't'), sql`now()`))),
    exportField.text('createdByUserId', 't.created_by_user_id'),
    exportField.time('expiresAt', 't.expires_at'),
    exportField.time('revokedAt', 't.revoked_at'),
    exportField.time('lastUsedAt', 't.last_used_at'),
    exportField.time('rotatedAt', 't.rotated_at'),
    exportField.time('createdAt', 't.created_at'),
  ],
};
