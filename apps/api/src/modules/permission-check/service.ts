import type { TPermissionCheckRequest, TPermissionCheckResult } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { PERMISSIONS, type Permission } from '@svc/contracts/permissions';
import type { Db } from '@svc/db/client';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { authorize, mayExercise } from '../access/authorize.ts';
import { featureStanding } from '../subscriptions/entitlements.ts';
import type { AccessCache } from './cache.ts';
import type { CheckCaller } from './caller.ts';

const CONTROL_PLANE: ReadonlySet<string> = new Set(PERMISSIONS);
const isControlPermission = (name: string): name is Permission => CONTROL_PLANE.has(name);

/** What the check needs of the process: the database and its per-process cache. */
export type CheckDeps = { db: Db; access: AccessCache };

/** The one answer for an organization the caller may not ask about, exactly as for one that does not exist. */
const NOT_FOUND = 'organization not found';

/**
 * The organization a check is about, once the caller may ask about it (docs/authorization.md,
 * "Checking a permission"); 404 not_found otherwise, whether or not it exists.
 *
 * - A tenant API key or a signed-in person: `authorize`, as every control-plane route (a key only
 *   in its own organization; a person where they are a member, a platform admin anywhere), with
 *   members.read for a person's permission (what the member list shows) or subscription.read for
 *   a feature (what the subscription shows).
 * - An application's secret key: its own organization; beyond it, only an application anyone may
 *   sign in to (`signInAudience: anyone`), only about a person who has signed in to it for that
 *   organization (named by `userId`, feature checks included). So an application learns nothing
 *   of an organization or a membership that its own sign-ins have not shown it already, and a key
 *   of an application another tenant made is no oracle for anyone else's organizations.
 */
async function organizationOf(deps: CheckDeps, caller: CheckCaller, input: TPermissionCheckRequest): Promise<OrganizationRow> {
  const ref =
    input.organizationId !== undefined
      ? { id: input.organizationId }
      : input.organization_slug !== undefined
        ? { slug: input.organization_slug }
        : undefined;
  if (caller.kind !== 'application') {
    const { organization } = await authorize(deps.db, caller, {
      organization: ref ?? {},
      permission: input.feature !== undefined ? 'subscription.read' : 'members.read',
    });
    return organization;
  }
  const { application } = caller.found;
  const organization = await deps.access.organization(ref ?? { id: application.tenantId });
  // The keyless development workspace belongs to no one (authorize says the same).
  if (!organization || organization.kind === 'keyless' || application.isKeyless) {
    throw new AppError('not_found', NOT_FOUND);
  }
  if (organization.id === application.tenantId) {
    return organization;
  }
  const visible =
    application.signInAudience === 'anyone' &&
    input.userId !== undefined &&
    (await deps.access.hasSignedInFor({ applicationId: application.id, userId: input.userId, organizationId: organization.id }));
  if (!visible) {
    throw new AppError('not_found', NOT_FOUND);
  }
  return organization;
}

/**
 * POST /v1/permissions/check. With `permission`: may the person `userId` do it in the
 * organization now? Only an active membership of an active user counts (a platform admin is no
 * exception: they count only where they are a member). A control-plane permission counts when the
 * role grants it (role-grants.ts) and, when admin-only, the role is org_admin (authorize.ts
 * `mayExercise`); a product permission when the role grants it. A name in neither catalog is 400
 * unknown_permission. With `feature`: may the organization use it now (subscriptions/entitlements.ts).
 * Every read goes through the per-process cache (cache.ts); a usage-limited feature reads its
 * month's usage fresh.
 */
export async function checkPermission(
  deps: CheckDeps,
  caller: CheckCaller,
  input: TPermissionCheckRequest,
): Promise<TPermissionCheckResult> {
  const organization = await organizationOf(deps, caller, input);
  if (input.feature !== undefined) {
    const terms = await deps.access.subscriptionTerms(organization.id);
    const standing = await featureStanding(deps.db, organization.id, input.feature, terms ?? undefined);
    return {
      allowed: standing.allowed,
      organizationId: organization.id,
      feature: input.feature,
      ...(standing.plan !== undefined ? { plan: standing.plan, status: standing.status } : {}),
      remaining: standing.remaining,
    };
  }
  const { permission, userId } = input as { permission: string; userId: string };
  const control = isControlPermission(permission);
  if (!control && !(await deps.access.productPermissionExists(permission))) {
    throw new AppError('unknown_permission', `${permission} is neither one of svc's permissions nor a permission an API resource declares`);
  }
  const standing = await deps.access.standing(organization.id, userId);
  if (!standing?.active) {
    return { allowed: false, organizationId: organization.id, userId, permission, role: null };
  }
  const allowed = control ? mayExercise(standing.control, standing.isOrgAdmin, permission) : standing.product.has(permission);
  return { allowed, organizationId: organization.id, userId, permission, role: standing.roleKey };
}
