import type { Db } from '@svc/db/client';
import { apiKeys } from '@svc/db/schema/api-keys';
import { memberships } from '@svc/db/schema/identity';
import { organizations } from '@svc/db/schema/organizations';
import { roles } from '@svc/db/schema/roles';
import { eq } from 'drizzle-orm';
import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

type Snapshot = {
  organization: typeof organizations.$inferSelect;
  memberships: (typeof memberships.$inferSelect)[];
  roles: (typeof roles.$inferSelect)[];
  apiKeys: (typeof apiKeys.$inferSelect)[];
};

const snapshots = new Map<string, Snapshot>();

async function takeSnapshot(db: Db, tenantId: string): Promise<Snapshot> {
  const [organization] = await db.select().from(organizations).where(eq(organizations.id, tenantId));
  if (!organization) {
    throw new Error('the matrix organization is gone before its first delete');
  }
  return {
    organization,
    memberships: await db.select().from(memberships).where(eq(memberships.tenantId, tenantId)),
    roles: await db.select().from(roles).where(eq(roles.tenantId, tenantId)),
    apiKeys: await db.select().from(apiKeys).where(eq(apiKeys.tenantId, tenantId)),
  };
}

/**
 * DELETE succeeds for the org admin, and the callers after it (the platform admin) must find
 * the same organization again: the first call photographs the organization with its members,
 * roles and keys; later calls put back whatever an earlier delete removed (same ids, same key
 * hashes), so every caller meets the fixture as it was.
 */
async function organizationAsItWas({ org, server }: MatrixFixture): Promise<void> {
  const db = server.services.db;
  const snapshot = snapshots.get(org.id);
  if (!snapshot) {
    snapshots.set(org.id, await takeSnapshot(db, org.id));
    return;
  }
  const [still] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, org.id));
  if (still) {
    return;
  }
  await db.transaction(async (tx) => {
    await tx.insert(organizations).values(snapshot.organization);
    if (snapshot.memberships.length > 0) {
      await tx.insert(memberships).values(snapshot.memberships);
    }
    if (snapshot.roles.length > 0) {
      await tx.insert(roles).values(snapshot.roles);
    }
    if (snapshot.apiKeys.length > 0) {
      await tx.insert(apiKeys).values(snapshot.apiKeys);
    }
  });
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/tenants/{id}',
    permission: 'tenant.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/tenants/{id}',
    permission: 'tenant.update',
    mutation: true,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}`, body: { name: `Renamed ${++n}` } }),
  },
  {
    method: 'GET',
    template: '/v1/tenants/{id}/overview',
    permission: 'tenant.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/overview` }),
  },
  {
    method: 'GET',
    template: '/v1/tenants/{id}/members',
    permission: 'members.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/members?limit=2` }),
  },
  {
    method: 'GET',
    template: '/v1/tenants/{id}/permissions/check',
    permission: 'tenant.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/permissions/check?permission=users.manage` }),
  },
  // Session only: deleting an organization is a person's decision, never a key's.
  {
    method: 'DELETE',
    template: '/v1/tenants/{id}',
    permission: 'tenant.delete',
    mutation: true,
    apiKey: false,
    prepare: async (fixture) => {
      await organizationAsItWas(fixture);
      return { path: `/v1/tenants/${fixture.org.id}` };
    },
    okStatus: 200,
  },
];
