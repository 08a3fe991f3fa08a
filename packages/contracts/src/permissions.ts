import { z } from 'zod';

/**
 * Every permission svc checks (docs/api.md "Tenants, members and permissions"): `resource.action`. Roles are subsets of
 * this list and tenant API-key scopes use the same strings. The catalog may grow; names never
 * change.
 */
export const PERMISSIONS = [
  'tenant.read',
  'tenant.update',
  'tenant.delete',
  'members.read',
  'members.manage',
  'users.read',
  'users.manage',
  'sessions.read',
  'sessions.revoke',
  'roles.read',
  'roles.manage',
  'invitations.read',
  'invitations.manage',
  'api_keys.read',
  'api_keys.manage',
  'usage.read',
  'usage.write',
  'billing.read',
  'billing.manage',
  'exports.create',
  'webhooks.read',
  'webhooks.manage',
  'email.read',
  'email.process',
  'subscription.read',
  'audit.read',
  'applications.read',
  'applications.manage',
  'domains.read',
  'domains.manage',
  'connected_apps.read',
  'connected_apps.manage',
  'directories.read',
  'directories.manage',
  'sso.read',
  'sso.manage',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const descriptions: Record<Permission, string> = {
  'tenant.read': 'Read the organization',
  'tenant.update': 'Rename the organization or change its slug',
  'tenant.delete': 'Delete the organization and everything it owns',
  'members.read': 'List members',
  'members.manage': 'Add and remove members',
  'users.read': 'List users',
  'users.manage': 'Create, update and suspend users',
  'sessions.read': 'List sessions',
  'sessions.revoke': 'Revoke sessions',
  'roles.read': 'List roles',
  'roles.manage': 'Create and update custom roles',
  'invitations.read': 'List invitations',
  'invitations.manage': 'Create and revoke invitations',
  'api_keys.read': 'List API keys (metadata only)',
  'api_keys.manage': 'Create, rotate and revoke API keys',
  'usage.read': 'Read usage',
  'usage.write': 'Record usage events',
  'billing.read': 'Read billing hand-off records',
  'billing.manage': 'Connect billing providers and map usage',
  'exports.create': 'Export everything the organization owns',
  'webhooks.read': 'List webhook endpoints and deliveries',
  'webhooks.manage': 'Manage webhook endpoints and retry deliveries',
  'email.read': 'List email deliveries',
  'email.process': 'Process due email deliveries',
  'subscription.read': 'Read the subscription',
  'audit.read': 'Read the audit log',
  'applications.read': 'List applications',
  'applications.manage': 'Create and update applications, rotate their secrets',
  'domains.read': "List the organization's email domains and their verification records",
  'domains.manage': 'Add, verify and delete email domains and choose what each does at sign-in',
  'connected_apps.read': 'See which third-party apps and agents may connect to the organization',
  'connected_apps.manage': 'Choose which third-party apps and agents may connect to the organization',
  'directories.read': "List the organization's SCIM directories, their group-to-role mapping and request log",
  'directories.manage': 'Create, rotate the token of, map and delete SCIM directories',
  'sso.read': "List the organization's SSO connections (never their secrets)",
  'sso.manage': 'Create, change, test and delete SSO connections',
};

/**
 * Permissions only an org admin (or a platform admin) exercises, whatever role or key holds
 * them (docs/api.md "Tenants, members and permissions": the admin control plane). A custom role may list them, but they do nothing
 * for a member who is not an org admin; a tenant API key uses them only while its creator is an
 * org admin of its organization.
 */
export const ADMIN_ONLY_PERMISSIONS: ReadonlySet<Permission> = new Set<Permission>([
  'tenant.delete',
  'users.manage',
  'sessions.revoke',
  'roles.manage',
  'invitations.manage',
  'billing.manage',
  'exports.create',
  'webhooks.manage',
  'email.read',
  'email.process',
  // A domain's auto_join policy makes members: an admin's decision, like an invitation.
  'domains.manage',
  // Which agents may act for the organization's people: an admin's decision.
  'connected_apps.manage',
  // A directory adds, suspends and removes members and gives them roles: an admin's decision.
  'directories.manage',
  // A connection makes members (just-in-time) with the roles it maps: an admin's decision.
  'sso.manage',
]);

export function isAdminOnlyPermission(permission: Permission): boolean {
  return ADMIN_ONLY_PERMISSIONS.has(permission);
}

export const ZPermission = z.enum(PERMISSIONS).meta({ id: 'Permission' });

/** Permission lists in requests: known names only, no repeats (order is not kept). */
export const ZPermissionList = z
  .array(ZPermission)
  .max(PERMISSIONS.length)
  .transform((list) => [...new Set(list)].sort());

export const ZPermissionDescription = z.object({ name: ZPermission, description: z.string() }).meta({ id: 'PermissionDescription' });

/** GET /v1/permissions. */
/** GET /v1/permissions: a list like every other (docs/api.md), whose one page is the whole catalog. */
export const ZPermissionCatalog = z
  .object({ data: z.array(ZPermissionDescription), nextCursor: z.null().describe('always null: the catalog is one page') })
  .meta({ id: 'PermissionCatalog' });

export const PERMISSION_CATALOG = PERMISSIONS.map((name) => ({ name, description: descriptions[name] }));

/** Built-in roles: every organization has them; they cannot be changed. */
export const SYSTEM_ROLES = {
  org_admin: { name: 'Organization admin', permissions: [...PERMISSIONS] as Permission[] },
  org_member: {
    name: 'Organization member',
    permissions: ['tenant.read', 'members.read', 'usage.read', 'subscription.read'] as Permission[],
  },
} as const;

export type SystemRoleKey = keyof typeof SYSTEM_ROLES;

export function isSystemRole(key: string): key is SystemRoleKey {
  return Object.hasOwn(SYSTEM_ROLES, key);
}

/** Role keys: lower-case, digits and underscores, 2-48 characters, starting with a letter. */
export const ZRoleKey = z
  .string()
  .regex(/^[a-z][a-z0-9_]{1,47}$/, 'a role key is 2-48 lower-case letters, digits or underscores, starting with a letter');
