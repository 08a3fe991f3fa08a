import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SYSTEM_ROLES } from '@svc/contracts/permissions';
import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { cspSources, expectHostedPage } from '../../../../../test/support/hosted-page.ts';
import { browseToRedirect, PEOPLE, type Person } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';
import { getOrCreateKeylessApplication } from '../applications/service.ts';

/** A loopback redirect on an arbitrary port: the keyless application takes any. */
const REDIRECT = 'http://127.0.0.1:53117/callback';
/** A web application's registered redirect URL and post-logout URL (exact). */
const APP_REDIRECT = 'http://127.0.0.1:53118/callback';
const SIGNED_OUT = 'http://127.0.0.1:53118/signed-out';

/**
 * Signing in to an application through svc, end to end: openid-client as the application, a
 * cookie jar as the browser, svc's hosted pages, the development engine's sign-in, real
 * PostgreSQL. Tokens are checked with jose against svc's JWKS.
 */
describe('svc OpenID Provider: signing in to an application', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let clientId: string;
  let config: oidc.Configuration;
  let jwks: ReturnType<typeof createRemoteJWKSet>;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-oidc-flow' });
    clientId = (await getOrCreateKeylessApplication(database.db)).application.id;
    config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri as string));
    // The product's catalog: what the built-in roles carry in tokens (never svc's own catalog).
    await database.sql`insert into api_resources (id, identifier, name) values ('res_invoicesinvoicesinvo', 'https://api.invoices.example', 'Invoices')`;
    await database.sql`insert into api_permissions (id, resource_id, name) values
      ('prm_aaaaaaaaaaaaaaaaaaaa', 'res_invoicesinvoicesinvo', 'invoices.read'),
      ('prm_bbbbbbbbbbbbbbbbbbbb', 'res_invoicesinvoicesinvo', 'invoices.create')`;
    await database.sql`update product_roles set permissions = '{invoices.create,invoices.read}' where key = 'org_admin'`;
    await database.sql`update product_roles set permissions = '{invoices.read}' where key = 'org_member'`;
  });

  afterAll(async () => {
    await database?.close();
    await server?.close();
  });

  /** An application as openid-client sees it: the keyless one unless a test seeds another. */
  type AppClient = { config: oidc.Configuration; redirectUri: string };
  type Started = { url: URL; verifier: string; state: string; app: AppClient };

  async function start(params: Record<string, string> = {}, app: AppClient = { config, redirectUri: REDIRECT }): Promise<Started> {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(app.config, {
      redirect_uri: app.redirectUri,
      scope: 'openid email profile offline_access',
      // Explicit here; without a prompt svc reads offline_access as prompt=consent (a test below).
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...params,
    });
    return { url, verifier, state, app };
  }

  /** Plays the browser from the authorization URL until the application's redirect URI. */
  function browse(jar: CookieJar, url: URL | string, opts: { person?: Person; pick?: string; redirectUri?: string } = {}) {
    return browseToRedirect(jar, url, { ...opts, svcUrl: server.url, redirectUri: opts.redirectUri ?? REDIRECT });
  }

  async function exchange(started: Started, callback: URL) {
    return oidc.authorizationCodeGrant(started.app.config, callback, {
      pkceCodeVerifier: started.verifier,
      expectedState: started.state,
    });
  }

  async function signIn(
    jar: CookieJar,
    params: Record<string, string> = {},
    opts: { person?: Person; pick?: string; app?: AppClient } = {},
  ) {
    const started = await start(params, opts.app);
    const browsed = await browse(jar, started.url, { ...opts, redirectUri: started.app.redirectUri });
    return { ...browsed, tokens: await exchange(started, browsed.callback) };
  }

  async function verifyAccessToken(token: string) {
    return jwtVerify(token, jwks, { issuer: server.url, audience: clientId, typ: 'at+jwt' });
  }

  async function refresh(token: string, client = clientId) {
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: client }),
    });
    const body = (await res.json()) as Record<string, string>;
    return { status: res.status, body };
  }

  async function svcSessionIdOf(jar: CookieJar): Promise<string> {
    const [row] = await database.sql<{ id: string }[]>`
      select id from sessions where revoked_at is null order by created_at desc limit 1`;
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    return row?.id as string;
  }

  it('authorization code + PKCE on a loopback redirect: svc sign-in branded with the application, the engine, signed tokens', async () => {
    const jar = new CookieJar();
    const started = await start({ scope: 'openid email profile offline_access organization' });
    const browsed = await browse(jar, started.url);
    expect(browsed.steps).toEqual(['svc-sign-in', 'engine']);
    expect(browsed.pages[0]).toContain('Sign in to ');
    const tokens = await exchange(started, browsed.callback);
    const sid = await svcSessionIdOf(jar);
    const [user] = await database.sql<{ id: string }[]>`select id from users where email = 'user@svc.local'`;
    const [membership] = await database.sql<{ tenant_id: string; slug: string; role_key: string }[]>`
      select m.tenant_id, o.slug, m.role_key from memberships m join organizations o on o.id = m.tenant_id
      where m.user_id = ${user?.id as string} and o.kind = 'tenant'`;

    const id = await jwtVerify(tokens.id_token as string, jwks, { issuer: server.url, audience: clientId });
    expect(id.payload).toMatchObject({
      sub: user?.id,
      email: 'user@svc.local',
      email_verified: expect.any(Boolean),
      name: expect.any(String),
      sid,
      org_id: membership?.tenant_id,
      org_slug: membership?.slug,
      org_role: 'org_admin',
    });
    expect(id.payload.sub).toMatch(/^usr_/);
    expect(sid).toMatch(/^ses_/);
    // The product's permissions of the built-in org_admin role; svc's control-plane ones never.
    expect([...(id.payload.permissions as string[])].sort()).toEqual(['invoices.create', 'invoices.read']);

    const at = await verifyAccessToken(tokens.access_token);
    expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
    // Short-lived: offline verifiers learn of a session's end within ten minutes.
    expect((at.payload.exp as number) - (at.payload.iat as number)).toBe(600);
    expect(at.payload).toMatchObject({
      sub: user?.id,
      aud: clientId,
      client_id: clientId,
      sid,
      org_id: membership?.tenant_id,
      org_slug: membership?.slug,
      org_role: 'org_admin',
      permissions: ['invoices.create', 'invoices.read'],
    });
    expect((at.payload.scope as string).split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'organization', 'profile']);

    // userinfo, as openid-client fetches it.
    const info = await oidc.fetchUserInfo(config, tokens.access_token, user?.id as string);
    expect(info).toMatchObject({ sub: user?.id, email: 'user@svc.local', org_id: membership?.tenant_id, org_role: 'org_admin' });

    // Refresh rotates: the new refresh token works, the old one is refused afterwards.
    expect(tokens.refresh_token).toBeDefined();
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.refresh_token).toBeDefined();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const again = await verifyAccessToken(refreshed.access_token);
    expect(again.payload).toMatchObject({ sid, org_id: membership?.tenant_id });
    const old = await refresh(tokens.refresh_token as string);
    expect(old.status).toBe(400);
    expect(old.body.error).toBe('invalid_grant');
  });

  it('the agent context and client config give an issuer and client id that work literally with openid-client', async () => {
    const res = await fetch(`${server.url}/v1/setup/agent-context?keyless=1&framework=express`);
    const ctx = (await res.json()) as {
      oidc: { issuer: string; clientId: string; discoveryUrl: string };
      framework: { callbackUrl: string };
    };
    const config2 = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as {
      oidc: { issuer: string; clientId: string };
    };
    expect(config2.oidc).toEqual({ issuer: ctx.oidc.issuer, clientId: ctx.oidc.clientId });
    expect(ctx.oidc.clientId).toBe(clientId);
    expect(ctx.oidc.discoveryUrl).toBe(`${ctx.oidc.issuer}/.well-known/openid-configuration`);
    const callback = ctx.framework.callbackUrl;
    expect(new URL(callback).hostname).toBe('localhost');
    // As the express wiring says: discovery at the issuer, public client, PKCE S256.
    const app = await oidc.discovery(new URL(ctx.oidc.issuer), ctx.oidc.clientId, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(app, {
      redirect_uri: callback,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const jar = new CookieJar();
    const browsed = await browse(jar, url, { redirectUri: callback });
    const tokens = await oidc.authorizationCodeGrant(app, browsed.callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()?.email).toBe('user@svc.local');
  });

  it('single sign-on: a second authorization with the svc session goes straight through; prompt=login goes to the engine again', async () => {
    const jar = new CookieJar();
    const first = await signIn(jar);
    expect(first.steps).toEqual(['svc-sign-in', 'engine']);
    const firstSid = (await verifyAccessToken(first.tokens.access_token)).payload.sid;

    const second = await signIn(jar);
    expect(second.steps).toEqual([]);
    expect((await verifyAccessToken(second.tokens.access_token)).payload.sid).toBe(firstSid);

    const forced = await signIn(jar, { prompt: 'login consent' });
    expect(forced.steps).toEqual(['svc-sign-in', 'engine']);
    const forcedSid = (await verifyAccessToken(forced.tokens.access_token)).payload.sid;
    expect(forcedSid).toMatch(/^ses_/);
    expect(forcedSid).not.toBe(firstSid);
  });

  it('signing out of svc ends single sign-on; the next person to sign in gets their own tokens', async () => {
    const jar = new CookieJar();
    const first = await signIn(jar);
    const out = await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } });
    expect(out.status).toBe(303);
    // And out of the engine, as the browser would be taken there.
    await jar.follow(new URL(out.headers.get('location') as string, server.url).href);
    const next = await signIn(jar, {}, { person: 'social' });
    expect(next.steps[0]).toBe('svc-sign-in');
    const before = (await verifyAccessToken(first.tokens.access_token)).payload;
    const after = (await verifyAccessToken(next.tokens.access_token)).payload;
    expect(after.sub).not.toBe(before.sub);
    expect(after.sid).not.toBe(before.sid);
    const id = await jwtVerify(next.tokens.id_token as string, jwks, { issuer: server.url, audience: clientId });
    expect(id.payload.email).toBe('social@svc.local');
  });

  it('max_age exceeded sends the person to sign in again; within it, straight through', async () => {
    const jar = new CookieJar();
    await signIn(jar);
    const within = await signIn(jar, { max_age: '3600' });
    expect(within.steps).toEqual([]);
    const [row] = await database.sql<{ id: string }[]>`select id from sessions where revoked_at is null order by created_at desc limit 1`;
    await database.sql`update sessions set created_at = now() - interval '2 hours' where id = ${row?.id as string}`;
    const exceeded = await signIn(jar, { max_age: '3600' });
    expect(exceeded.steps).toEqual(['svc-sign-in', 'engine']);
    const id = await jwtVerify(exceeded.tokens.id_token as string, jwks, { issuer: server.url, audience: clientId });
    expect(Math.floor(Date.now() / 1000) - (id.payload.auth_time as number)).toBeLessThan(60);
  });

  it('prompt=none without a svc session answers login_required to the application', async () => {
    const started = await start({ prompt: 'none' });
    const res = await fetch(started.url, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location') as string);
    expect(location.origin + location.pathname).toBe(REDIRECT);
    expect(location.searchParams.get('error')).toBe('login_required');
    expect(location.searchParams.get('state')).toBe(started.state);
  });

  it('organization=<slug> of an organization the person is not in answers access_denied', async () => {
    const other = await seedApplication(database.db);
    const jar = new CookieJar();
    const started = await start({ scope: 'openid organization', organization: other.organization.slug });
    const browsed = await browse(jar, started.url);
    expect(browsed.callback.searchParams.get('error')).toBe('access_denied');
    expect(browsed.callback.searchParams.get('code')).toBeNull();
  });

  it("signInAudience members: a person outside the application's organization gets access_denied, a member signs in", async () => {
    const app = await seedApplication(database.db, { clientType: 'public', signInAudience: 'members', redirectUrls: [REDIRECT] });
    const membersOnly = await oidc.discovery(new URL(server.url), app.application.id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const attempt = async (jar: CookieJar) => {
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(membersOnly, {
        redirect_uri: REDIRECT,
        scope: 'openid email',
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      });
      return { browsed: await browse(jar, url), verifier, state };
    };
    const jar = new CookieJar();
    const outsider = await attempt(jar);
    expect(outsider.browsed.callback.searchParams.get('error')).toBe('access_denied');
    expect(outsider.browsed.callback.searchParams.get('code')).toBeNull();

    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${app.organization.id}, id, 'org_member' from users where email = ${PEOPLE.user.email}`;
    const member = await attempt(jar);
    const tokens = await oidc.authorizationCodeGrant(membersOnly, member.browsed.callback, {
      pkceCodeVerifier: member.verifier,
      expectedState: member.state,
    });
    expect(tokens.claims()?.email).toBe(PEOPLE.user.email);
  });

  it('a person in two organizations picks one on the hosted page, or names it with organization=<slug>', async () => {
    const jar = new CookieJar();
    await signIn(jar, {}, { person: 'social' });
    const second = await seedApplication(database.db);
    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${second.organization.id}, id, 'org_member' from users where email = 'social@svc.local'`;

    const picked = await signIn(jar, { scope: 'openid organization' }, { person: 'social', pick: second.organization.slug });
    expect(picked.steps).toEqual(['pick-organization']);
    const at = await verifyAccessToken(picked.tokens.access_token);
    expect(at.payload).toMatchObject({ org_id: second.organization.id, org_slug: second.organization.slug, org_role: 'org_member' });
    expect(at.payload.permissions).toEqual(['invoices.read']);
    expect(SYSTEM_ROLES.org_member.permissions.some((p) => (at.payload.permissions as string[]).includes(p))).toBe(false);

    const named = await signIn(jar, { scope: 'openid organization', organization: second.organization.slug }, { person: 'social' });
    expect(named.steps).toEqual([]);
    expect((await verifyAccessToken(named.tokens.access_token)).payload.org_id).toBe(second.organization.id);

    // A forged choice (an organization the person is not in) is refused on the hosted page.
    const started = await start({ scope: 'openid organization' });
    const res = await jar.fetch(started.url.href);
    const interaction = new URL(res.headers.get('location') as string, server.url).href;
    const page = await jar.fetch(interaction);
    expect(await page.text()).toContain('pick-organization');
    const crossSite = await jar.fetch(interaction, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams({ organization: second.organization.id }).toString(),
    });
    expect(crossSite.status).toBe(403);
    const forged = await jar.fetch(interaction, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
      body: new URLSearchParams({ organization: (await seedApplication(database.db)).organization.id }).toString(),
    });
    expect(forged.status).toBe(400);
  });

  it('the organization choice names the application and shows its logo, HTML-escaped; only there may https images load', async () => {
    const jar = new CookieJar();
    await signIn(jar, {}, { person: 'social' });
    const seeded = await seedApplication(database.db, {
      name: '<b>Team</b> & "App"',
      logoUrl: 'https://cdn.example.com/team.svg?a=1&b=2',
      clientType: 'public',
      redirectUrls: [APP_REDIRECT],
    });
    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${seeded.organization.id}, id, 'org_member' from users where email = 'social@svc.local'
      on conflict do nothing`;
    const appConfig = await oidc.discovery(new URL(server.url), seeded.application.id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const started = await start({ scope: 'openid organization' }, { config: appConfig, redirectUri: APP_REDIRECT });
    const interaction = new URL((await jar.fetch(started.url.href)).headers.get('location') as string, server.url).href;
    const picker = await jar.fetch(interaction);
    const html = await picker.text();
    expect(html).toContain('pick-organization');
    const escaped = '&#60;b&#62;Team&#60;/b&#62; &#38; &#34;App&#34;';
    expect(expectHostedPage(html, 'picker')).toBe(`Continue to ${escaped} as`);
    expect(html).not.toContain('<b>');
    expect(html).toContain(
      `<img class="brand__logo" src="https://cdn.example.com/team.svg?a=1&#38;b=2" alt="${escaped} logo" width="48" height="48" referrerpolicy="no-referrer" data-testid="application-logo">`,
    );
    expect(cspSources(picker, 'img-src')).toEqual(["'self'", 'data:', 'https:']);
    expect(cspSources(picker, 'script-src')).toEqual(["'self'"]);
  });

  /** The sources of the form-action directive of a page's Content-Security-Policy. */
  function formActionOf(res: Response): string[] {
    const csp = res.headers.get('content-security-policy') ?? '';
    const directive = csp.split(';').find((d) => d.trim().startsWith('form-action')) ?? '';
    return directive.trim().split(/\s+/).slice(1);
  }

  it("the interaction's forms may end on the origin of its registered redirect URI only, never one a request names", async () => {
    const appOrigin = new URL(APP_REDIRECT).origin;
    const evil = 'https://evil.example';
    const { seeded, app } = await webApp();
    const base = formActionOf(await fetch(`${server.url}/signin`));
    expect(base).not.toContain(appOrigin);

    // The sign-in hand-off on the interaction (no svc session yet): the engine may send the
    // browser straight back and on to the application.
    const anonymous = new CookieJar();
    const first = await start({ scope: 'openid organization' }, app);
    const toSignIn = await anonymous.fetch(first.url.href);
    const signInPage = await anonymous.fetch(new URL(toSignIn.headers.get('location') as string, server.url).href);
    expect(await signInPage.text()).toContain('name="login_hint"');
    expect(formActionOf(signInPage)).toEqual([...base, appOrigin]);

    // The organization choice of a person in several organizations.
    const jar = new CookieJar();
    await signIn(jar, {}, { person: 'social' });
    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${seeded.organization.id}, id, 'org_member' from users where email = 'social@svc.local'
      on conflict do nothing`;
    const started = await start({ scope: 'openid organization' }, app);
    const interaction = new URL((await jar.fetch(started.url.href)).headers.get('location') as string, server.url).href;
    const picker = await jar.fetch(interaction);
    expect(await picker.text()).toContain('pick-organization');
    expect(formActionOf(picker)).toEqual([...base, appOrigin]);

    // Another redirect_uri (or client) named to the page itself changes nothing: the origin is
    // the one the stored interaction holds.
    const named = new URL(interaction);
    named.searchParams.set('redirect_uri', `${evil}/callback`);
    named.searchParams.set('client_id', clientId);
    const tampered = await jar.fetch(named.href);
    expect(await tampered.text()).toContain('pick-organization');
    expect(formActionOf(tampered)).toEqual([...base, appOrigin]);
    expect(formActionOf(tampered).join(' ')).not.toContain('evil.example');

    // An authorization request naming an unregistered redirect_uri gets svc's error page, no widening.
    const unregistered = await jar.fetch((await start({ scope: 'openid organization', redirect_uri: `${evil}/callback` }, app)).url.href, {
      headers: NAVIGATION,
    });
    expect(unregistered.status).toBe(400);
    expect(formActionOf(unregistered)).toEqual(base);

    // response_mode=form_post: svc's page posts the code to the redirect URI, so its form-action
    // names that origin; an unregistered one gets the error page and nothing more.
    // (prompt=consent: through the interaction, which has nothing to ask, and the resume.)
    let formPost = await jar.fetch((await start({ scope: 'openid', response_mode: 'form_post' }, app)).url.href);
    for (let hop = 0; hop < 5 && formPost.status === 303; hop++) {
      formPost = await jar.fetch(new URL(formPost.headers.get('location') as string, server.url).href);
    }
    expect(await formPost.text()).toContain(`<form method="post" action="${APP_REDIRECT}">`);
    expect(formActionOf(formPost)).toEqual([...base, appOrigin]);
    const formPostElsewhere = await jar.fetch(
      (await start({ scope: 'openid', response_mode: 'form_post', redirect_uri: `${evil}/callback` }, app)).url.href,
      { headers: NAVIGATION },
    );
    expect(formPostElsewhere.status).toBe(400);
    expect(formActionOf(formPostElsewhere)).toEqual(base);

    // The redirect URI is no longer registered (the application changed since the request): the
    // page no longer lets its form go there.
    await database.sql`update applications set redirect_urls = ${['http://127.0.0.1:53119/callback']} where id = ${seeded.application.id}`;
    const deadline = Date.now() + 5_000;
    let after = formActionOf(await jar.fetch(interaction));
    while (after.includes(appOrigin) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = formActionOf(await jar.fetch(interaction));
    }
    expect(after).toEqual(base);
  });

  it('offline_access without a prompt gets a refresh token, as any OIDC library asks for it; an explicit prompt is kept', async () => {
    const jar = new CookieJar();
    const plain = await start();
    plain.url.searchParams.delete('prompt');
    const { callback } = await browse(jar, plain.url);
    const tokens = await exchange(plain, callback);
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect((await verifyAccessToken(tokens.access_token)).payload.scope).toContain('offline_access');
    const renewed = await refresh(tokens.refresh_token as string);
    expect(renewed.status).toBe(200);
    // prompt=login names the prompt: offline_access needs consent with it, as the standard says.
    const login = await start({ prompt: 'login' });
    const relogin = await browse(jar, login.url);
    const withoutOffline = await exchange(login, relogin.callback);
    expect(withoutOffline.refresh_token).toBeUndefined();
  });

  it('a revoked svc session ends its refresh tokens (invalid_grant)', async () => {
    const jar = new CookieJar();
    const { tokens } = await signIn(jar);
    const sid = (await verifyAccessToken(tokens.access_token)).payload.sid as string;
    await database.sql`update sessions set revoked_at = now() where id = ${sid}`;
    const res = await refresh(tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
    // userinfo stops too.
    const info = await fetch(`${server.url}/oidc/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.status).toBe(401);
  });

  it('a suspended membership ends the refresh tokens issued for that organization (invalid_grant)', async () => {
    const jar = new CookieJar();
    const org = await seedApplication(database.db);
    await signIn(jar, {}, { person: 'admin' });
    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${org.organization.id}, id, 'org_member' from users where email = 'admin@svc.local'`;
    const { tokens } = await signIn(jar, { scope: 'openid offline_access organization' }, { person: 'admin' });
    expect((await verifyAccessToken(tokens.access_token)).payload.org_id).toBe(org.organization.id);
    const ok = await refresh(tokens.refresh_token as string);
    expect(ok.status).toBe(200);
    await database.sql`
      update memberships set status = 'suspended'
      where tenant_id = ${org.organization.id} and user_id = (select id from users where email = 'admin@svc.local')`;
    const res = await refresh(ok.body.refresh_token as string);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it('a code presented by another client is refused, and then dead for its own client too (it leaked)', async () => {
    const jar = new CookieJar();
    const other = await seedApplication(database.db, { clientType: 'public', redirectUrls: [REDIRECT] });
    const started = await start();
    const { callback } = await browse(jar, started.url);
    const code = callback.searchParams.get('code') as string;
    const present = (client_id: string) =>
      fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          client_id,
          redirect_uri: REDIRECT,
          code_verifier: started.verifier,
        }),
      });
    const stolen = await present(other.application.id);
    expect(stolen.status).toBe(400);
    expect(((await stolen.json()) as { error: string }).error).toBe('invalid_grant');
    const own = await present(clientId);
    expect(own.status).toBe(400);
    expect(((await own.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('a reused authorization code is refused (invalid_grant) and the tokens it issued are revoked', async () => {
    const jar = new CookieJar();
    const started = await start();
    const { callback } = await browse(jar, started.url);
    const tokens = await exchange(started, callback);
    const code = callback.searchParams.get('code') as string;
    const replay = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_verifier: started.verifier,
      }),
    });
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe('invalid_grant');
    const res = await refresh(tokens.refresh_token as string);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });
  /** A public web application with registered post-logout URLs, as openid-client sees it. */
  async function webApp(postLogoutRedirectUrls = [SIGNED_OUT]) {
    const seeded = await seedApplication(database.db, { clientType: 'public', redirectUrls: [APP_REDIRECT], postLogoutRedirectUrls });
    const appConfig = await oidc.discovery(new URL(server.url), seeded.application.id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    return { seeded, app: { config: appConfig, redirectUri: APP_REDIRECT } };
  }

  type LogoutPage = { res: Response; html: string; xsrf: string; action: string };
  /** What a browser's navigation accepts: oidc-provider answers its errors with a page, not JSON. */
  const NAVIGATION = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

  /** Opens an end-session URL in the browser: the confirmation page and its form, or the answer. */
  async function openLogout(jar: CookieJar, url: URL): Promise<LogoutPage> {
    const res = await jar.fetch(url.href, { headers: NAVIGATION });
    const html = await res.text();
    return {
      res,
      html,
      xsrf: /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? '',
      action: /<form method="post" action="([^"]+)"/.exec(html)?.[1] ?? '',
    };
  }

  /** Submits the confirmation form (logout=yes is the Sign out button) from `origin`. */
  function submitLogout(jar: CookieJar, page: LogoutPage, fields: Record<string, string>, origin = server.url) {
    return jar.fetch(page.action, {
      method: 'POST',
      headers: { ...NAVIGATION, 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams(fields).toString(),
    });
  }

  async function revokedAt(sid: string): Promise<Date | null> {
    const [row] = await database.sql<{ revoked_at: Date | null }[]>`select revoked_at from sessions where id = ${sid}`;
    expect(row, `session ${sid}`).toBeDefined();
    return row?.revoked_at ?? null;
  }

  it('RP-initiated logout with an id_token_hint of the current session: no page; the svc and engine sessions end and the browser returns to post_logout_redirect_uri with state', async () => {
    const { seeded, app } = await webApp();
    const jar = new CookieJar();
    const { tokens } = await signIn(jar, {}, { app });
    const sid = (await jwtVerify(tokens.id_token as string, jwks, { issuer: server.url, audience: seeded.application.id })).payload
      .sid as string;
    const url = oidc.buildEndSessionUrl(app.config, {
      id_token_hint: tokens.id_token as string,
      post_logout_redirect_uri: SIGNED_OUT,
      state: 'after-logout-1',
      ui_locales: 'en',
    });
    expect(url.href.startsWith(`${server.url}/oidc/session/end?`)).toBe(true);
    expect(await revokedAt(sid)).toBeNull();

    const ended = await jar.fetch(url.href, { headers: NAVIGATION });
    expect(ended.status).toBe(303);
    expect(await ended.text()).not.toContain('name="xsrf"');
    // Ended at svc before the browser goes anywhere: the session, its cookie, the provider's
    // session, the application's refresh token.
    expect(await revokedAt(sid)).not.toBeNull();
    expect(jar.cookiesFor(server.url).svc_session).toBeUndefined();
    expect(jar.cookiesFor(server.url).svc_op_session).toBeUndefined();
    const refused = await refresh(tokens.refresh_token as string, seeded.application.id);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    // Then the engine's end-session endpoint, which hands the browser back to svc.
    const engineEnd = new URL(ended.headers.get('location') as string);
    expect(engineEnd.origin).not.toBe(server.url);
    expect(engineEnd.searchParams.get('post_logout_redirect_uri')).toBe(`${server.url}/signin`);

    const back = await jar.follow(engineEnd.href, (location) => location.startsWith(SIGNED_OUT));
    const landed = new URL(back.url);
    expect(landed.origin + landed.pathname).toBe(SIGNED_OUT);
    expect([...landed.searchParams]).toEqual([['state', 'after-logout-1']]);
    expect(jar.cookiesFor(server.url).svc_logout).toBeUndefined();
    // The engine's session ended too: signing in again asks the engine, not only svc.
    const again = await signIn(jar, {}, { app });
    expect(again.steps).toEqual(['svc-sign-in', 'engine']);
  });

  it('without a hint of the current session the question stays: no hint, a hint in a browser without the session, a forged hint', async () => {
    const { seeded, app } = await webApp();
    const jar = new CookieJar();
    const { tokens } = await signIn(jar, {}, { app });
    const idToken = tokens.id_token as string;
    const sid = decodeJwt(idToken).sid as string;

    // client_id alone (openid-client adds it): the confirmation, under svc's CSP, with no script.
    const page = await openLogout(jar, oidc.buildEndSessionUrl(app.config, { post_logout_redirect_uri: SIGNED_OUT, state: 's1' }));
    expect(page.res.status).toBe(200);
    expect(page.html).toContain('Also sign out of svc?');
    expect(page.html).toContain(`${seeded.application.name} asks svc to sign you out.`);
    expect(page.html).toContain('Signed in to svc as user@svc.local');
    expect(page.html).toContain('data-testid="stay-signed-in"');
    expect(page.html).not.toContain('<script');
    expect(page.xsrf).not.toBe('');
    const csp = page.res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    // Chrome checks form-action on each redirect after the submit: the application's origin, for this page only.
    expect(csp).toMatch(/form-action 'self' [^;]* http:\/\/127\.0\.0\.1:53118(;|$)/);

    // The person's valid ID token, opened in a browser that does not hold the session (a link
    // elsewhere, a leaked token): asked, nothing ended.
    const elsewhere = await openLogout(new CookieJar(), oidc.buildEndSessionUrl(app.config, { id_token_hint: idToken }));
    expect(elsewhere.res.status).toBe(200);
    expect(elsewhere.xsrf).not.toBe('');

    // A hint with the session's claims but another key's signature: refused, nothing ended.
    const forged = await new SignJWT(decodeJwt(idToken))
      .setProtectedHeader({ alg: 'RS256', kid: decodeProtectedHeader(idToken).kid as string })
      .sign((await generateKeyPair('RS256')).privateKey);
    const refusedForged = await jar.fetch(oidc.buildEndSessionUrl(app.config, { id_token_hint: forged }).href, { headers: NAVIGATION });
    expect(refusedForged.status).toBe(400);

    expect(await revokedAt(sid)).toBeNull();
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    expect((await refresh(tokens.refresh_token as string, seeded.application.id)).status).toBe(200);
    expect((await signIn(jar, {}, { app })).steps).toEqual([]);
  });

  it('Sign out also ends the svc session an earlier sign-in to the application was made under (prompt=login left it live)', async () => {
    const { seeded, app } = await webApp();
    const jar = new CookieJar();
    const first = await signIn(jar, {}, { app });
    const firstSid = decodeJwt(first.tokens.id_token as string).sid as string;
    // A fresh sign-in for another application: a new svc session in the cookie; the first one lives on.
    const forced = await signIn(jar, { prompt: 'login consent' });
    const secondSid = (await verifyAccessToken(forced.tokens.access_token)).payload.sid as string;
    expect(secondSid).not.toBe(firstSid);
    expect(await revokedAt(firstSid)).toBeNull();

    // The hint names the earlier session, not the one in the cookie: the question stays.
    const page = await openLogout(jar, oidc.buildEndSessionUrl(app.config, { id_token_hint: first.tokens.id_token as string }));
    expect(page.res.status).toBe(200);
    expect(page.xsrf).not.toBe('');
    expect(await revokedAt(secondSid)).toBeNull();
    const confirmed = await submitLogout(jar, page, { xsrf: page.xsrf, logout: 'yes' });
    expect(confirmed.status).toBe(303);
    expect(await revokedAt(firstSid)).not.toBeNull();
    expect(await revokedAt(secondSid)).not.toBeNull();
    expect((await refresh(first.tokens.refresh_token as string, seeded.application.id)).body.error).toBe('invalid_grant');
    expect((await refresh(forced.tokens.refresh_token as string)).body.error).toBe('invalid_grant');
  });

  it('"Stay signed in to svc" goes back to the application and ends nothing of svc: the svc session, single sign-on and refresh tokens go on', async () => {
    const { seeded, app } = await webApp();
    const jar = new CookieJar();
    const { tokens } = await signIn(jar, {}, { app });
    const keyless = await signIn(jar);
    expect(keyless.steps).toEqual([]);
    const sid = (await verifyAccessToken(keyless.tokens.access_token)).payload.sid as string;
    // Without id_token_hint: the question.
    const page = await openLogout(jar, oidc.buildEndSessionUrl(app.config, { post_logout_redirect_uri: SIGNED_OUT, state: 's2' }));
    const stayed = await submitLogout(jar, page, { xsrf: page.xsrf });
    expect(stayed.status).toBe(303);
    const landed = new URL(stayed.headers.get('location') as string);
    expect(landed.origin + landed.pathname).toBe(SIGNED_OUT);
    expect(landed.searchParams.get('state')).toBe('s2');
    expect(await revokedAt(sid)).toBeNull();
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    expect((await refresh(tokens.refresh_token as string, seeded.application.id)).status).toBe(200);
    expect((await refresh(keyless.tokens.refresh_token as string)).status).toBe(200);
    expect((await signIn(jar, {}, { app })).steps).toEqual([]);
  });

  it('a logout request svc cannot honour gets an error page on svc, never a redirect, and ends nothing', async () => {
    const { seeded, app } = await webApp();
    const other = await webApp(['http://127.0.0.1:53118/other-signed-out']);
    const jar = new CookieJar();
    const { tokens } = await signIn(jar, {}, { app });
    const idToken = tokens.id_token as string;
    const sid = decodeJwt(idToken).sid as string;
    const forged = await new SignJWT(decodeJwt(idToken))
      .setProtectedHeader({ alg: 'RS256', kid: decodeProtectedHeader(idToken).kid as string })
      .sign((await generateKeyPair('RS256')).privateKey);
    const raw = (pairs: [string, string][]) => new URL(`${server.url}/oidc/session/end?${new URLSearchParams(pairs)}`);
    const cases: [string, URL][] = [
      [
        'unregistered post_logout_redirect_uri',
        oidc.buildEndSessionUrl(app.config, { id_token_hint: idToken, post_logout_redirect_uri: 'https://evil.example/signed-out' }),
      ],
      [
        'a near miss of the registered one',
        oidc.buildEndSessionUrl(app.config, { id_token_hint: idToken, post_logout_redirect_uri: `${SIGNED_OUT}/` }),
      ],
      [
        "another application's post_logout_redirect_uri",
        oidc.buildEndSessionUrl(app.config, {
          id_token_hint: idToken,
          post_logout_redirect_uri: 'http://127.0.0.1:53118/other-signed-out',
        }),
      ],
      [
        'id_token_hint signed by another key',
        oidc.buildEndSessionUrl(app.config, { id_token_hint: forged, post_logout_redirect_uri: SIGNED_OUT }),
      ],
      ['garbage id_token_hint', oidc.buildEndSessionUrl(app.config, { id_token_hint: 'not-a-jwt', post_logout_redirect_uri: SIGNED_OUT })],
      [
        'id_token_hint of another client than client_id',
        oidc.buildEndSessionUrl(other.app.config, {
          id_token_hint: idToken,
          post_logout_redirect_uri: 'http://127.0.0.1:53118/other-signed-out',
        }),
      ],
      [
        'post_logout_redirect_uri without id_token_hint or client_id',
        raw([
          ['post_logout_redirect_uri', SIGNED_OUT],
          ['state', 'x'],
        ]),
      ],
      [
        'oversized state',
        oidc.buildEndSessionUrl(app.config, { id_token_hint: idToken, post_logout_redirect_uri: SIGNED_OUT, state: 'x'.repeat(513) }),
      ],
      [
        'repeated state',
        raw([
          ['client_id', seeded.application.id],
          ['post_logout_redirect_uri', SIGNED_OUT],
          ['state', 'a'],
          ['state', 'b'],
        ]),
      ],
    ];
    for (const [what, url] of cases) {
      const res = await jar.fetch(url.href, { headers: NAVIGATION });
      const html = await res.text();
      expect(res.status, what).toBe(400);
      expect(res.headers.get('location'), what).toBeNull();
      expect(html, what).toContain('This sign-out request cannot be completed');
      expect(html, what).not.toContain('name="xsrf"');
    }
    expect(await revokedAt(sid)).toBeNull();
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    expect((await refresh(tokens.refresh_token as string, seeded.application.id)).status).toBe(200);
    expect((await signIn(jar, {}, { app })).steps).toEqual([]);
  });

  it('the confirmation cannot be forged: a cross-site post, or one without the xsrf secret, ends nothing', async () => {
    const { seeded, app } = await webApp();
    const jar = new CookieJar();
    const { tokens } = await signIn(jar, {}, { app });
    const sid = decodeJwt(tokens.id_token as string).sid as string;
    const page = await openLogout(jar, oidc.buildEndSessionUrl(app.config, { post_logout_redirect_uri: SIGNED_OUT }));
    const crossSite = await submitLogout(jar, page, { logout: 'yes' }, 'https://evil.example');
    expect(crossSite.status).toBe(403);
    // Refused by its origin even with the secret (which another site cannot read).
    const crossSiteWithSecret = await submitLogout(jar, page, { xsrf: page.xsrf, logout: 'yes' }, 'https://evil.example');
    expect(crossSiteWithSecret.status).toBe(403);
    for (const fields of [{ logout: 'yes' }, { xsrf: 'f'.repeat(48), logout: 'yes' }] as Record<string, string>[]) {
      const res = await submitLogout(jar, page, fields);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('This sign-out request cannot be completed');
    }
    expect(await revokedAt(sid)).toBeNull();
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    expect((await refresh(tokens.refresh_token as string, seeded.application.id)).status).toBe(200);
  });

  it("the keyless application's logout returns to any loopback URL; a browser with no session gets the same confirmation", async () => {
    const jar = new CookieJar();
    const { tokens } = await signIn(jar);
    const bye = 'http://localhost:4999/bye';
    const refused = await jar.fetch(
      oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token as string, post_logout_redirect_uri: 'https://evil.example/bye' })
        .href,
      { headers: NAVIGATION },
    );
    expect(refused.status).toBe(400);
    // The hint of the current session: no page, straight through the engine back to the app.
    const direct = await jar.fetch(
      oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token as string, post_logout_redirect_uri: bye, state: 'k1' }).href,
      { headers: NAVIGATION },
    );
    expect(direct.status).toBe(303);
    const back = await jar.follow(new URL(direct.headers.get('location') as string).href, (l) => l.startsWith(bye));
    expect(back.url).toBe(`${bye}?state=k1`);

    // No svc, provider or engine session in this browser: oidc-provider would answer with an
    // auto-submitting script; svc shows its confirmation, then goes on the same way.
    const fresh = new CookieJar();
    const again = await openLogout(fresh, oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: bye, state: 'k2' }));
    expect(again.res.status).toBe(200);
    expect(again.html).not.toContain('<script');
    expect(again.html).toContain('data-testid="confirm-logout"');
    const done = await submitLogout(fresh, again, { xsrf: again.xsrf, logout: 'yes' });
    const returned = await fresh.follow(new URL(done.headers.get('location') as string).href, (l) => l.startsWith(bye));
    expect(returned.url).toBe(`${bye}?state=k2`);

    // Without a post_logout_redirect_uri the browser ends on svc's signed-out page.
    const plain = await openLogout(fresh, oidc.buildEndSessionUrl(config));
    const ended = await submitLogout(fresh, plain, { xsrf: plain.xsrf, logout: 'yes' });
    const last = await fresh.follow(new URL(ended.headers.get('location') as string).href);
    expect(new URL(last.url).origin).toBe(server.url);
    expect(last.res.status).toBe(200);
    expect(await last.res.text()).toContain('You have signed out');
  });
});

/**
 * A confidential application (a back end holding its `sk_live_` secret key) through openid-client:
 * authorization code + PKCE, refresh, introspection (RFC 7662) and revocation (RFC 7009), with the
 * tokens of a real sign-in. And what a resource server does with svc's access tokens: verify
 * them against a cached JWKS without asking svc.
 */
describe('svc OpenID Provider: a confidential application and its tokens', () => {
  const CALLBACK = 'http://127.0.0.1:53118/auth/callback';
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let app: Awaited<ReturnType<typeof seedApplication>>;
  let config: oidc.Configuration;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-oidc-confidential' });
    app = await seedApplication(database.db, { clientType: 'confidential', redirectUrls: [CALLBACK] });
    config = await oidc.discovery(new URL(server.url), app.application.id, undefined, oidc.ClientSecretBasic(app.secretKey), {
      execute: [oidc.allowInsecureRequests],
    });
  });

  afterAll(async () => {
    await database?.close();
    await server?.close();
  });

  async function signIn(jar: CookieJar, client = config) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(client, {
      redirect_uri: CALLBACK,
      scope: 'openid email offline_access organization',
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const { callback } = await browseToRedirect(jar, url, { svcUrl: server.url, redirectUri: CALLBACK });
    return oidc.authorizationCodeGrant(client, callback, { pkceCodeVerifier: verifier, expectedState: state });
  }

  it('code + PKCE with the secret key, refresh, introspection; after revocation (RFC 7009) the refresh token is refused', async () => {
    const jar = new CookieJar();
    const tokens = await signIn(jar);
    const refreshToken = tokens.refresh_token as string;
    expect(tokens.claims()?.email).toBe(PEOPLE.user.email);
    expect(tokens.claims()?.org_id).toMatch(/^ten_/);
    expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');

    // Introspection of the application's own refresh token: active, its client and person.
    const live = await oidc.tokenIntrospection(config, refreshToken);
    expect(live).toMatchObject({ active: true, client_id: app.application.id, sub: tokens.claims()?.sub });
    expect((live.scope as string).split(' ')).toContain('offline_access');
    // Access tokens are JWTs, and introspected too (RFC 7662): active, the client's and person's.
    const liveAccess = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(liveAccess).toMatchObject({ active: true, token_type: 'Bearer', client_id: app.application.id, sub: tokens.claims()?.sub });
    expect(liveAccess.grant_id).toBeUndefined();

    // Refresh rotates; the rotated token is then revoked by the application.
    const refreshed = await oidc.refreshTokenGrant(config, refreshToken);
    const current = refreshed.refresh_token as string;
    expect(current).not.toBe(refreshToken);
    expect((await oidc.tokenIntrospection(config, refreshToken)).active).toBe(false);

    // Another confidential application can neither introspect nor revoke it.
    const other = await seedApplication(database.db, { clientType: 'confidential', redirectUrls: [CALLBACK] });
    const otherConfig = await oidc.discovery(
      new URL(server.url),
      other.application.id,
      undefined,
      oidc.ClientSecretBasic(other.secretKey),
      {
        execute: [oidc.allowInsecureRequests],
      },
    );
    expect((await oidc.tokenIntrospection(otherConfig, current)).active).toBe(false);
    await expect(oidc.tokenRevocation(otherConfig, current)).rejects.toMatchObject({ error: 'invalid_request' });
    expect((await oidc.tokenIntrospection(config, current)).active).toBe(true);

    await oidc.tokenRevocation(config, current);
    expect((await oidc.tokenIntrospection(config, current)).active).toBe(false);
    await expect(oidc.refreshTokenGrant(config, current)).rejects.toMatchObject({ error: 'invalid_grant' });
    // Revoking a refresh token revokes its grant: nothing issued under it refreshes any more.
    const [row] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from oidc_payloads where model = 'RefreshToken' and payload->>'clientId' = ${app.application.id}`;
    expect(row?.n).toBe(0);
  });

  // 1,000 refresh grants (two signatures each) make the tokens: generous on a busy machine.
  it('an application verifies 1,000 access tokens with the JWKS it fetched once: no request reaches svc', async () => {
    // Ten sign-ins (single sign-on after the first), each refreshed 99 times: 1,000 access tokens.
    const jar = new CookieJar();
    // One after the other: concurrent flows in one browser (one cookie jar) overwrite each
    // other's interaction cookie, which the provider rightly refuses as a session mismatch.
    const chains = [];
    for (let i = 0; i < 10; i++) {
      chains.push(await signIn(jar));
    }
    const tokens: string[] = [];
    await Promise.all(
      chains.map(async (first) => {
        tokens.push(first.access_token);
        let refreshToken = first.refresh_token as string;
        for (let i = 0; i < 99; i++) {
          const next = await oidc.refreshTokenGrant(config, refreshToken);
          tokens.push(next.access_token);
          refreshToken = next.refresh_token as string;
        }
      }),
    );
    expect(new Set(tokens).size).toBe(1000);

    // The application reaches svc through a counting proxy.
    let requests = 0;
    const proxy = http.createServer(async (req, res) => {
      requests++;
      const upstream = await fetch(`${server.url}${req.url}`, { headers: { accept: req.headers.accept ?? '*/*' } });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const discovered = await oidc.discovery(new URL(server.url), app.application.id, undefined, oidc.None(), {
        execute: [oidc.allowInsecureRequests],
      });
      const jwksPath = new URL(discovered.serverMetadata().jwks_uri as string).pathname;
      const remote = createRemoteJWKSet(new URL(`${proxied}${jwksPath}`));
      await jwtVerify(tokens[0] as string, remote, { issuer: server.url, audience: app.application.id, typ: 'at+jwt' });
      expect(requests).toBe(1);
      for (const token of tokens) {
        const { payload } = await jwtVerify(token, remote, { issuer: server.url, audience: app.application.id, typ: 'at+jwt' });
        expect(payload.org_id).toMatch(/^ten_/);
      }
      expect(requests).toBe(1);
      // A token svc did not sign is refused from the cached keys (a forged kid may cost one refetch, never a pass).
      const forged = `${(tokens[0] as string).slice(0, -4)}AAAA`;
      await expect(jwtVerify(forged, remote, { issuer: server.url, audience: app.application.id })).rejects.toThrow();
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  }, 300_000);
});
