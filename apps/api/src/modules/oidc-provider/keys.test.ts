import { randomBytes } from 'node:crypto';
import { createDatabase, type Database } from '@svc/db/client';
import { createSecretBox } from '@svc/db/secret-box';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { ensureCurrentSigningKey, loadSigningKeys, RETIRED_KEY_PUBLISHED_SECONDS, rotateSigningKey } from './keys.ts';

/** Signing keys in PostgreSQL: one current key, sealed, rotated, retired with time. */
describe('OpenID Provider signing keys', () => {
  let database: Database;
  const secretBox = createSecretBox(randomBytes(32));

  beforeAll(async () => {
    database = createDatabase({ url: await createTestDatabase(), max: 10, applicationName: 'svc-test-oidc-keys' });
  });

  afterAll(async () => {
    await database?.close();
  });

  const rows = () =>
    database.sql<{ kid: string; alg: string; private_key_ciphertext: string; current: boolean }[]>`
      select kid, alg, private_key_ciphertext, superseded_at is null as current from oidc_signing_keys order by created_at`;

  it('processes starting together create one current key, and each of them gets that key', async () => {
    const kids = await Promise.all(Array.from({ length: 8 }, () => ensureCurrentSigningKey(database.db, secretBox, 'RS256')));
    const stored = await rows();
    expect(stored).toHaveLength(1);
    expect(new Set(kids)).toEqual(new Set([stored[0]?.kid]));
  });

  it('the private key is stored sealed: the ciphertext holds none of the JWK, and another key cannot open it', async () => {
    const [key] = await loadSigningKeys(database.db, secretBox);
    const [row] = await rows();
    expect(key?.d).toBeDefined();
    expect(row?.private_key_ciphertext).toMatch(/^v1\./);
    expect(row?.private_key_ciphertext).not.toContain(key?.d as string);
    await expect(loadSigningKeys(database.db, createSecretBox(randomBytes(32)))).rejects.toThrow(/does not open/);
  });

  it('rotation makes a new current key and keeps publishing the previous one; a restart keeps both', async () => {
    const before = (await rows())[0]?.kid as string;
    const rotated = await rotateSigningKey(database.db, secretBox, 'RS256');
    expect(rotated.previousKid).toBe(before);
    expect(await ensureCurrentSigningKey(database.db, secretBox, 'RS256')).toBe(rotated.kid);
    const loaded = await loadSigningKeys(database.db, secretBox);
    expect(loaded.map((k) => k.kid)).toEqual([rotated.kid, before]);
    expect((await rows()).filter((r) => r.current).map((r) => r.kid)).toEqual([rotated.kid]);
  });

  it('a superseded key leaves the published set once every token it signed has expired', async () => {
    const current = (await loadSigningKeys(database.db, secretBox))[0]?.kid as string;
    const justPast = new Date(Date.now() + RETIRED_KEY_PUBLISHED_SECONDS * 1000 + 1_000);
    expect((await loadSigningKeys(database.db, secretBox, justPast)).map((k) => k.kid)).toEqual([current]);
  });

  it('OIDC_SIGNING_ALG=ES256 makes an ES256 key current at the next start, the RSA keys still published', async () => {
    const kid = await ensureCurrentSigningKey(database.db, secretBox, 'ES256');
    const loaded = await loadSigningKeys(database.db, secretBox);
    expect(loaded[0]).toMatchObject({ kid, alg: 'ES256', kty: 'EC', crv: 'P-256', use: 'sig' });
    expect(loaded.slice(1).every((k) => k.alg === 'RS256')).toBe(true);
    expect(await ensureCurrentSigningKey(database.db, secretBox, 'ES256')).toBe(kid);
  });

  it('the database itself refuses a second current key', async () => {
    await expect(
      database.sql`insert into oidc_signing_keys (kid, alg, private_key_ciphertext, public_jwk) values ('x', 'RS256', 'v1.a.b.c', '{}')`,
    ).rejects.toThrow(/oidc_signing_keys_one_current_key/);
  });
});
