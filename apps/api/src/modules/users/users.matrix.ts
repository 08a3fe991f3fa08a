import { newId } from '@svc/contracts/ids';
import { memberships, users } from '@svc/db/schema/identity';
import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/users',
    permission: 'users.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/users?organization_slug=${org.slug}` }),
  },
  {
    method: 'GET',
    template: '/v1/users/{id}',
    permission: 'users.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org, server }) => {
      // A pre-provisioned member of `org` for each caller.
      const id = newId('user');
      await server.services.db.insert(users).values({ id, email: `matrix-get-${++n}-${org.id}@example.com` });
      await server.services.db.insert(memberships).values({ tenantId: org.id, userId: id, roleKey: 'org_member' });
      return { path: `/v1/users/${id}?organization_slug=${org.slug}` };
    },
  },
  {
    method: 'POST',
    template: '/v1/users',
    permission: 'users.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({
      path: '/v1/users',
      body: { organization_slug: org.slug, email: `matrix-${++n}-${org.id}@example.com` },
    }),
  },
  {
    method: 'PATCH',
    template: '/v1/users/{id}',
    permission: 'users.manage',
    mutation: true,
    apiKey: true,
    prepare: async ({ org, server }) => {
      // A pre-provisioned member of `org` for each caller.
      const id = newId('user');
      await server.services.db.insert(users).values({ id, email: `matrix-patch-${++n}-${org.id}@example.com` });
      await server.services.db.insert(memberships).values({ tenantId: org.id, userId: id, roleKey: 'org_member' });
      return { path: `/v1/users/${id}`, body: { organization_slug: org.slug, roleKey: 'org_admin' } };
    },
  },
  {
    method: 'DELETE',
    template: '/v1/users/{id}',
    permission: 'users.manage',
    mutation: true,
    apiKey: true,
    prepare: async ({ org, server }) => {
      const id = newId('user');
      await server.services.db.insert(users).values({ id, email: `matrix-delete-${++n}-${org.id}@example.com` });
      await server.services.db.insert(memberships).values({ tenantId: org.id, userId: id, roleKey: 'org_member' });
      return { path: `/v1/users/${id}?organization_slug=${org.slug}` };
    },
  },
];
