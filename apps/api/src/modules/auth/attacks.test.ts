import { randomBytes } from 'node:crypto';
import { encodeBase32LowerCaseNoPadding } from '@oslojs/encoding';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { type DevEngine, startDevEngine } from '@svc/dev-engine/engine';
import type { JWTPayload } from 'jose';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { freePort, startTestServer } from '../../../../../test/support/server.ts';
import { type ForgingEngine, hs256Token, startForgingEngine, unsignedToken } from '../../../test/forging-engine.ts';
import { hashSessionToken } from '../session-store/service.ts';

/**
 * Attacks on the sign-in callback, end to end: a real svc server, a real dev engine for the
 * browser, and in between the engine as svc trusts it (apps/api/test/forging-engine.ts), which
 * can swap the ID token of the next code exchange. svc is a confidential client here, so the
 * HS256-with-the-client-secret forgery is the real one. Every refusal must be a 400 page with no
 * session cookie, no session row and no user row, and must be refused for the check under test
 * (the reason svc logs), not for something else along the way.
 */
const CLIENT_SECRET = 'svc-attack-tests-client-secret';
const PASSWORD = 'attack-target-password';

let engine: DevEngine;
let front: ForgingEngine;
let server: Awaited<ReturnType<typeof startTestServer>>;
let sql: postgres.Sql;

beforeAll(async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  engine = await startDevEngine({
    port: 0,
    users: [],
    clients: [
      {
        client_id: 'svc',
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${publicUrl}/auth/callback`],
        post_logout_redirect_uris: [`${publicUrl}/signin`],
      },
    ],
  });
  front = await startForgingEngine({ engine });
  server = await startTestServer({
    env: { PORT: String(port), ENGINE_ISSUER: front.issuer, ENGINE_CLIENT_SECRET: CLIENT_SECRET, RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' },
  });
  sql = postgres(server.databaseUrl, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await server?.close();
  await front?.close();
  await engine?.close();
});

let info: MockInstance;
let sessionsAtStart: number;
beforeEach(async () => {
  info = vi.spyOn(server.services.logger, 'info');
  sessionsAtStart = await sessionCount();
});
afterEach(() => {
  info.mockRestore();
});

async function sessionCount(): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from sessions`;
  return row?.n ?? 0;
}

/** Why svc refused callbacks during this test, as it logs them. */
function refusals(): string[] {
  return info.mock.calls.filter((call) => call[1] === 'sign-in callback refused').map((call) => (call[0] as { reason: string }).reason);
}

let seq = 0;
/** A user that exists only at the engine: svc has never seen them, so no row may appear. */
function engineUser(): string {
  seq++;
  const email = `attack-${seq}-${randomBytes(3).toString('hex')}@svc.local`;
  engine.users.create({ email, name: `Attack Target ${seq}`, password: PASSWORD, emailVerified: true });
  return email;
}

const atCallback = (location: string) => location.startsWith(`${server.url}/auth/callback`);

/** Starts at svc's /auth/login, signs in at the engine's password page, stops at svc's callback URL. */
async function toCallback(jar: CookieJar, email: string): Promise<string> {
  const started = await jar.fetch(`${server.url}/auth/login?login_hint=${encodeURIComponent(email)}`);
  expect(started.status).toBe(303);
  const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
  const submitted = await jar.post(page.url, { email, password: PASSWORD });
  const done = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
  expect(atCallback(done.url)).toBe(true);
  return done.url;
}

/** The callback was refused for `reason`, and left no session cookie, session or user behind. */
async function expectRefused(res: Response, email: string, reason: RegExp): Promise<void> {
  expect(res.status).toBe(400);
  expect(await res.text()).toContain('Sign-in could not be completed');
  expect(res.headers.getSetCookie().filter((c) => /^svc_session=[a-z2-7]/.test(c))).toEqual([]);
  expect(refusals()).toEqual([expect.stringMatching(reason)]);
  expect(await sessionCount()).toBe(sessionsAtStart);
  expect(await sql`select id from users where email = ${email}`).toHaveLength(0);
}

/** The nonce of another sign-in svc started (read off its authorization request). */
async function nonceOfAnotherSignIn(): Promise<string> {
  const res = await new CookieJar().fetch(`${server.url}/auth/login`);
  const handOff = new URL(res.headers.get('location') ?? '');
  const authorize = handOff.searchParams.has('nonce') ? handOff : new URL(handOff.searchParams.get('next') ?? '', handOff);
  const nonce = authorize.searchParams.get('nonce');
  expect(nonce).toBeTruthy();
  return nonce as string;
}

describe('forged ID tokens at the callback', () => {
  it('control: the token as the engine signed it signs in (a user row and a session appear)', async () => {
    const email = engineUser();
    const jar = new CookieJar();
    const landed = await jar.fetch(await toCallback(jar, email));
    expect(landed.status).toBe(303);
    expect(landed.headers.getSetCookie().filter((c) => /^svc_session=[a-z2-7]{32};/.test(c))).toHaveLength(1);
    expect(refusals()).toEqual([]);
    expect(await sessionCount()).toBe(sessionsAtStart + 1);
    expect(await sql`select id from users where email = ${email}`).toHaveLength(1);
  });

  it.each<[string, (c: JWTPayload) => string | Promise<string>, RegExp]>([
    ['signed by a key the engine JWKS does not hold', (c) => front.signWithRogueKey(c), /no applicable key found in the JSON Web Key Set/],
    [
      'signed by another key under the engine key id',
      (c) => front.signWithRogueKey(c, { kid: front.engineKid }),
      /signature verification failed/,
    ],
    ['that is unsigned (alg none)', (c) => unsignedToken(c), /"alg" \(Algorithm\) Header Parameter value not allowed/],
    ['signed HS256 with the client secret', (c) => hs256Token(c, CLIENT_SECRET), /"alg" \(Algorithm\) Header Parameter value not allowed/],
    ['for another client (aud)', (c) => front.signAsEngine({ ...c, aud: 'other-client' }), /unexpected "aud" claim value/],
    [
      'for several audiences, authorized for another client (azp)',
      (c) => front.signAsEngine({ ...c, aud: ['svc', 'other-client'], azp: 'other-client' }),
      /authorized for another client/,
    ],
    [
      'that has expired',
      (c) => front.signAsEngine({ ...c, iat: Math.floor(Date.now() / 1000) - 3600, exp: Math.floor(Date.now() / 1000) - 60 }),
      /"exp" claim timestamp check failed/,
    ],
    [
      'from another issuer',
      (c) => front.signAsEngine({ ...c, iss: 'https://evil.example/application/o/svc/' }),
      /unexpected "iss" claim value/,
    ],
  ])('an ID token %s is refused: no session, no user', async (_name, forge, reason) => {
    const email = engineUser();
    const jar = new CookieJar();
    const callback = await toCallback(jar, email);
    front.forgeNext(forge);
    await expectRefused(await jar.fetch(callback), email, reason);
  });

  it("an ID token carrying another sign-in's nonce is refused: no session, no user", async () => {
    const email = engineUser();
    const jar = new CookieJar();
    const callback = await toCallback(jar, email);
    const nonce = await nonceOfAnotherSignIn();
    front.forgeNext((c) => front.signAsEngine({ ...c, nonce }));
    await expectRefused(await jar.fetch(callback), email, /nonce does not match this sign-in/);
  });
});

describe('pending sign-ins that must not complete', () => {
  it('an expired pending sign-in is refused even with a good code from the engine', async () => {
    const email = engineUser();
    const jar = new CookieJar();
    const callback = await toCallback(jar, email);
    const handle = jar.cookiesFor(server.url).svc_pending_login ?? '';
    const expired = await sql`
      update pending_logins set expires_at = now() - interval '1 second'
      where handle_hash = ${hashSessionToken(handle)} returning handle_hash`;
    expect(expired).toHaveLength(1);
    await expectRefused(await jar.fetch(callback), email, /unknown, used or expired pending login/);
    // Refused and consumed: it cannot be retried either.
    expect(await sql`select 1 from pending_logins where handle_hash = ${hashSessionToken(handle)}`).toHaveLength(0);
  });

  it('a pending-login cookie svc never issued is refused; the genuine one still completes', async () => {
    const email = engineUser();
    const jar = new CookieJar();
    const callback = await toCallback(jar, email);
    for (const invented of [encodeBase32LowerCaseNoPadding(randomBytes(20)), "x' or '1'='1"]) {
      info.mockClear();
      const res = await fetch(callback, { headers: { cookie: `svc_pending_login=${invented}` }, redirect: 'manual' });
      await expectRefused(res, email, /unknown, used or expired pending login/);
    }
    // Nothing else about this callback was wrong: with the cookie svc issued, it signs in.
    expect((await jar.fetch(callback)).status).toBe(303);
  });

  it("another browser's pending-login cookie is refused (login CSRF); the attacker's own browser still could", async () => {
    // The victim has started a sign-in; the attacker completes one at the engine and gets the
    // victim's browser to open the attacker's callback URL.
    const victim = new CookieJar();
    expect((await victim.fetch(`${server.url}/auth/login?login_hint=${encodeURIComponent(engineUser())}`)).status).toBe(303);
    const attackerEmail = engineUser();
    const attacker = new CookieJar();
    const attackerCallback = await toCallback(attacker, attackerEmail);
    expect(victim.cookiesFor(server.url).svc_pending_login).not.toBe(attacker.cookiesFor(server.url).svc_pending_login);
    await expectRefused(await victim.fetch(attackerCallback), attackerEmail, /state mismatch/);
    // The refusal is the binding to the browser: the same callback in the attacker's browser completes.
    expect((await attacker.fetch(attackerCallback)).status).toBe(303);
  });
});
