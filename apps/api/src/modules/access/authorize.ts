import { AppError } from '@svc/contracts/errors';
import { isAdminOnlyPermission, isSystemRole, PERMISSIONS, type Permission, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import type { ApiKeyCreatorStanding } from '@svc/db/queries/api-keys';
import { findOrganizationById, findOrganizationBySlug, type OrganizationRow } from '@svc/db/queries/organizations';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import { grantsOfRole } from './role-grants.ts';

/**
 * A check a procedure adds on the organization `authorize` resolves for it: the subscription rule
 * of a gated mutation (trpc/subscription-gate.ts). `authorize` calls it once the organization is
 * found and the caller may see it, before the permission is judged, so it judges exactly the
 * organization the route acts on, never one worked out again from the raw input.
 */
export type OrganizationGuard = (db: DbOrTx, organization: OrganizationRow) => Promise<void>;

/** What the procedure ladder attaches to a caller for this one request. */
type RequestGuards = { organizationGuard?: OrganizationGuard };

/** A signed-in browser: the session, its user and the user's memberships. */
export type UserPrincipal = { kind: 'user' } & SessionWithUser & RequestGuards;

/**
 * A backend service holding a tenant API key: one organization, the key's scopes, bounded by
 * what the key's creator may do there now (`creator`, read with the key on every request).
 */
export type ApiKeyPrincipal = {
  kind: 'api_key';
  apiKey: { id: string; tenantId: string; name: string; scopes: Permission[]; createdByUserId: string };
  creator: CreatorAccess;
} & RequestGuards;

/**
 * The holder of a setup link, on its hosted page (docs/enterprise.md "Setup links"): never a
 * caller of a route, only the actor of what the page does, with the standing of the org admin
 * who created the link, in the link's organization and purpose only (modules/setup-links).
 */
export type SetupLinkPrincipal = {
  kind: 'setup_link';
  setupLink: { id: string; tenantId: string; purpose: 'sso' | 'directory' | 'domain'; label: string; createdByUserId: string };
} & RequestGuards;

/** Who is calling a control-plane route, or acting on a hosted page that stands for one. */
export type Principal = UserPrincipal | ApiKeyPrincipal | SetupLinkPrincipal;

/**
 * Which organization a request acts on, as the caller named it: by id (`/tenants/{id}`), by
 * `organization_slug`, or neither (the session's workspace, or an API key's organization).
 * Unchecked until `authorize` has answered: nothing may be read or written with it before
 * (docs/conventions.md section 1).
 */
export type UntrustedOrganizationRef = { id?: string; slug?: string };

/** The one answer to anyone signed in who is not a platform admin, whatever they ask. */
export const PLATFORM_ONLY_MESSAGE = 'only platform admins may do this';

/**
 * The one platform-admin rule, for procedures (`platformProcedure`), plain Express routes (the
 * engine proxy) and services alike: a signed-in person whose session was opened as a member of
 * the engine's platform admin group (identity sign-in sets it; leaving the group ends those
 * sessions). A tenant API key never is one, whoever created it: it acts in its own organization.
 */
export function isPlatformAdmin(principal: Principal): boolean {
  return principal.kind === 'user' && principal.session.isPlatformAdmin;
}

/** `isPlatformAdmin`, or 403 forbidden with the one message that says nothing of who asks. */
export function assertPlatformAdmin(principal: Principal): asserts principal is UserPrincipal {
  if (principal.kind !== 'user' || !isPlatformAdmin(principal)) {
    throw new AppError('forbidden', PLATFORM_ONLY_MESSAGE);
  }
}

/**
 * What a route may do once authorized: the organization and the caller's effective permissions
 * there (admin-only ones only for an org admin; for an API key, its scopes within what its
 * creator may do now).
 */
export type Access = {
  organization: OrganizationRow;
  principal: Principal;
  permissions: ReadonlySet<Permission>;
  /** The caller holds org_admin there, or is a platform admin; for an API key, its creator does. */
  isOrgAdmin: boolean;
};

/**
 * A tenant API key's creator in the key's organization now: the permissions of their role there
 * and whether they are an org admin (admin-only permissions count only then, as for a session).
 */
export type CreatorAccess = { permissions: ReadonlySet<Permission>; isOrgAdmin: boolean };

const ALL_PERMISSIONS: ReadonlySet<Permission> = new Set(PERMISSIONS);
const KNOWN: ReadonlySet<string> = ALL_PERMISSIONS;

/**
 * A key creator's standing as access: null (the key is void) for a suspended creator or one who
 * is neither a member of the key's organization nor a platform admin. A platform admin counts as
 * an org admin, as in `authorize`.
 */
export function creatorAccessOf(standing: ApiKeyCreatorStanding): CreatorAccess | null {
  if (standing.status !== 'active') {
    return null;
  }
  if (standing.isPlatformAdmin || standing.roleKey === 'org_admin') {
    return { permissions: ALL_PERMISSIONS, isOrgAdmin: true };
  }
  if (standing.roleKey === null) {
    return null;
  }
  // The same rule as role-grants.ts: a product role of the platform holds what org_member holds here.
  const held = isSystemRole(standing.roleKey)
    ? SYSTEM_ROLES[standing.roleKey].permissions
    : standing.isProductRole
      ? SYSTEM_ROLES.org_member.permissions
      : (standing.rolePermissions ?? []).filter((p): p is Permission => KNOWN.has(p));
  return { permissions: new Set(held), isOrgAdmin: false };
}

/** A member holding this role key is an org admin (admin-only permissions count for them): only org_admin's holders. */
export function isOrgAdminRole(roleKey: string): boolean {
  return roleKey === 'org_admin';
}

/**
 * Whether a holder of `held` may exercise `permission`: it holds it, and an admin-only one
 * (ADMIN_ONLY_PERMISSIONS) only as an org admin. The one rule `authorize` and the permission
 * check (modules/permission-check) judge a control-plane permission by.
 */
export function mayExercise(held: ReadonlySet<Permission>, isOrgAdmin: boolean, permission: Permission): boolean {
  return held.has(permission) && (isOrgAdmin || !isAdminOnlyPermission(permission));
}

/** What a holder of `held` may exercise (mayExercise, for each). */
function effective(held: ReadonlySet<Permission>, isOrgAdmin: boolean): ReadonlySet<Permission> {
  const out = new Set<Permission>();
  for (const p of held) {
    if (mayExercise(held, isOrgAdmin, p)) {
      out.add(p);
    }
  }
  return out;
}

const NOT_FOUND = 'organization not found';

/** Not async: it returns the read's own promise, without a second one around it. */
function findTarget(db: DbOrTx, principal: Principal, ref: UntrustedOrganizationRef): Promise<OrganizationRow | undefined> {
  if (ref.id !== undefined) {
    return findOrganizationById(db, ref.id);
  }
  if (ref.slug !== undefined) {
    return findOrganizationBySlug(db, ref.slug);
  }
  // No organization named: an API key acts on its own; a user on the session's workspace.
  const id =
    principal.kind === 'api_key'
      ? principal.apiKey.tenantId
      : principal.kind === 'setup_link'
        ? principal.setupLink.tenantId
        : principal.session.activeTenantId;
  if (!id) {
    throw new AppError('validation_failed', 'name the organization: organization_slug is required (no active workspace)');
  }
  return findOrganizationById(db, id);
}

/** The control-plane permissions a role key grants in an organization (role-grants.ts decides). */
export async function permissionsOfRole(db: DbOrTx, tenantId: string, roleKey: string): Promise<readonly Permission[]> {
  if (isSystemRole(roleKey)) {
    return SYSTEM_ROLES[roleKey].permissions;
  }
  return (await grantsOfRole(db, tenantId, roleKey))?.control ?? [];
}

/**
 * Resolves the organization a request names and checks the caller may use `permission` there.
 * Order matters for what an outsider learns: an organization the caller cannot see answers 404
 * exactly like one that does not exist (whatever the permission); only a member learns of a
 * missing permission (403); in between, the procedure's `organizationGuard` judges the
 * organization (a 402 of the subscription rule). `adminOnly` adds the rule for admin control-plane
 * mutations: the org_admin role, not just the permission; it holds for every permission in
 * ADMIN_ONLY_PERMISSIONS whether or not the route says so, and for every credential: an API key
 * meets it only while its creator is an org admin (or platform admin) of the organization.
 */
export async function authorize(
  db: DbOrTx,
  principal: Principal,
  opts: { organization: UntrustedOrganizationRef; permission: Permission; adminOnly?: boolean },
): Promise<Access> {
  // A setup link's page acts through its own module with the access it builds; it calls no route.
  if (principal.kind === 'setup_link') {
    throw new AppError('not_found', NOT_FOUND);
  }
  const organization = await findTarget(db, principal, opts.organization);
  // The keyless development workspace belongs to no one.
  if (!organization || organization.kind === 'keyless') {
    throw new AppError('not_found', NOT_FOUND);
  }
  let held: ReadonlySet<Permission>;
  let isOrgAdmin: boolean;
  if (principal.kind === 'api_key') {
    if (principal.apiKey.tenantId !== organization.id) {
      throw new AppError('not_found', NOT_FOUND);
    }
    // Never more than its creator may do now: a demotion shrinks the key on its next request.
    const creator = principal.creator;
    held = new Set(principal.apiKey.scopes.filter((p) => creator.permissions.has(p)));
    isOrgAdmin = creator.isOrgAdmin;
  } else if (isPlatformAdmin(principal)) {
    held = ALL_PERMISSIONS;
    isOrgAdmin = true;
  } else {
    const membership = principal.memberships.find((m) => m.organization.id === organization.id);
    if (!membership) {
      throw new AppError('not_found', NOT_FOUND);
    }
    held = new Set(await permissionsOfRole(db, organization.id, membership.roleKey));
    isOrgAdmin = isOrgAdminRole(membership.roleKey);
  }
  // After the 404s (an outsider learns nothing, not even a 402), before the 403s. Reads and
  // most writes have no guard: no await for them.
  if (principal.organizationGuard) {
    await principal.organizationGuard(db, organization);
  }
  if (!held.has(opts.permission)) {
    throw new AppError('forbidden', `missing permission ${opts.permission}`);
  }
  if ((opts.adminOnly || isAdminOnlyPermission(opts.permission)) && !isOrgAdmin) {
    throw new AppError(
      'forbidden',
      principal.kind === 'api_key'
        ? 'only an org admin may do this: the person who created this API key is not an org admin of its organization'
        : 'only an org admin may do this',
    );
  }
  const permissions = effective(held, isOrgAdmin);
  return { organization, principal, permissions, isOrgAdmin };
}

/**
 * A caller may only hand out, or act on, what it holds: an org admin holds everything, a member
 * the non-admin permissions of its role, a tenant API key its scopes within its creator's. So a
 * key or role with `roles.manage`, `invitations.manage`, `users.manage` or `api_keys.manage`
 * cannot mint or assign a role or key above itself, nor change, rotate or revoke one above it.
 * `refusal` says what was refused; the permissions beyond the caller follow it.
 */
export function assertGrantable(
  access: Access,
  permissions: readonly string[],
  refusal = 'you cannot grant permissions you do not hold',
): void {
  const beyond = permissions.filter((p) => !access.permissions.has(p as Permission));
  if (beyond.length > 0) {
    throw new AppError('forbidden', `${refusal}: ${beyond.join(', ')}`);
  }
}

/**
 * The platform workspace's members are the engine's platform admin group (identity sign-in adds
 * and removes them): no route adds, invites, changes or removes one of its memberships.
 */
export function assertMembershipsManaged(organization: OrganizationRow): void {
  if (organization.kind === 'platform') {
    throw new AppError(
      'platform_workspace_managed',
      "the platform workspace's members are the engine's platform admin group: change the group in the engine",
    );
  }
}
