import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { apiKeys } from '../schema/api-keys.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** The key whose secret hashes to this value, revoked or not (callers decide). */
export function prepareFindApiKeyBySecretHash(db: DbOrTx): (secretHash: string) => Promise<ApiKeyRow | undefined> {
  const query = db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.secretHash, sql.placeholder('secretHash')))
    .limit(1)
    .prepare('svc_find_api_key');
  return async (secretHash) => (await query.execute({ secretHash }))[0];
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
    .where(
      and(
        eq(apiKeys.tenantId, opts.tenantId),
        eq(apiKeys.id, opts.id),
        isNull(apiKeys.revokedAt),
        or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, opts.now)),
      ),
    )
    .returning();
  return row;
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
