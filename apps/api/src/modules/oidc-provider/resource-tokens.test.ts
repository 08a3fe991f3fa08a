import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import express from 'express';
import { auth, requiredScopes } from 'express-oauth2-jwt-bearer';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';

const CALLBACK = 'http://127.0.0.1:53121/auth/callback';
const INVOICES = 'https://api.invoices.example';
const REPORTS = 'https://api.reports.example';
/** svc's admin-only control-plane permissions: never in any token, whatever role lists them. */
const ADMIN_ONLY = ['webhooks.manage', 'exports.create', 'users.manage', 'roles.manage'];

/**
 * Tokens for the product's own APIs (docs/authorization.md): a person holding a custom role that
 * lists admin-only control-plane permissions and one product permission signs in to a
 * confidential application through openid-client; the tokens carry the product's permissions
 * only, `resource` (RFC 8707) narrows them to one API, and an Express API protected by
 * express-oauth2-jwt-bearer (a resource-server library svc did not write) judges them.
 */
describe('svc OpenID Provider: tokens for the product’s APIs', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let app: Awaited<ReturnType<typeof seedApplication>>;
  let config: oidc.Configuration;
  let jwks: ReturnType<typeof createRemoteJWKSet>;
  let api: http.Server;
  let apiUrl: string;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-resource-tokens' });
    app = await seedApplication(database.db, { clientType: 'confidential', redirectUrls: [CALLBACK] });
    config = await oidc.discovery(new URL(server.url), app.application.id, undefined, oidc.ClientSecretBasic(app.secretKey), {
      execute: [oidc.allowInsecureRequests],
    });
    jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri as string));
    const sql = database.sql;
    await sql`insert into api_resources (id, identifier, name) values
      ('res_invoicesinvoicesinvo', ${INVOICES}, 'Invoices'), ('res_reportsreportsrepor', ${REPORTS}, 'Reports')`;
    await sql`insert into api_permissions (id, resource_id, name) values
      ('prm_aaaaaaaaaaaaaaaaaaaa', 'res_invoicesinvoicesinvo', 'invoices.read'),
      ('prm_bbbbbbbbbbbbbbbbbbbb', 'res_invoicesinvoicesinvo', 'invoices.create'),
      ('prm_cccccccccccccccccccc', 'res_invoicesinvoicesinvo', 'invoices.delete'),
      ('prm_dddddddddddddddddddd', 'res_reportsreportsrepor', 'reports.read')`;
    // The person: a member of the application's organization with a custom role listing
    // admin-only control-plane permissions, and two product permissions on two APIs.
    await sql`insert into roles (id, tenant_id, key, name, permissions, product_permissions) values
      ('rol_opsopsopsopsopsopsop', ${app.organization.id}, 'ops', 'Operations',
       ${[...ADMIN_ONLY, 'tenant.read']}, '{invoices.create,invoices.read,reports.read}')`;
    // First sign-in creates the person; then the organization has them as `ops`.
    await signIn(new CookieJar(), {});
    await sql`insert into memberships (tenant_id, user_id, role_key)
      select ${app.organization.id}, id, 'ops' from users where email = 'user@svc.local'`;

    // The product's Invoices API, as its developers would protect it.
    const site = express();
    site.get(
      '/invoices',
      auth({ issuerBaseURL: server.url, audience: INVOICES, tokenSigningAlg: 'RS256' }),
      requiredScopes('invoices.read'),
      (_req, res) => {
        res.json({ invoices: [] });
      },
    );
    site.delete(
      '/invoices/1',
      auth({ issuerBaseURL: server.url, audience: INVOICES, tokenSigningAlg: 'RS256' }),
      requiredScopes('invoices.delete'),
      (_req, res) => {
        res.status(204).end();
      },
    );
    site.use((err: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(err.status ?? 500).end();
    });
    api = http.createServer(site);
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', () => resolve()));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => (api ? api.close(() => resolve()) : resolve()));
    await database?.close();
    await server?.close();
  });

  async function signIn(jar: CookieJar, params: Record<string, string>) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid email offline_access organization',
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...params,
    });
    const browsed = await browseToRedirect(jar, url, { svcUrl: server.url, redirectUri: CALLBACK });
    return {
      browsed,
      verifier,
      tokens: await oidc.authorizationCodeGrant(config, browsed.callback, { pkceCodeVerifier: verifier, expectedState: state }),
    };
  }

  const orgParams = () => ({ organization: app.organization.slug });

  async function callApi(path: string, token: string, method = 'GET') {
    const res = await fetch(`${apiUrl}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
    await res.body?.cancel();
    return res.status;
  }

  it('the ID token, the access token and userinfo carry the product’s permissions, never svc’s control-plane ones', async () => {
    const { tokens } = await signIn(new CookieJar(), orgParams());
    const id = await jwtVerify(tokens.id_token as string, jwks, { issuer: server.url, audience: app.application.id });
    const at = await jwtVerify(tokens.access_token, jwks, { issuer: server.url, audience: app.application.id, typ: 'at+jwt' });
    const info = await oidc.fetchUserInfo(config, tokens.access_token, id.payload.sub as string);
    for (const claims of [id.payload, at.payload, info]) {
      expect(claims).toMatchObject({ org_id: app.organization.id, org_role: 'ops' });
      expect(claims.permissions).toEqual(['invoices.create', 'invoices.read', 'reports.read']);
      for (const p of PERMISSIONS) {
        expect(claims.permissions).not.toContain(p);
      }
    }
  });

  it('resource=<identifier>: the access token is that API’s, with exactly the person’s permissions on it', async () => {
    const { tokens } = await signIn(new CookieJar(), { ...orgParams(), resource: INVOICES });
    const at = await jwtVerify(tokens.access_token, jwks, { issuer: server.url, audience: INVOICES, typ: 'at+jwt' });
    expect(at.payload).toMatchObject({
      aud: INVOICES,
      client_id: app.application.id,
      org_id: app.organization.id,
      org_role: 'ops',
      scope: 'invoices.create invoices.read',
    });
    // The permissions are the scope (RFC 9068), once: no second copy as an array.
    expect(at.payload.permissions).toBeUndefined();
    // The ID token is still the application's.
    expect(decodeJwt(tokens.id_token as string).aud).toBe(app.application.id);
    // express-oauth2-jwt-bearer: its audience, its permission.
    expect(await callApi('/invoices', tokens.access_token)).toBe(200);
    // The person lacks invoices.delete: refused.
    expect(await callApi('/invoices/1', tokens.access_token, 'DELETE')).toBe(403);
    // An ID token, and the application's own access token, are not this API's.
    expect(await callApi('/invoices', tokens.id_token as string)).toBe(401);
    const own = await signIn(new CookieJar(), orgParams());
    expect(await callApi('/invoices', own.tokens.access_token)).toBe(401);
    // The API's token is no key to the person's profile at userinfo.
    const userinfo = await fetch(`${server.url}/oidc/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.status).toBe(401);
  });

  it('a token for another API is refused by this one; a client asking for fewer permissions gets fewer', async () => {
    const reports = await signIn(new CookieJar(), { ...orgParams(), resource: REPORTS });
    expect(decodeJwt(reports.tokens.access_token)).toMatchObject({ aud: REPORTS, scope: 'reports.read' });
    expect(await callApi('/invoices', reports.tokens.access_token)).toBe(401);

    const narrow = await signIn(new CookieJar(), {
      ...orgParams(),
      resource: INVOICES,
      scope: 'openid offline_access organization invoices.read invoices.delete',
    });
    // Asked for read and delete; holds read and create: gets read.
    expect(decodeJwt(narrow.tokens.access_token)).toMatchObject({ scope: 'invoices.read' });
  });

  it('an unknown resource is invalid_target, at the authorization and at the token endpoint', async () => {
    const jar = new CookieJar();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid organization',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: 'x',
      resource: 'https://api.unknown.example',
    });
    const res = await jar.fetch(url.href);
    const location = new URL(res.headers.get('location') as string);
    expect(location.href.startsWith(CALLBACK)).toBe(true);
    expect(location.searchParams.get('error')).toBe('invalid_target');

    // A refresh for an API the authorization did not name: invalid_target too.
    const { tokens } = await signIn(new CookieJar(), { ...orgParams(), resource: INVOICES });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token as string, { resource: REPORTS })).rejects.toMatchObject({
      error: 'invalid_target',
    });
  });

  it('a role change shows at once in userinfo and in the next token', async () => {
    const { tokens } = await signIn(new CookieJar(), { ...orgParams(), resource: INVOICES });
    const own = await signIn(new CookieJar(), orgParams());
    await database.sql`update roles set product_permissions = '{invoices.read}' where id = 'rol_opsopsopsopsopsopsop'`;
    try {
      const info = await oidc.fetchUserInfo(config, own.tokens.access_token, oidc.skipSubjectCheck);
      expect(info.permissions).toEqual(['invoices.read']);
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
      expect(decodeJwt(refreshed.access_token)).toMatchObject({ aud: INVOICES, scope: 'invoices.read' });
    } finally {
      await database.sql`update roles set product_permissions = '{invoices.create,invoices.read,reports.read}' where id = 'rol_opsopsopsopsopsopsop'`;
    }
  });

  it('after a replayed code, the first exchange’s access token is refused by userinfo and inactive at introspection', async () => {
    const { tokens, browsed, verifier } = await signIn(new CookieJar(), orgParams());
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(true);
    const replay = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${app.application.id}:${app.secretKey}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: browsed.callback.searchParams.get('code') as string,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
      }),
    });
    expect(replay.status).toBe(400);
    const userinfo = await fetch(`${server.url}/oidc/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.status).toBe(401);
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });
  });

  it('introspection: another client’s access token is inactive, a tampered one too', async () => {
    const { tokens } = await signIn(new CookieJar(), orgParams());
    const other = await seedApplication(database.db, { clientType: 'confidential', redirectUrls: [CALLBACK] });
    const otherConfig = await oidc.discovery(
      new URL(server.url),
      other.application.id,
      undefined,
      oidc.ClientSecretBasic(other.secretKey),
      { execute: [oidc.allowInsecureRequests] },
    );
    expect(await oidc.tokenIntrospection(otherConfig, tokens.access_token)).toEqual({ active: false });
    const [h, p, s] = tokens.access_token.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...decodeJwt(tokens.access_token), permissions: ['invoices.delete'] })).toString(
      'base64url',
    );
    expect(await oidc.tokenIntrospection(config, `${h}.${forged}.${s}`)).toEqual({ active: false });
    expect(p).not.toBe(forged);
  });

  it('scope entitlements: the access token carries the organization’s plan, status and features as they are now', async () => {
    const [plan] = await database.sql<{ key: string }[]>`
      select p.key from subscriptions s join subscription_plans p on p.id = s.plan_id where s.tenant_id = ${app.organization.id}`;
    await database.sql`update subscription_plans set features = '{audit_export,sso}' where key = ${plan?.key as string}`;
    try {
      const scope = 'openid offline_access organization entitlements';
      const { tokens } = await signIn(new CookieJar(), { ...orgParams(), resource: INVOICES, scope });
      expect(decodeJwt(tokens.access_token)).toMatchObject({
        aud: INVOICES,
        scope: 'invoices.create invoices.read',
        entitlements: { plan: plan?.key, status: 'active', features: ['audit_export', 'sso'] },
      });
      // Without the scope, none.
      const plain = await signIn(new CookieJar(), { ...orgParams(), resource: INVOICES });
      expect(decodeJwt(plain.tokens.access_token).entitlements).toBeUndefined();
      // The application's own access token too; a lapsed subscription entitles to no feature in the next token.
      const own = await signIn(new CookieJar(), { ...orgParams(), scope });
      expect(decodeJwt(own.tokens.access_token).entitlements).toMatchObject({ features: ['audit_export', 'sso'] });
      await database.sql`update subscriptions set status = 'expired' where tenant_id = ${app.organization.id}`;
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
      expect(decodeJwt(refreshed.access_token).entitlements).toEqual({ plan: plan?.key, status: 'expired', features: [] });
    } finally {
      await database.sql`update subscriptions set status = 'active' where tenant_id = ${app.organization.id}`;
      await database.sql`update subscription_plans set features = '{}' where key = ${plan?.key as string}`;
    }
  });

  it('RFC 8414 authorization server metadata says what discovery says, resource indicators included', async () => {
    const [rfc8414, openid] = await Promise.all([
      fetch(`${server.url}/.well-known/oauth-authorization-server`).then((r) => r.json() as Promise<Record<string, unknown>>),
      fetch(`${server.url}/.well-known/openid-configuration`).then((r) => r.json() as Promise<Record<string, unknown>>),
    ]);
    expect(rfc8414).toEqual(openid);
    expect(rfc8414).toMatchObject({ issuer: server.url, resource_indicators_supported: true });
    expect(rfc8414.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
  });
});
