import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MACHINE_TOKEN_EVENT_TYPE } from '@svc/contracts/authorization';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import express from 'express';
import { auth, requiredScopes } from 'express-oauth2-jwt-bearer';
import { createRemoteJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';

const INVOICES = 'https://api.invoices.example';
const REPORTS = 'https://api.reports.example';

/**
 * Machine clients (docs/authorization.md): an application of type `machine` gets tokens for the
 * product's APIs by the client credentials grant (RFC 6749 section 4.4), authenticating with its
 * secret key or a JWT signed with a key it registered (RFC 7523), through openid-client. An
 * Express API on express-oauth2-jwt-bearer judges the tokens; every token is a metered usage
 * event of the client's organization.
 */
describe('svc OpenID Provider: machine clients', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let api: http.Server;
  let apiUrl: string;
  let jwks: ReturnType<typeof createRemoteJWKSet>;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-machine-tokens' });
    await database.sql`insert into api_resources (id, identifier, name) values
      ('res_invoicesinvoicesinvo', ${INVOICES}, 'Invoices'), ('res_reportsreportsrepor', ${REPORTS}, 'Reports')`;
    await database.sql`insert into api_permissions (id, resource_id, name) values
      ('prm_aaaaaaaaaaaaaaaaaaaa', 'res_invoicesinvoicesinvo', 'invoices.read'),
      ('prm_bbbbbbbbbbbbbbbbbbbb', 'res_invoicesinvoicesinvo', 'invoices.create'),
      ('prm_cccccccccccccccccccc', 'res_invoicesinvoicesinvo', 'invoices.delete'),
      ('prm_dddddddddddddddddddd', 'res_reportsreportsrepor', 'reports.read')`;
    jwks = createRemoteJWKSet(new URL(`${server.url}/oidc/jwks`));

    const site = express();
    site.get(
      '/invoices',
      auth({ issuerBaseURL: server.url, audience: INVOICES, tokenSigningAlg: 'RS256' }),
      requiredScopes('invoices.read'),
      (req, res) => {
        res.json({ organization: req.auth?.payload.org_id });
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

  /** A machine client of a new organization holding `permissions`. */
  async function machine(permissions: string[], extra: { jwks?: unknown } = {}) {
    const created = await seedApplication(database.db, { clientType: 'confidential' });
    await database.sql`
      update applications set client_type = 'machine', redirect_urls = '{}',
        token_endpoint_auth_method = ${extra.jwks ? 'private_key_jwt' : 'client_secret_basic'},
        jwks = ${extra.jwks ? JSON.stringify(extra.jwks) : null}::jsonb, machine_permissions = ${permissions}
      where id = ${created.application.id}`;
    return created;
  }

  function configOf(clientId: string, clientAuth: oidc.ClientAuth) {
    return oidc.discovery(new URL(server.url), clientId, undefined, clientAuth, { execute: [oidc.allowInsecureRequests] });
  }

  async function rawToken(clientId: string, secret: string, body: Record<string, string>) {
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', ...body }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  }

  it('client_secret_basic: a token for the API, its organization and the client’s permissions there; the API takes it', async () => {
    const m = await machine(['invoices.create', 'invoices.read', 'reports.read']);
    const config = await configOf(m.application.id, oidc.ClientSecretBasic(m.secretKey));
    expect(config.serverMetadata().grant_types_supported).toContain('client_credentials');
    expect(config.serverMetadata().token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    const tokens = await oidc.clientCredentialsGrant(config, { resource: INVOICES });
    const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: server.url, audience: INVOICES, typ: 'at+jwt' });
    expect(payload).toMatchObject({
      sub: m.application.id,
      client_id: m.application.id,
      aud: INVOICES,
      org_id: m.organization.id,
      scope: 'invoices.create invoices.read',
    });
    expect(payload.permissions).toBeUndefined();
    const res = await fetch(`${apiUrl}/invoices`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ organization: m.organization.id });

    // Scope entitlements adds its organization's plan and features.
    const entitled = await oidc.clientCredentialsGrant(config, { resource: INVOICES, scope: 'entitlements invoices.read' });
    expect(decodeJwt(entitled.access_token)).toMatchObject({
      scope: 'invoices.read',
      entitlements: { plan: expect.any(String), status: 'active', features: [] },
    });

    // Asking for fewer gets fewer; a permission it lacks is not granted.
    const narrow = await oidc.clientCredentialsGrant(config, { resource: INVOICES, scope: 'invoices.read invoices.delete' });
    expect(decodeJwt(narrow.access_token).scope).toBe('invoices.read');
    // Each token is a usage event of the organization, written right after it is issued (the plan does not limit them).
    await expect
      .poll(async () => {
        const [row] = await database.sql<{ n: number }[]>`
          select count(*)::int as n from usage_events where tenant_id = ${m.organization.id} and event_type = ${MACHINE_TOKEN_EVENT_TYPE}`;
        return row?.n;
      })
      .toBe(3);
  });

  it('private_key_jwt (RFC 7523) with a registered JWK Set; another key is invalid_client', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const m = await machine(['reports.read'], {
      jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] },
    });
    const config = await configOf(m.application.id, oidc.PrivateKeyJwt({ key: privateKey, kid: 'k1' }));
    const tokens = await oidc.clientCredentialsGrant(config, { resource: REPORTS });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: REPORTS, sub: m.application.id, scope: 'reports.read' });

    const other = await generateKeyPair('ES256');
    const impostor = await configOf(m.application.id, oidc.PrivateKeyJwt({ key: other.privateKey, kid: 'k1' }));
    await expect(oidc.clientCredentialsGrant(impostor, { resource: REPORTS })).rejects.toMatchObject({ error: 'invalid_client' });
    // Its secret key is no way in at the token endpoint.
    expect((await rawToken(m.application.id, m.secretKey, { resource: REPORTS })).body.error).toBe('invalid_client');
  });

  it('refuses: no resource, an unknown one, one it holds nothing on, another organization, a wrong secret', async () => {
    const m = await machine(['invoices.read']);
    const other = await seedApplication(database.db);
    expect(await rawToken(m.application.id, m.secretKey, {})).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    expect(await rawToken(m.application.id, m.secretKey, { resource: 'https://api.unknown.example' })).toMatchObject({
      status: 400,
      body: { error: 'invalid_target' },
    });
    expect(await rawToken(m.application.id, m.secretKey, { resource: REPORTS })).toMatchObject({
      status: 400,
      body: { error: 'invalid_target' },
    });
    expect(await rawToken(m.application.id, m.secretKey, { resource: INVOICES, organization: other.organization.slug })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
    expect(await rawToken(m.application.id, `${m.secretKey}x`, { resource: INVOICES })).toMatchObject({
      status: 401,
      body: { error: 'invalid_client' },
    });
    // Nothing was metered for refused requests.
    const [row] = await database.sql<{ n: number }[]>`select count(*)::int as n from usage_events where tenant_id = ${m.organization.id}`;
    expect(row?.n).toBe(0);
  });

  it('an application that is not a machine client cannot use the grant; a disabled machine client gets nothing', async () => {
    const web = await seedApplication(database.db, { clientType: 'confidential', redirectUrls: ['https://app.example/cb'] });
    await database.sql`update applications set machine_permissions = '{invoices.read}' where id = ${web.application.id}`;
    // oidc-provider's answer to a grant type the client may not use.
    expect((await rawToken(web.application.id, web.secretKey, { resource: INVOICES })).body).toMatchObject({
      error: 'invalid_request',
      error_description: 'requested grant type is not allowed for this client',
    });

    const m = await machine(['invoices.read']);
    await database.sql`update applications set status = 'disabled' where id = ${m.application.id}`;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await rawToken(m.application.id, m.secretKey, { resource: INVOICES })).body.error).toBe('invalid_client');
  });

  it('tokens asked for at once are each counted, and a limit issues exactly the tokens it allows', async () => {
    const m = await machine(['invoices.read']);
    const count = async () => {
      const [row] = await database.sql<{ events: number; quantity: number }[]>`
        select count(*)::int as events, coalesce(sum(quantity), 0)::int as quantity
        from usage_events where tenant_id = ${m.organization.id} and event_type = ${MACHINE_TOKEN_EVENT_TYPE}`;
      return row;
    };
    const burst = await Promise.all(Array.from({ length: 24 }, () => rawToken(m.application.id, m.secretKey, { resource: INVOICES })));
    expect(burst.map((r) => r.status)).toEqual(Array(24).fill(200));
    await expect.poll(async () => (await count())?.quantity).toBe(24);
    const counted = await count();
    // Recorded together while the client's earlier tokens were being written: fewer rows than tokens.
    expect(counted?.events).toBeLessThan(24);

    // A limit of 30 leaves 6: of 10 asked at once, exactly 6 are issued, and 6 more are counted.
    const planId = newId('subscriptionPlan');
    await database.sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits)
      values (${planId}, ${planId.toLowerCase()}, 'Thirty tokens', 10, ${JSON.stringify({ [MACHINE_TOKEN_EVENT_TYPE]: 30 })}::jsonb)`;
    await database.sql`update subscriptions set plan_id = ${planId} where tenant_id = ${m.organization.id}`;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const near = await Promise.all(Array.from({ length: 10 }, () => rawToken(m.application.id, m.secretKey, { resource: INVOICES })));
    expect(near.filter((r) => r.status === 200 && typeof r.body.access_token === 'string')).toHaveLength(6);
    expect(near.filter((r) => r.status === 402 && r.body.error === 'subscription_limit_exceeded')).toHaveLength(4);
    expect((await count())?.quantity).toBe(30);
  });

  it('the plan meters machine tokens: an inactive subscription or a reached limit answers 402', async () => {
    const m = await machine(['invoices.read']);
    const planId = newId('subscriptionPlan');
    await database.sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits)
      values (${planId}, ${planId.toLowerCase()}, 'Two tokens', 10, ${JSON.stringify({ [MACHINE_TOKEN_EVENT_TYPE]: 2 })}::jsonb)`;
    await database.sql`update subscriptions set plan_id = ${planId} where tenant_id = ${m.organization.id}`;
    expect((await rawToken(m.application.id, m.secretKey, { resource: INVOICES })).status).toBe(200);
    expect((await rawToken(m.application.id, m.secretKey, { resource: INVOICES })).status).toBe(200);
    const third = await rawToken(m.application.id, m.secretKey, { resource: INVOICES });
    // svc's 402 fields beside the OAuth error (upgradeUrl: null, SUBSCRIPTION_UPGRADE_URL is not set here).
    expect(third).toMatchObject({
      status: 402,
      body: { error: 'subscription_limit_exceeded', limit: MACHINE_TOKEN_EVENT_TYPE, max: 2, used: 2, requested: 1, upgradeUrl: null },
    });
    expect(third.body.access_token).toBeUndefined();

    const n = await machine(['invoices.read']);
    await database.sql`update subscriptions set status = 'inactive' where tenant_id = ${n.organization.id}`;
    expect(await rawToken(n.application.id, n.secretKey, { resource: INVOICES })).toMatchObject({
      status: 402,
      body: { error: 'subscription_inactive', status: 'inactive', upgradeUrl: null },
    });
  });

  it('without a limit tokens are issued at once, and a subscription that turns inactive stops them within the access cache’s notice', async () => {
    const m = await machine(['invoices.read']);
    expect((await rawToken(m.application.id, m.secretKey, { resource: INVOICES })).status).toBe(200);
    await database.sql`update subscriptions set status = 'inactive' where tenant_id = ${m.organization.id}`;
    await expect
      .poll(async () => (await rawToken(m.application.id, m.secretKey, { resource: INVOICES })).status, { timeout: 2000 })
      .toBe(402);
    // The token issued while it was active is counted even though the subscription refuses usage now.
    await expect
      .poll(async () => {
        const [row] = await database.sql<{ quantity: number }[]>`
          select coalesce(sum(quantity), 0)::int as quantity from usage_events
          where tenant_id = ${m.organization.id} and event_type = ${MACHINE_TOKEN_EVENT_TYPE}`;
        return row?.quantity;
      })
      .toBeGreaterThanOrEqual(1);
    await database.sql`update subscriptions set status = 'active' where tenant_id = ${m.organization.id}`;
    await expect
      .poll(async () => (await rawToken(m.application.id, m.secretKey, { resource: INVOICES })).status, { timeout: 2000 })
      .toBe(200);
  });
});
