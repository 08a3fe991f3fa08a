import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newId } from '@svc/contracts/ids';
import { SVC_USAGE_EVENT_TYPES } from '@svc/contracts/usage';
import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startMetadataDocumentServer } from '../../../../../test/support/metadata-document-server.ts';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import type { RunningServer } from '../../server.ts';
import { MCP_PERMISSIONS } from './resource.ts';
import { MCP_TOOLS } from './tools.ts';

const CALLBACK = 'http://127.0.0.1:53199/callback';

type ToolAnswer = { isError: boolean; body: Record<string, unknown> & { error?: { code: string; message: string; upgradeUrl?: string } } };

/**
 * svc's own control plane as an MCP server (docs/oidc.md "svc's MCP server"): an agent the person
 * consented to calls tools with the MCP TypeScript SDK's client; each tool runs its REST route's
 * procedure as the agent, so it needs the route's permission, never more than the person holds
 * now; every call is audited with the agent's client id and metered as the organization's usage.
 */
describe("svc's MCP server (/mcp)", () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let docs: Awaited<ReturnType<typeof startMetadataDocumentServer>>;
  let agent: string;
  let mcpUrl: string;
  /** The person's own workspace, where they are org_admin. */
  let own: { id: string; slug: string };
  /** Another organization, where the person is an org_member. */
  let memberOf: { id: string; slug: string };

  beforeAll(async () => {
    server = await startTestServer({
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        RATE_LIMIT_SIGNIN_PER_MINUTE: '1000',
        SUBSCRIPTION_UPGRADE_URL: 'https://billing.example/{organizationId}',
      },
    });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-mcp' });
    docs = await startMetadataDocumentServer();
    docs.route('/agent', { document: { client_name: 'Coding agent', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' } });
    agent = docs.url('/agent');
    mcpUrl = `${server.services.config.publicUrl}/mcp`;
    // The person's first sign-in (through an application) creates them and their own workspace.
    const app = await seedApplication(database.db, { clientType: 'public', redirectUrls: [CALLBACK] });
    await browseToRedirect(new CookieJar(), authorizationUrl({ clientId: app.application.id, scope: 'openid', organization: null }).url, {
      svcUrl: server.url,
      redirectUri: CALLBACK,
    });
    const [workspace] = await database.sql<{ id: string; slug: string }[]>`
      select o.id, o.slug from memberships m join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
      where u.email = 'user@svc.local' and m.role_key = 'org_admin'`;
    own = workspace as { id: string; slug: string };
    const other = await seedOrganization(database.db);
    memberOf = { id: other.id, slug: other.slug };
    await database.sql`insert into memberships (tenant_id, user_id, role_key)
      select ${other.id}, id, 'org_member' from users where email = 'user@svc.local'`;
  });

  afterAll(async () => {
    await docs?.close();
    await database?.close();
    await server?.close();
  });

  function authorizationUrl(opts: { clientId?: string; scope: string; resource?: string; organization?: string | null }) {
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      client_id: opts.clientId ?? agent,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: opts.scope,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    if (opts.resource) {
      params.set('resource', opts.resource);
    }
    if (opts.organization) {
      params.set('organization', opts.organization);
    }
    return { url: `${server.url}/oidc/auth?${params}`, verifier };
  }

  /** The agent's token for svc's MCP server, after the person allowed `scope` in `organization`. */
  async function agentToken(scope: readonly string[], organization: string): Promise<string> {
    const { url, verifier } = authorizationUrl({ scope: scope.join(' '), resource: mcpUrl, organization });
    const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: server.url, redirectUri: CALLBACK, consent: 'allow' });
    const code = browsed.callback.searchParams.get('code');
    expect(code, browsed.callback.href).toBeTruthy();
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code as string,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
        client_id: agent,
        resource: mcpUrl,
      }),
    });
    const body = (await res.json()) as { access_token?: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.access_token as string;
  }

  /** The MCP SDK's client, connected to svc's /mcp with the token. */
  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    return client;
  }

  async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
    const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { type: string; text: string }[] };
    return { isError: result.isError === true, body: JSON.parse(result.content[0]?.text ?? 'null') };
  }

  const ARGS: Record<string, Record<string, unknown>> = {
    invite_member: { email: 'someone@acme.test' },
    create_application: { name: 'From the agent' },
    retry_webhook_delivery: { id: 'whd_00000000000000000000' },
  };

  it('an org admin’s agent lists the tools, adds bob@acme.test as a member, and every call is in the audit log with its client id', async () => {
    const token = await agentToken(MCP_PERMISSIONS, own.slug);
    const claims = decodeJwt(token);
    expect(claims.aud).toBe(mcpUrl);
    expect(claims.org_id).toBe(own.id);
    expect(String(claims.scope).split(' ').sort()).toEqual([...MCP_PERMISSIONS].sort());
    const client = await connect(token);
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS.map((t) => t.name).sort());

    const invited = await call(client, 'invite_member', { email: 'bob@acme.test' });
    expect(invited.isError, JSON.stringify(invited.body)).toBe(false);
    expect(invited.body).toMatchObject({ invitation: { email: 'bob@acme.test', roleKey: 'org_member' } });
    const [row] = await database.sql<
      { email: string }[]
    >`select email from invitations where tenant_id = ${own.id} and email = 'bob@acme.test'`;
    expect(row?.email).toBe('bob@acme.test');

    const members = await call(client, 'list_members');
    expect(members.isError).toBe(false);
    expect(JSON.stringify(members.body)).toContain('user@svc.local');
    expect((await call(client, 'read_usage')).body).toMatchObject({ organization: { id: own.id } });
    expect((await call(client, 'list_failed_webhook_deliveries')).body).toMatchObject({ data: [] });
    // Another organization's delivery, or none: 404, as on the REST route.
    expect((await call(client, 'retry_webhook_delivery', ARGS.retry_webhook_delivery)).body.error?.code).toBe('not_found');
    const created = await call(client, 'create_application', ARGS.create_application);
    expect(created.isError, JSON.stringify(created.body)).toBe(false);
    const log = await call(client, 'read_audit_log', { action: 'mcp.*' });
    expect(log.isError, JSON.stringify(log.body)).toBe(false);

    // Every call, each with the agent's client id; the invitation's own entry names the agent too.
    const entries = await database.sql<
      { action: string; target_id: string; summary: Record<string, unknown>; actor_id: string; actor_label: string }[]
    >`
      select action, target_id, summary, actor_id, actor_label from audit_logs where tenant_id = ${own.id} order by created_at`;
    const calls = entries.filter((e) => e.action === 'mcp.tool_called');
    expect(calls.map((e) => e.target_id)).toEqual([
      'invite_member',
      'list_members',
      'read_usage',
      'list_failed_webhook_deliveries',
      'retry_webhook_delivery',
      'create_application',
      'read_audit_log',
    ]);
    for (const e of calls) {
      expect(e.summary).toMatchObject({ clientId: agent, grantId: claims.grant_id });
    }
    expect(calls.find((e) => e.target_id === 'retry_webhook_delivery')?.summary.outcome).toBe('not_found');
    const invitation = entries.find((e) => e.action === 'invitation.created');
    expect(invitation?.actor_label).toBe(`agent ${agent}`);
    expect(invitation?.actor_id).toBe(claims.sub);
    await client.close();
  });

  it('each tool is refused without its permission, exactly as its REST route', async () => {
    for (const tool of MCP_TOOLS) {
      const token = await agentToken(
        MCP_PERMISSIONS.filter((p) => p !== tool.permission),
        own.slug,
      );
      const client = await connect(token);
      const answer = await call(client, tool.name, ARGS[tool.name] ?? {});
      expect(answer.isError, tool.name).toBe(true);
      expect(answer.body.error?.code, tool.name).toBe('forbidden');
      await client.close();
    }
  });

  it('a member without the permission cannot invite through the agent: not granted at consent, and a demotion after consent bounds the token', async () => {
    // As an org_member the person cannot grant invitations.manage: the token carries none.
    const asMember = await agentToken(['members.read', 'invitations.manage'], memberOf.slug);
    expect(String(decodeJwt(asMember).scope).split(' ')).toEqual(['members.read']);
    const client = await connect(asMember);
    expect((await call(client, 'invite_member', { email: 'eve@acme.test' })).body.error?.code).toBe('forbidden');
    expect((await call(client, 'list_members')).isError).toBe(false);
    await client.close();

    // Granted while an admin of another organization, then demoted: refused from the next call.
    const org = await seedOrganization(database.db);
    await database.sql`insert into memberships (tenant_id, user_id, role_key)
      select ${org.id}, id, 'org_admin' from users where email = 'user@svc.local'`;
    const asAdmin = await agentToken(['invitations.manage'], org.slug);
    expect(decodeJwt(asAdmin).scope).toBe('invitations.manage');
    await database.sql`update memberships set role_key = 'org_member' where tenant_id = ${org.id}`;
    const demoted = await connect(asAdmin);
    expect((await call(demoted, 'invite_member', { email: 'eve@acme.test' })).body.error?.code).toBe('forbidden');
    await demoted.close();
    expect((await database.sql`select 1 from invitations where email = 'eve@acme.test'`).length).toBe(0);
  });

  it('refuses what is not a token for it: none, another API’s, a first-party application’s request, a revoked grant', async () => {
    const none = await fetch(mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(none.status).toBe(401);
    const challenge = none.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain(`resource_metadata="${server.services.config.publicUrl}/.well-known/oauth-protected-resource/mcp"`);
    const prm = await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`);
    expect(await prm.json()).toMatchObject({ resource: mcpUrl, authorization_servers: [server.services.config.publicUrl] });

    // A token for svc itself (no resource) is not one for its MCP server.
    const { url, verifier } = authorizationUrl({ scope: 'openid', organization: own.slug });
    const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: server.url, redirectUri: CALLBACK, consent: 'allow' });
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: browsed.callback.searchParams.get('code') as string,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
        client_id: agent,
      }),
    });
    const other = ((await res.json()) as { access_token: string }).access_token;
    const refused = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${other}`, accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(refused.status).toBe(401);

    // An application (first-party: no consent) may not ask for svc's MCP server at all.
    const app = await seedApplication(database.db, { clientType: 'public', redirectUrls: [CALLBACK] });
    const firstParty = authorizationUrl({
      clientId: app.application.id,
      scope: 'openid members.read',
      resource: mcpUrl,
      organization: null,
    });
    const denied = await browseToRedirect(new CookieJar(), firstParty.url, { svcUrl: server.url, redirectUri: CALLBACK });
    expect(denied.callback.searchParams.get('error')).toBe('invalid_target');

    // Revoked on Connected apps: the next call is refused, before the access token expires.
    const token = await agentToken(['members.read'], own.slug);
    const client = await connect(token);
    expect((await call(client, 'list_members')).isError).toBe(false);
    const admin = await seedSignedIn(server.services.db, { organization: { ...(await orgRow(own.id)) }, roleKey: 'org_admin' });
    const revoked = await fetch(`${server.url}/v1/connected-apps/${decodeJwt(token).grant_id}?organization_slug=${own.slug}`, {
      method: 'DELETE',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
    });
    expect(revoked.status).toBe(200);
    await expect(call(client, 'list_members')).rejects.toThrow();
    await client.close().catch(() => {});
  });

  async function orgRow(id: string) {
    const { findOrganizationById } = await import('@svc/db/queries/organizations');
    const row = await findOrganizationById(database.db, id);
    if (!row) {
      throw new Error('no such organization');
    }
    return row;
  }

  it('tool calls and agent tokens are usage of the organization; a plan limiting tool calls answers the 402 with its upgrade URL', async () => {
    const org = await seedOrganization(database.db);
    await database.sql`insert into memberships (tenant_id, user_id, role_key)
      select ${org.id}, id, 'org_admin' from users where email = 'user@svc.local'`;
    const token = await agentToken(['members.read'], org.slug);
    const client = await connect(token);
    expect((await call(client, 'list_members')).isError).toBe(false);
    const counted = async (type: string) => {
      const [row] = await database.sql<{ quantity: number }[]>`
        select coalesce(sum(quantity), 0)::int as quantity from usage_events where tenant_id = ${org.id} and event_type = ${type}`;
      return row?.quantity;
    };
    await expect.poll(() => counted(SVC_USAGE_EVENT_TYPES.mcpToolCall)).toBe(1);
    await expect.poll(() => counted(SVC_USAGE_EVENT_TYPES.agentToken)).toBe(1);

    const planId = newId('subscriptionPlan');
    await database.sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits)
      values (${planId}, ${planId.toLowerCase()}, 'Two calls', 10, ${JSON.stringify({ [SVC_USAGE_EVENT_TYPES.mcpToolCall]: 2 })}::jsonb)`;
    await database.sql`update subscriptions set plan_id = ${planId} where tenant_id = ${org.id}`;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call(client, 'list_members')).isError).toBe(false);
    const over = await call(client, 'list_members');
    expect(over.isError).toBe(true);
    expect(over.body.error).toMatchObject({ code: 'subscription_limit_exceeded', upgradeUrl: `https://billing.example/${org.id}` });
    expect(await counted(SVC_USAGE_EVENT_TYPES.mcpToolCall)).toBe(2);
    await client.close();

    // A plan limiting agents' tokens: the token endpoint answers 402 at the limit.
    await database.sql`update subscription_plans set usage_limits = ${JSON.stringify({ [SVC_USAGE_EVENT_TYPES.agentToken]: 1 })}::jsonb
      where id = ${planId}`;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { url, verifier } = authorizationUrl({ scope: 'members.read', resource: mcpUrl, organization: org.slug });
    const browsed = await browseToRedirect(new CookieJar(), url, { svcUrl: server.url, redirectUri: CALLBACK, consent: 'allow' });
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: browsed.callback.searchParams.get('code') as string,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
        client_id: agent,
        resource: mcpUrl,
      }),
    });
    expect(res.status).toBe(402);
    // An OAuth error answer (error, error_description) that also carries svc's 402 fields.
    expect(await res.json()).toEqual({
      error: 'subscription_limit_exceeded',
      error_description: expect.any(String),
      kind: 'usage',
      limit: SVC_USAGE_EVENT_TYPES.agentToken,
      max: 1,
      used: 1,
      requested: 1,
      periodEnd: expect.any(String),
      plan: planId.toLowerCase(),
      upgradeUrl: `https://billing.example/${org.id}`,
    });
  });

  it('hostile input: a body that is not JSON, input the route refuses, another organization named: never a 500, never another organization', async () => {
    const token = await agentToken(MCP_PERMISSIONS, own.slug);
    const garbage = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":',
    });
    expect(garbage.status).toBe(400);
    const client = await connect(token);
    const bad = await call(client, 'invite_member', { email: 'not an email', roleKey: 'NO SUCH ROLE' });
    expect(bad.body.error?.code).toBe('validation_failed');
    // A slug smuggled into the arguments or the URL is not the organization the tool acts on.
    const smuggled = await call(client, 'read_usage', { organization_slug: memberOf.slug });
    expect(smuggled.body).toMatchObject({ organization: { id: own.id } });
    await client.close();
    const viaUrl = new Client({ name: 'agent', version: '1.0.0' });
    await viaUrl.connect(
      new StreamableHTTPClientTransport(new URL(`${mcpUrl}?organization_slug=${memberOf.slug}`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    expect((await call(viaUrl, 'read_usage')).body).toMatchObject({ organization: { id: own.id } });
    await viaUrl.close();
  });

  it('Connected apps shows when each grant was last used', async () => {
    const token = await agentToken(['members.read'], own.slug);
    const client = await connect(token);
    await call(client, 'list_members');
    await client.close();
    const admin = await seedSignedIn(server.services.db, { organization: await orgRow(own.id), roleKey: 'org_admin' });
    await expect
      .poll(async () => {
        const listed = await fetch(`${server.url}/v1/connected-apps?organization_slug=${own.slug}`, { headers: { cookie: admin.cookie } });
        const apps = ((await listed.json()) as { data: { id: string; lastUsedAt: string | null }[] }).data;
        return apps.find((a) => a.id === decodeJwt(token).grant_id)?.lastUsedAt ?? null;
      })
      .not.toBeNull();
  });
});
