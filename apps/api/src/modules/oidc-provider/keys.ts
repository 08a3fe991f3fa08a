import { randomBytes } from 'node:crypto';
import type { Db } from '@svc/db/client';
import {
  findCurrentSigningKey,
  insertCurrentSigningKey,
  listPublishedSigningKeys,
  lockSigningKeys,
  openSigningKey,
  signingKeySealContext,
} from '@svc/db/queries/oidc-provider';
import type { SecretBox } from '@svc/db/secret-box';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { MAX_SIGNED_TOKEN_TTL_SECONDS } from './ttl.ts';

export const SIGNING_ALGS = ['RS256', 'ES256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/**
 * How long a superseded key stays in the JWKS: the longest lifetime of a token it signed (ID and
 * access tokens), plus room for clock skew and for a process that hears of the rotation late.
 */
export const RETIRED_KEY_PUBLISHED_SECONDS = MAX_SIGNED_TOKEN_TTL_SECONDS + 5 * 60;

/** A signing key as oidc-provider takes it: the private JWK with kid, alg and use. */
export type SigningJwk = JWK & { kid: string; alg: SigningAlg; use: 'sig' };

async function newKey(secretBox: SecretBox, alg: SigningAlg) {
  const kid = randomBytes(16).toString('base64url');
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
  const privateJwk = await exportJWK(privateKey);
  const publicJwk = (await exportJWK(publicKey)) as Record<string, string>;
  return { kid, alg, privateKeyCiphertext: secretBox.seal(JSON.stringify(privateJwk), signingKeySealContext(kid)), publicJwk };
}

/**
 * The current key, created when there is none (first start) or when OIDC_SIGNING_ALG names
 * another algorithm than the current key's (then the old key is superseded like a rotation).
 * Under a transaction-scoped advisory lock: processes starting together create one key.
 */
export async function ensureCurrentSigningKey(db: Db, secretBox: SecretBox, alg: SigningAlg): Promise<string> {
  return db.transaction(async (tx) => {
    await lockSigningKeys(tx);
    const current = await findCurrentSigningKey(tx);
    if (current && current.alg === alg) {
      return current.kid;
    }
    const key = await newKey(secretBox, alg);
    await insertCurrentSigningKey(tx, key, new Date());
    return key.kid;
  });
}

/**
 * `svc keys rotate`: a new current key; the previous one signs nothing more and stays published
 * for RETIRED_KEY_PUBLISHED_SECONDS. Every API process reloads its keys on the NOTIFY.
 */
export async function rotateSigningKey(
  db: Db,
  secretBox: SecretBox,
  alg: SigningAlg,
): Promise<{ kid: string; previousKid: string | undefined; alg: SigningAlg }> {
  return db.transaction(async (tx) => {
    await lockSigningKeys(tx);
    const previous = await findCurrentSigningKey(tx);
    const key = await newKey(secretBox, alg);
    await insertCurrentSigningKey(tx, key, new Date());
    return { kid: key.kid, previousKid: previous?.kid, alg };
  });
}

/** The keys to sign with (the current one first) and publish, opened with SVC_ENCRYPTION_KEY. */
export async function loadSigningKeys(db: Db, secretBox: SecretBox, now = new Date()): Promise<SigningJwk[]> {
  const rows = await listPublishedSigningKeys(db, new Date(now.getTime() - RETIRED_KEY_PUBLISHED_SECONDS * 1000));
  const ordered = [...rows.filter((r) => r.supersededAt === null), ...rows.filter((r) => r.supersededAt !== null)];
  return ordered.map((row) => openSigningKey(secretBox, row) as SigningJwk);
}
