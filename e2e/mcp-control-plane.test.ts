import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createDatabase, type Database } from '@svc/db/client';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { memoryAgent } from '../test/support/mcp-agent.ts';
import { startMetadataDocumentServer } from '../test/support/metadata-document-server.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, passwordSignIn } from './support/sign-in.ts';

/**
 * "Add bob@acme.test as a member": an org admin's coding agent (the MCP TypeScript SDK's client
 * and its OAuth support, nobody here wrote it) connects to svc's own MCP server, follows the 401
 * to its Protected Resource Metadata and to svc, identifies itself by its metadata document, the
 * admin allows it in Chromium on svc's consent page (which words svc's control-plane permissions),
 * and the agent invites bob through the invite_member tool (docs/oidc.md "svc's MCP server").
 */
describeInChromium('e2e: an org admin’s agent adds a member through svc’s MCP server', () => {
  let server: E2EServer;
  let database: Database;
  let browser: Browser;
  let context: BrowserContext;
  let docs: Awaited<ReturnType<typeof startMetadataDocumentServer>>;
  let callbackSite: http.Server;
  let callbackUrl: string;
  let arrived: (query: URLSearchParams) => void = () => {};

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    // The agent's metadata document is on loopback (https, self-signed): allowed as for webhook receivers in tests.
    server = await startServer({ databaseUrl, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-e2e-mcp-control-plane' });
    callbackSite = http.createServer((req, res) => {
      arrived(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Agent</title><p>You can close this window.</p>');
    });
    await new Promise<void>((resolve) => callbackSite.listen(0, '127.0.0.1', () => resolve()));
    callbackUrl = `http://127.0.0.1:${(callbackSite.address() as AddressInfo).port}/callback`;
    docs = await startMetadataDocumentServer();
    docs.route('/coding-agent.json', {
      document: {
        client_name: 'Coding agent',
        redirect_uris: [callbackUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
    });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(20_000);
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await docs?.close();
    callbackSite?.closeAllConnections();
    await new Promise<void>((resolve) => (callbackSite ? callbackSite.close(() => resolve()) : resolve()));
    await database?.close();
    await server?.stop();
  });

  it('401 -> PRM -> svc -> consent in Chromium -> invite_member adds bob@acme.test, audited with the agent', async () => {
    const mcpUrl = `${server.url}/mcp`;
    const metadata: OAuthClientMetadata = {
      client_name: 'Coding agent',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    const agent = memoryAgent({ redirectUrl: callbackUrl, clientMetadata: metadata, clientMetadataUrl: docs.url('/coding-agent.json') });
    const provider = agent.provider;

    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await expect(new Client({ name: 'coding-agent', version: '1.0.0' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    const url = agent.authorizationUrl() as URL;
    expect(url.origin).toBe(server.url);
    expect(url.searchParams.get('client_id')).toBe(docs.url('/coding-agent.json'));
    expect(url.searchParams.get('resource')).toBe(mcpUrl);
    // The SDK asks for what svc's Protected Resource Metadata advertises.
    expect(url.searchParams.get('scope')?.split(' ')).toContain('invitations.manage');

    const back = new Promise<URLSearchParams>((resolve) => {
      arrived = resolve;
    });
    const page = await context.newPage();
    await page.goto(url.href);
    await page.waitForURL((u) => u.origin === server.url && u.pathname.startsWith('/oidc/interaction/'));
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL((u) => u.origin === server.url && u.pathname.startsWith('/oidc/interaction/'));
    await page.getByTestId('consent-allow').waitFor();
    expect(await page.getByTestId('hosted-heading').textContent()).toBe('Allow Coding agent to act for you?');
    // svc's own permissions, in the catalog's words.
    const words = (await page.getByTestId('consent-permission').allTextContents()).join('\n');
    expect(words).toContain('Create and revoke invitations');
    await saveScreenshot(page, 'mcp-control-plane-consent');
    await page.getByTestId('consent-allow').click();
    const query = await back;
    expect(query.get('error')).toBeNull();
    expect(await auth(provider, { serverUrl: mcpUrl, authorizationCode: query.get('code') as string })).toBe('AUTHORIZED');

    const client = new Client({ name: 'coding-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    const result = (await client.callTool({ name: 'invite_member', arguments: { email: 'bob@acme.test' } })) as {
      isError?: boolean;
      content: { text: string }[];
    };
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    expect(JSON.parse(result.content[0]?.text ?? '{}')).toMatchObject({ invitation: { email: 'bob@acme.test' } });
    await client.close();
    await page.close();

    const [invited] = await database.sql<{ tenant_id: string }[]>`select tenant_id from invitations where email = 'bob@acme.test'`;
    const [admin] = await database.sql<{ role_key: string }[]>`
      select m.role_key from memberships m join users u on u.id = m.user_id where u.email = ${DEMO_USER.email} and m.tenant_id = ${invited?.tenant_id ?? ''}`;
    expect(admin?.role_key).toBe('org_admin');
    const audited = await database.sql<{ action: string; actor_label: string; summary: { clientId?: string } }[]>`
      select action, actor_label, summary from audit_logs where tenant_id = ${invited?.tenant_id ?? ''} and action in ('invitation.created', 'mcp.tool_called')`;
    expect(audited.find((a) => a.action === 'invitation.created')?.actor_label).toBe(`agent ${docs.url('/coding-agent.json')}`);
    expect(audited.find((a) => a.action === 'mcp.tool_called')?.summary.clientId).toBe(docs.url('/coding-agent.json'));
  });
});
