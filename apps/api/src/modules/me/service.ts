import type { TMeResponse } from '@svc/contracts/me';
import type { DbOrTx } from '@svc/db/client';
import { membershipsOfUser } from '@svc/db/queries/identity';
import type { SessionWithUser } from '@svc/db/queries/sessions';

export async function describeMe(db: DbOrTx, { session, user }: SessionWithUser): Promise<TMeResponse> {
  const memberships = await membershipsOfUser(db, user.id);
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
