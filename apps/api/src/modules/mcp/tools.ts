import type { Permission } from '@svc/contracts/permissions';
import { z } from 'zod';

/**
 * The tools of svc's MCP server (docs/oidc.md "svc's MCP server"): what an org admin does in the
 * console. Each is one procedure of the API, run through the same runner as its REST route
 * (http/mcp.ts) with the agent as the caller, so that its permission is the route's own rule
 * (`authorize` in the procedure's service); `permission` here only documents it and names the
 * scope the agent must ask for. A tool always acts on the organization the token acts for: its
 * input never names one.
 */
export type McpTool = {
  name: string;
  title: string;
  description: string;
  /** The permission the procedure's service requires (the REST route's, docs/api.md). */
  permission: Permission;
  /** The REST route it mirrors, for the description and the docs. */
  route: string;
  /** The procedure's path in the API router (`tenants.member.list`). */
  procedure: string;
  /** What the agent sends; the procedure's own input schema judges it again. */
  input: z.ZodRawShape;
  /** The procedure's input: the agent's arguments and the organization the token acts for. */
  toProcedureInput: (args: Record<string, unknown>, organization: { id: string; slug: string }) => Record<string, unknown>;
  readOnly: boolean;
};

const limit = z.number().int().min(1).max(200).optional().describe('at most this many (default 50)');
const cursor = z.string().max(512).optional().describe('the nextCursor of the previous answer, for the next page');

const withSlug = (args: Record<string, unknown>, organization: { slug: string }) => ({ ...args, organization_slug: organization.slug });

export const MCP_TOOLS: readonly McpTool[] = [
  {
    name: 'list_members',
    title: 'List members',
    description: "The organization's members and their roles, newest first.",
    permission: 'members.read',
    route: 'GET /v1/tenants/{id}/members',
    procedure: 'tenants.member.list',
    input: { limit, cursor },
    toProcedureInput: (args, organization) => ({ ...args, id: organization.id }),
    readOnly: true,
  },
  {
    name: 'invite_member',
    title: 'Invite a member',
    description:
      'Invites a person by email to join the organization with a role (default org_member); they become a member when they accept the emailed link. The agent must hold every permission of that role (org_member: tenant.read, members.read, usage.read, subscription.read).',
    permission: 'invitations.manage',
    route: 'POST /v1/invitations',
    procedure: 'invitations.create',
    input: {
      email: z.string().max(320).describe('the person to invite'),
      roleKey: z.string().max(48).optional().describe('org_admin, org_member or a custom role key (default org_member)'),
    },
    toProcedureInput: withSlug,
    readOnly: false,
  },
  {
    name: 'create_application',
    title: 'Create an application',
    description:
      'Creates an application (an OIDC client) in the organization; its secret key, when it has one, is in the answer and shown only this once.',
    permission: 'applications.manage',
    route: 'POST /v1/applications',
    procedure: 'applications.create',
    input: {
      name: z.string().max(200).describe('shown on its sign-in page'),
      clientType: z.string().max(32).optional().describe('confidential (default), public or machine'),
      redirectUrls: z.array(z.string().max(2048)).max(50).optional().describe('where sign-ins may return'),
    },
    toProcedureInput: withSlug,
    readOnly: false,
  },
  {
    name: 'read_usage',
    title: 'Read usage',
    description: "This calendar month's usage counters against the plan's limits, and seats.",
    permission: 'usage.read',
    route: 'GET /v1/usage',
    procedure: 'usage.counters.get',
    input: {},
    toProcedureInput: withSlug,
    readOnly: true,
  },
  {
    name: 'list_failed_webhook_deliveries',
    title: 'List failed webhook deliveries',
    description: 'Webhook deliveries that failed (every attempt used), newest first.',
    permission: 'webhooks.read',
    route: 'GET /v1/webhook-deliveries?status=failed',
    procedure: 'webhooks.delivery.list',
    input: { limit, cursor },
    toProcedureInput: (args, organization) => ({ ...withSlug(args, organization), status: 'failed' }),
    readOnly: true,
  },
  {
    name: 'retry_webhook_delivery',
    title: 'Retry a webhook delivery',
    description: 'Sends a failed webhook delivery again (a new attempt, now).',
    permission: 'webhooks.manage',
    route: 'POST /v1/webhook-deliveries/{id}/retry',
    procedure: 'webhooks.delivery.retry',
    input: { id: z.string().max(64).describe('the delivery id (whd_...)') },
    toProcedureInput: withSlug,
    readOnly: false,
  },
  {
    name: 'read_audit_log',
    title: 'Read the audit log',
    description: "The organization's audit log, newest first: who did what, when, from where.",
    permission: 'audit.read',
    route: 'GET /v1/audit-logs',
    procedure: 'auditLogs.list',
    input: {
      limit,
      cursor,
      action: z.string().max(100).optional().describe('only entries of this action (member.added, invitation.created, ...)'),
    },
    toProcedureInput: withSlug,
    readOnly: true,
  },
];
