import { randomBytes } from 'node:crypto';
import { createDatabase, type Database } from '@svc/db/client';
import { generateKeyPair } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { cspSources, expectHostedPage } from '../../../../../test/support/hosted-page.ts';
import { promiseHooksOn } from '../../../../../test/support/promise-hooks.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';
import { getOrCreateKeylessApplication } from '../applications/service.ts';
import { escapeHtml } from '../shared/hosted-page.ts';

const REDIRECT = 'https://app.example.com/callback';

/**
 * svc as an OpenID Provider, seen by a client library svc did not write (openid-client) and by
 * plain HTTP, against a real svc server on real PostgreSQL.
 */
describe('svc OpenID Provider: discovery, keys and the authorization endpoint', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let appId: string;
  let appName: string;
  let disabledAppId: string;
  let keylessId: string;

  beforeAll(async () => {
    server = await startTestServer();
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-oidc' });
    const app = await seedApplication(database.db, { redirectUrls: [REDIRECT, '/after-sign-in'], clientType: 'public' });
    appId = app.application.id;
    appName = app.application.name;
    disabledAppId = (await seedApplication(database.db, { redirectUrls: [REDIRECT], status: 'disabled' })).application.id;
    keylessId = (await getOrCreateKeylessApplication(database.db)).application.id;
  });

  afterAll(async () => {
    await database?.close();
    await server?.close();
  });

  async function discover(clientId = appId): Promise<oidc.Configuration> {
    return oidc.discovery(new URL(server.url), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  }

  async function currentKid(): Promise<string> {
    const [row] = await database.sql<{ kid: string }[]>`select kid from oidc_signing_keys where superseded_at is null`;
    return row?.kid as string;
  }

  function authorizationUrl(params: Record<string, string>): string {
    const url = new URL('/oidc/auth', server.url);
    for (const [k, v] of Object.entries(params)) {
      url.searchParams.set(k, v);
    }
    return url.href;
  }

  async function pkce(): Promise<{ code_challenge: string; code_challenge_method: string }> {
    return { code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256' };
  }

  it('openid-client discovers the issuer (PUBLIC_URL, no path) and every endpoint under /oidc', async () => {
    const metadata = (await discover()).serverMetadata();
    expect(metadata.issuer).toBe(server.url);
    expect(metadata.authorization_endpoint).toBe(`${server.url}/oidc/auth`);
    expect(metadata.token_endpoint).toBe(`${server.url}/oidc/token`);
    expect(metadata.jwks_uri).toBe(`${server.url}/oidc/jwks`);
    expect(metadata.userinfo_endpoint).toBe(`${server.url}/oidc/me`);
    expect(metadata.revocation_endpoint).toBe(`${server.url}/oidc/token/revocation`);
    expect(metadata.introspection_endpoint).toBe(`${server.url}/oidc/token/introspection`);
    expect(metadata.end_session_endpoint).toBe(`${server.url}/oidc/session/end`);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata.request_parameter_supported).not.toBe(true);
    expect(metadata.request_uri_parameter_supported).toBe(false);
    expect(metadata.backchannel_logout_supported).toBe(true);
    expect(metadata.id_token_signing_alg_values_supported).toEqual(['RS256']);
  });

  it('discovery and JWKS are the same documents the provider itself builds, with CORS for browsers', async () => {
    const res = await fetch(`${server.url}/.well-known/openid-configuration`, { headers: { origin: 'https://spa.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.text()).toBe(server.services.oidc.discovery.json);
    const jwks = await fetch(`${server.url}/oidc/jwks`);
    expect(jwks.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
    expect(await jwks.text()).toBe(server.services.oidc.jwks.json);
  });

  it("each document has one owner: another method gets svc's 405, never the library's own handler", async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/oidc/jwks']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await fetch(`${server.url}${path}`, { method });
        expect([path, method, res.status, res.headers.get('allow')]).toEqual([path, method, 405, 'GET, HEAD']);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
      }
      expect((await fetch(`${server.url}${path}`, { method: 'HEAD' })).status).toBe(200);
    }
  });

  it('a forged Host or X-Forwarded-Host never reaches the metadata or the redirects', async () => {
    const forged = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
    const doc = await fetch(`${server.url}/.well-known/openid-configuration`, { headers: forged }).then((r) => r.text());
    expect(doc).not.toContain('evil.example');
    const res = await fetch(
      authorizationUrl({ client_id: appId, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', ...(await pkce()) }),
      { headers: forged, redirect: 'manual' },
    );
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).not.toContain('evil.example');
    // The logout confirmation form is built by oidc-provider from the request's URL.
    const logout = await fetch(`${server.url}/oidc/session/end`, { headers: forged });
    const form = await logout.text();
    expect(logout.status).toBe(200);
    expect(form).toContain(`${server.url}/oidc/session/end/confirm`);
    expect(form).not.toContain('evil.example');
  });

  it('the JWKS holds the current key (public parts only) and openid-client can fetch it', async () => {
    const kid = await currentKid();
    const res = await fetch((await discover()).serverMetadata().jwks_uri as string);
    const { keys } = (await res.json()) as { keys: Record<string, string>[] };
    expect(keys.map((k) => k.kid)).toEqual([kid]);
    expect(keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    for (const privatePart of ['d', 'p', 'q', 'dp', 'dq', 'qi']) {
      expect(keys[0]).not.toHaveProperty(privatePart);
    }
  });

  it('an unknown client_id gets an error page on svc: 400, no redirect', async () => {
    for (const clientId of ['app_unknownunknownunknow', 'svc', disabledAppId]) {
      const res = await fetch(
        authorizationUrl({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', ...(await pkce()) }),
        { redirect: 'manual' },
      );
      expect(res.status, clientId).toBe(400);
      expect(res.headers.get('location'), clientId).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toContain('invalid_client');
    }
  });

  it('an unregistered redirect_uri gets an error page on svc: 400, no redirect (a registered path is no redirect URI)', async () => {
    for (const redirectUri of [
      'https://evil.example/callback',
      `${REDIRECT}/../x`,
      `${REDIRECT}?x=1`,
      '/after-sign-in',
      'http://localhost:4000/callback',
    ]) {
      const res = await fetch(
        authorizationUrl({ client_id: appId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', ...(await pkce()) }),
        { redirect: 'manual' },
      );
      expect(res.status, redirectUri).toBe(400);
      expect(res.headers.get('location'), redirectUri).toBeNull();
      expect(await res.text()).toContain('redirect_uri');
    }
  });

  it('repeated and oversized parameters get invalid_request (on svc, or at the registered redirect URI only), never a 500', async () => {
    const valid = authorizationUrl({
      client_id: appId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      state: 'first',
      ...(await pkce()),
    });
    // The second copy of redirect_uri is a foreign one: the error may only go to the registered URI.
    const second: Record<string, string> = { client_id: appId, redirect_uri: 'https://evil.example/cb', scope: 'openid', state: 'other' };
    for (const [name, value] of Object.entries(second)) {
      const url = new URL(valid);
      url.searchParams.append(name, value);
      const res = await fetch(url, { redirect: 'manual' });
      const location = res.headers.get('location');
      if (location === null) {
        expect(res.status, name).toBe(400);
        expect(await res.text(), name).toContain('invalid_request');
      } else {
        // The client and its registered redirect URI are known: the error goes back there.
        expect(res.status, name).toBe(303);
        expect(location.startsWith(`${REDIRECT}?`), `${name}: ${location}`).toBe(true);
        expect(new URL(location).searchParams.get('error'), name).toBe('invalid_request');
      }
    }
    const huge = new URL(valid);
    huge.searchParams.set('state', 'x'.repeat(64 * 1024));
    const tooBig = await fetch(huge, { redirect: 'manual' });
    expect(tooBig.status).toBe(431);
    const token = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=authorization_code&code=${'x'.repeat(2 * 1024 * 1024)}&client_id=${appId}`,
    });
    expect(token.status).toBeGreaterThanOrEqual(400);
    expect(token.status).toBeLessThan(500);
  });

  it('a valid authorization request goes to the hosted interaction: svc sign-in, branded with the application', async () => {
    const res = await fetch(
      authorizationUrl({
        client_id: appId,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid',
        state: 's1',
        ...(await pkce()),
      }),
      { redirect: 'manual' },
    );
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location') as string, server.url);
    expect(location.origin).toBe(server.url);
    const uid = /^\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(location.pathname)?.[1];
    expect(uid).toBeDefined();
    // The interaction is in PostgreSQL: any process can continue it.
    const rows = await database.sql`select 1 from oidc_payloads where model = 'Interaction' and id = ${uid as string}`;
    expect(rows).toHaveLength(1);
    const page = await fetch(location, {
      headers: {
        cookie: res.headers
          .getSetCookie()
          .map((c) => c.split(';')[0])
          .join('; '),
      },
    });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(expectHostedPage(html, 'interaction')).toBe(`Sign in to ${appName}`);
    expect(html).toContain(`name="return_to" value="${escapeHtml(location.pathname)}"`);
    // No logo: its initial, and nothing loads from elsewhere.
    expect(html).not.toContain('data-testid="application-logo"');
    expect(cspSources(page, 'img-src')).toEqual(["'self'", 'data:']);
  });

  /** The hosted page an authorization request of `clientId` leads to, as an anonymous browser sees it. */
  async function interactionPage(clientId: string): Promise<{ res: Response; html: string }> {
    const res = await fetch(
      authorizationUrl({
        client_id: clientId,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid',
        state: 's',
        ...(await pkce()),
      }),
      { redirect: 'manual' },
    );
    expect(res.status).toBe(303);
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const page = await fetch(new URL(res.headers.get('location') as string, server.url), { headers: { cookie } });
    expect(page.status).toBe(200);
    return { res: page, html: await page.text() };
  }

  it("the sign-in of an application's request shows its name and logo, HTML-escaped; only that page lets https images load", async () => {
    const name = '<script>alert(document.cookie)</script> "Shop" & Co';
    const app = await seedApplication(database.db, {
      name,
      logoUrl: 'https://cdn.example.com/shop/logo.png?v=2&size=96',
      redirectUrls: [REDIRECT],
      clientType: 'public',
    });
    const { res, html } = await interactionPage(app.application.id);
    const escaped = '&#60;script&#62;alert(document.cookie)&#60;/script&#62; &#34;Shop&#34; &#38; Co';
    expect(expectHostedPage(html, 'interaction')).toBe(`Sign in to ${escaped}`);
    expect(html).not.toContain('<script');
    expect(html).toContain(
      `<img class="brand__logo" src="https://cdn.example.com/shop/logo.png?v=2&#38;size=96" alt="${escaped} logo" width="48" height="48" referrerpolicy="no-referrer" data-testid="application-logo">`,
    );
    expect(cspSources(res, 'img-src')).toEqual(["'self'", 'data:', 'https:']);
    expect(cspSources(res, 'script-src')).toEqual(["'self'"]);

    // The logo changes with the application (the client registry follows the row), and goes with it.
    await database.sql`update applications set logo_url = null where id = ${app.application.id}`;
    const deadline = Date.now() + 5_000;
    let after = await interactionPage(app.application.id);
    while (after.html.includes('application-logo') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await interactionPage(app.application.id);
    }
    expect(after.html).not.toContain('application-logo');
    expect(cspSources(after.res, 'img-src')).toEqual(["'self'", 'data:']);
  });

  it('a public client without PKCE is refused (back to its registered redirect URI with an error)', async () => {
    const res = await fetch(
      authorizationUrl({ client_id: appId, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', state: 's2' }),
      {
        redirect: 'manual',
      },
    );
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location') as string);
    expect(location.origin + location.pathname).toBe(REDIRECT);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_description')).toMatch(/PKCE/);
    // Only S256: `plain` is refused too.
    const plain = await fetch(
      authorizationUrl({
        client_id: appId,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'plain',
      }),
      { redirect: 'manual' },
    );
    expect(new URL(plain.headers.get('location') as string).searchParams.get('error')).toBe('invalid_request');
  });

  it('a request object (openid-client JAR) and an external request_uri are refused with a clear error', async () => {
    const config = await discover();
    const { privateKey } = await generateKeyPair('ES256');
    const jar = await oidc.buildAuthorizationUrlWithJAR(config, { redirect_uri: REDIRECT, scope: 'openid', ...(await pkce()) }, privateKey);
    expect(jar.searchParams.has('request')).toBe(true);
    const res = await fetch(jar, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(new URL(res.headers.get('location') as string).searchParams.get('error')).toBe('request_not_supported');

    const byUri = await fetch(
      authorizationUrl({
        client_id: appId,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid',
        request_uri: 'https://evil.example/request.jwt',
        ...(await pkce()),
      }),
      { redirect: 'manual' },
    );
    expect(byUri.headers.get('location')).not.toBeNull();
    const error = new URL(byUri.headers.get('location') as string).searchParams.get('error');
    expect(['request_uri_not_supported', 'invalid_request_uri']).toContain(error);
  });

  it('a pushed authorization request (openid-client PAR) is stored in PostgreSQL; an unknown request_uri is refused', async () => {
    const config = await discover();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, { redirect_uri: REDIRECT, scope: 'openid', ...(await pkce()) });
    const requestUri = url.searchParams.get('request_uri') as string;
    expect(requestUri).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    const id = requestUri.slice('urn:ietf:params:oauth:request_uri:'.length);
    const rows = await database.sql<{ live: boolean }[]>`
      select expires_at > now() as live from oidc_payloads where model = 'PushedAuthorizationRequest' and id = ${id}`;
    expect(rows).toEqual([{ live: true }]);
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(new URL(res.headers.get('location') as string, server.url).pathname).toMatch(/^\/oidc\/interaction\//);

    const unknown = new URL(url);
    unknown.searchParams.set('request_uri', 'urn:ietf:params:oauth:request_uri:unknown');
    const refused = await fetch(unknown, { redirect: 'manual' });
    const location = new URL(refused.headers.get('location') as string, server.url);
    expect(location.searchParams.get('error')).toBe('invalid_request_uri');
  });

  it('the keyless development application takes loopback redirects on any port and path, and nothing else', async () => {
    for (const redirectUri of ['http://localhost:5173/callback', 'http://127.0.0.1:8080/auth/done', 'http://[::1]:3999/cb']) {
      const res = await fetch(
        authorizationUrl({ client_id: keylessId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', ...(await pkce()) }),
        { redirect: 'manual' },
      );
      expect(res.status, redirectUri).toBe(303);
      expect(new URL(res.headers.get('location') as string, server.url).pathname, redirectUri).toMatch(/^\/oidc\/interaction\//);
    }
    for (const redirectUri of [
      'https://localhost:5173/callback',
      'http://evil.example/cb',
      'http://user@localhost:5173/cb',
      'http://localhost.evil.example/cb',
    ]) {
      const res = await fetch(
        authorizationUrl({ client_id: keylessId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', ...(await pkce()) }),
        { redirect: 'manual' },
      );
      expect(res.status, redirectUri).toBe(400);
      expect(res.headers.get('location'), redirectUri).toBeNull();
    }
    // Other applications still match exactly.
    const other = await fetch(
      authorizationUrl({
        client_id: appId,
        redirect_uri: 'http://localhost:5173/callback',
        response_type: 'code',
        scope: 'openid',
        ...(await pkce()),
      }),
      { redirect: 'manual' },
    );
    expect(other.status).toBe(400);
  });

  it('a disabled application stops being a client at once; enabled again, it is one again', async () => {
    const created = await seedApplication(database.db, { redirectUrls: [REDIRECT] });
    const id = created.application.id;
    const request = async () =>
      (
        await fetch(
          authorizationUrl({ client_id: id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', ...(await pkce()) }),
          {
            redirect: 'manual',
          },
        )
      ).status;
    expect(await request()).toBe(303);
    await database.sql`update applications set status = 'disabled' where id = ${id}`;
    await expect.poll(request, { timeout: 1_000, interval: 25 }).toBe(400);
    await database.sql`update applications set status = 'active' where id = ${id}`;
    await expect.poll(request, { timeout: 1_000, interval: 25 }).toBe(303);
  });

  it('the token endpoint refuses an unknown code from a real client (invalid_grant), not a 500', async () => {
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: 'nope',
        client_id: appId,
        redirect_uri: REDIRECT,
        code_verifier: 'v'.repeat(43),
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_grant');
    // Taken before Express (http/provider-documents.ts), the token endpoints still run the edge:
    // the request id, svc's security headers, and the rate limit of the public class.
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('ratelimit-policy')).toMatch(/^"public"/);
  });

  it('once its requests have finished, the provider leaves promise hooks off for the API routes (request-context.ts)', async () => {
    // A sign-in request and a token request run through oidc-provider, which keeps each one's
    // context in an AsyncLocalStorage (on: promise hooks for every promise of the process).
    const auth = await fetch(
      authorizationUrl({ client_id: appId, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', ...(await pkce()) }),
      { redirect: 'manual' },
    );
    expect(auth.status).toBe(303);
    const token = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'unknown', client_id: appId, redirect_uri: REDIRECT }),
    });
    expect(token.status).toBe(400);
    expect(await promiseHooksOn()).toBe(false);
    const me = await fetch(`${server.url}/v1/client/config`);
    await me.arrayBuffer();
    expect(await promiseHooksOn()).toBe(false);
  });
});

describe('svc OpenID Provider: signing keys sealed with SVC_ENCRYPTION_KEY', () => {
  it('another SVC_ENCRYPTION_KEY is a one-line startup error naming the setting, not a new key', async () => {
    const first = await startTestServer({ env: { SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64') } });
    const kid = JSON.parse(first.services.oidc.jwks.json).keys[0].kid as string;
    await first.close();
    await expect(
      startTestServer({ databaseUrl: first.databaseUrl, env: { SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64') } }),
    ).rejects.toThrow(/^the OpenID Provider signing keys in the database do not open with SVC_ENCRYPTION_KEY/);
    const database = createDatabase({ url: first.databaseUrl, max: 1, applicationName: 'svc-test-oidc-key' });
    try {
      const rows = await database.sql<{ kid: string }[]>`select kid from oidc_signing_keys`;
      expect(rows.map((r) => r.kid)).toEqual([kid]);
    } finally {
      await database.close();
    }
  });
});
