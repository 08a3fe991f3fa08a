import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createDatabase, type Database } from '@svc/db/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { memoryAgent } from '../test/support/mcp-agent.ts';
import { browseToRedirect, CookieJar } from '../test/support/oidc-browser.ts';
import { followPrompt, type RunningApp, startApp, tokensFor } from './support/follow-prompt.ts';
import { readEnvFile } from './support/prompt-app.ts';
import { type E2EServer, startServer } from './support/server.ts';

const ORIGIN = 'http://localhost:3000';
const MCP = `${ORIGIN}/mcp`;
/** Where the test's MCP client receives its code (the client is registered by dynamic registration). */
const CALLBACK = 'http://127.0.0.1:53411/callback';

/**
 * The mcp agent context followed word for word (docs/api.md "Setup context for coding agents"): its
 * commands run and its files written in an empty folder, its server started; then the MCP
 * TypeScript SDK's client finds svc through the server's 401 and Protected Resource Metadata,
 * registers itself (dynamic client registration, on here), the person allows it on svc's consent
 * page, and the tool answers with what svc's token says. No browser: the person's sign-in and
 * consent go through svc's pages over HTTP.
 */
describe('e2e: the mcp agent context, followed literally', () => {
  let server: E2EServer;
  let database: Database;
  let app: RunningApp | undefined;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-server-'));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME } as NodeJS.ProcessEnv;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    server = await startServer({ databaseUrl, env: { OIDC_DYNAMIC_REGISTRATION: 'on' } });
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-e2e-prompt-mcp' });
    // The MCP server registered in svc as the catalog's API resource, its permission granted to org admins.
    await database.sql`insert into api_resources (id, identifier, name) values ('res_e2emcpresource000001', ${MCP}, 'Notes MCP')`;
    await database.sql`insert into api_permissions (id, resource_id, name, description)
      values ('prm_e2emcppermission0001', 'res_e2emcpresource000001', 'notes.read', 'Read your notes')`;
    await database.sql`update product_roles set permissions = '{notes.read}'::text[] where key = 'org_admin'`;
  });

  afterAll(async () => {
    await app?.stop();
    await database?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  it('builds the MCP server from the served prompt with no edits, and it starts on port 3000', { timeout: 300_000 }, async () => {
    const res = await fetch(`${server.url}/v1/setup/agent-context?keyless=1&framework=mcp`);
    expect(res.status).toBe(200);
    const context = (await res.json()) as {
      aiAgentPrompt: string;
      permissionCheck: { permission: string; source: string; resource: { identifier: string } | null };
    };
    expect(context.permissionCheck).toMatchObject({ permission: 'notes.read', source: 'catalog', resource: { identifier: MCP } });
    expect(context.aiAgentPrompt).toContain('This MCP server is already registered in svc');
    const followed = followPrompt(context.aiAgentPrompt, dir, { env });
    expect(followed.steps.map((s) => (s.kind === 'file' ? `file ${s.path}` : s.section))).toEqual([
      'Install',
      'Environment',
      'file server.mjs',
      'Run',
    ]);
    const dotenv = readEnvFile(path.join(dir, '.env'));
    expect(dotenv.get('SVC_ISSUER')).toBe(server.url);
    expect(dotenv.get('MCP_RESOURCE')).toBe(MCP);
    app = await startApp(followed.run, dir, ORIGIN, { env, timeoutMs: 120_000 });
  });

  it('without a token: 401 naming its Protected Resource Metadata, which names svc', async () => {
    expect(app, 'the server runs').toBeDefined();
    const refused = await fetch(MCP, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(refused.status).toBe(401);
    const metadataUrl = `${ORIGIN}/.well-known/oauth-protected-resource/mcp`;
    expect(refused.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    expect(await (await fetch(metadataUrl)).json()).toEqual({
      resource: MCP,
      authorization_servers: [server.url],
      scopes_supported: ['notes.read'],
      bearer_methods_supported: ['header'],
    });
  });

  it("an agent (the MCP SDK's client) registers, the person consents, and the tool answers what svc's token says; other tokens get 401", async () => {
    expect(app, 'the server runs').toBeDefined();
    const agent = memoryAgent({
      redirectUrl: CALLBACK,
      clientMetadata: { client_name: 'Notes agent', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' },
    });
    const provider = agent.provider;
    await expect(
      new Client({ name: 'agent', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(new URL(MCP), { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    const url = agent.authorizationUrl() as URL;
    expect(url.origin).toBe(server.url);
    expect(url.searchParams.get('resource')).toBe(MCP);
    const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: server.url, redirectUri: CALLBACK, consent: 'allow' });
    expect(browsed.steps).toContain('consent');
    expect(await auth(provider, { serverUrl: MCP, authorizationCode: browsed.callback.searchParams.get('code') as string })).toBe(
      'AUTHORIZED',
    );
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(MCP), { authProvider: provider }));
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
    const [member] = await database.sql<{ user_id: string; tenant_id: string; slug: string }[]>`
      select m.user_id, m.tenant_id, o.slug from memberships m join organizations o on o.id = m.tenant_id
      join users u on u.id = m.user_id where u.email = 'user@svc.local' and o.kind = 'tenant'`;
    expect(JSON.parse(result.content[0]?.text ?? '{}')).toEqual({
      sub: member?.user_id,
      org_id: member?.tenant_id,
      org_slug: member?.slug,
      client_id: agent.information()?.client_id,
      permissions: ['notes.read'],
    });
    await client.close();

    // svc's token for an application (its own audience) is no token for this server.
    const keyless = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as { oidc: { clientId: string } };
    const { accessToken, idToken } = await tokensFor(server.url, keyless.oidc.clientId);
    for (const [label, token] of [
      ['an application access token', accessToken],
      ['an ID token', idToken],
      ['garbage', 'abc.def.ghi'],
    ] as const) {
      const res = await fetch(MCP, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: '{}',
      });
      expect(res.status, label).toBe(401);
      expect(res.headers.get('www-authenticate'), label).toContain('error="invalid_token"');
    }
  });
});
