import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
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
