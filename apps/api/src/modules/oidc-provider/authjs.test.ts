import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OIDCConfig } from '@auth/core/providers';
import { ExpressAuth, type ExpressAuthConfig, getSession } from '@auth/express';
import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { browseToRedirect, PEOPLE } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';

/** The organization claims svc adds with scope `organization`, as an Auth.js app copies them into its session. */
type SvcClaims = { sub?: string; org_id?: string; org_slug?: string; org_role?: string; permissions?: string[] };

/**
 * An Express application signing in with Auth.js (@auth/express), svc as a plain `oidc`
 * provider: issuer, client id and the confidential application's secret key, nothing else. Real
 * HTTP: a cookie jar plays the browser through Auth.js, svc's hosted sign-in and the development
 * engine; Auth.js talks to svc's discovery, token and JWKS endpoints itself.
 *
 * svc's issuer here is http://127.0.0.1:<port>. Auth.js accepts it as is: @auth/core sets
 * oauth4webapi's allowInsecureRequests on every request it makes to a provider
 * (lib/actions/signin/authorization-url.js, lib/actions/callback/oauth/callback.js), so no TLS
 * is needed in development.
 */
describe('svc OpenID Provider: an Auth.js application', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let app: Awaited<ReturnType<typeof seedApplication>>;
  let site: http.Server;
  let origin: string;
  let wrongSecretSite: http.Server;
  let wrongSecretOrigin: string;
  /** What Auth.js logged as errors (instead of printing them). */
  const authErrors: string[] = [];

  function authConfig(clientSecret: string): ExpressAuthConfig {
    const svc: OIDCConfig<Record<string, unknown>> = {
      id: 'svc',
      name: 'svc',
      type: 'oidc',
      issuer: server.url,
      clientId: app.application.id,
      clientSecret,
      authorization: { params: { scope: 'openid email profile organization' } },
    };
    return {
      trustHost: true,
      // Auth.js puts what the provider answered in the error's cause, beside the error itself (err).
      logger: { error: (error) => authErrors.push(`${error.name}: ${JSON.stringify({ ...(error.cause as object), err: undefined })}`) },
      secret: 'an Auth.js secret of this test only, 32+ characters long',
      providers: [svc],
      callbacks: {
        // Auth.js keeps the provider's profile only for this call: copy svc's user id (Auth.js
        // gives the user an id of its own without a database) and organization claims.
        jwt({ token, profile }) {
          if (profile) {
            const svc = profile as SvcClaims;
            Object.assign(token, {
              svc_user: svc.sub,
              org: { id: svc.org_id, slug: svc.org_slug, role: svc.org_role, permissions: svc.permissions },
            });
          }
          return token;
        },
        session({ session, token }) {
          return { ...session, svcUser: token.svc_user, org: token.org };
        },
      },
    };
  }

  async function listen(clientSecret: string): Promise<{ server: http.Server; origin: string }> {
    const config = authConfig(clientSecret);
    const web = express();
    web.set('trust proxy', true);
    web.use('/auth', ExpressAuth(config));
    web.get('/me', async (req, res) => {
      res.json({ session: await getSession(req, config) });
    });
    const listening = http.createServer(web);
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    return { server: listening, origin: `http://127.0.0.1:${(listening.address() as AddressInfo).port}` };
  }

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-oidc-authjs' });
    // The callback URL is only known once the site listens: the application is registered after.
    app = await seedApplication(database.db, { clientType: 'confidential', name: 'Auth.js site' });
    ({ server: site, origin } = await listen(app.secretKey));
    ({ server: wrongSecretSite, origin: wrongSecretOrigin } = await listen(`${app.secretKey.slice(0, -1)}x`));
    await database.sql`
      update applications set redirect_urls = ${[`${origin}/auth/callback/svc`, `${wrongSecretOrigin}/auth/callback/svc`]}
      where id = ${app.application.id}`;
    // The product's permission the built-in org_admin role carries.
    await database.sql`insert into api_resources (id, identifier, name) values ('res_reportsreportsrepor', 'https://api.reports.example', 'Reports')`;
    await database.sql`insert into api_permissions (id, resource_id, name) values ('prm_reportsreportsrepor', 'res_reportsreportsrepor', 'reports.read')`;
    await database.sql`update product_roles set permissions = '{reports.read}' where key = 'org_admin'`;
  });

  afterAll(async () => {
    for (const s of [site, wrongSecretSite]) {
      s?.closeAllConnections();
      await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
    }
    await database?.close();
    await server?.close();
  });

  /** Auth.js's sign-in as its own page submits it: CSRF token, then POST /auth/signin/svc, which redirects to svc. */
  async function signIn(jar: CookieJar, site: string): Promise<Response> {
    const { csrfToken } = (await (await jar.fetch(`${site}/auth/csrf`)).json()) as { csrfToken: string };
    const start = await jar.fetch(`${site}/auth/signin/svc`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken, callbackUrl: `${site}/me` }).toString(),
    });
    expect(start.status).toBe(302);
    const authorization = new URL(start.headers.get('location') as string);
    expect(authorization.origin + authorization.pathname).toBe(`${server.url}/oidc/auth`);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    const { callback } = await browseToRedirect(jar, authorization, { svcUrl: server.url, redirectUri: `${site}/auth/callback/svc` });
    // Auth.js redeems the code at svc's token endpoint (client_secret_basic) and verifies the ID token.
    return jar.fetch(callback.href);
  }

  it('signs in through svc; the session carries the organization claims', async () => {
    const jar = new CookieJar();
    const done = await signIn(jar, origin);
    expect(done.status).toBe(302);
    expect(done.headers.get('location')).toBe(`${origin}/me`);
    expect(Object.keys(jar.cookiesFor(origin))).toContain('authjs.session-token');

    const { session } = (await (await jar.fetch(`${origin}/me`)).json()) as {
      session: {
        user: { email: string; name: string };
        svcUser: string;
        org: { id: string; slug: string; role: string; permissions: string[] };
      };
    };
    const [member] = await database.sql<{ user_id: string; tenant_id: string; slug: string; role_key: string }[]>`
      select m.user_id, m.tenant_id, o.slug, m.role_key from memberships m
      join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
      where u.email = ${PEOPLE.user.email} and o.kind = 'tenant'`;
    expect(session.user.email).toBe(PEOPLE.user.email);
    expect(session.svcUser).toBe(member?.user_id);
    expect(session.svcUser).toMatch(/^usr_/);
    expect(session.org).toMatchObject({ id: member?.tenant_id, slug: member?.slug, role: member?.role_key });
    expect(session.org.permissions).toEqual(['reports.read']);
    expect(authErrors).toEqual([]);
  });

  it('an Auth.js site presenting a wrong secret key gets no tokens from svc and no session', async () => {
    const jar = new CookieJar();
    const done = await signIn(jar, wrongSecretOrigin);
    expect(done.status).toBe(302);
    expect(new URL(done.headers.get('location') as string).pathname).toBe('/auth/error');
    expect(jar.cookiesFor(wrongSecretOrigin)['authjs.session-token']).toBeUndefined();
    const { session } = (await (await jar.fetch(`${wrongSecretOrigin}/me`)).json()) as { session: unknown };
    expect(session).toBeNull();
    // Refused by svc's token endpoint for the secret, not for anything else.
    expect(authErrors).toHaveLength(1);
    expect(authErrors[0]).toMatch(/^CallbackRouteError: .*invalid_client/);
  });
});
