import { sessions } from '@svc/db/schema/sessions';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { hashSessionToken } from '../session-store/service.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
});
afterAll(async () => {
  await server?.close();
});

const atCallback = (location: string) => location.includes('/auth/callback');

/** Signs in at the dev engine with a password; every answer svc gave the browser is kept in `seen`. */
async function signIn(email: string, password: string): Promise<{ jar: CookieJar; seen: string[]; sessionId: string }> {
  const jar = new CookieJar();
  const seen: string[] = [];
  const started = await jar.fetch(`${server.url}/auth/login?login_hint=${encodeURIComponent(email)}`);
  let page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
  if (!atCallback(page.url)) {
    const submitted = await jar.post(page.url, { email, password });
    page = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
  }
  const landed = await jar.fetch(page.url);
  expect(landed.status).toBe(303);
  seen.push(JSON.stringify([...landed.headers]), await landed.text());
  const me = await jar.fetch(`${server.url}/v1/me`);
  seen.push(await me.text());
  const sessionsPage = await jar.fetch(`${server.url}/user`);
  seen.push(await sessionsPage.text());
  const [row] = await server.services.db
    .select({ id: sessions.id })
    .from(sessions)
    .where(eq(sessions.tokenHash, hashSessionToken(jar.cookiesFor(server.url).svc_session as string)));
  return { jar, seen, sessionId: row?.id as string };
}

async function signOut(jar: CookieJar): Promise<URL> {
  const out = await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } });
  expect(out.status).toBe(303);
  return new URL(out.headers.get('location') ?? '', server.url);
}

async function sealedOf(sessionId: string): Promise<string | null> {
  const [row] = await server.services.db.select({ sealed: sessions.engineIdToken }).from(sessions).where(eq(sessions.id, sessionId));
  return row?.sealed ?? null;
}

describe("signing out ends the engine's session with the engine's own ID token", () => {
  it('sends id_token_hint (the ID token of this browser session), client_id and post_logout_redirect_uri; another session stays', async () => {
    const other = await signIn('admin@svc.local', 'admin-password');
    const mine = await signIn('user@svc.local', 'user-password');

    const end = await signOut(mine.jar);
    expect(end.pathname).toContain('/end-session/');
    expect(end.searchParams.get('client_id')).toBe(server.services.config.engine.clientId);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${server.services.config.publicUrl}/signin`);
    const hint = end.searchParams.get('id_token_hint') as string;
    const claims = decodeJwt(hint);
    expect(claims.email).toBe('user@svc.local');
    expect(claims.iss).toBe(server.services.config.engine.issuer);
    expect(claims.aud).toBe(server.services.config.engine.clientId);

    // The ID token went to the browser only now, on its way to the engine: never before.
    for (const answer of mine.seen) {
      expect(answer).not.toContain(hint);
    }
    // Kept sealed (never in clear in the database), and dropped with the session.
    expect(await sealedOf(mine.sessionId)).toBeNull();
    const otherSealed = (await sealedOf(other.sessionId)) as string;
    expect(otherSealed).toMatch(/^v1\./);
    expect(otherSealed).not.toContain(hint.split('.')[1] as string);

    // The other person's session is untouched.
    expect((await other.jar.fetch(`${server.url}/v1/me`)).status).toBe(200);

    // The engine accepts the hint and sends the browser back to svc's sign-in page.
    const engine = await mine.jar.follow(end.href, (location) => location.startsWith(`${server.services.config.publicUrl}/signin`));
    expect(engine.url.startsWith(`${server.services.config.publicUrl}/signin`)).toBe(true);
  });

  it("another session's sealed token copied into this session's row does not open: the engine is asked without a hint", async () => {
    const victim = await signIn('admin@svc.local', 'admin-password');
    const attacker = await signIn('user@svc.local', 'user-password');
    const stolen = (await sealedOf(victim.sessionId)) as string;
    await server.services.db.update(sessions).set({ engineIdToken: stolen }).where(eq(sessions.id, attacker.sessionId));

    const end = await signOut(attacker.jar);
    expect(end.searchParams.get('id_token_hint')).toBeNull();
    expect(end.searchParams.get('client_id')).toBe(server.services.config.engine.clientId);
    expect((await victim.jar.fetch(`${server.url}/v1/me`)).status).toBe(200);
  });

  it('a session opened before svc kept the token signs out as before, without a hint', async () => {
    const old = await signIn('user@svc.local', 'user-password');
    await server.services.db.update(sessions).set({ engineIdToken: null }).where(eq(sessions.id, old.sessionId));
    const end = await signOut(old.jar);
    expect(end.searchParams.get('id_token_hint')).toBeNull();
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${server.services.config.publicUrl}/signin`);
  });
});
