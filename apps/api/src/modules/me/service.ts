import { AppError } from '@svc/contracts/errors';
import type { TMeResponse } from '@svc/contracts/me';
import type { Db } from '@svc/db/client';
import { findOrganizationById, findOrganizationBySlug } from '@svc/db/queries/organizations';
import { type SessionWithUser, setSessionActiveTenant } from '@svc/db/queries/sessions';

/**
 * GET /v1/me, from what the session check already read: no further query, except for a platform
 * admin acting in an organization they are not a member of.
 */
export async function describeMe(db: Db, { session, user, memberships }: SessionWithUser): Promise<TMeResponse> {
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
    activeWorkspace:
      active && active.kind !== 'keyless' ? { id: active.id, slug: active.slug, name: active.name, kind: active.kind } : null,
    isPlatformAdmin: session.isPlatformAdmin,
  };
}

/**
 * Moves the session to another of the user's organizations (a platform admin: any tenant
 * organization or the platform workspace). An organization the user cannot act in is 404, as
 * everywhere. Session state, not a change to any organization: no audit entry.
 */
export async function switchWorkspace(db: Db, current: SessionWithUser, slug: string): Promise<TMeResponse> {
  const membership = current.memberships.find((m) => m.organization.slug === slug);
  let target = membership?.organization;
  if (!target && current.session.isPlatformAdmin) {
    const found = await findOrganizationBySlug(db, slug);
    target = found && found.kind !== 'keyless' ? found : undefined;
  }
  if (!target || target.kind === 'keyless') {
    throw new AppError('not_found', 'organization not found');
  }
  await setSessionActiveTenant(db, { id: current.session.id, userId: current.user.id, tenantId: target.id });
  return describeMe(db, { ...current, session: { ...current.session, activeTenantId: target.id } });
}
