import { AppError } from '@svc/contracts/errors';
import type { TMembershipDecisionResponse, TMeResponse } from '@svc/contracts/me';
import type { Db } from '@svc/db/client';
import { findOrganizationById, findOrganizationBySlug } from '@svc/db/queries/organizations';
import { type SessionWithUser, setSessionActiveTenant } from '@svc/db/queries/sessions';
import { acceptInvitedMembership, declineInvitedMembership } from '@svc/db/queries/users';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { UserPrincipal } from '../access/principal.ts';

/**
 * GET /v1/me, from what the session check already read: no further query, except for a platform
 * admin acting in an organization they are not a member of.
 */
export async function describeMe(db: Db, { session, user, memberships, pendingMemberships }: SessionWithUser): Promise<TMeResponse> {
  let active: { id: string; slug: string; name: string; kind: 'tenant' | 'platform' | 'keyless' } | undefined = memberships.find(
    (m) => m.organization.id === session.activeTenantId,
  )?.organization;
  if (!active && session.isPlatformAdmin && session.activeTenantId) {
    active = await findOrganizationById(db, session.activeTenantId);
  }
  return {
    user: { id: user.id, email: user.email, name: user.name },
    memberships: memberships.map((m) => ({
      organization: { id: m.organization.id, slug: m.organization.slug, name: m.organization.name },
      roleKey: m.roleKey,
    })),
    pendingMemberships: pendingMemberships.map((m) => ({
      organization: { id: m.organization.id, slug: m.organization.slug, name: m.organization.name },
      roleKey: m.roleKey,
      invitedAt: m.invitedAt,
    })),
    activeWorkspace:
      active && active.kind !== 'keyless' ? { id: active.id, slug: active.slug, name: active.name, kind: active.kind } : null,
    isPlatformAdmin: session.isPlatformAdmin,
  };
}

/**
 * Moves the session to another of the user's organizations, or, for a platform admin, to any
 * tenant organization or the platform workspace (then every console page acts there through
 * `authorize`, which lets a platform admin act in any organization). An organization the user
 * cannot act in (never joined, invited, suspended, removed, deleted, the keyless workspace) is
 * the 404 of an unknown slug, so the answer does not say which organizations exist.
 *
 * A member moving among their own organizations changes only their session: no audit entry. A
 * platform admin opening an organization they are not a member of is recorded in that
 * organization's audit log (`workspace.opened`), so its admins see who from the platform looked.
 */
export async function switchWorkspace(db: Db, principal: UserPrincipal, request: RequestMeta, slug: string): Promise<TMeResponse> {
  const membership = principal.memberships.find((m) => m.organization.slug === slug);
  let target = membership?.organization;
  if (!target && principal.session.isPlatformAdmin) {
    target = await findOrganizationBySlug(db, slug);
  }
  if (!target || target.kind === 'keyless') {
    throw new AppError('not_found', 'organization not found');
  }
  const to = target;
  await db.transaction(async (tx) => {
    await setSessionActiveTenant(tx, { id: principal.session.id, userId: principal.user.id, tenantId: to.id });
    if (!membership) {
      await recordAudit(tx, principal, request, {
        tenantId: to.id,
        action: 'workspace.opened',
        target: { type: 'tenant', id: to.id },
        summary: { slug: to.slug, as: 'platform_admin' },
      });
    }
  });
  return describeMe(db, { ...principal, session: { ...principal.session, activeTenantId: to.id } });
}

const NO_PENDING_MEMBERSHIP =
  'no membership of this organization is waiting for you (it was accepted, declined, withdrawn, or the organization is gone)';

/**
 * POST /v1/me/memberships/{organizationId}/accept: the signed-in person accepts a membership an
 * organization added them to (POST /v1/users). It becomes active, with the role the organization
 * chose, and the organization starts seeing the person's own name, email and sign-in history.
 * 404 when nothing is pending: never added, already decided, withdrawn, or the organization
 * deleted meanwhile (its memberships went with it). Audited as member.added (a webhook event).
 */
export async function acceptMembership(
  db: Db,
  principal: UserPrincipal,
  request: RequestMeta,
  organizationId: string,
): Promise<TMembershipDecisionResponse> {
  return db.transaction(async (tx) => {
    const accepted = await acceptInvitedMembership(tx, { tenantId: organizationId, userId: principal.user.id });
    const organization = accepted ? await findOrganizationById(tx, organizationId) : undefined;
    if (!accepted || !organization) {
      throw new AppError('not_found', NO_PENDING_MEMBERSHIP);
    }
    await recordAudit(tx, principal, request, {
      tenantId: organizationId,
      action: 'member.added',
      target: { type: 'user', id: principal.user.id },
      summary: { roleKey: accepted.roleKey, via: 'membership_accepted' },
    });
    return {
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      roleKey: accepted.roleKey,
      status: 'active',
    };
  });
}

/**
 * POST /v1/me/memberships/{organizationId}/decline: the person declines; the membership is
 * deleted (and its seat freed). 404 as for accept. Audited as membership.declined.
 */
export async function declineMembership(
  db: Db,
  principal: UserPrincipal,
  request: RequestMeta,
  organizationId: string,
): Promise<TMembershipDecisionResponse> {
  return db.transaction(async (tx) => {
    const organization = await findOrganizationById(tx, organizationId);
    const declined = organization ? await declineInvitedMembership(tx, { tenantId: organizationId, userId: principal.user.id }) : undefined;
    if (!organization || !declined) {
      throw new AppError('not_found', NO_PENDING_MEMBERSHIP);
    }
    await recordAudit(tx, principal, request, {
      tenantId: organizationId,
      action: 'membership.declined',
      target: { type: 'user', id: principal.user.id },
      summary: { roleKey: declined.roleKey },
    });
    return {
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      roleKey: declined.roleKey,
      status: 'declined',
    };
  });
}
