import { AppError } from '@svc/contracts/errors';
import type { Db } from '@svc/db/client';
import { prepareFindApiKeyCreatorStanding } from '@svc/db/queries/api-keys';
import { type ApiKeyPrincipal, creatorAccessOf } from '../access/authorize.ts';
import { mayConnect } from '../connected-apps/service.ts';
import { mcpPermissionsOf } from './resource.ts';

/**
 * The caller a tool of svc's MCP server runs as (docs/oidc.md "svc's MCP server"): the person
 * who consented, in the organization the token acts for, with the permissions they allowed the
 * agent, never more than the person may do there now. It is the shape `authorize` already
 * judges a tenant API key by (its scopes, bounded by its creator's standing read on every
 * request), so every tool meets exactly the rule of its REST route; `agent` names the client for
 * the audit log (access/audit.ts).
 */
export type AgentPrincipal = ApiKeyPrincipal & {
  agent: { clientId: string; userId: string; grantId: string };
};

/** The verified token's claims the principal is made of. */
export type AgentToken = {
  subject: string;
  clientId: string;
  organizationId: string | undefined;
  scopes: readonly string[];
  grantId: unknown;
};

const finders = new WeakMap<object, ReturnType<typeof prepareFindApiKeyCreatorStanding>>();

/** The label audit entries give an agent's actions: the client beside the person. */
export function agentLabel(clientId: string): string {
  return `agent ${clientId}`.slice(0, 300);
}

/**
 * The principal of a verified token, read now: 401 `unauthenticated` when the token names no
 * organization or grant, when the person is no longer an active member there, when the
 * organization no longer lets the client connect, or when the grant was revoked (the Connected
 * apps page stops svc's own MCP server at once, not when the access token expires).
 */
export async function agentPrincipal(
  deps: { db: Db; grantExists: (grantId: string) => Promise<boolean> },
  token: AgentToken,
): Promise<AgentPrincipal> {
  const organizationId = token.organizationId;
  const grantId = typeof token.grantId === 'string' ? token.grantId : undefined;
  if (!organizationId || !grantId) {
    throw new AppError('unauthenticated', 'this token acts for no organization: ask for it again with the person’s consent');
  }
  let find = finders.get(deps.db);
  if (!find) {
    find = prepareFindApiKeyCreatorStanding(deps.db);
    finders.set(deps.db, find);
  }
  const [standing, allowed, granted] = await Promise.all([
    find({ userId: token.subject, tenantId: organizationId }),
    mayConnect(deps.db, { organizationId, clientId: token.clientId }),
    deps.grantExists(grantId),
  ]);
  const creator = standing ? creatorAccessOf(standing) : null;
  if (!creator) {
    throw new AppError('unauthenticated', 'the person who allowed this agent is no longer an active member of the organization');
  }
  if (!allowed) {
    throw new AppError('unauthenticated', 'the organization does not allow this client to connect');
  }
  if (!granted) {
    throw new AppError('unauthenticated', 'the person’s consent to this agent was revoked: ask for it again');
  }
  return {
    kind: 'api_key',
    apiKey: {
      id: grantId,
      tenantId: organizationId,
      name: agentLabel(token.clientId),
      scopes: mcpPermissionsOf(token.scopes),
      createdByUserId: token.subject,
    },
    creator,
    agent: { clientId: token.clientId, userId: token.subject, grantId },
  };
}

/** Whether a principal is an agent on svc's MCP server. */
export function isAgentPrincipal(principal: object): principal is AgentPrincipal {
  return 'agent' in principal && typeof (principal as { agent?: unknown }).agent === 'object';
}
