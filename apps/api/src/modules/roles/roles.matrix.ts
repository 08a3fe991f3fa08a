import { newId } from '@svc/contracts/ids';
import { roles } from '@svc/db/schema/roles';
import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/roles',
    permission: 'roles.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/roles?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/roles',
    permission: 'roles.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({
      path: '/v1/roles',
      body: { organization_slug: org.slug, key: `matrix_${++n}`, name: 'Matrix role', permissions: ['tenant.read'] },
    }),
  },
  {
    method: 'PATCH',
    template: '/v1/roles/{id}',
    permission: 'roles.manage',
    mutation: true,
    apiKey: true,
    prepare: async ({ org, server }) => {
      const id = newId('role');
      await server.services.db.insert(roles).values({ id, tenantId: org.id, key: `patched_${++n}`, name: 'Before', permissions: [] });
      return { path: `/v1/roles/${id}`, body: { organization_slug: org.slug, name: 'After' } };
    },
  },
  {
    method: 'DELETE',
    template: '/v1/roles/{id}',
    permission: 'roles.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, server }) => {
      const id = newId('role');
      await server.services.db.insert(roles).values({ id, tenantId: org.id, key: `deleted_${++n}`, name: 'Unused', permissions: [] });
      return { path: `/v1/roles/${id}?organization_slug=${org.slug}` };
    },
  },
];
