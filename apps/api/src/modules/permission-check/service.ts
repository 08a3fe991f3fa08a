import type { TPermissionCheckRequest, TPermissionCheckResult } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { PERMISSIONS, type Permission } from '@svc/contracts/permissions';
import type { Db } from '@svc/db/client';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import type { AccessRule, ApplicationCaller } from '../access/access-rule.ts';
import { type Access, mayExercise } from '../access/authorize.ts';
import { featureStanding } from '../subscriptions/entitlements.ts';
import type { AccessCache, CheckStanding } from './cache.ts';

const CONTROL_PLANE: ReadonlySet<string> = new Set(PERMISSIONS);
const isControlPermission = (name: string): name is Permission => CONTROL_PLANE.has(name);

/** What the check needs of the process: the database and its per-process cache. */
export type CheckDeps = { db: Db; access: AccessCache };

/** The one answer for an organization the caller may not ask about, exactly as for one that does not exist. */
const NOT_FOUND = 'organization not found';

type OrganizationRef = { id: string } | { slug: string };

/**
 * Who asks (docs/authorization.md, "Checking a permission"): a tenant API key or a signed-in
 * person by the control plane's rule, as every control-plane route (a key only in its own
 * organization; a person where they are a member, a platform admin anywhere), with members.read
 * for a person's permission (what the member list shows) or subscription.read for a feature
 * (what the subscription shows); an application's secret key by its own rule (reachOf).
 */
export const PERMISSION_CHECK_ACCESS = {
  permission: {
    of: (input: TPermissionCheckRequest) => (input.feature !== undefined ? 'subscription.read' : 'members.read'),
    oneOf: ['members.read', 'subscription.read'],
  },
  organization: (input: TPermissionCheckRequest) => refOf(input) ?? {},
  ownRuleFor: 'application',
} as const satisfies AccessRule;

/** The asker once the route's access is resolved: the control plane's access, or an application. */
export type CheckAsker = Access | ApplicationCaller;

const isApplication = (asker: CheckAsker): asker is ApplicationCaller => 'found' in asker;

function refOf(input: TPermissionCheckRequest): OrganizationRef | undefined {
  if (input.organizationId !== undefined) {
    return { id: input.organizationId };
  }
  return input.organization_slug !== undefined ? { slug: input.organization_slug } : undefined;
}

type Application = ApplicationWithOrganization['application'];

/**
 * How far an application's secret key reaches (docs/authorization.md, "Checking a permission"):
 * its own organization (`own`); another one only for an application anyone may sign in to, and
 * only about a person named by `userId` who has signed in to it for that organization
 * (`if-signed-in`, which the caller then looks up); nothing else (`never`). So an application
 * learns nothing of an organization or a membership that its own sign-ins have not shown it
 * already, and a key of an application another tenant made is no oracle for anyone else's
 * organizations. The keyless development workspace belongs to no one (authorize says the same).
 */
function reachOf(
  application: Application,
  organization: OrganizationRow | null | undefined,
  input: TPermissionCheckRequest,
): 'own' | 'if-signed-in' | 'never' {
  if (!organization || organization.kind === 'keyless' || application.isKeyless) {
    return 'never';
  }
  if (organization.id === application.tenantId) {
    return 'own';
  }
  return application.signInAudience === 'anyone' && input.userId !== undefined ? 'if-signed-in' : 'never';
}

/**
 * The organization a check is about, once the caller may ask about it; 404 not_found otherwise,
 * whether or not it exists. A tenant API key or a signed-in person: the route's resolved access
 * (PERMISSION_CHECK_ACCESS). An application: reachOf.
 */
async function organizationOf(deps: CheckDeps, asker: CheckAsker, input: TPermissionCheckRequest): Promise<OrganizationRow> {
  if (!isApplication(asker)) {
    return asker.organization;
  }
  const { application } = asker.found;
  const organization = await deps.access.organization(refOf(input) ?? { id: application.tenantId });
  const reach = reachOf(application, organization, input);
  const visible =
    reach === 'own' ||
    (reach === 'if-signed-in' &&
      (await deps.access.hasSignedInFor({
        applicationId: application.id,
        userId: input.userId as string,
        organizationId: (organization as OrganizationRow).id,
      })));
  if (!visible || !organization) {
    throw new AppError('not_found', NOT_FOUND);
  }
  return organization;
}

function unknownPermission(permission: string): AppError {
  return new AppError('unknown_permission', `${permission} is neither one of svc's permissions nor a permission an API resource declares`);
}

/** Answers kept per standing: a product checks a few permissions of each person, over and over. */
const ANSWERS_PER_STANDING = 32;

/**
 * The answer about a person, from their standing (null: no membership). Only an active membership
 * of an active user counts; a control-plane permission by authorize.ts `mayExercise` (admin-only
 * ones for org_admin alone), a product permission when the role grants it. An answer from a
 * standing is kept on it, frozen, and given again while the standing is held.
 */
function judge(organizationId: string, userId: string, permission: string, standing: CheckStanding | null): TPermissionCheckResult {
  if (!standing) {
    return { allowed: false, organizationId, userId, permission, role: null };
  }
  const kept = standing.answers.get(permission);
  if (kept) {
    return kept;
  }
  const allowed =
    standing.active &&
    (isControlPermission(permission) ? mayExercise(standing.control, standing.isOrgAdmin, permission) : standing.product.has(permission));
  const answer = Object.freeze({ allowed, organizationId, userId, permission, role: standing.active ? standing.roleKey : null });
  if (standing.answers.size < ANSWERS_PER_STANDING) {
    standing.answers.set(permission, answer);
  }
  return answer;
}

/**
 * An application's question about a person answered from what the cache holds, synchronously,
 * or undefined when something is not held (the loading path then reads it and answers). Every
 * decision is the loading path's: reachOf, the catalog, judge.
 */
function answerFromCache(
  access: AccessCache,
  application: Application,
  input: TPermissionCheckRequest,
): TPermissionCheckResult | undefined {
  const { permission, userId } = input;
  if (permission === undefined || userId === undefined) {
    return undefined;
  }
  const now = Date.now();
  const organization = access.peekOrganization(refOf(input) ?? { id: application.tenantId }, now);
  const reach = reachOf(application, organization, input);
  if (
    !organization ||
    (reach !== 'own' &&
      !(
        reach === 'if-signed-in' &&
        access.peekHasSignedInFor({ applicationId: application.id, userId, organizationId: organization.id }, now)
      ))
  ) {
    return undefined;
  }
  if (!isControlPermission(permission)) {
    const known = access.peekProductPermissionExists(permission, now);
    if (known === undefined) {
      return undefined;
    }
    if (!known) {
      throw unknownPermission(permission);
    }
  }
  const standing = access.peekStanding(organization.id, userId, now);
  return standing === undefined ? undefined : judge(organization.id, userId, permission, standing);
}

/**
 * POST /v1/permissions/check. With `permission`: may the person `userId` do it in the
 * organization now (judge)? A platform admin is no exception: they count only where they are a
 * member. A name in neither catalog is 400 unknown_permission, after the organization's 404 (an
 * outsider learns nothing). With `feature`: may the organization use it now
 * (subscriptions/entitlements.ts). Every read goes through the per-process cache (cache.ts); an
 * application's question whose answer is all held there is answered without a promise. A
 * usage-limited feature reads its month's usage fresh.
 */
export function checkPermission(
  deps: CheckDeps,
  asker: CheckAsker,
  input: TPermissionCheckRequest,
): TPermissionCheckResult | Promise<TPermissionCheckResult> {
  if (isApplication(asker)) {
    const cached = answerFromCache(deps.access, asker.found.application, input);
    if (cached) {
      return cached;
    }
  }
  return checkLoading(deps, asker, input);
}

async function checkLoading(deps: CheckDeps, asker: CheckAsker, input: TPermissionCheckRequest): Promise<TPermissionCheckResult> {
  const organization = await organizationOf(deps, asker, input);
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
  if (!isControlPermission(permission) && !(await deps.access.productPermissionExists(permission))) {
    throw unknownPermission(permission);
  }
  return judge(organization.id, userId, permission, await deps.access.standing(organization.id, userId));
}
