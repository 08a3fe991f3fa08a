import { createDatabase, type Database } from '@svc/db/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.ts';
import { type SpawnedServer, spawnServer } from './support/spawn.ts';
import { type SignedIn, seedOrganization, seedSignedIn } from './support/tenancy.ts';

/** The README's figure: a change takes effect on every API process within one second. */
const PROPAGATION_BUDGET_MS = 1_000;

type Probe = { status: number; code: string | undefined };

/**
 * The control-plane routes change applications that every API process caches: two real
 * `svc serve` processes on one database, the change made through /v1 on one of them, its effect
 * checked on both. A long cache TTL means only the row's change notification can evict B's copy.
 */
describe('application changes made through /v1 reach every API process', () => {
  let a: SpawnedServer;
  let b: SpawnedServer;
  let database: Database;
  let admin: SignedIn;
  let orgSlug: string;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, APPLICATION_CACHE_TTL_MS: '600000' };
    [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
    database = createDatabase({ url: databaseUrl, max: 1, applicationName: 'svc-test-admin' });
    const org = await seedOrganization(database.db);
    orgSlug = org.slug;
    admin = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
  }, 120_000);

  afterAll(async () => {
    await database?.close();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  async function control(s: SpawnedServer, method: string, path: string, body?: unknown) {
    const res = await fetch(`${s.url}${path}`, {
      method,
      headers: { cookie: admin.cookie, ...(body === undefined ? {} : { 'content-type': 'application/json', origin: s.url }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return json;
  }

  async function probe(res: Response): Promise<Probe> {
    const body = (await res.json()) as { error?: { code?: string } };
    return { status: res.status, code: body.error?.code };
  }
  const backend = (s: SpawnedServer, key: string) =>
    fetch(`${s.url}/v1/backend/application`, { headers: { authorization: `Bearer ${key}` } }).then(probe);
  const clientConfig = (s: SpawnedServer, pk: string) =>
    fetch(`${s.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': pk } }).then(probe);

  /** Polls `check` on `s` until it answers `want`; the milliseconds since `since` (fails past the budget). */
  async function convergedAfter(
    s: SpawnedServer,
    since: number,
    check: (s: SpawnedServer) => Promise<Probe>,
    want: Probe,
  ): Promise<number> {
    let last: Probe | undefined;
    while (Date.now() - since < PROPAGATION_BUDGET_MS + 2_000) {
      last = await check(s);
      if (last.status === want.status && last.code === want.code) {
        return Date.now() - since;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${s.url} still answers ${JSON.stringify(last)}, not ${JSON.stringify(want)}`);
  }

  it('rotating on A: the old secret is refused by A on the very next request and by B within a second; the new one works on both', async () => {
    const created = await control(a, 'POST', '/v1/applications', { organization_slug: orgSlug, name: 'Rotated' });
    const id = created.application.id as string;
    const old = created.secretKey as string;
    // Both processes have the application cached under the old secret.
    for (const s of [a, b]) {
      expect(await backend(s, old)).toEqual({ status: 200, code: undefined });
    }
    const rotated = await control(a, 'POST', `/v1/applications/${id}/rotate-secret`, {});
    const at = Date.now();
    const fresh = rotated.secretKey as string;
    expect(fresh).not.toBe(old);
    // A dropped its own copy before answering: no wait, no retry.
    expect(await backend(a, old)).toEqual({ status: 401, code: 'invalid_secret_key' });
    const onB = await convergedAfter(b, at, (s) => backend(s, old), { status: 401, code: 'invalid_secret_key' });
    expect(onB).toBeLessThan(PROPAGATION_BUDGET_MS);
    for (const s of [a, b]) {
      expect(await backend(s, fresh)).toEqual({ status: 200, code: undefined });
      // And the old secret stays refused: no stale entry comes back.
      expect(await backend(s, old)).toEqual({ status: 401, code: 'invalid_secret_key' });
    }
  });

  it('disabling on B: client config and the backend check answer 409 on A within a second; enabling on A restores B', async () => {
    const created = await control(a, 'POST', '/v1/applications', { organization_slug: orgSlug, name: 'Toggled' });
    const { id, publishableKey } = created.application as { id: string; publishableKey: string };
    for (const s of [a, b]) {
      expect((await clientConfig(s, publishableKey)).status).toBe(200);
      expect((await backend(s, created.secretKey)).status).toBe(200);
    }
    await control(b, 'POST', `/v1/applications/${id}/status`, { status: 'disabled' });
    const disabledAt = Date.now();
    expect(await clientConfig(b, publishableKey)).toEqual({ status: 409, code: 'application_disabled' });
    const onA = await convergedAfter(a, disabledAt, (s) => clientConfig(s, publishableKey), { status: 409, code: 'application_disabled' });
    expect(onA).toBeLessThan(PROPAGATION_BUDGET_MS);
    expect(await backend(a, created.secretKey)).toEqual({ status: 409, code: 'application_disabled' });

    await control(a, 'POST', `/v1/applications/${id}/status`, { status: 'active' });
    const enabledAt = Date.now();
    const onB = await convergedAfter(b, enabledAt, (s) => clientConfig(s, publishableKey), { status: 200, code: undefined });
    expect(onB).toBeLessThan(PROPAGATION_BUDGET_MS);
  });
});
