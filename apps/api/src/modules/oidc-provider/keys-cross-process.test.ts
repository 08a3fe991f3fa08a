import { randomBytes } from 'node:crypto';
import { createDatabase, type Database } from '@svc/db/client';
import { createSecretBox } from '@svc/db/secret-box';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { runCli, type SpawnedServer, spawnServer } from '../../../../../test/support/spawn.ts';

/** The README's figure: a change takes effect on every API process within one second. */
const PROPAGATION_BUDGET_MS = 1_000;

/**
 * The OpenID Provider's signing keys across real `svc serve` processes on one database: created
 * once when two start together, rotated by `svc keys rotate` on every process within a second,
 * kept across a restart, and never shown anywhere in their private form.
 */
describe('OpenID Provider signing keys across processes', () => {
  const encryptionKey = randomBytes(32).toString('base64');
  let databaseUrl: string;
  let database: Database;
  let env: Record<string, string>;
  let a: SpawnedServer;
  let b: SpawnedServer;
  /** Every HTTP body and CLI output of this file, scanned for private key material at the end. */
  const seen: string[] = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    // LOG_LEVEL=debug: the secret scan reads every log line the processes write.
    env = { DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: encryptionKey, LOG_LEVEL: 'debug' };
    [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
    database = createDatabase({ url: databaseUrl, max: 1, applicationName: 'svc-test-oidc-keys' });
  }, 120_000);

  afterAll(async () => {
    await database?.close();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  async function kidsOf(s: SpawnedServer): Promise<string[]> {
    const res = await fetch(`${s.url}/oidc/jwks`);
    const text = await res.text();
    seen.push(text);
    return (JSON.parse(text) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
  }

  async function storedKids(): Promise<{ kid: string; current: boolean }[]> {
    return database.sql<{ kid: string; current: boolean }[]>`
      select kid, superseded_at is null as current from oidc_signing_keys order by created_at`;
  }

  it('two processes starting at once create one key, and both publish it', async () => {
    const stored = await storedKids();
    expect(stored).toHaveLength(1);
    expect(await kidsOf(a)).toEqual([stored[0]?.kid]);
    expect(await kidsOf(b)).toEqual([stored[0]?.kid]);
  });

  it('openid-client discovers the same issuer and JWKS on either process', async () => {
    for (const s of [a, b]) {
      const config = await oidc.discovery(new URL(s.url), 'app_00000000000000000000', undefined, oidc.None(), {
        execute: [oidc.allowInsecureRequests],
      });
      expect(config.serverMetadata().issuer).toBe(s.url);
      seen.push(JSON.stringify(config.serverMetadata()));
    }
  });

  it('svc keys rotate: both processes publish the new and the previous key within a second', async () => {
    const [before] = await storedKids();
    const rotated = await runCli(['keys', 'rotate', '--json'], env);
    seen.push(rotated.stdout, rotated.stderr);
    expect(rotated.code, rotated.stderr).toBe(0);
    const done = Date.now();
    const out = JSON.parse(rotated.stdout) as { kid: string; previousKid: string; alg: string };
    expect(out).toMatchObject({ previousKid: before?.kid, alg: 'RS256' });
    const want = [out.kid, before?.kid];
    for (const s of [a, b]) {
      await expect.poll(() => kidsOf(s), { timeout: PROPAGATION_BUDGET_MS, interval: 20 }).toEqual(want);
    }
    expect(Date.now() - done).toBeLessThan(PROPAGATION_BUDGET_MS);
    const human = await runCli(['keys', 'rotate'], env);
    seen.push(human.stdout, human.stderr);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      /^new RS256 signing key \S+ is current; \S+ stays published for [\d.]+ h, until the tokens it signed have expired\n$/,
    );
  });

  it('keys survive a restart: the restarted process publishes the same keys', async () => {
    const before = await kidsOf(a);
    await a.stop();
    seen.push(a.output());
    a = await spawnServer(env);
    expect(await kidsOf(a)).toEqual(before);
    expect((await storedKids()).filter((k) => k.current)).toHaveLength(1);
  });

  it('svc keys with a wrong command is one line naming the command', async () => {
    const r = await runCli(['keys', 'frobnicate'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('svc: unknown keys command frobnicate (keys rotate; svc help shows the usage)\n');
  });

  it('no private key part appears in any HTTP answer, log line or CLI output', async () => {
    // What an attacker would look for: the private JWK members of every key, opened the way svc opens them.
    const box = createSecretBox(Buffer.from(encryptionKey, 'base64'));
    const rows = await database.sql<
      { kid: string; private_key_ciphertext: string }[]
    >`select kid, private_key_ciphertext from oidc_signing_keys`;
    const secrets = rows.flatMap((r) => {
      const jwk = JSON.parse(box.open(r.private_key_ciphertext, `oidc_signing_keys:${r.kid}`)) as Record<string, string>;
      return [r.private_key_ciphertext, ...['d', 'p', 'q', 'dp', 'dq', 'qi'].map((m) => jwk[m] as string)];
    });
    expect(secrets.length).toBeGreaterThan(rows.length * 2);
    for (const path of ['/.well-known/openid-configuration', '/oidc/jwks', '/oidc/auth?client_id=x', '/oidc/nope', '/oidc/interaction/x']) {
      seen.push(await fetch(`${a.url}${path}`).then((r) => r.text()));
    }
    seen.push(a.output(), b.output());
    const everything = seen.join('\n');
    // The scan is real: the logs hold request lines, so there was something to read.
    expect(everything).toContain('/oidc/jwks');
    for (const secret of secrets) {
      expect(everything.includes(secret)).toBe(false);
      // Nor a long piece of it (base64url wrapped or cut).
      expect(everything.includes(secret.slice(8, 40))).toBe(false);
    }
  });
});
