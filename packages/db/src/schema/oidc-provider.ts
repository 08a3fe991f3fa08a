import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/**
 * Everything svc's OpenID Provider (oidc-provider) persists, one row per artifact: sessions,
 * interactions, authorization codes, refresh tokens, grants, replay detection, pushed requests.
 * Keyed by the provider's model name and the artifact's id; any API process serves any step.
 * Not tenant-owned: an artifact belongs to a client (an application) and a person, both inside the
 * payload, and every lookup is by an unguessable id the provider issued.
 */
export const oidcPayloads = pgTable(
  'oidc_payloads',
  {
    /** oidc-provider's model name (`Session`, `AuthorizationCode`, `RefreshToken`, ...). */
    model: text('model').notNull(),
    /** The artifact's id (for tokens: the value's identifier, never a hash of anything secret). */
    id: text('id').notNull(),
    /** What the provider handed to `upsert`, as is. */
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    /** The grant the artifact belongs to (revokeByGrantId). */
    grantId: text('grant_id'),
    /** Sessions: the browser-facing uid (findByUid). */
    uid: text('uid'),
    /** Device codes: the code the person types (findByUserCode). */
    userCode: text('user_code'),
    /** Past this the artifact does not exist (find answers nothing; the prune job deletes it). */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    /** Set once by `consume` (authorization codes, rotated refresh tokens). */
    consumedAt: timestamp('consumed_at', { withTimezone: true, mode: 'date' }),
    /**
     * Grants of third-party clients: when a token was last issued under the grant or one of its
     * tokens called svc's MCP server, to the minute (connected-apps/last-used.ts); null: never since.
     */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    primaryKey({ columns: [t.model, t.id] }),
    index('oidc_payloads_uid_idx').on(t.model, t.uid).where(sql`${t.uid} is not null`),
    index('oidc_payloads_user_code_idx').on(t.model, t.userCode).where(sql`${t.userCode} is not null`),
    index('oidc_payloads_grant_idx').on(t.grantId).where(sql`${t.grantId} is not null`),
    index('oidc_payloads_expires_idx').on(t.expiresAt).where(sql`${t.expiresAt} is not null`),
  ],
);

/**
 * The OpenID Provider's signing keys. The private key is AES-256-GCM sealed with
 * SVC_ENCRYPTION_KEY (bound to the row's kid); the public JWK is what JWKS publishes. Exactly one
 * key is current (unique index); a superseded key stays published until every token it signed
 * has expired.
 */
export const oidcSigningKeys = pgTable(
  'oidc_signing_keys',
  {
    /** Key id (`kid` in token headers and the JWKS). */
    kid: text('kid').primaryKey(),
    /** JWS algorithm: RS256 or ES256. */
    alg: text('alg').notNull(),
    /** The private JWK, sealed (secret-box `v1.` format, context `oidc_signing_keys:<kid>`). */
    privateKeyCiphertext: text('private_key_ciphertext').notNull(),
    /** The public JWK (kty, n/e or crv/x/y), without kid, alg and use. */
    publicJwk: jsonb('public_jwk').$type<Record<string, string>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    /** When a newer key became current; null for the current key. */
    supersededAt: timestamp('superseded_at', { withTimezone: true, mode: 'date', precision: 3 }),
  },
  (t) => [uniqueIndex('oidc_signing_keys_one_current_key').on(sql`(${t.supersededAt} is null)`).where(sql`${t.supersededAt} is null`)],
);
