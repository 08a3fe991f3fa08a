import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { discoverAuthorizationServerMetadata, discoverOAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RunningServer } from '@svc/api/server';
import { createDatabase, type Database } from '@svc/db/client';
import express from 'express';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../test/support/factories.ts';
import { startTestServer } from '../../../test/support/server.ts';
import {
  type Caller,
  createResourceServer,
  protectedResourceMetadata,
  protectedResourceMetadataUrl,
  type ResourceAuthError,
  type ResourceServer,
  requireToken,
} from './index.ts';

/**
 * @svc/resource-server against a real svc and the MCP TypeScript SDK (nobody here wrote it): two
 * MCP servers, each an API resource of the product, protected by the package. The SDK's client
 * follows the 401 to the Protected Resource Metadata, to svc's authorization server metadata,
 * gets a machine client's token for that server (client credentials, RFC 8707 resource) and
 * calls a tool; the same token is refused by the other server.
 */
describe('@svc/resource-server: an MCP server protected by svc', () => {
  let svc: RunningServer & { databaseUrl: string };
  let database: Database;
  const sites: http.Server[] = [];
  let notes: { url: string; rs: ResourceServer };
  let tasks: { url: string; rs: ResourceServer };
  let machine: { clientId: string; secret: string; organizationId: string };

  /** An MCP server at `<origin>/mcp` (stateless streamable HTTP) whose `whoami` tool answers the caller. */
  async function mcpServer(name: string, permissions: string[]): Promise<{ url: string; rs: ResourceServer }> {
    const site = express();
    const listening = http.createServer(site);
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', () => resolve()));
    sites.push(listening);
    const url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/mcp`;
    const rs = createResourceServer({ issuer: svc.url, resource: url, resourceName: name, scopesSupported: permissions });
    site.get(rs.metadataPath, protectedResourceMetadata(rs));
    site.post('/mcp', express.json(), requireToken(rs), async (req, res) => {
      const caller = (req as unknown as { svc: Caller }).svc;
      const server = new McpServer({ name, version: '1.0.0' });
      server.registerTool('whoami', { description: 'Who is calling' }, async () => ({
        content: [{ type: 'text', text: JSON.stringify({ organizationId: caller.organizationId, permissions: caller.permissions }) }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    });
    const id = `res_${name.padEnd(20, name).slice(0, 20)}`;
    await database.sql`insert into api_resources (id, identifier, name) values (${id}, ${url}, ${name})`;
    for (const [i, permission] of permissions.entries()) {
      await database.sql`insert into api_permissions (id, resource_id, name) values (${`prm_${name}${String(i).padStart(20 - name.length, '0')}`}, ${id}, ${permission})`;
    }
    return { url, rs };
  }

  beforeAll(async () => {
    svc = await startTestServer();
    database = createDatabase({ url: svc.databaseUrl, max: 2, applicationName: 'svc-test-resource-server' });
    notes = await mcpServer('notes', ['notes.read', 'notes.write']);
    tasks = await mcpServer('tasks', ['tasks.read']);
    const created = await seedApplication(database.db, { clientType: 'confidential' });
    await database.sql`
      update applications set client_type = 'machine', redirect_urls = '{}', token_endpoint_auth_method = 'client_secret_basic',
        machine_permissions = ${['notes.read', 'tasks.read']}
      where id = ${created.application.id}`;
    machine = { clientId: created.application.id, secret: created.secretKey, organizationId: created.application.tenantId };
  });

  afterAll(async () => {
    for (const site of sites) {
      site.closeAllConnections();
      await new Promise<void>((resolve) => site.close(() => resolve()));
    }
    await database?.close();
    await svc?.close();
  });

  const tokenFor = async (resource: string) => {
    const res = await fetch(`${svc.url}/oidc/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${machine.clientId}:${machine.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  };

  it("the SDK's client follows the 401 to the metadata and to svc, gets a token for this server and calls a tool", async () => {
    const authProvider = new ClientCredentialsProvider({
      clientId: machine.clientId,
      clientSecret: machine.secret,
      expectedIssuer: svc.url,
    });
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(notes.url), { authProvider }));
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
    // The token acts for the machine client's organization, with its permissions on this server only.
    expect(JSON.parse(result.content[0]?.text ?? '{}')).toEqual({ organizationId: machine.organizationId, permissions: ['notes.read'] });
    await client.close();

    // The same token is refused by the other MCP server: it was issued for notes (RFC 8707 audience).
    const token = authProvider.tokens()?.access_token as string;
    const res = await fetch(tasks.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="the token is for another API (audience)", resource_metadata="${tasks.rs.metadataUrl}"`,
    );
  });

  it("the SDK reads the server's Protected Resource Metadata and svc's authorization server metadata as the MCP spec asks", async () => {
    const prm = await discoverOAuthProtectedResourceMetadata(notes.url);
    expect(prm).toMatchObject({
      resource: notes.url,
      authorization_servers: [svc.url],
      scopes_supported: ['notes.read', 'notes.write'],
      bearer_methods_supported: ['header'],
    });
    const as = await discoverAuthorizationServerMetadata(svc.url);
    expect(as).toMatchObject({ issuer: svc.url, code_challenge_methods_supported: ['S256'] });
    expect(as?.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'client_credentials']));
    // RFC 9728 section 3.1: the well-known path goes between the host and the resource's path.
    expect(protectedResourceMetadataUrl('https://mcp.example/mcp')).toBe('https://mcp.example/.well-known/oauth-protected-resource/mcp');
    expect(protectedResourceMetadataUrl('https://api.example')).toBe('https://api.example/.well-known/oauth-protected-resource');
    expect(protectedResourceMetadataUrl('https://api.example/')).toBe('https://api.example/.well-known/oauth-protected-resource');
  });

  it('refuses what is not a token of svc for this server, each with its status and challenge', async () => {
    const refusal = (authorization: string | undefined, required?: string[]) =>
      notes.rs.verify(authorization, required).then(
        () => undefined,
        (error: ResourceAuthError) => ({ status: error.status, code: error.code, header: error.wwwAuthenticate }),
      );
    const metadata = `resource_metadata="${notes.rs.metadataUrl}"`;
    // No credentials: the challenge alone (RFC 6750 section 3.1), so a client knows where to go.
    expect(await refusal(undefined)).toEqual({ status: 401, code: 'invalid_token', header: `Bearer ${metadata}` });
    expect(await refusal('Basic Zm9vOmJhcg==')).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(await refusal('Bearer a b')).toMatchObject({ status: 400, code: 'invalid_request' });

    const own = await tokenFor(notes.url);
    expect(await notes.rs.verify(`Bearer ${own}`, ['notes.read'])).toMatchObject({
      clientId: machine.clientId,
      subject: machine.clientId,
      organizationId: machine.organizationId,
      permissions: ['notes.read'],
    });
    // A permission the token lacks: 403 insufficient_scope naming what was required.
    expect(await refusal(`Bearer ${own}`, ['notes.read', 'notes.write'])).toEqual({
      status: 403,
      code: 'insufficient_scope',
      header: `Bearer error="insufficient_scope", error_description="this token lacks notes.write", ${metadata}, scope="notes.read notes.write"`,
    });
    // A token for the other server, one signed by another key, an unsigned one, one for another issuer.
    expect(await refusal(`Bearer ${await tokenFor(tasks.url)}`)).toMatchObject({ status: 401, code: 'invalid_token' });
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ client_id: machine.clientId, scope: 'notes.read notes.write', org_id: machine.organizationId })
      .setProtectedHeader({
        alg: 'RS256',
        typ: 'at+jwt',
        kid: JSON.parse(Buffer.from(own.split('.')[0] as string, 'base64url').toString()).kid,
      })
      .setIssuer(svc.url)
      .setAudience(notes.url)
      .setSubject(machine.clientId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expect(await refusal(`Bearer ${forged}`)).toMatchObject({ status: 401, header: expect.stringContaining('not signed by svc') });
    const [header, payload] = own.split('.');
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${payload}.`;
    expect(await refusal(`Bearer ${unsigned}`)).toMatchObject({ status: 401, code: 'invalid_token' });
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload as string, 'base64url').toString()), scope: 'notes.read notes.write' })).toString('base64url')}.${own.split('.')[2]}`;
    expect(await refusal(`Bearer ${tampered}`, ['notes.write'])).toMatchObject({ status: 401, code: 'invalid_token' });
    const elsewhere = createResourceServer({ issuer: 'http://127.0.0.1:9/', resource: notes.url });
    await expect(elsewhere.verify(`Bearer ${own}`)).rejects.toMatchObject({ status: 503, code: 'temporarily_unavailable' });
  });
});
