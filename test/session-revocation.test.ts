import { createDatabase, type Database } from '@svc/db/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSessionToken, revokeSession } from '../apps/api/src/modules/session-store/service.ts';
import { CookieJar } from '../apps/dev-engine/src/cookie-jar.ts';
import { createTestDatabase } from './support/db.ts';
import { type SpawnedServer, spawnServer } from './support/spawn.ts';

/**
 * A stolen or left-behind session cookie must stop working on every API process the moment the
 * session ends (docs/architecture.md section 6: revocation is immediate and cluster-wide): two real
 * `svc serve` processes on one database, sign-in on A, the end of the session on A or by an
 * admin, and the very next request on B, with no wait, no retry and no poll.
 */
describe('an ended session is refused on every API process at once', () => {
  let a: SpawnedServer;
  let b: SpawnedServer;
  let database: Database;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    [a, b] = await Promise.all([spawnServer({ DATABASE_URL: databaseUrl }), spawnServer({ DATABASE_URL: databaseUrl })]);
    database = createDatabase({ url: databaseUrl, max: 1, applicationName: 'svc-test-admin' });
  }, 120_000);

  afterAll(async () => {
    await database?.close();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  /** Signs in through A's engine (password page, for real) and returns the session cookie's value. */
  async function signInOnA(): Promise<string> {
    const jar = new CookieJar();
    const atCallback = (l: string) => l.startsWith(`${a.url}/auth/callback`);
    const started = await jar.fetch(`${a.url}/auth/login?login_hint=user@svc.local`);
    expect(started.status).toBe(303);
    const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
    const submitted = await jar.post(page.url, { email: 'user@svc.local', password: 'user-password' });
    const callback = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
    expect((await jar.fetch(callback.url)).status).toBe(303);
    const token = jar.cookiesFor(a.url).svc_session;
    expect(token).toMatch(/^[a-z2-7]{32}$/);
    return token as string;
  }

  const me = (s: SpawnedServer, token: string) => fetch(`${s.url}/v1/me`, { headers: { cookie: `svc_session=${token}` } });

  async function expectSignedIn(s: SpawnedServer, token: string): Promise<void> {
    const res = await me(s, token);
    expect(res.status, `${s.url}: ${await res.clone().text()}`).toBe(200);
    expect(((await res.json()) as { user: { email: string } }).user.email).toBe('user@svc.local');
  }

  async function expectUnauthenticated(s: SpawnedServer, token: string): Promise<void> {
    const res = await me(s, token);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
  }

  it('after logout on A, the very next GET /v1/me with the old cookie is 401 on B (and on A)', async () => {
    const token = await signInOnA();
    // The cookie works on both processes (and both have just read this session).
    await expectSignedIn(a, token);
    await expectSignedIn(b, token);
    const out = await fetch(`${a.url}/auth/logout`, {
      method: 'POST',
      headers: { origin: a.url, cookie: `svc_session=${token}` },
      redirect: 'manual',
    });
    expect(out.status).toBe(303);
    await expectUnauthenticated(b, token);
    await expectUnauthenticated(a, token);
  });

  it('after an admin revokes the session row, the very next GET /v1/me is 401 on B (and on A)', async () => {
    const token = await signInOnA();
    await expectSignedIn(a, token);
    await expectSignedIn(b, token);
    const [row] = await database.sql<{ id: string }[]>`select id from sessions where token_hash = ${hashSessionToken(token)}`;
    expect(row?.id).toMatch(/^ses_/);
    expect(await revokeSession(database.db, row?.id ?? '')).toBe(true);
    await expectUnauthenticated(b, token);
    await expectUnauthenticated(a, token);
  });
});
