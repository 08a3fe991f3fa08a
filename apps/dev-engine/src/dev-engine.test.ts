import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CookieJar } from './cookie-jar.ts';
import { type DevEngine, HANDOFF_FLOWS, startDevEngine } from './engine.ts';
import { DEMO_USERS, loadDevUsers, UserStore } from './users.ts';

const REDIRECT_URI = 'http://127.0.0.1:1/auth/callback';
const POST_LOGOUT_URI = 'http://127.0.0.1:1/signin';
const ADMIN_TOKEN = 'test-admin-token';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

let engine: DevEngine;
let discovery: Record<string, string>;

beforeAll(async () => {
  engine = await startDevEngine({
    port: await freePort(),
    users: DEMO_USERS,
    adminToken: ADMIN_TOKEN,
    clients: [
      { client_id: 'svc', redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [POST_LOGOUT_URI] },
      { client_id: 'svc-confidential', client_secret: 'shh', redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [POST_LOGOUT_URI] },
    ],
  });
  const res = await fetch(`${engine.issuer}.well-known/openid-configuration`);
  discovery = (await res.json()) as Record<string, string>;
});

afterAll(async () => {
  await engine?.close();
});

type Pending = { url: string; verifier: string; state: string; nonce: string; clientId: string };

function authorizationUrl(opts: { clientId?: string; params?: Record<string, string> } = {}): Pending {
  const clientId = opts.clientId ?? 'svc';
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const nonce = randomBytes(16).toString('base64url');
  const url = new URL(discovery.authorization_endpoint ?? '');
  const q = url.searchParams;
  q.set('client_id', clientId);
  q.set('response_type', 'code');
  q.set('redirect_uri', REDIRECT_URI);
  q.set('scope', 'openid email profile');
  q.set('state', state);
  q.set('nonce', nonce);
  q.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
  q.set('code_challenge_method', 'S256');
  for (const [k, v] of Object.entries(opts.params ?? {})) {
    q.set(k, v);
  }
  return { url: url.href, verifier, state, nonce, clientId };
}

const atRedirectUri = (location: string) => location.startsWith(REDIRECT_URI);

/** Follows the engine's redirects until it answers with a page (the flow) or the callback. */
async function begin(jar: CookieJar, pending: Pending) {
  return jar.follow(pending.url, atRedirectUri);
}

async function submitLogin(jar: CookieJar, pageUrl: string, email: string, password: string) {
  const res = await jar.post(pageUrl, { email, password });
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get('location') ?? '', pageUrl).href;
  return jar.follow(location, atRedirectUri);
}

async function redeem(pending: Pending, callbackUrl: string, auth?: { secret: string }) {
  const callback = new URL(callbackUrl);
  expect(callback.searchParams.get('error')).toBeNull();
  expect(callback.searchParams.get('state')).toBe(pending.state);
  const code = callback.searchParams.get('code') ?? '';
  const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: pending.verifier });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (auth) {
    headers.authorization = `Basic ${Buffer.from(`${pending.clientId}:${auth.secret}`).toString('base64')}`;
  } else {
    body.set('client_id', pending.clientId);
  }
  const res = await fetch(discovery.token_endpoint ?? '', { method: 'POST', headers, body });
  const tokens = (await res.json()) as { id_token: string; access_token: string; error?: string };
  expect(res.status, JSON.stringify(tokens)).toBe(200);
  const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri ?? ''));
  const { payload, protectedHeader } = await jwtVerify(tokens.id_token, jwks, { issuer: engine.issuer, audience: pending.clientId });
  expect(protectedHeader.alg).toBe('RS256');
  expect(payload.nonce).toBe(pending.nonce);
  return { tokens, claims: payload as Record<string, unknown> };
}

async function signIn(jar: CookieJar, email: string, password: string, clientId = 'svc') {
  const pending = authorizationUrl({ clientId, params: { login_hint: email } });
  const page = await begin(jar, pending);
  const done = await submitLogin(jar, page.url, email, password);
  return { pending, ...(await redeem(pending, done.url, clientId === 'svc' ? undefined : { secret: 'shh' })) };
}

describe('discovery', () => {
  it("advertises Authentik's URL layout, and every advertised endpoint answers", async () => {
    const origin = new URL(engine.issuer).origin;
    expect(engine.issuer).toBe(`${origin}/application/o/svc/`);
    expect(discovery.issuer).toBe(engine.issuer);
    expect(discovery.authorization_endpoint).toBe(`${origin}/application/o/authorize/`);
    expect(discovery.token_endpoint).toBe(`${origin}/application/o/token/`);
    expect(discovery.userinfo_endpoint).toBe(`${origin}/application/o/userinfo/`);
    expect(discovery.end_session_endpoint).toBe(`${origin}/application/o/svc/end-session/`);
    expect(discovery.jwks_uri).toBe(`${origin}/application/o/svc/jwks/`);
    expect(discovery.code_challenge_methods_supported).toEqual(['S256']);
    const jwks = (await (await fetch(discovery.jwks_uri ?? '')).json()) as { keys: { kty: string; alg: string; d?: string }[] };
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256' });
    expect(jwks.keys[0]?.d).toBeUndefined();
  });
});

describe('password sign-in', () => {
  it('pre-fills login_hint, rejects a wrong password in place, then issues a verified ID token with groups', async () => {
    const jar = new CookieJar();
    const pending = authorizationUrl({ params: { login_hint: 'admin@svc.local' } });
    const page = await begin(jar, pending);
    expect(page.res.status).toBe(200);
    expect(new URL(page.url).pathname).toBe('/if/flow/default-authentication-flow/');
    expect(new URL(page.url).searchParams.get('next')).toMatch(/^\/application\/o\/authorize\/[\w-]+$/);
    const html = await page.res.text();
    expect(html).toMatch(/<input[^>]*name="email"[^>]*value="admin@svc\.local"/);
    expect(html).toMatch(/<input[^>]*name="password"/);
    expect(html).toMatch(/<button type="submit"/);

    const wrong = await jar.post(page.url, { email: 'admin@svc.local', password: 'nope' });
    expect(wrong.status).toBe(200);
    expect(wrong.headers.get('location')).toBeNull();
    const wrongHtml = await wrong.text();
    expect(wrongHtml).toContain('Invalid email or password');
    expect(wrongHtml).toMatch(/name="email"[^>]*value="admin@svc\.local"/);

    const done = await submitLogin(jar, page.url, 'admin@svc.local', 'admin-password');
    const { tokens, claims } = await redeem(pending, done.url);
    expect(claims).toMatchObject({ email: 'admin@svc.local', email_verified: true, name: 'Platform Admin', groups: ['platform-admins'] });
    expect(claims.sub).toMatch(/^[0-9a-f]{64}$/);

    const userinfo = await fetch(discovery.userinfo_endpoint ?? '', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(await userinfo.json()).toMatchObject({ sub: claims.sub, email: 'admin@svc.local', groups: ['platform-admins'] });

    // A second authorization reuses the engine session (no page) and keeps the same subject.
    const again = authorizationUrl();
    const second = await begin(jar, again);
    expect(atRedirectUri(second.url)).toBe(true);
    expect((await redeem(again, second.url)).claims.sub).toBe(claims.sub);
  });

  it('gives a user without groups an empty groups claim', async () => {
    const { claims } = await signIn(new CookieJar(), 'user@svc.local', 'user-password');
    expect(claims).toMatchObject({ email: 'user@svc.local', groups: [] });
  });

  it('serves a confidential client with client_secret_basic and refuses a wrong secret', async () => {
    const { claims } = await signIn(new CookieJar(), 'user@svc.local', 'user-password', 'svc-confidential');
    expect(claims.aud).toBe('svc-confidential');

    const jar = new CookieJar();
    const pending = authorizationUrl({ clientId: 'svc-confidential', params: { login_hint: 'user@svc.local' } });
    const page = await begin(jar, pending);
    const done = await submitLogin(jar, page.url, 'user@svc.local', 'user-password');
    const code = new URL(done.url).searchParams.get('code') ?? '';
    const res = await fetch(discovery.token_endpoint ?? '', {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('svc-confidential:wrong').toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: pending.verifier }),
    });
    expect(res.status).toBe(401);
  });

  it('requires PKCE', async () => {
    const pending = authorizationUrl();
    const url = new URL(pending.url);
    url.searchParams.delete('code_challenge');
    url.searchParams.delete('code_challenge_method');
    const res = await new CookieJar().fetch(url.href);
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location') ?? '');
    expect(location.href.startsWith(REDIRECT_URI)).toBe(true);
    expect(location.searchParams.get('error')).toBe('invalid_request');
  });

  it('refuses to complete a flow page without a pending authorization', async () => {
    const jar = new CookieJar();
    const res = await jar.fetch(
      `${engine.url}/if/flow/default-authentication-flow/?next=${encodeURIComponent('/application/o/authorize/nope')}`,
    );
    expect(res.status).toBe(400);
  });
});

describe('enrollment (sign-up)', () => {
  it('prompt=create opens the enrollment flow, creates the user, completes the authorization, and the user can sign in again', async () => {
    const jar = new CookieJar();
    const pending = authorizationUrl({ params: { prompt: 'create', login_hint: 'new@example.com' } });
    const page = await begin(jar, pending);
    expect(page.res.status).toBe(200);
    expect(new URL(page.url).pathname).toBe('/if/flow/default-enrollment-flow/');
    const html = await page.res.text();
    expect(html).toMatch(/name="email"[^>]*value="new@example\.com"/);

    const short = await jar.post(page.url, { email: 'new@example.com', name: 'New Person', password: 'short' });
    expect(short.status).toBe(200);
    expect(await short.text()).toContain('at least 8 characters');

    const created = await jar.post(page.url, { email: 'new@example.com', name: 'New Person', password: 'new-password-1' });
    expect(created.status).toBe(303);
    const done = await jar.follow(new URL(created.headers.get('location') ?? '', page.url).href, atRedirectUri);
    const { claims } = await redeem(pending, done.url);
    expect(claims).toMatchObject({ email: 'new@example.com', name: 'New Person', email_verified: false, groups: [] });

    const again = await signIn(new CookieJar(), 'new@example.com', 'new-password-1');
    expect(again.claims.sub).toBe(claims.sub);

    const duplicate = authorizationUrl({ params: { prompt: 'create' } });
    const jar2 = new CookieJar();
    const page2 = await begin(jar2, duplicate);
    const dup = await jar2.post(page2.url, { email: 'new@example.com', name: 'Someone', password: 'another-password' });
    expect(dup.status).toBe(200);
    expect(await dup.text()).toContain('already exists');
  });
});

describe('social source', () => {
  it('idp_hint=google goes straight to the source, which completes the same authorization as the fixed identity', async () => {
    const jar = new CookieJar();
    const pending = authorizationUrl({ params: { idp_hint: 'google' } });
    const first = await jar.fetch(pending.url);
    expect(first.status).toBe(303);
    expect(new URL(first.headers.get('location') ?? '', engine.url).pathname).toBe('/source/oauth/login/google/');
    const done = await jar.follow(pending.url, atRedirectUri);
    const { claims } = await redeem(pending, done.url);
    expect(claims).toMatchObject({ email: 'social@svc.local', name: 'Social User', email_verified: true, groups: [] });
  });

  it('login_hint=source:google and the login page link reach the same source', async () => {
    const viaHint = authorizationUrl({ params: { login_hint: 'source:google' } });
    const jar = new CookieJar();
    const done = await jar.follow(viaHint.url, atRedirectUri);
    expect((await redeem(viaHint, done.url)).claims.email).toBe('social@svc.local');

    const jar2 = new CookieJar();
    const viaLink = authorizationUrl();
    const page = await begin(jar2, viaLink);
    const href = /href="(\/source\/oauth\/login\/google\/[^"]+)"/.exec(await page.res.text())?.[1]?.replaceAll('&#38;', '&');
    expect(href).toBeDefined();
    const done2 = await jar2.follow(new URL(href ?? '', engine.url).href, atRedirectUri);
    expect((await redeem(viaLink, done2.url)).claims.email).toBe('social@svc.local');
  });

  it('Authentik-style /source/oauth/login/google/?next=<authorize URL> signs in through the source', async () => {
    const pending = authorizationUrl();
    const relative = new URL(pending.url);
    const jar = new CookieJar();
    const done = await jar.follow(
      `${engine.url}/source/oauth/login/google/?next=${encodeURIComponent(relative.pathname + relative.search)}`,
      atRedirectUri,
    );
    expect((await redeem(pending, done.url)).claims.email).toBe('social@svc.local');
  });

  it('answers 404 for an unknown source', async () => {
    const res = await fetch(`${engine.url}/source/oauth/login/myspace/?next=/`);
    expect(res.status).toBe(404);
  });
});

describe('flow pages', () => {
  const flows = Object.keys(HANDOFF_FLOWS);

  it.each(flows)('%s renders a page whose button continues to a relative next', async (flow) => {
    const jar = new CookieJar();
    const next = '/if/user/?tab=security#x';
    const url = `${engine.url}/if/flow/${flow}/?next=${encodeURIComponent(next)}`;
    const page = await jar.fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<form method="post"[\s\S]*<button type="submit"/);
    const done = await jar.post(url, {});
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(next);
  });

  const hostile = [
    'http://evil.example/',
    'https:evil.example',
    '//evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    '/\t/evil.example',
    'evil',
    '',
  ];
  it.each(hostile)('refuses next=%j with 400', async (next) => {
    for (const flow of [...flows, 'default-authentication-flow', 'default-enrollment-flow']) {
      const url = `${engine.url}/if/flow/${flow}/?next=${encodeURIComponent(next)}`;
      expect((await fetch(url)).status, flow).toBe(400);
      expect((await fetch(url, { method: 'POST', redirect: 'manual' })).status, flow).toBe(400);
    }
    expect((await fetch(`${engine.url}/source/oauth/login/google/?next=${encodeURIComponent(next)}`, { redirect: 'manual' })).status).toBe(
      400,
    );
  });

  it('answers 404 for an unknown flow', async () => {
    expect((await fetch(`${engine.url}/if/flow/nope/?next=/`)).status).toBe(404);
  });
});

describe('end-session', () => {
  it('signs the first-party client out without a prompt and returns to post_logout_redirect_uri with state', async () => {
    const jar = new CookieJar();
    const { tokens } = await signIn(jar, 'user@svc.local', 'user-password');
    const url = new URL(discovery.end_session_endpoint ?? '');
    url.searchParams.set('id_token_hint', tokens.id_token);
    url.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_URI);
    url.searchParams.set('state', 'bye');
    const res = await jar.fetch(url.href);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${POST_LOGOUT_URI}?state=bye`);

    // The engine session is gone: a new authorization asks for the password again.
    const page = await begin(jar, authorizationUrl());
    expect(new URL(page.url).pathname).toBe('/if/flow/default-authentication-flow/');

    // Without an engine session, client_id alone still returns straight to the application.
    const again = new URL(discovery.end_session_endpoint ?? '');
    again.searchParams.set('client_id', 'svc');
    again.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_URI);
    const res2 = await jar.fetch(again.href);
    expect(res2.status).toBe(303);
    expect(res2.headers.get('location')).toBe(POST_LOGOUT_URI);
  });

  it('asks for confirmation when no client is named, and signs out on "yes"', async () => {
    const jar = new CookieJar();
    await signIn(jar, 'user@svc.local', 'user-password');
    const page = await jar.fetch(discovery.end_session_endpoint ?? '');
    expect(page.status).toBe(200);
    const html = await page.text();
    const action = /<form id="op.logoutForm" method="post" action="([^"]+)"/.exec(html)?.[1] ?? '';
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    expect(action).toContain('/application/o/svc/end-session/');
    const res = await jar.post(action, { xsrf, logout: 'yes' });
    expect(res.status).toBe(303);
    const signedOut = await jar.follow(new URL(res.headers.get('location') ?? '', action).href);
    expect(await signedOut.res.text()).toContain('Signed out');
    const again = await begin(jar, authorizationUrl());
    expect(new URL(again.url).pathname).toBe('/if/flow/default-authentication-flow/');
  });

  it('refuses an unregistered post_logout_redirect_uri', async () => {
    const url = new URL(discovery.end_session_endpoint ?? '');
    url.searchParams.set('client_id', 'svc');
    url.searchParams.set('post_logout_redirect_uri', 'https://evil.example/');
    const res = await new CookieJar().fetch(url.href);
    expect(res.status).toBe(400);
  });
});

describe('admin API', () => {
  const api = (path: string, init: RequestInit = {}, token: string | null = ADMIN_TOKEN) =>
    fetch(`${engine.url}/api/v3${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });

  it('answers 401 without or with a wrong bearer token', async () => {
    for (const path of ['/core/users/', '/core/users/1/', '/core/groups/']) {
      expect((await api(path, {}, null)).status).toBe(401);
      expect((await api(path, {}, 'wrong')).status).toBe(401);
    }
    expect((await api('/core/users/', { method: 'POST', body: '{}' }, null)).status).toBe(401);
  });

  it('lists users Authentik-style without any password', async () => {
    const res = await api('/core/users/');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toMatch(/password/i);
    expect(text).not.toContain('admin-password');
    const body = JSON.parse(text) as { pagination: { count: number }; results: Record<string, unknown>[] };
    expect(body.pagination.count).toBe(body.results.length);
    const admin = body.results.find((u) => u.email === 'admin@svc.local');
    expect(admin).toMatchObject({
      username: 'admin@svc.local',
      name: 'Platform Admin',
      is_active: true,
      groups_obj: [{ name: 'platform-admins' }],
    });
    expect(typeof admin?.pk).toBe('number');

    const one = await api(`/core/users/${admin?.pk}/`);
    expect(await one.json()).toMatchObject({ email: 'admin@svc.local' });
    expect((await api('/core/users/9999/')).status).toBe(404);

    const filtered = (await (await api('/core/users/?email=user@svc.local')).json()) as { results: unknown[] };
    expect(filtered.results).toHaveLength(1);
  });

  it('creates a user who can then sign in, and lists groups', async () => {
    const res = await api('/core/users/', {
      method: 'POST',
      body: JSON.stringify({
        username: 'made',
        email: 'made@example.com',
        name: 'Made Via API',
        password: 'made-password',
        groups: ['ops'],
      }),
    });
    expect(res.status).toBe(201);
    const text = await res.text();
    expect(text).not.toMatch(/password/i);
    expect(JSON.parse(text)).toMatchObject({ username: 'made', email: 'made@example.com', groups_obj: [{ name: 'ops' }] });

    expect(
      (await api('/core/users/', { method: 'POST', body: JSON.stringify({ username: 'x', email: 'made@example.com', name: 'X' }) })).status,
    ).toBe(400);
    expect((await api('/core/users/', { method: 'POST', body: JSON.stringify({ email: 'not-an-email' }) })).status).toBe(400);

    const { claims } = await signIn(new CookieJar(), 'made@example.com', 'made-password');
    expect(claims.groups).toEqual(['ops']);

    const groups = (await (await api('/core/groups/')).json()) as {
      pagination: { count: number };
      results: { pk: string; name: string }[];
    };
    expect(groups.results.map((g) => g.name)).toEqual(expect.arrayContaining(['platform-admins', 'ops']));
    expect(groups.pagination.count).toBe(groups.results.length);

    const ops = groups.results.find((g) => g.name === 'ops');
    expect(ops?.pk).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
    const one = await api(`/core/groups/${ops?.pk}/`);
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual(ops);
    expect((await api('/core/groups/00000000-0000-4000-a000-000000000000/')).status).toBe(404);
  });
});

describe('loadDevUsers', () => {
  it('defaults to the demo users', () => {
    expect(loadDevUsers({})).toBe(DEMO_USERS);
    expect(DEMO_USERS.find((u) => u.groups.includes('platform-admins'))?.email).toBe('admin@svc.local');
  });

  it('reads a JSON array or a file path', () => {
    const users = [{ email: 'a@b.co', password: 'pw', name: 'A', groups: ['g'] }];
    expect(loadDevUsers({ DEV_ENGINE_USERS: JSON.stringify(users) })).toEqual(users);
    const dir = mkdtempSync(join(tmpdir(), 'dev-engine-'));
    const file = join(dir, 'users.json');
    writeFileSync(file, JSON.stringify([{ email: 'c@d.co', password: 'pw', name: 'C' }]));
    expect(loadDevUsers({ DEV_ENGINE_USERS: file })).toEqual([{ email: 'c@d.co', password: 'pw', name: 'C', groups: [] }]);
  });

  it('fails with a clear error naming the variable and the problem', () => {
    expect(() => loadDevUsers({ DEV_ENGINE_USERS: '[{"email":' })).toThrow(/DEV_ENGINE_USERS is not valid JSON/);
    expect(() => loadDevUsers({ DEV_ENGINE_USERS: '[{"email":"nope","password":"x","name":"n"}]' })).toThrow(
      /DEV_ENGINE_USERS is invalid at 0\.email/,
    );
    expect(() => loadDevUsers({ DEV_ENGINE_USERS: '[{"email":"a@b.co","name":"n"}]' })).toThrow(/invalid at 0\.password/);
    expect(() => loadDevUsers({ DEV_ENGINE_USERS: '{"email":"a@b.co"}' })).toThrow(/must be a JSON array/);
    expect(() => loadDevUsers({ DEV_ENGINE_USERS: '/nonexistent/users.json' })).toThrow(/no file at \/nonexistent\/users\.json/);
  });
});

describe('users file: sign-ups survive a restart', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-dev-engine-users-')), 'dev-engine', 'users.json');
  let shared: { engine: DevEngine; discovery: Record<string, string> };

  /** An engine on `file`, which the helpers above then talk to. */
  async function start(): Promise<DevEngine> {
    engine = await startDevEngine({
      port: await freePort(),
      users: DEMO_USERS,
      usersFile: file,
      clients: [{ client_id: 'svc', redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [POST_LOGOUT_URI] }],
    });
    discovery = (await (await fetch(`${engine.issuer}.well-known/openid-configuration`)).json()) as Record<string, string>;
    return engine;
  }

  beforeAll(() => {
    shared = { engine, discovery };
  });
  afterAll(async () => {
    if (engine !== shared.engine) {
      await engine.close();
    }
    ({ engine, discovery } = shared);
  });

  it('keeps who signed up (password as a scrypt hash only) and signs them in after the engine restarts', async () => {
    const first = await start();
    const jar = new CookieJar();
    const pending = authorizationUrl({ params: { prompt: 'create' } });
    const page = await begin(jar, pending);
    const created = await jar.post(page.url, { email: 'kept@example.com', name: 'Kept Person', password: 'kept-password-1' });
    expect(created.status).toBe(303);
    const done = await jar.follow(new URL(created.headers.get('location') ?? '', page.url).href, atRedirectUri);
    const { claims } = await redeem(pending, done.url);
    await first.close();

    const kept = readFileSync(file, 'utf8');
    expect(kept).toContain('kept@example.com');
    expect(kept).not.toContain('kept-password-1');
    // The seed is built afresh at each start, never copied into the file.
    expect(kept).not.toContain('admin@svc.local');
    expect(statSync(file).mode & 0o777).toBe(0o600);

    await start();
    const again = await signIn(new CookieJar(), 'kept@example.com', 'kept-password-1');
    expect(again.claims).toMatchObject({ sub: claims.sub, email: 'kept@example.com', name: 'Kept Person', email_verified: false });
    expect(engine.users.authenticate('kept@example.com', 'wrong-password')).toBeUndefined();
    // Still one user per email after the restart, and the seed users as before.
    expect(engine.users.list().filter((u) => u.email === 'kept@example.com')).toHaveLength(1);
    expect(engine.users.authenticate('admin@svc.local', 'admin-password')).toBeDefined();
  });

  it('refuses a file that is not its own rather than start without its users', () => {
    writeFileSync(file, '{"users": "nope"}');
    expect(() => new UserStore(DEMO_USERS, { file })).toThrow(/not a users file of the development engine/);
  });
});
