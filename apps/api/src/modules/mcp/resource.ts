import { PERMISSION_CATALOG, type Permission } from '@svc/contracts/permissions';
import type { DescribedPermission, TokenResource } from '@svc/db/queries/token-resources';

/**
 * svc's own control plane as an MCP server (docs/oidc.md "svc's MCP server"): `/mcp` on svc's
 * PUBLIC_URL is an API resource that svc registers itself. Its permissions are svc's control-plane
 * permissions the tools need, granted only by a person's consent to a third-party client, and
 * only those the person holds (consent.ts, claims.ts).
 */

/** Where the MCP server listens, under PUBLIC_URL. */
export const MCP_PATH = '/mcp';

/** The resource's id in token resources (never a row of api_resources: no `res_` id can equal it). */
export const CONTROL_PLANE_RESOURCE_ID = 'svc_control_plane_mcp';

/**
 * The control-plane permissions the tools require (tools.ts), as the resource's scopes; and
 * `tenant.read` and `subscription.read`, which org_member holds: an invitation grants its role's
 * permissions, and, as for an API key, only a caller holding them may grant them.
 */
export const MCP_PERMISSIONS = [
  'tenant.read',
  'subscription.read',
  'members.read',
  'invitations.manage',
  'applications.manage',
  'usage.read',
  'webhooks.read',
  'webhooks.manage',
  'audit.read',
] as const satisfies readonly Permission[];

const MCP_PERMISSION_SET: ReadonlySet<string> = new Set(MCP_PERMISSIONS);

/** The resource identifier (the tokens' audience): PUBLIC_URL + /mcp. */
export function controlPlaneResource(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${MCP_PATH}`;
}

/** The resource as the OpenID Provider resolves a `resource` parameter. */
export function controlPlaneTokenResource(publicUrl: string): TokenResource {
  return {
    id: CONTROL_PLANE_RESOURCE_ID,
    identifier: controlPlaneResource(publicUrl),
    name: 'svc control plane',
    permissions: [...MCP_PERMISSIONS].sort(),
  };
}

/** Whether an API resource is svc's own MCP server. */
export function isControlPlaneTokenResource(resource: Pick<TokenResource, 'id'>): boolean {
  return resource.id === CONTROL_PLANE_RESOURCE_ID;
}

/** The permissions a consent page words for the resource, each with the catalog's description. */
export function controlPlanePermissions(): { name: string; permissions: DescribedPermission[] } {
  return {
    name: 'svc control plane',
    permissions: PERMISSION_CATALOG.filter((p) => MCP_PERMISSION_SET.has(p.name)).map((p) => ({
      name: p.name,
      description: p.description,
    })),
  };
}

/** Of a token's scopes, the control-plane permissions of the resource. */
export function mcpPermissionsOf(scopes: readonly string[]): Permission[] {
  return scopes.filter((s): s is (typeof MCP_PERMISSIONS)[number] => MCP_PERMISSION_SET.has(s));
}
