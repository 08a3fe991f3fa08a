import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { hashSessionToken } from '../../modules/session-store/service.ts';
import { CONSOLE_DIST } from '../console.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  // The signed-in answer is the built console's index.html; `pnpm test` builds it first, a
  // targeted run may not have. Vite builds it in about a second.
  if (!existsSync(path.join(CONSOLE_DIST, 'index.html'))) {
    const consoleDir = fileURLToPath(new URL('../../../../console', import.meta.url));
    execFileSync(process.execPath, [path.join(consoleDir, 'node_modules/vite/bin/vite.js'), 'build'], { cwd: consoleDir, stdio: 'ignore' });
  }
  server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
});
afterAll(async () => {
  await server?.close();
});

const atCallback = (location: string) => new URL(location).pathname === '/auth/callback';

/**
 * A browser stand-in signs in through the engine's password (or enrollment) page starting at
 * `/auth/login?<query>`, and follows svc's callback: returns where the callback sent it.
 */
async function signIn(jar: CookieJar, query: string, fields: Record<string, string>): Promise<string> {
  const started = await jar.fetch(`${server.url}/auth/login?${query}`);
  expect(started.status).toBe(303);
  const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
  let callback = page.url;
  if (!atCallback(callback)) {
    const submitted = await jar.post(page.url, fields);
    expect(submitted.status, await submitted.clone().text()).toBe(303);
    callback = (await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback)).url;
  }
  const landed = await jar.fetch(callback);
  expect(landed.status).toBe(303);
  return landed.headers.get('location') ?? '';
}

const signInUser = (jar: CookieJar, returnTo = '/user') =>
  signIn(jar, `login_hint=user@svc.local&return_to=${encodeURIComponent(returnTo)}`, {
    email: 'user@svc.local',
    password: 'user-password',
  });

async function expectSignInRedirect(res: Response, returnTo: string) {
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toBe(`/signin?return_to=${encodeURIComponent(returnTo)}`);
  expect(res.headers.get('cache-control')).toBe('no-store');
  await res.body?.cancel();
}

async function expectConsoleHtml(res: Response) {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(await res.text()).toContain('<div id="root">');
}

describe('protected hosted pages: anonymous requests go to hosted sign-in', () => {
  it.each([
    ['/auth/console', '/auth/console'],
    ['/auth/console/', '/auth/console/'],
    ['/auth/console/users?x=1', '/auth/console/users?x=1'],
    ['/auth/console/members?tab=a%26b&q=%C3%A9', '/auth/console/members?tab=a%26b&q=%C3%A9'],
    ['/auth/console/index.html', '/auth/console/index.html'],
    ['/user', '/user'],
    ['/user?from=mail', '/user?from=mail'],
  ])('GET %s redirects with return_to=%s', async (asked, returnTo) => {
    await expectSignInRedirect(await fetch(`${server.url}${asked}`, { redirect: 'manual' }), returnTo);
  });

  it.each([
    ['an unknown session cookie', 'svc_session=abcdefghijklmnopqrstuvwxyz234567'],
    ['a malformed session cookie', 'svc_session=<script>'],
    ['an empty session cookie', 'svc_session='],
  ])('%s counts as anonymous', async (_what, cookie) => {
    for (const asked of ['/auth/console/users', '/user']) {
      await expectSignInRedirect(await fetch(`${server.url}${asked}`, { headers: { cookie }, redirect: 'manual' }), asked);
    }
  });

  it('HEAD is gated too', async () => {
    const res = await fetch(`${server.url}/auth/console/`, { method: 'HEAD', redirect: 'manual' });
    expect(res.status).toBe(303);
  });

  it('the hashed console assets stay public; a missing one is a 404, never the HTML', async () => {
    const [asset] = readdirSync(path.join(CONSOLE_DIST, 'assets'));
    const res = await fetch(`${server.url}/auth/console/assets/${asset}`, { redirect: 'manual' });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toContain('immutable');
    await res.body?.cancel();
    const missing = await fetch(`${server.url}/auth/console/assets/nope-123.js`, { redirect: 'manual' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});

describe('signed in', () => {
  it('return_to survives /signin -> /auth/login -> engine -> /auth/callback and lands on the page asked for', async () => {
    const jar = new CookieJar();
    const asked = '/auth/console/users?x=1';
    const bounced = await jar.fetch(`${server.url}${asked}`);
    const signin = await jar.fetch(new URL(bounced.headers.get('location') ?? '', server.url).href);
    const html = await signin.text();
    // The sign-in form carries it to /auth/login, as a hidden field and in the social link.
    expect(html).toContain('<input type="hidden" name="return_to" value="/auth/console/users?x=1">');
    expect(html).toContain(`return_to=${encodeURIComponent(asked)}`);
    const landedAt = await signInUser(jar, asked);
    expect(landedAt).toBe(asked);
    await expectConsoleHtml(await jar.fetch(`${server.url}${landedAt}`));
  });

  it('gets the console SPA on every path and the account page', async () => {
    const jar = new CookieJar();
    expect(await signInUser(jar)).toBe('/user');
    for (const asked of [
      '/auth/console',
      '/auth/console/',
      '/auth/console/members',
      '/auth/console/users?x=1',
      '/auth/console/nowhere/deep',
    ]) {
      await expectConsoleHtml(await jar.fetch(`${server.url}${asked}`));
    }
    const res = await jar.fetch(`${server.url}/user`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toContain('<dd data-testid="account-name">Demo User</dd>');
    expect(html).toContain('<dd data-testid="account-email">user@svc.local</dd>');
    expect(html).toContain('<span data-testid="account-workspace">Demo User&#39;s workspace</span>');
    expect(html).toContain('(tenant workspace)');
    expect(html).toContain('<dd data-testid="account-platform-admin">No</dd>');
    expect(html).toMatch(
      /<ul data-testid="account-memberships"><li>Demo User&#39;s workspace <span class="muted">\(user-[a-z0-9]{6}, org_admin\)/,
    );
    for (const handOff of ['/auth/recovery', '/auth/verify-email', '/auth/mfa', '/auth/passkeys']) {
      expect(html).toContain(`href="${handOff}?return_to=%2Fuser"`);
    }
    expect(html).toContain('href="/auth/console/"');
    expect(html).toContain('<form method="post" action="/auth/logout">');
  });

  it('a platform admin sees the platform workspace and the flag', async () => {
    const jar = new CookieJar();
    await signIn(jar, 'login_hint=admin@svc.local&return_to=/user', { email: 'admin@svc.local', password: 'admin-password' });
    const html = await (await jar.fetch(`${server.url}/user`)).text();
    expect(html).toContain('<span data-testid="account-workspace">Platform</span>');
    expect(html).toContain('(platform workspace)');
    expect(html).toContain('<dd data-testid="account-platform-admin"><span class="badge">Yes</span></dd>');
  });

  it('an account hand-off from /user comes back to /user signed in', async () => {
    const jar = new CookieJar();
    await signInUser(jar);
    const html = await (await jar.fetch(`${server.url}/user`)).text();
    const href = /href="(\/auth\/recovery\?[^"]+)"/.exec(html)?.[1] ?? '';
    const started = await jar.fetch(`${server.url}${href.replaceAll('&amp;', '&')}`);
    const flow = new URL(started.headers.get('location') ?? '');
    expect(flow.pathname).toBe('/if/flow/default-recovery-flow/');
    // The engine's recovery page completes with a POST and continues the authorization; the
    // engine session from the sign-in above means no password is asked again.
    const done = await jar.post(flow.href, {});
    const callback = await jar.follow(new URL(done.headers.get('location') ?? '', flow).href, atCallback);
    const landed = await jar.fetch(callback.url);
    expect(landed.headers.get('location')).toBe('/user');
    expect((await jar.fetch(`${server.url}/user`)).status).toBe(200);
  });
});

describe('ended sessions', () => {
  it('after logout both pages redirect to sign-in again', async () => {
    const jar = new CookieJar();
    await signInUser(jar);
    const token = jar.cookiesFor(server.url).svc_session as string;
    await expectConsoleHtml(await jar.fetch(`${server.url}/auth/console/`));
    const out = await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } });
    expect(out.status).toBe(303);
    expect(jar.cookiesFor(server.url).svc_session).toBeUndefined();
    await expectSignInRedirect(await jar.fetch(`${server.url}/auth/console/`), '/auth/console/');
    await expectSignInRedirect(await jar.fetch(`${server.url}/user`), '/user');
    // The old cookie, replayed: its session is revoked.
    const cookie = `svc_session=${token}`;
    await expectSignInRedirect(
      await fetch(`${server.url}/auth/console/users?x=1`, { headers: { cookie }, redirect: 'manual' }),
      '/auth/console/users?x=1',
    );
    await expectSignInRedirect(await fetch(`${server.url}/user`, { headers: { cookie }, redirect: 'manual' }), '/user');
  });

  it('the logout form works as a browser sends it (Origin: null under no-referrer); a cross-site one does not', async () => {
    const jar = new CookieJar();
    await signInUser(jar);
    const crossSite = await jar.fetch(`${server.url}/auth/logout`, {
      method: 'POST',
      headers: { origin: 'null', 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.status).toBe(403);
    expect((await jar.fetch(`${server.url}/user`)).status).toBe(200);
    const out = await jar.fetch(`${server.url}/auth/logout`, {
      method: 'POST',
      headers: { origin: 'null', 'sec-fetch-site': 'same-origin' },
    });
    expect(out.status).toBe(303);
    await expectSignInRedirect(await jar.fetch(`${server.url}/user`), '/user');
  });

  it('an expired session redirects like no session', async () => {
    const jar = new CookieJar();
    await signInUser(jar);
    const token = jar.cookiesFor(server.url).svc_session as string;
    expect((await jar.fetch(`${server.url}/user`)).status).toBe(200);
    await server.services.sql`update sessions set expires_at = now() - interval '1 second' where token_hash = ${hashSessionToken(token)}`;
    await expectSignInRedirect(await jar.fetch(`${server.url}/user`), '/user');
    await expectSignInRedirect(await jar.fetch(`${server.url}/auth/console/members`), '/auth/console/members');
  });
});

describe('/user escapes what users control', () => {
  it('a hostile name from sign-up is shown as text, in the name and the workspace name', async () => {
    const jar = new CookieJar();
    const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)> & 'q'`;
    const email = `hostile-${Date.now()}@example.com`;
    const landedAt = await signIn(jar, `intent=signup&login_hint=${encodeURIComponent(email)}&return_to=/user`, {
      email,
      name: hostile,
      password: 'hostile-password',
    });
    expect(landedAt).toBe('/user');
    const html = await (await jar.fetch(`${server.url}/user`)).text();
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html).toContain(
      '<dd data-testid="account-name">&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;&#60;img src=x onerror=alert(1)&#62; &#38; &#39;q&#39;</dd>',
    );
    expect(html).toContain(`<span data-testid="account-workspace">&#60;script&#62;alert(&#34;x&#34;)`);
  });
});
