import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createDatabase, type Database } from '@svc/db/client';
import { type Caller, createResourceServer, protectedResourceMetadata, requireToken } from '@svc/resource-server';
import express from 'express';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { memoryAgent } from '../test/support/mcp-agent.ts';
import { startMetadataDocumentServer } from '../test/support/metadata-document-server.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, passwordSignIn } from './support/sign-in.ts';

/**
 * An agent (the MCP TypeScript SDK's own OAuth client, nobody here wrote it) reaches an MCP server
 * protected by @svc/resource-server: the 401 leads it to the Protected Resource Metadata, to svc's
 * authorization server metadata, where it finds client_id_metadata_document_supported and
 * identifies itself by its metadata document's URL. The person signs in on svc in Chromium, sees
 * the consent page (the agent's host, their organization, the permission in words), allows; the
 * SDK redeems the code with PKCE and the tool call succeeds with the person's permission on that
 * server only (docs/resource-server.md, "How an MCP client reaches the consent page").
 */
describeInChromium('e2e: an MCP client identified by a metadata document gets the person’s consent', () => {
  let server: E2EServer;
  let database: Database;
  let browser: Browser;
  let context: BrowserContext;
  let docs: Awaited<ReturnType<typeof startMetadataDocumentServer>>;
  const sites: http.Server[] = [];
  let mcpUrl: string;
  let callbackUrl: string;
  /** The code (or error) the browser brought back to the agent's loopback callback. */
  let arrived: (query: URLSearchParams) => void = () => {};

  async function listen(site: http.RequestListener): Promise<string> {
    const listening = http.createServer(site);
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', () => resolve()));
    sites.push(listening);
    return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    // The agent's metadata document is on loopback (https, self-signed): allowed as for webhook receivers in tests.
    server = await startServer({ databaseUrl, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-e2e-mcp-consent' });

    // The MCP server: its `whoami` tool answers who calls, with which permissions.
    const site = express();
    const origin = await listen(site);
    mcpUrl = `${origin}/mcp`;
    const rs = createResourceServer({ issuer: server.url, resource: mcpUrl, resourceName: 'Notes', scopesSupported: ['notes.read'] });
    site.get(rs.metadataPath, protectedResourceMetadata(rs));
    site.post('/mcp', express.json(), requireToken(rs, { permissions: ['notes.read'] }), async (req, res) => {
      const caller = (req as unknown as { svc: Caller }).svc;
      const mcp = new McpServer({ name: 'notes', version: '1.0.0' });
      mcp.registerTool('whoami', { description: 'Who is calling' }, async () => ({
        content: [
          {
            type: 'text',
            text: JSON.stringify({ clientId: caller.clientId, organizationId: caller.organizationId, permissions: caller.permissions }),
          },
        ],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, req.body);
    });
    // It is an API resource of the product; org_admin (the person's role in their own workspace) holds notes.read.
    await database.sql`insert into api_resources (id, identifier, name) values ('res_notesmcpnotesmcpno', ${mcpUrl}, 'Notes')`;
    await database.sql`insert into api_permissions (id, resource_id, name, description)
      values ('prm_notesreadnotesread', 'res_notesmcpnotesmcpno', 'notes.read', 'Read your notes')`;
    await database.sql`update product_roles set permissions = '{notes.read}' where key = 'org_admin'`;

    // The agent's loopback callback, and its metadata document.
    callbackUrl = `${await listen((req, res) => {
      arrived(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Agent</title><p>You can close this window.</p>');
    })}/callback`;
    docs = await startMetadataDocumentServer();
    docs.route('/agent.json', {
      document: {
        client_name: 'Notes agent',
        client_uri: 'https://agent.example',
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
    for (const site of sites) {
      site.closeAllConnections();
      await new Promise<void>((resolve) => site.close(() => resolve()));
    }
    await database?.close();
    await server?.stop();
  });

  it('401 -> metadata -> svc -> sign-in -> consent in Chromium -> code with PKCE -> the tool call succeeds', async () => {
    // What an agent keeps: the SDK calls these (in memory here).
    const metadata: OAuthClientMetadata = {
      client_name: 'Notes agent',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    const agent = memoryAgent({ redirectUrl: callbackUrl, clientMetadata: metadata, clientMetadataUrl: docs.url('/agent.json') });
    const provider = agent.provider;

    // The agent connects: the 401 sends the SDK through discovery to a redirect to svc.
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await expect(new Client({ name: 'agent', version: '1.0.0' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(agent.information()?.client_id).toBe(docs.url('/agent.json'));
    const url = agent.authorizationUrl() as URL;
    expect(url.origin).toBe(server.url);
    expect(url.searchParams.get('client_id')).toBe(docs.url('/agent.json'));
    expect(url.searchParams.get('resource')).toBe(mcpUrl);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');

    // The person, in Chromium: svc's sign-in, then the consent page.
    const back = new Promise<URLSearchParams>((resolve) => {
      arrived = resolve;
    });
    const page = await context.newPage();
    const scripts: string[] = [];
    page.on('console', (message) => scripts.push(message.text()));
    await page.goto(url.href);
    // svc's hosted sign-in, on the authorization's interaction, named for the agent.
    await page.waitForURL((u) => u.origin === server.url && u.pathname.startsWith('/oidc/interaction/'));
    // Its name is whatever its document says: its host is named beside it.
    expect(await page.getByTestId('hosted-heading').textContent()).toBe(`Sign in to Notes agent (${new URL(docs.origin).host})`);
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL((u) => u.origin === server.url && u.pathname.startsWith('/oidc/interaction/'));
    await page.getByTestId('consent-allow').waitFor();
    expect(await page.getByTestId('hosted-heading').textContent()).toBe('Allow Notes agent to act for you?');
    expect(await page.getByTestId('consent-client-host').textContent()).toBe(new URL(docs.origin).host);
    const [organization] = await database.sql<{ id: string; name: string }[]>`
      select o.id, o.name from memberships m join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
      where u.email = ${DEMO_USER.email} and o.kind = 'tenant'`;
    expect(await page.getByTestId('consent-organization').textContent()).toBe(organization?.name);
    expect(await page.getByTestId('consent-permission').textContent()).toContain('Read your notes');
    expect(await page.locator('script').count()).toBe(0);
    await saveScreenshot(page, 'mcp-agent-consent');
    await page.getByTestId('consent-allow').click();
    const query = await back;
    await page.waitForURL((u) => u.href.startsWith(callbackUrl));
    expect(query.get('error')).toBeNull();
    const code = query.get('code') as string;
    expect(code).toBeTruthy();
    // Chrome refused nothing on the way (CSP form-action lets the consent's redirect reach the agent).
    expect(scripts.filter((t) => /Content Security Policy/i.test(t))).toEqual([]);

    // The SDK redeems the code (PKCE, public client) and calls the tool.
    expect(await auth(provider, { serverUrl: mcpUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
    expect(JSON.parse(result.content[0]?.text ?? '{}')).toEqual({
      clientId: docs.url('/agent.json'),
      organizationId: organization?.id,
      permissions: ['notes.read'],
    });
    await client.close();
    await page.close();
  });
});
