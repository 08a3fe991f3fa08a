import { AppError } from '@svc/contracts/errors';
import { isSystemRole, type Permission, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import { findOrganizationById, findOrganizationBySlug, type OrganizationRow } from '@svc/db/queries/organizations';
import { findRoleByKey } from '@svc/db/queries/roles';
import type { Principal } from './principal.ts';

/**
 * Which organization a request acts on, as the caller named it: by id (`/tenants/{id}`), by
 * `organization_slug`, or neither (the session's workspace, or an API key's organization).
 * Unchecked until `authorize` has answered: nothing may be read or written with it before
 * (STYLE.md 6).
 */
export type UntrustedOrganizationRef = { id?: string; slug?: string };

/** What a route may do once authorized: the organization and the caller's permissions there. */
export type Access = {
  organization: OrganizationRow;
  principal: Principal;
  permissions: ReadonlySet<Permission>;
  /** The caller holds org_admin there, or is a platform admin. */
  isOrgAdmin: boolean;
};

const NOT_FOUND = 'organization not found';

async function findTarget(db: DbOrTx, principal: Principal, ref: UntrustedOrganizationRef): Promise<OrganizationRow | undefined> {
  if (ref.id !== undefined) {
    return findOrganizationById(db, ref.id);
  }
  if (ref.slug !== undefined) {
    return findOrganizationBySlug(db, ref.slug);
  }
  // No organization named: an API key acts on its own; a user on the session's workspace.
  const id = principal.kind === 'api_key' ? principal.apiKey.tenantId : principal.session.activeTenantId;
  if (!id) {
    throw new AppError('validation_failed', 'name the organization: organization_slug is required (no active workspace)');
  }
  return findOrganizationById(db, id);
}

/** The permissions a role key grants in an organization (system roles, else its custom role). */
export async function permissionsOfRole(db: DbOrTx, tenantId: string, roleKey: string): Promise<Permission[]> {
  if (isSystemRole(roleKey)) {
    return SYSTEM_ROLES[roleKey].permissions;
  }
  const role = await findRoleByKey(db, { tenantId, key: roleKey });
  return (role?.permissions ?? []) as Permission[];
}

/**
 * Resolves the organization a request names and checks the caller may use `permission` there.
 * Order matters for what an outsider learns: an organization the caller cannot see answers 404
 * exactly like one that does not exist (whatever the permission); only a member learns of a
 * missing permission (403). `adminOnly` adds SPEC.md 5.2's rule for admin control-plane
 * mutations: the org_admin role, not just the permission.
 */
export async function authorize(
  db: DbOrTx,
  principal: Principal,
  opts: { organization: UntrustedOrganizationRef; permission: Permission; adminOnly?: boolean },
): Promise<Access> {
  const organization = await findTarget(db, principal, opts.organization);
  // The keyless development workspace belongs to no one.
  if (!organization || organization.kind === 'keyless') {
    throw new AppError('not_found', NOT_FOUND);
  }
  let permissions: ReadonlySet<Permission>;
  let isOrgAdmin: boolean;
  if (principal.kind === 'api_key') {
    if (principal.apiKey.tenantId !== organization.id) {
      throw new AppError('not_found', NOT_FOUND);
    }
    permissions = new Set(principal.apiKey.scopes);
    isOrgAdmin = false;
  } else if (principal.session.isPlatformAdmin) {
    permissions = new Set(SYSTEM_ROLES.org_admin.permissions);
    isOrgAdmin = true;
  } else {
    const membership = principal.memberships.find((m) => m.organization.id === organization.id);
    if (!membership) {
      throw new AppError('not_found', NOT_FOUND);
    }
    permissions = new Set(await permissionsOfRole(db, organization.id, membership.roleKey));
    isOrgAdmin = membership.roleKey === 'org_admin';
  }
  if (!permissions.has(opts.permission)) {
    throw new AppError('forbidden', `missing permission ${opts.permission}`);
  }
  if (opts.adminOnly && !isOrgAdmin && principal.kind === 'user') {
    throw new AppError('forbidden', 'only an org admin may do this');
  }
  return { organization, principal, permissions, isOrgAdmin };
}

/**
 * A caller may only hand out what it holds: an org admin holds everything, a tenant API key only
 * its scopes, so a key with `roles.manage`, `invitations.manage` or `users.manage` cannot mint or
 * assign a role above itself, nor act on a member whose role is above it.
 */
export function assertGrantable(access: Access, permissions: readonly string[]): void {
  const beyond = permissions.filter((p) => !access.permissions.has(p as Permission));
  if (beyond.length > 0) {
    throw new AppError('forbidden', `you cannot grant permissions you do not hold: ${beyond.join(', ')}`);
  }
}
