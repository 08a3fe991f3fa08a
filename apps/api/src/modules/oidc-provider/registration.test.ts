import { createHash, randomBytes } from 'node:crypto';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { ZSetThirdPartyAccessRequest } from '@svc/contracts/connected-apps';
import type { TRegisteredClientList } from '@svc/contracts/registered-clients';
import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import type { JobContext } from '@svc/jobs/runner';
import { pruneRegisteredClients } from '@svc/jobs/tasks/prune-registered-clients';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { memoryAgent } from '../../../../../test/support/mcp-agent.ts';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedSignedIn } from '../../../../../test/support/tenancy.ts';
import type { RunningServer } from '../../server.ts';
import { sha256Hex } from '../applications/keys.ts';

const CALLBACK = 'http://127.0.0.1:53299/callback';
const REGISTRATIONS_PER_MINUTE = 40;

type Registered = { client_id: string; client_secret?: string; redirect_uris: string[]; token_endpoint_auth_method: string };

/**
 * Dynamic client registration (RFC 7591; docs/oidc.md "Dynamic client registration"): off unless
 * OIDC_DYNAMIC_REGISTRATION=on; when on, anonymous, always third-party (consent, the
 * organization's policy), svc's rules on metadata, a per-address rate limit, and deleted once
 * unused. The MCP TypeScript SDK's client registers itself and gets a token for svc's MCP server.
 */
describe('dynamic client registration', () => {
  let on: RunningServer & { databaseUrl: string };
  let off: RunningServer & { databaseUrl: string };
  let database: Database;
  let mcpUrl: string;
  /** The person's own workspace (they are its org_admin). */
  let workspace: { id: string; slug: string };

  beforeAll(async () => {
    on = await startTestServer({
      env: {
        OIDC_DYNAMIC_REGISTRATION: 'on',
        RATE_LIMIT_REGISTRATIONS_PER_MINUTE: String(REGISTRATIONS_PER_MINUTE),
        RATE_LIMIT_SIGNIN_PER_MINUTE: '1000',
      },
    });
    // The default: off. The same database, a second process.
    off = await startTestServer({ databaseUrl: on.databaseUrl });
    database = createDatabase({ url: on.databaseUrl, max: 2, applicationName: 'svc-test-registration' });
    mcpUrl = `${on.services.config.publicUrl}/mcp`;
    // The person's first sign-in (through an application) creates them and their workspace.
    const app = await seedApplication(database.db, { clientType: 'public', redirectUrls: [CALLBACK] });
    await browseToRedirect(new CookieJar(), authorizationUrl(app.application.id, { scope: 'openid' }).url, {
      svcUrl: on.url,
      redirectUri: CALLBACK,
    });
    const [row] = await database.sql<{ id: string; slug: string }[]>`
      select o.id, o.slug from memberships m join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
      where u.email = 'user@svc.local' and m.role_key = 'org_admin'`;
    workspace = row as { id: string; slug: string };
  });

  afterAll(async () => {
    await database?.close();
    await off?.close();
    await on?.close();
  });

  function authorizationUrl(clientId: string, opts: { scope: string; resource?: string }) {
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: opts.scope,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    if (opts.resource) {
      params.set('resource', opts.resource);
    }
    return { url: `${on.url}/oidc/auth?${params}`, verifier };
  }

  async function register(body: unknown, server = on): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${server.url}/oidc/reg`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('off by default: not advertised, and the endpoint is unknown', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const document = (await (await fetch(`${off.url}${path}`)).json()) as Record<string, unknown>;
      expect(document.registration_endpoint).toBeUndefined();
    }
    const refused = await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' }, off);
    expect(refused.status).toBe(404);
    expect((refused.body.error as { code: string }).code).toBe('not_found');
  });

  it('on: advertised in discovery and RFC 8414 metadata', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const document = (await (await fetch(`${on.url}${path}`)).json()) as Record<string, unknown>;
      expect(document.registration_endpoint).toBe(`${on.services.config.publicUrl}/oidc/reg`);
    }
  });

  it("the MCP SDK's client registers itself, the person consents, and it gets a token for svc's MCP server", async () => {
    const metadata: OAuthClientMetadata = {
      client_name: 'Registered agent',
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    // No clientMetadataUrl: the SDK registers at the advertised registration_endpoint.
    const agent = memoryAgent({ redirectUrl: CALLBACK, clientMetadata: metadata });
    const provider = agent.provider;
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await expect(new Client({ name: 'agent', version: '1.0.0' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    const clientId = agent.information()?.client_id as string;
    expect(clientId).toMatch(/^dcr_[0-9A-Za-z]{20}$/);
    // Public: no secret issued, none stored.
    expect((agent.information() as { client_secret?: string }).client_secret).toBeUndefined();
    const url = agent.authorizationUrl() as URL;
    expect(url.searchParams.get('client_id')).toBe(clientId);
    expect(url.searchParams.get('resource')).toBe(mcpUrl);

    // Third-party: the consent page, naming the host its code goes to and saying nobody vouched for it.
    const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: on.url, redirectUri: CALLBACK, consent: 'allow' });
    expect(browsed.steps).toContain('consent');
    const consent = browsed.pages.find((html) => html.includes('data-testid="consent-allow"')) ?? '';
    expect(consent).toContain('registered itself');
    expect(consent).toContain('<strong data-testid="consent-client-host">127.0.0.1:53299</strong>');
    const code = browsed.callback.searchParams.get('code') as string;
    expect(code).toBeTruthy();

    expect(await auth(provider, { serverUrl: mcpUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const claims = decodeJwt(agent.tokens()?.access_token as string);
    expect(claims).toMatchObject({ aud: mcpUrl, client_id: clientId, org_id: workspace.id });
    expect(String(claims.scope).split(' ')).toContain('members.read');
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    const listed = (await client.callTool({ name: 'list_members', arguments: {} })) as { isError?: boolean };
    expect(listed.isError).not.toBe(true);
    await client.close();
    // Metered and listed like any third-party client's token.
    await expect
      .poll(async () => {
        const [row] = await database.sql<{ n: number }[]>`
          select count(*)::int as n from usage_events where tenant_id = ${workspace.id} and event_type = 'agent_token.issued'
            and properties->>'clientId' = ${clientId}`;
        return row?.n;
      })
      .toBe(1);
    // Its token was noted as its last use (what keeps it from being deleted).
    await expect
      .poll(async () => {
        const [row] = await database.sql<{ used: boolean }[]>`
          select last_used_at is not null as used from oidc_payloads where model = 'Client' and id = ${clientId}`;
        return row?.used;
      })
      .toBe(true);
  });

  it('a confidential registration gets a secret once; svc keeps only its SHA-256, and the secret authenticates at the token endpoint', async () => {
    const registered = await register({
      client_name: 'Server agent',
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(registered.status).toBe(201);
    const body = registered.body as Registered;
    expect(body.client_secret).toMatch(/^[\w-]{43}$/);
    expect(body).not.toHaveProperty('registration_access_token');
    const [stored] = await database.sql<{ payload: { client_secret: string } }[]>`
      select payload from oidc_payloads where model = 'Client' and id = ${body.client_id}`;
    expect(stored?.payload.client_secret).toBe(sha256Hex(body.client_secret as string));

    const { url, verifier } = authorizationUrl(body.client_id, { scope: 'openid organization' });
    const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: on.url, redirectUri: CALLBACK, consent: 'allow' });
    expect(browsed.steps).toContain('consent');
    const exchange = (secret: string) =>
      fetch(`${on.url}/oidc/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${body.client_id}:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: browsed.callback.searchParams.get('code') as string,
          redirect_uri: CALLBACK,
          code_verifier: verifier,
        }),
      });
    // The stored hash is no secret: presenting it fails.
    expect((await exchange(stored?.payload.client_secret as string)).status).toBe(401);
    const ok = await exchange(body.client_secret as string);
    expect(ok.status).toBe(200);
  });

  it("a registered client is subject to the organization's third-party policy", async () => {
    const registered = (await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' })).body as Registered;
    await database.sql`insert into third_party_access (tenant_id, mode, clients) values (${workspace.id}, 'off', '{}')
      on conflict (tenant_id) do update set mode = 'off'`;
    try {
      const { url } = authorizationUrl(registered.client_id, { scope: 'openid organization' });
      const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: on.url, redirectUri: CALLBACK, consent: 'allow' });
      expect(browsed.callback.searchParams.get('error')).toBe('access_denied');
      expect(browsed.steps).not.toContain('consent');
      // Listed by its id (what an org admin sends to PATCH /v1/third-party-access): allowed.
      const listed = ZSetThirdPartyAccessRequest.parse({ mode: 'listed', clients: [registered.client_id] });
      await database.sql`update third_party_access set mode = 'listed', clients = ${listed.clients ?? []} where tenant_id = ${workspace.id}`;
      const again = await browseToRedirect(new CookieJar(), authorizationUrl(registered.client_id, { scope: 'openid organization' }).url, {
        svcUrl: on.url,
        redirectUri: CALLBACK,
        consent: 'allow',
      });
      expect(again.callback.searchParams.get('code')).toBeTruthy();
    } finally {
      await database.sql`delete from third_party_access where tenant_id = ${workspace.id}`;
    }
  });

  it('refuses metadata svc does not take with 400 invalid_redirect_uri or invalid_client_metadata, never a 500', async () => {
    const base = { redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' };
    const cases: [string, unknown, string][] = [
      ['javascript: redirect', { ...base, redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
      ['fragment', { ...base, redirect_uris: ['https://agent.example/cb#x'] }, 'invalid_redirect_uri'],
      ['wildcard', { ...base, redirect_uris: ['https://*.agent.example/cb'] }, 'invalid_redirect_uri'],
      ['http, not loopback', { ...base, redirect_uris: ['http://agent.example/cb'] }, 'invalid_redirect_uri'],
      ['credentials', { ...base, redirect_uris: ['https://user:pw@agent.example/cb'] }, 'invalid_redirect_uri'],
      ['on svc itself', { ...base, redirect_uris: [`${on.services.config.publicUrl}/oidc/try/callback`] }, 'invalid_redirect_uri'],
      ['no redirect_uris', { token_endpoint_auth_method: 'none' }, 'invalid_redirect_uri'],
      ['client_credentials', { ...base, grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
      ['unknown grant', { ...base, grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] }, 'invalid_client_metadata'],
      ['implicit', { ...base, response_types: ['id_token'] }, 'invalid_client_metadata'],
      ['private_key_jwt', { ...base, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
      ['members-only (first-party) policy', { ...base, svc_members_of: workspace.id }, 'invalid_client_metadata'],
      ['browser origins', { ...base, svc_allowed_origins: ['https://evil.example'] }, 'invalid_client_metadata'],
      ['an application id', { ...base, client_id: 'app_00000000000000000000' }, 'invalid_client_metadata'],
      ['keys', { ...base, jwks_uri: 'https://agent.example/jwks' }, 'invalid_client_metadata'],
      // oidc-provider's own check of the body, before any metadata is read.
      ['not an object', [base], 'invalid_request'],
      ['oversized', { ...base, client_name: 'x'.repeat(8 * 1024) }, 'invalid_client_metadata'],
    ];
    for (const [label, body, error] of cases) {
      const refused = await register(body);
      expect(refused.status, label).toBe(400);
      expect(refused.body.error, label).toBe(error);
    }
    const [row] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from oidc_payloads where model = 'Client' and payload->>'svc_members_of' is not null`;
    expect(row?.n).toBe(0);
  });

  it('the cleanup job deletes a registered client no token was issued to for the set days, and keeps one that was used', async () => {
    const used = (await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' })).body as Registered;
    const unused = (await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' })).body as Registered;
    const fresh = (await register({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' })).body as Registered;
    const longAgo = Math.floor(Date.now() / 1000) - 40 * 86_400;
    await database.sql`update oidc_payloads set payload = jsonb_set(payload, '{client_id_issued_at}', ${longAgo}::text::jsonb)
      where model = 'Client' and id in (${used.client_id}, ${unused.client_id})`;
    await database.sql`update oidc_payloads set last_used_at = now() - interval '2 days' where model = 'Client' and id = ${used.client_id}`;
    const logs: unknown[] = [];
    const ctx = {
      db: database.db,
      logger: { info: (o: unknown) => logs.push(o), debug: () => {}, warn: () => {}, error: () => {} },
      oidc: { issuer: on.services.config.publicUrl, registeredClientUnusedDays: 30 },
    } as unknown as JobContext;
    await pruneRegisteredClients({}, ctx);
    const left = await database.sql<{ id: string }[]>`
      select id from oidc_payloads where model = 'Client' and id in (${used.client_id}, ${unused.client_id}, ${fresh.client_id})`;
    expect(left.map((r) => r.id).sort()).toEqual([used.client_id, fresh.client_id].sort());
    // Gone is gone: an authorization naming it gets svc's error page, never a redirect.
    const res = await fetch(authorizationUrl(unused.client_id, { scope: 'openid' }).url, { redirect: 'manual' });
    expect(res.status).toBe(400);
  });

  it('platform admins see the registered clients (never a secret); nobody else does', async () => {
    const registered = (
      await register({
        client_name: 'Listed agent',
        client_uri: 'https://agent.example',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'client_secret_post',
      })
    ).body as Registered;
    const admin = await seedSignedIn(database.db, { platformAdmin: true });
    const res = await fetch(`${on.url}/v1/platform/registered-clients`, { headers: { cookie: admin.cookie } });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const list = JSON.parse(text) as TRegisteredClientList;
    expect(list).toMatchObject({ registrationEnabled: true, unusedDays: 30 });
    const listed = list.data.find((c) => c.id === registered.client_id);
    expect(listed).toEqual({
      id: registered.client_id,
      name: 'Listed agent',
      clientUri: 'https://agent.example',
      redirectUris: [CALLBACK],
      tokenEndpointAuthMethod: 'client_secret_post',
      registeredAt: expect.any(String),
      lastUsedAt: null,
      deletedAfter: expect.any(String),
    });
    expect(Date.parse(listed?.deletedAfter ?? '') - Date.parse(listed?.registeredAt ?? '')).toBe(30 * 86_400_000);
    expect(text).not.toContain(registered.client_secret as string);
    expect(text).not.toContain(sha256Hex(registered.client_secret as string));
    // An organization's admin is no platform admin.
    const orgAdmin = await seedSignedIn(database.db);
    expect((await fetch(`${on.url}/v1/platform/registered-clients`, { headers: { cookie: orgAdmin.cookie } })).status).toBe(403);
    expect((await fetch(`${on.url}/v1/platform/registered-clients`)).status).toBe(401);
  });

  it('rate limited per address: past the limit 429 rate_limited with Retry-After', async () => {
    let refused: Response | undefined;
    for (let i = 0; i < REGISTRATIONS_PER_MINUTE + 1 && !refused; i++) {
      const res = await fetch(`${on.url}/oidc/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' }),
      });
      if (res.status === 429) {
        refused = res;
      } else {
        expect(res.status).toBe(201);
        await res.body?.cancel();
      }
    }
    if (!refused) {
      throw new Error(`no 429 after ${REGISTRATIONS_PER_MINUTE + 1} registrations`);
    }
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
  });
});
