import type { TMeResponse } from '@svc/contracts/me';
import type { SessionWithUser } from '@svc/db/queries/sessions';

/** GET /v1/me, from what the session check already read: no further query. */
export function describeMe({ session, user, memberships }: SessionWithUser): TMeResponse {
  const active = memberships.find((m) => m.organization.id === session.activeTenantId)?.organization;
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
