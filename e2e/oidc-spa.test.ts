import { createPublicKey, type JsonWebKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { SYSTEM_ROLES } from '@svc/contracts/permissions';
import { createDatabase, type Database } from '@svc/db/client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { seedApplication } from '../test/support/factories.ts';
import { freePort } from '../test/support/server.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, passwordSignIn } from './support/sign-in.ts';

/** oidc-client-ts's own browser build (an IIFE defining the global `oidc`), served as the SPA's script. */
const OIDC_CLIENT_TS = readFileSync(
  path.join(path.dirname(createRequire(import.meta.url).resolve('oidc-client-ts/package.json')), 'dist/browser/oidc-client-ts.js'),
  'utf8',
);

/**
 * The single-page application: one page that builds an oidc-client-ts UserManager for svc and,
 * on /callback, completes the sign-in. Everything else the test does through `window.mgr`.
 */
function spaPage(settings: { authority: string; clientId: string; origin: string }): string {
  const config = JSON.stringify({
    authority: settings.authority,
    client_id: settings.clientId,
    redirect_uri: `${settings.origin}/callback`,
    post_logout_redirect_uri: `${settings.origin}/`,
    scope: 'openid email profile offline_access organization',
    // OpenID Connect grants offline_access only with prompt=consent (svc shows no consent screen).
    prompt: 'consent',
    loadUserInfo: true,
    automaticSilentRenew: false,
  });
  return `<!doctype html><html><head><meta charset="utf-8"><title>SPA</title>
<script src="/oidc-client-ts.js"></script></head>
<body><button id="login" type="button">Sign in with svc</button><pre id="state"></pre>
<script>
  window.mgr = new oidc.UserManager(Object.assign(${config}, { userStore: new oidc.WebStorageStateStore({ store: window.localStorage }) }));
  document.getElementById('login').addEventListener('click', () => window.mgr.signinRedirect());
  if (location.pathname === '/callback') {
    window.mgr.signinCallback().then(
      (user) => { document.body.dataset.state = 'signed-in'; document.getElementById('state').textContent = user.profile.email; },
      (error) => { document.body.dataset.state = 'error'; document.getElementById('state').textContent = String(error); },
    );
  }
</script></body></html>`;
}

type StaticSite = { origin: string; close: () => Promise<void> };

/** A static server on a loopback port: the SPA's page on every path, oidc-client-ts at /oidc-client-ts.js. */
async function serveSpa(port: number, html: string): Promise<StaticSite> {
  const server = http.createServer((req, res) => {
    if (req.url === '/oidc-client-ts.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(OIDC_CLIENT_TS);
      return;
    }
    res.writeHead(req.url === '/favicon.ico' ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * What a resource server checks of an access token, with node:crypto: the signature against svc's
 * published JWKS (RS256 or ES256), then returns the header and claims.
 */
async function verifyJwt(token: string, jwksUrl: string): Promise<{ header: Record<string, unknown>; payload: Record<string, unknown> }> {
  const [h, p, sig] = token.split('.') as [string, string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { kid: string; alg: string };
  const { keys } = (await (await fetch(jwksUrl)).json()) as { keys: (JsonWebKey & { kid: string })[] };
  const jwk = keys.find((k) => k.kid === header.kid);
  expect(jwk, `kid ${header.kid} published`).toBeDefined();
  const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  const ok = verify(
    'sha256',
    Buffer.from(`${h}.${p}`),
    header.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key,
    Buffer.from(sig, 'base64url'),
  );
  expect(ok, 'signature verifies with the published key').toBe(true);
  return { header, payload: JSON.parse(Buffer.from(p, 'base64url').toString()) };
}

/** The SPA's logo: https, on a loopback port where nothing listens. */
const LOGO_URL = 'https://127.0.0.1:9/loopback-spa.svg';

type SpaUser = {
  profile: Record<string, unknown>;
  access_token: string;
  refresh_token?: string;
  scope?: string;
  token_type: string;
};

/**
 * A public single-page application signs in to svc with oidc-client-ts in real Chromium: redirect
 * to svc's hosted sign-in, the development engine, back to the SPA's loopback callback (code +
 * PKCE), then refresh and userinfo by CORS from the SPA's origin. Another origin holding the
 * SPA's tokens gets no CORS grant.
 */
describeInChromium('e2e: a single-page application signs in with oidc-client-ts', () => {
  let server: E2EServer;
  let database: Database;
  let browser: Browser;
  let context: BrowserContext;
  let spa: StaticSite;
  let foreign: StaticSite;
  let clientId: string;
  /** The access token the SPA ended with (first test), for the checks without a browser. */
  let accessToken: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    server = await startServer({ databaseUrl });
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-e2e-oidc-spa' });
    const spaPort = await freePort();
    const spaOrigin = `http://127.0.0.1:${spaPort}`;
    const app = await seedApplication(database.db, {
      name: 'Loopback SPA',
      // On loopback, where nothing answers: the page may fetch it (CSP), the test needs no network.
      logoUrl: LOGO_URL,
      clientType: 'public',
      redirectUrls: [`${spaOrigin}/callback`],
      postLogoutRedirectUrls: [`${spaOrigin}/`],
      allowedOrigins: [spaOrigin],
    });
    clientId = app.application.id;
    // The product's catalog: one permission the built-in org_admin role carries in tokens.
    await database.sql`insert into api_resources (id, identifier, name) values ('res_reportsreportsrepor', 'https://api.reports.example', 'Reports')`;
    await database.sql`insert into api_permissions (id, resource_id, name) values ('prm_reportsreportsrepor', 'res_reportsreportsrepor', 'reports.read')`;
    await database.sql`update product_roles set permissions = '{reports.read}' where key = 'org_admin'`;
    spa = await serveSpa(spaPort, spaPage({ authority: server.url, clientId, origin: spaOrigin }));
    // Another origin serving the same page: not in the application's allowedOrigins.
    const foreignPort = await freePort();
    foreign = await serveSpa(foreignPort, spaPage({ authority: server.url, clientId, origin: `http://127.0.0.1:${foreignPort}` }));
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(20_000);
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await spa?.close();
    await foreign?.close();
    await database?.close();
    await server?.stop();
  });

  async function open(url: string): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.stack ?? error.message));
    await page.goto(url);
    return page;
  }

  const currentUser = (page: Page) =>
    page.evaluate(async () => {
      const user = await (window as unknown as { mgr: { getUser: () => Promise<SpaUser | null> } }).mgr.getUser();
      return (
        user && {
          profile: user.profile,
          access_token: user.access_token,
          refresh_token: user.refresh_token,
          scope: user.scope,
          token_type: user.token_type,
        }
      );
    });

  it('signinRedirect -> svc sign-in -> engine -> signinCallback; refresh and userinfo by CORS; a foreign origin gets nothing', async () => {
    const page = await open(`${spa.origin}/`);
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) {
        refused.push(message.text());
      }
    });
    const logoRequested = page.waitForRequest(LOGO_URL);
    await page.locator('#login').click();
    // svc's hosted sign-in, branded with the application (its name and logo), on the authorization's interaction.
    await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
    expect(await page.getByTestId('hosted-heading').textContent()).toBe('Sign in to Loopback SPA');
    const logo = page.getByTestId('application-logo');
    expect(await logo.getAttribute('alt')).toBe('Loopback SPA logo');
    expect(await logo.getAttribute('referrerpolicy')).toBe('no-referrer');
    expect(await logo.boundingBox()).toMatchObject({ width: 48, height: 48 });
    // The page's CSP lets the https logo load (the browser asked for it) and refused nothing.
    expect((await logoRequested).url()).toBe(LOGO_URL);
    expect(refused).toEqual([]);
    await saveScreenshot(page, 'oidc-spa-hosted-sign-in');
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL((url) => url.origin === spa.origin && url.pathname === '/callback');
    await page.waitForSelector('body[data-state]');
    expect(await page.locator('#state').textContent()).toBe(DEMO_USER.email);
    await saveScreenshot(page, 'oidc-spa-signed-in');

    const user = (await currentUser(page)) as SpaUser;
    const [member] = await database.sql<{ tenant_id: string; slug: string; role_key: string; user_id: string }[]>`
      select m.tenant_id, o.slug, m.role_key, m.user_id from memberships m
      join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
      where u.email = ${DEMO_USER.email} and o.kind = 'tenant'`;
    expect(user.profile).toMatchObject({
      sub: member?.user_id,
      email: DEMO_USER.email,
      org_id: member?.tenant_id,
      org_slug: member?.slug,
      org_role: member?.role_key,
    });
    expect(user.profile.sub).toMatch(/^usr_/);
    // The product's permissions of the person's role (seeded for org_admin), never svc's own catalog.
    expect(member?.role_key).toBe('org_admin');
    expect(user.profile.permissions).toEqual(['reports.read']);
    for (const p of SYSTEM_ROLES.org_admin.permissions) {
      expect(user.profile.permissions).not.toContain(p);
    }
    expect(user.scope?.split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'organization', 'profile']);

    // The access token: an RFC 9068 JWT for the SPA itself, signed with svc's published keys.
    const jwks = `${server.url}/oidc/jwks`;
    const at = await verifyJwt(user.access_token, jwks);
    expect(at.header.typ).toBe('at+jwt');
    expect(at.payload).toMatchObject({
      iss: server.url,
      aud: clientId,
      client_id: clientId,
      sub: member?.user_id,
      org_id: member?.tenant_id,
    });
    expect(at.payload.exp as number).toBeGreaterThan(Date.now() / 1000);
    expect(user.refresh_token).toBeTruthy();

    // userinfo from the SPA's origin, by CORS.
    const info = await page.evaluate(
      async ({ url, token }) => {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, body: await res.json() };
      },
      { url: `${server.url}/oidc/me`, token: user.access_token },
    );
    expect(info).toMatchObject({ status: 200, body: { sub: member?.user_id, email: DEMO_USER.email, org_id: member?.tenant_id } });

    // The attack: a page on another origin holding the SPA's tokens. The browser sends the
    // requests; svc grants that origin nothing, so the page reads nothing, and the refresh token
    // is not redeemed on its behalf.
    const evil = await open(`${foreign.origin}/`);
    const stolen = await evil.evaluate(
      async ({ svc, token, refreshToken, clientId }) => {
        const attempt = async (url: string, init: RequestInit) => {
          try {
            const res = await fetch(url, init);
            return `read ${res.status}: ${await res.text()}`;
          } catch (error) {
            return `blocked: ${String(error)}`;
          }
        };
        return {
          refresh: await attempt(`${svc}/oidc/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }),
          }),
          userinfo: await attempt(`${svc}/oidc/me`, { headers: { authorization: `Bearer ${token}` } }),
        };
      },
      { svc: server.url, token: user.access_token, refreshToken: user.refresh_token as string, clientId },
    );
    expect(stolen.refresh).toMatch(/^blocked: TypeError/);
    expect(stolen.userinfo).toMatch(/^blocked: TypeError/);
    await evil.close();

    // Refresh through oidc-client-ts (signinSilent uses the refresh token): a CORS request to the
    // token endpoint from the SPA's origin. It works, so the foreign origin did not redeem it.
    const refreshed = await page.evaluate(async () => {
      const mgr = (window as unknown as { mgr: { signinSilent: () => Promise<SpaUser | null> } }).mgr;
      const next = await mgr.signinSilent();
      return next && { access_token: next.access_token, refresh_token: next.refresh_token, profile: next.profile };
    });
    expect(refreshed?.access_token).toBeTruthy();
    expect(refreshed?.access_token).not.toBe(user.access_token);
    expect(refreshed?.refresh_token).not.toBe(user.refresh_token);
    expect(refreshed?.profile).toMatchObject({ sub: member?.user_id, org_id: member?.tenant_id });
    const again = await verifyJwt(refreshed?.access_token as string, jwks);
    expect(again.payload).toMatchObject({ aud: clientId, sid: at.payload.sid });
    accessToken = refreshed?.access_token as string;

    expect(pageErrors).toEqual([]);
  });

  it('without a browser: the token endpoint and userinfo grant CORS to the allowed origin only', async () => {
    const tokenEndpoint = async (origin: string) => {
      const res = await fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'bogus', client_id: clientId }),
      });
      await res.arrayBuffer();
      return res.headers.get('access-control-allow-origin');
    };
    expect(await tokenEndpoint(spa.origin)).toBe(spa.origin);
    expect(await tokenEndpoint(foreign.origin)).toBeNull();

    const userinfo = async (origin: string) => {
      const res = await fetch(`${server.url}/oidc/me`, { headers: { authorization: `Bearer ${accessToken}`, origin } });
      return {
        status: res.status,
        allowed: res.headers.get('access-control-allow-origin'),
        body: (await res.json()) as Record<string, unknown>,
      };
    };
    expect(await userinfo(spa.origin)).toMatchObject({ status: 200, allowed: spa.origin, body: { email: DEMO_USER.email } });
    const refused = await userinfo(foreign.origin);
    expect(refused).toMatchObject({ status: 400, allowed: null, body: { error: 'invalid_request' } });
    expect(refused.body.email).toBeUndefined();
    // The preflight carries no token: answered for any origin, as oidc-provider does.
    const preflight = await fetch(`${server.url}/oidc/me`, {
      method: 'OPTIONS',
      headers: { origin: spa.origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toBe('authorization');
  });
});
