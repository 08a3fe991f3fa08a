import { and, desc, eq, gt, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../client.ts';
import { oidcPayloads, oidcSigningKeys } from '../schema/oidc-provider.ts';
import type { SecretBox } from '../secret-box.ts';

// oidc-provider's artifacts are found by the ids it issued (unguessable, not tenant-scoped): no
// statement here has a tenant predicate, and none needs one.

export type OidcPayloadRow = typeof oidcPayloads.$inferSelect;
export type OidcSigningKeyRow = typeof oidcSigningKeys.$inferSelect;

/** PostgreSQL channel notified (with the new kid) when the signing keys change. */
export const OIDC_KEYS_CHANGED_CHANNEL = 'svc_oidc_keys_changed';

/** A live (unexpired) artifact, or expired when `now` is past it: the adapter treats that as absent. */
const live = (now: Date) => or(isNull(oidcPayloads.expiresAt), gt(oidcPayloads.expiresAt, now));

export async function upsertOidcPayload(db: DbOrTx, values: Omit<typeof oidcPayloads.$inferInsert, 'consumedAt'>): Promise<void> {
  await db
    .insert(oidcPayloads)
    .values(values)
    .onConflictDoUpdate({
      target: [oidcPayloads.model, oidcPayloads.id],
      // An upsert replaces the artifact (the provider re-saves sessions and interactions);
      // a consumption already recorded stays recorded.
      set: {
        payload: values.payload,
        grantId: values.grantId ?? null,
        uid: values.uid ?? null,
        userCode: values.userCode ?? null,
        expiresAt: values.expiresAt ?? null,
      },
    });
}

export async function findOidcPayload(db: DbOrTx, opts: { model: string; id: string; now: Date }): Promise<OidcPayloadRow | undefined> {
  const [row] = await db
    .select()
    .from(oidcPayloads)
    .where(and(eq(oidcPayloads.model, opts.model), eq(oidcPayloads.id, opts.id), live(opts.now)))
    .limit(1);
  return row;
}

export async function findOidcPayloadByUid(
  db: DbOrTx,
  opts: { model: string; uid: string; now: Date },
): Promise<OidcPayloadRow | undefined> {
  const [row] = await db
    .select()
    .from(oidcPayloads)
    .where(and(eq(oidcPayloads.model, opts.model), eq(oidcPayloads.uid, opts.uid), live(opts.now)))
    .limit(1);
  return row;
}

export async function findOidcPayloadByUserCode(
  db: DbOrTx,
  opts: { model: string; userCode: string; now: Date },
): Promise<OidcPayloadRow | undefined> {
  const [row] = await db
    .select()
    .from(oidcPayloads)
    .where(and(eq(oidcPayloads.model, opts.model), eq(oidcPayloads.userCode, opts.userCode), live(opts.now)))
    .limit(1);
  return row;
}

/** Marks the artifact consumed; the first consumption's time is kept. */
export async function consumeOidcPayload(db: DbOrTx, opts: { model: string; id: string; now: Date }): Promise<void> {
  await db
    .update(oidcPayloads)
    .set({ consumedAt: sql`coalesce(${oidcPayloads.consumedAt}, ${opts.now.toISOString()}::timestamptz)` })
    .where(and(eq(oidcPayloads.model, opts.model), eq(oidcPayloads.id, opts.id)));
}

export async function destroyOidcPayload(db: DbOrTx, opts: { model: string; id: string }): Promise<void> {
  await db.delete(oidcPayloads).where(and(eq(oidcPayloads.model, opts.model), eq(oidcPayloads.id, opts.id)));
}

/** Every artifact of the grant, whatever its model (codes, refresh tokens, the grant itself). */
export async function revokeOidcPayloadsByGrantId(db: DbOrTx, grantId: string): Promise<number> {
  const result = await db.delete(oidcPayloads).where(eq(oidcPayloads.grantId, grantId));
  return result.count;
}

export async function pruneOidcPayloads(db: DbOrTx, before: Date): Promise<number> {
  const result = await db.delete(oidcPayloads).where(and(isNotNull(oidcPayloads.expiresAt), lt(oidcPayloads.expiresAt, before)));
  return result.count;
}

/**
 * Deletes the clients dynamic client registration made (`Client` rows, ids `dcr_...`) that no token
 * was issued to since `unusedBefore` (last_used_at, else when they registered), with their grants
 * and everything issued under those grants. Returns the ids deleted.
 */
export async function pruneUnusedRegisteredClients(db: DbOrTx, unusedBefore: Date): Promise<string[]> {
  const rows = await db.execute<{ id: string }>(sql`
    with gone as (
      delete from oidc_payloads
       where model = 'Client' and starts_with(id, 'dcr_')
         and coalesce(last_used_at, to_timestamp((payload->>'client_id_issued_at')::double precision)) < ${unusedBefore.toISOString()}::timestamptz
      returning id
    ), grants as (
      delete from oidc_payloads where model = 'Grant' and payload->>'clientId' in (select id from gone) returning id
    ), issued as (
      delete from oidc_payloads where grant_id in (select id from grants) returning id
    )
    select id from gone`);
  return [...rows].map((r) => r.id);
}

/** A client dynamic client registration made, as stored: its metadata without the secret's hash. */
export type RegisteredClientRow = { id: string; metadata: Record<string, unknown>; registeredAt: Date; lastUsedAt: Date | null };

/** The clients dynamic client registration made, newest first (their secret's hash left out). */
export async function listRegisteredClients(db: DbOrTx, opts: { limit: number }): Promise<RegisteredClientRow[]> {
  const rows = await db.execute<{ id: string; payload: Record<string, unknown>; registered_at: string; last_used_at: string | null }>(sql`
    select id, payload - 'client_secret' as payload,
           to_timestamp((payload->>'client_id_issued_at')::double precision) as registered_at, last_used_at
      from oidc_payloads where model = 'Client' and starts_with(id, 'dcr_')
     order by registered_at desc limit ${opts.limit}`);
  return [...rows].map((r) => ({
    id: r.id,
    metadata: r.payload,
    registeredAt: new Date(r.registered_at),
    lastUsedAt: r.last_used_at === null ? null : new Date(r.last_used_at),
  }));
}

/** The current key and every key superseded after `publishedSince` (newest first). */
export async function listPublishedSigningKeys(db: DbOrTx, publishedSince: Date): Promise<OidcSigningKeyRow[]> {
  return db
    .select()
    .from(oidcSigningKeys)
    .where(or(isNull(oidcSigningKeys.supersededAt), gt(oidcSigningKeys.supersededAt, publishedSince)))
    .orderBy(desc(oidcSigningKeys.createdAt));
}

/**
 * Serializes key creation across processes (a transaction-scoped advisory lock): two processes
 * starting at once, or a rotation racing a start, never create two current keys.
 */
export async function lockSigningKeys(tx: Tx): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('svc:oidc_signing_keys'))`);
}

export async function findCurrentSigningKey(db: DbOrTx): Promise<OidcSigningKeyRow | undefined> {
  const [row] = await db.select().from(oidcSigningKeys).where(isNull(oidcSigningKeys.supersededAt)).limit(1);
  return row;
}

/**
 * Makes `key` the current key: the previous one is superseded now (it stays published for the
 * retirement window), and every process hears it on OIDC_KEYS_CHANGED_CHANNEL at commit.
 */
export async function insertCurrentSigningKey(
  tx: Tx,
  key: Omit<typeof oidcSigningKeys.$inferInsert, 'supersededAt' | 'createdAt'>,
  now: Date,
): Promise<void> {
  await tx.update(oidcSigningKeys).set({ supersededAt: now }).where(isNull(oidcSigningKeys.supersededAt));
  await tx.insert(oidcSigningKeys).values({ ...key, createdAt: now });
  await tx.execute(sql`select pg_notify(${OIDC_KEYS_CHANGED_CHANNEL}, ${key.kid})`);
}

/** Deletes keys superseded before `before` (no token they signed is still valid). */
export async function pruneSigningKeys(db: DbOrTx, before: Date): Promise<number> {
  const result = await db.delete(oidcSigningKeys).where(lt(oidcSigningKeys.supersededAt, before));
  return result.count;
}

/**
 * Ends grants and everything issued under them (codes, access and refresh tokens): every grant of
 * an application (it was disabled), or a person's grants that spoke for an organization and
 * those of the organization's members-only applications (their membership there ended). A grant
 * is a `Grant` artifact whose payload names the client, the account and, with scope
 * `organization`, the organization (provider.ts). Returns how many artifacts went.
 */
export async function revokeOidcGrants(
  db: DbOrTx,
  of: { clientId: string } | { accountId: string; organizationId: string },
): Promise<number> {
  const grants =
    'clientId' in of
      ? sql`select id from oidc_payloads where model = 'Grant' and payload->>'clientId' = ${of.clientId}`
      : sql`select id from oidc_payloads where model = 'Grant' and payload->>'accountId' = ${of.accountId}
              and (payload->'organization'->>'id' = ${of.organizationId}
                or payload->>'clientId' in (select a.id from applications a
                                            where a.tenant_id = ${of.organizationId} and a.sign_in_audience = 'members'))`;
  const rows = await db.execute(sql`
    with g as (${grants})
    delete from oidc_payloads p
    where (p.grant_id in (select id from g)) or (p.model = 'Grant' and p.id in (select id from g))
    returning 1`);
  return rows.length;
}

/** A signing key as oidc-provider and the back-channel logout sender take it: the private JWK with kid, alg and use. */
export type OpenedSigningKey = Record<string, unknown> & { kid: string; alg: string; use: 'sig' };

/** The context a signing key's private JWK is sealed under (bound to its kid). */
export function signingKeySealContext(kid: string): string {
  return `oidc_signing_keys:${kid}`;
}

/** Opens a stored signing key with SVC_ENCRYPTION_KEY. */
export function openSigningKey(secretBox: SecretBox, row: OidcSigningKeyRow): OpenedSigningKey {
  const jwk = JSON.parse(secretBox.open(row.privateKeyCiphertext, signingKeySealContext(row.kid))) as Record<string, unknown>;
  return { ...jwk, kid: row.kid, alg: row.alg, use: 'sig' };
}
