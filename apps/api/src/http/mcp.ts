import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '@svc/contracts/errors';
import { findOrganizationById } from '@svc/db/queries/organizations';
import { createResourceServer, protectedResourceMetadata, ResourceAuthError, sendRefusal } from '@svc/resource-server';
import { getTRPCErrorFromUnknown } from '@trpc/server';
import express, { type Request, type Response, Router } from 'express';
import { createLocalJWKSet, type JWTVerifyGetKey } from 'jose';
import type { AppServices, RequestContext } from '../context.ts';
import { recordAudit, requestMetaOf } from '../modules/access/audit.ts';
import { actAs } from '../modules/access/principal.ts';
import { type AgentPrincipal, agentPrincipal } from '../modules/mcp/agent.ts';
import { controlPlaneResource, MCP_PATH, MCP_PERMISSIONS } from '../modules/mcp/resource.ts';
import { MCP_TOOLS, type McpTool } from '../modules/mcp/tools.ts';
import { callProcedure, compileProcedure, type ProcedureDef } from '../trpc/call.ts';
import { classifyError } from '../trpc/errors.ts';
import { appRouter } from '../trpc/router.ts';
import { MAX_BODY_BYTES } from './edge.ts';
import { errorFields } from './errors.ts';

/**
 * svc's own control plane as an MCP server (docs/oidc.md "svc's MCP server"): `POST /mcp`
 * (streamable HTTP, stateless: one MCP server per request) and its Protected Resource Metadata,
 * with svc as its authorization server. A tool runs its procedure through the procedure runner
 * (trpc/call.ts), exactly as `/v1` does, with the agent (modules/mcp/agent.ts) as the caller, so
 * that the procedure's own `authorize` decides; each call is metered as usage of the organization
 * and written to its audit log with the agent's client id, whatever its outcome.
 */

const TOOL_CALLED = 'mcp.tool_called';

type Compiled = { tool: McpTool; procedure: ReturnType<typeof compileProcedure> };

function compileTools(): Compiled[] {
  const procedures = appRouter._def.procedures as unknown as Record<string, { _def: ProcedureDef } | undefined>;
  return MCP_TOOLS.map((tool) => {
    const found = procedures[tool.procedure];
    if (!found) {
      throw new Error(`MCP tool ${tool.name}: no procedure ${tool.procedure}`);
    }
    return { tool, procedure: compileProcedure(tool.procedure, found._def) };
  });
}

/** svc's current signing keys, from the provider's JWKS in memory (re-read when it changes). */
function keysOf(services: AppServices): JWTVerifyGetKey {
  let json = '';
  let keys: JWTVerifyGetKey | undefined;
  return (header, token) => {
    const current = services.oidc.jwks.json;
    if (!keys || current !== json) {
      json = current;
      keys = createLocalJWKSet(JSON.parse(current));
    }
    return keys(header, token);
  };
}

/** A quoted-string of an auth-param: quotes and backslashes escaped. */
function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function text(value: unknown, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], ...(isError ? { isError: true } : {}) };
}

export function mcpRouter(services: AppServices): Router {
  const router = Router();
  const resource = controlPlaneResource(services.config.publicUrl);
  const server = createResourceServer({
    issuer: services.config.publicUrl,
    resource,
    resourceName: 'svc control plane',
    scopesSupported: MCP_PERMISSIONS,
    keys: keysOf(services),
  });
  const tools = compileTools();
  const grantExists = async (grantId: string) => !!(await services.oidc.provider.Grant.find(grantId));

  router.get(server.metadataPath, protectedResourceMetadata(server));

  /** The 401 of a token that verifies but no longer stands for anyone (agent.ts). */
  const refuse = (res: Response, message: string) => {
    res.setHeader(
      'WWW-Authenticate',
      `Bearer error="invalid_token", error_description=${quoted(message)}, resource_metadata=${quoted(server.metadataUrl)}`,
    );
    res.status(401).json({ error: 'invalid_token', error_description: message });
  };

  router.post(MCP_PATH, express.json({ limit: MAX_BODY_BYTES }), async (req: Request, res: Response) => {
    let principal: AgentPrincipal;
    try {
      const caller = await server.verify(req.headers.authorization);
      principal = await agentPrincipal(
        { db: services.db, grantExists },
        {
          subject: caller.subject,
          clientId: caller.clientId,
          organizationId: caller.organizationId,
          scopes: caller.permissions,
          grantId: caller.claims.grant_id,
        },
      );
    } catch (error) {
      if (error instanceof ResourceAuthError) {
        sendRefusal(res, error);
        return;
      }
      if (error instanceof AppError && error.code === 'unauthenticated') {
        refuse(res, error.message);
        return;
      }
      throw error;
    }
    const organization = await findOrganizationById(services.db, principal.apiKey.tenantId);
    if (!organization) {
      refuse(res, 'the organization this token acts for no longer exists');
      return;
    }
    const requestId = (req as { id?: string }).id ?? randomUUID();
    const request = requestMetaOf(req, services.clientIp, requestId);
    // The procedures' caller: this request as the agent, with no query string of its own (a
    // tool's input is what the tool builds, never the URL's `organization_slug`).
    const callReq = Object.create(req) as IncomingMessage & { query: Record<string, string> };
    Object.defineProperty(callReq, 'query', { value: {} });
    actAs(callReq, principal);
    const ctx: RequestContext = { services, req: callReq, res, requestId };

    const run = async ({ tool, procedure }: Compiled, args: Record<string, unknown>): Promise<CallToolResult> => {
      let outcome = 'ok';
      let result: CallToolResult;
      try {
        await services.mcpToolCalls.record({
          organizationId: organization.id,
          clientId: principal.agent.clientId,
          tokenId: randomUUID(),
          resource: `tool:${tool.name}`,
          actor: { type: 'user', id: principal.agent.userId },
        });
        const data = await callProcedure(procedure, tool.procedure, ctx, tool.toProcedureInput(args, organization));
        result = text(data ?? null);
      } catch (error) {
        const classified = classifyError(getTRPCErrorFromUnknown(error));
        if (classified.code === 'internal') {
          services.logger.error({ err: error, tool: tool.name }, 'MCP tool failed');
        }
        outcome = classified.code;
        result = text(
          {
            error: {
              code: classified.code,
              message: classified.message,
              ...errorFields(classified.appError, services.config),
              ...(classified.issues ? { issues: classified.issues } : {}),
            },
          },
          true,
        );
      }
      await recordAudit(services.db, principal, request, {
        tenantId: organization.id,
        action: TOOL_CALLED,
        target: { type: 'mcp_tool', id: tool.name },
        summary: { tool: tool.name, clientId: principal.agent.clientId, grantId: principal.agent.grantId, outcome },
      });
      services.grantUse.note(principal.agent.grantId);
      return result;
    };

    const mcp = new McpServer({ name: 'svc', version: '1.0.0' });
    for (const compiled of tools) {
      const { tool } = compiled;
      mcp.registerTool(
        tool.name,
        {
          title: tool.title,
          description: `${tool.description} Needs ${tool.permission} (as ${tool.route}).`,
          inputSchema: tool.input,
          annotations: { readOnlyHint: tool.readOnly, destructiveHint: false, openWorldHint: false },
        },
        (args: Record<string, unknown>) => run(compiled, args),
      );
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    // Express's Request declares an `auth` of its own (another library's augmentation); the transport reads none.
    await transport.handleRequest(req as IncomingMessage, res, req.body);
  });

  // Stateless: no stream to open and no session to end (the MCP client goes on without them).
  router.all(MCP_PATH, (_req, res) => {
    res.setHeader('Allow', 'POST');
    res
      .status(405)
      .json({ error: { code: 'method_not_allowed', message: 'svc’s MCP server takes POST only (stateless streamable HTTP)' } });
  });
  return router;
}
