import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
});
afterAll(async () => {
  await server?.close();
});

const atCallback = (location: string) => location.startsWith(`${server.url}/auth/callback`) || location.includes('/auth/callback');

/** Starts at svc's /auth/login, plays the engine's password page, stops at svc's callback URL. */
async function toCallback(jar: CookieJar, query: string, password: string): Promise<string> {
  const started = await jar.fetch(`${server.url}/auth/login?${query}`);
  expect(started.status).toBe(303);
  const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
  if (atCallback(page.url)) {
    return page.url;
  }
  const email = new URLSearchParams(query).get('login_hint') ?? '';
  const submitted = await jar.post(page.url, { email, password });
  const done = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
  return done.url;
}

async function me(jar: CookieJar) {
  const res = await jar.fetch(`${server.url}/v1/me`);
  return { status: res.status, body: (await res.json()) as any };
}

describe('hosted sign-in through the engine', () => {
  it('the sign-in page offers email and social, and sets no cookie', async () => {
    const res = await fetch(`${server.url}/signin`);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(html).toContain('name="login_hint"');
    expect(html).toContain('method=social');
    expect(html).not.toContain('name="password"');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect((await fetch(`${server.url}/sign-up`)).status).toBe(200);
  });

  it('password sign-in: pending cookie only, then a session cookie, /v1/me, the platform workspace', async () => {
    const jar = new CookieJar();
    const started = await jar.fetch(`${server.url}/auth/login?login_hint=admin@svc.local&return_to=/user`);
    const cookie = started.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^svc_pending_login=[a-z2-7]{32}; Path=\/; HttpOnly; SameSite=Lax/);
    expect(cookie).not.toContain('svc_session');
    const engineUrl = new URL(started.headers.get('location') ?? '');
    expect(engineUrl.searchParams.get('login_hint')).toBe('admin@svc.local');
    expect(engineUrl.searchParams.get('code_challenge_method')).toBe('S256');

    const callback = await toCallback(jar, 'login_hint=admin@svc.local&return_to=/user', 'admin-password');
    const landed = await jar.fetch(callback);
    expect(landed.status).toBe(303);
    expect(landed.headers.get('location')).toBe('/user');
    expect(landed.headers.get('set-cookie')).toMatch(/svc_session=[a-z2-7]{32}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+/);

    const { status, body } = await me(jar);
    expect(status).toBe(200);
    expect(body.user.email).toBe('admin@svc.local');
    expect(body.isPlatformAdmin).toBe(true);
    expect(body.activeWorkspace.kind).toBe('platform');
  });

  it('a user outside the admin group gets a tenant workspace as org admin', async () => {
    const jar = new CookieJar();
    await jar.fetch(await toCallback(jar, 'login_hint=user@svc.local', 'user-password'));
    const { body } = await me(jar);
    expect(body.isPlatformAdmin).toBe(false);
    expect(body.activeWorkspace.kind).toBe('tenant');
    expect(body.memberships).toEqual([expect.objectContaining({ roleKey: 'org_admin' })]);
  });

  it('switching between sign-in and sign-up keeps return_to and the application', async () => {
    const html = await (await fetch(`${server.url}/signin?return_to=${encodeURIComponent('/auth/console/users?x=1')}`)).text();
    expect(html).toContain(`href="/signup?return_to=${encodeURIComponent('/auth/console/users?x=1')}"`);
    const back = await (await fetch(`${server.url}/signup?return_to=%2Fuser`)).text();
    expect(back).toContain('href="/signin?return_to=%2Fuser"');
    expect(await (await fetch(`${server.url}/signin`)).text()).toContain('href="/signup"');
  });

  it('sign-up carries the typed email to the engine enrollment form', async () => {
    const jar = new CookieJar();
    const started = await jar.fetch(`${server.url}/auth/login?intent=signup&login_hint=Fresh.Person@Example.com`);
    expect(started.status).toBe(303);
    const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
    expect(new URL(page.url).pathname).toBe('/if/flow/default-enrollment-flow/');
    expect(await page.res.text()).toContain('value="fresh.person@example.com"');
  });

  it('social sign-in signs in the engine social identity', async () => {
    const jar = new CookieJar();
    const callback = await toCallback(jar, 'method=social', '');
    await jar.fetch(callback);
    const { body } = await me(jar);
    expect(body.user.email).toBe('social@svc.local');
  });

  it('anonymous /v1/me is 401 unauthenticated', async () => {
    const res = await fetch(`${server.url}/v1/me`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe('unauthenticated');
  });
});

describe('attacks on the callback and the session', () => {
  it('a replayed callback is refused and creates no session', async () => {
    const jar = new CookieJar();
    const callback = await toCallback(jar, 'login_hint=user@svc.local', 'user-password');
    const stolenCookie = jar.cookiesFor(server.url).svc_pending_login as string;
    expect((await jar.fetch(callback)).status).toBe(303);
    const replay = await fetch(callback, { headers: { cookie: `svc_pending_login=${stolenCookie}` }, redirect: 'manual' });
    expect(replay.status).toBe(400);
    expect(replay.headers.get('set-cookie') ?? '').not.toMatch(/svc_session=[a-z2-7]/);
  });

  it('a tampered or missing state, or no pending cookie, is refused', async () => {
    const jar = new CookieJar();
    const callback = new URL(await toCallback(jar, 'login_hint=user@svc.local', 'user-password'));
    callback.searchParams.set('state', 'forged');
    expect((await jar.fetch(callback.href)).status).toBe(400);
    const jar2 = new CookieJar();
    const noState = new URL(await toCallback(jar2, 'login_hint=user@svc.local', 'user-password'));
    noState.searchParams.delete('state');
    expect((await jar2.fetch(noState.href)).status).toBe(400);
    const noCookie = await fetch(`${server.url}/auth/callback?code=x&state=y`, { redirect: 'manual' });
    expect(noCookie.status).toBe(400);
  });

  it.each(['//evil.example', '/\\evil.example', 'https:evil.example', 'https://user@evil.example', 'https://evil.example/'])(
    'return_to %s lands on the console instead',
    async (returnTo) => {
      const jar = new CookieJar();
      const callback = await toCallback(jar, `login_hint=user@svc.local&return_to=${encodeURIComponent(returnTo)}`, 'user-password');
      const landed = await jar.fetch(callback);
      expect(landed.headers.get('location')).toBe('/auth/console');
    },
  );

  it('logout revokes the session everywhere; a cross-site logout is refused', async () => {
    const jar = new CookieJar();
    await jar.fetch(await toCallback(jar, 'login_hint=user@svc.local', 'user-password'));
    const session = jar.cookiesFor(server.url).svc_session as string;
    const crossSite = await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect((await me(jar)).status).toBe(200);
    const out = await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toContain('/end-session/');
    const stale = await fetch(`${server.url}/v1/me`, { headers: { cookie: `svc_session=${session}` } });
    expect(stale.status).toBe(401);
  });

  it('credential stuffing on one email is cut off at the per-email limit', async () => {
    const tight = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '3' }, databaseUrl: server.databaseUrl });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await fetch(`${tight.url}/auth/login?login_hint=Victim@Example.com`, { redirect: 'manual' })).status);
      }
      expect(statuses.slice(0, 3)).toEqual([303, 303, 303]);
      expect(statuses.slice(3)).toEqual([429, 429]);
      // Another email is unaffected.
      expect((await fetch(`${tight.url}/auth/login?login_hint=other@example.com`, { redirect: 'manual' })).status).toBe(303);
    } finally {
      await tight.close();
    }
  });
});

describe('account hand-offs', () => {
  it('/v1/config carries the account block pointing at svc hand-off routes', async () => {
    const body = (await (await fetch(`${server.url}/v1/config`)).json()) as any;
    expect(body.account).toEqual({
      engine: 'authentik',
      recoveryUrl: `${server.services.config.publicUrl}/auth/recovery`,
      recoveryConfigured: true,
      emailVerificationUrl: `${server.services.config.publicUrl}/auth/verify-email`,
      mfaSetupUrl: `${server.services.config.publicUrl}/auth/mfa`,
      passkeySetupUrl: `${server.services.config.publicUrl}/auth/passkeys`,
      signUpUrl: `${server.services.config.publicUrl}/signup`,
      socialSignIn: true,
    });
  });

  it('a generic engine: /v1/config, /signin and the hand-off routes offer only what has a URL', async () => {
    // The dev engine's issuer, named generic: ENGINE_SOCIAL unset, only MFA setup configured.
    const generic = await startTestServer({
      databaseUrl: server.databaseUrl,
      env: { ENGINE_KIND: 'generic', ENGINE_MFA_SETUP: 'https://idp.example.com/profile' },
    });
    try {
      const body = (await (await fetch(`${generic.url}/v1/config`)).json()) as any;
      expect(body.account).toMatchObject({
        engine: 'generic',
        recoveryConfigured: false,
        emailVerificationUrl: null,
        mfaSetupUrl: `${generic.services.config.publicUrl}/auth/mfa`,
        passkeySetupUrl: null,
        signUpUrl: null,
        socialSignIn: false,
      });
      const signin = await (await fetch(`${generic.url}/signin`)).text();
      expect(signin).not.toContain('continue-social');
      expect(signin).not.toContain('Create an account');
      for (const path of [
        '/auth/recovery',
        '/auth/verify-email',
        '/auth/passkeys',
        '/auth/login?method=social',
        '/auth/login?intent=signup',
      ]) {
        const res = await fetch(`${generic.url}${path}`, { redirect: 'manual' });
        expect(res.status, path).toBe(404);
      }
      const mfa = await fetch(`${generic.url}/auth/mfa`, { redirect: 'manual' });
      expect(mfa.status).toBe(303);
      expect(mfa.headers.get('location')).toBe('https://idp.example.com/profile');
    } finally {
      await generic.close();
    }
  });

  it.each([
    ['/auth/recovery', 'default-recovery-flow'],
    ['/auth/verify-email', 'default-source-email-verification'],
    ['/auth/mfa', 'default-authenticator-totp-setup'],
    ['/auth/passkeys', 'default-authenticator-webauthn-setup'],
  ])('%s hands off to the engine flow and comes back through a fresh authorization', async (path, flow) => {
    const jar = new CookieJar();
    const res = await jar.fetch(`${server.url}${path}?return_to=${encodeURIComponent('//evil.example')}`);
    expect(res.status).toBe(303);
    const target = new URL(res.headers.get('location') ?? '');
    expect(target.pathname).toBe(`/if/flow/${flow}/`);
    const next = target.searchParams.get('next') as string;
    expect(next.startsWith('/application/o/authorize/?')).toBe(true);
    expect(new URL(next, target).searchParams.get('code_challenge_method')).toBe('S256');
    expect(res.headers.get('set-cookie')).toMatch(/svc_pending_login=/);
  });
});
