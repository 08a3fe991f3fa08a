import { newId } from '@svc/contracts/ids';
import { apiResources } from '@svc/db/schema/authorization';
import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

/**
 * The catalog's reads: the catalog is the platform's, the right to read it an organization's
 * (roles.read there, which its role managers hold), so they are run as every caller against the
 * fixture's organization. The changes are platform admins' only, no organization involved:
 * authorization.test.ts runs them as every kind of caller ("platform-only routes") and
 * test/auth-matrix-coverage.test.ts lists them with that reason.
 */
export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/api-resources',
    permission: 'roles.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/api-resources?organization_slug=${org.slug}` }),
  },
  {
    method: 'GET',
    template: '/v1/api-resources/{id}',
    permission: 'roles.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, server }) => {
      const id = newId('apiResource');
      await server.services.db
        .insert(apiResources)
        .values({ id, identifier: `https://matrix-${++n}-${Date.now()}.example.com`, name: 'Matrix API' });
      return { path: `/v1/api-resources/${id}?organization_slug=${org.slug}` };
    },
  },
  {
    method: 'GET',
    template: '/v1/product-roles',
    permission: 'roles.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/product-roles?organization_slug=${org.slug}` }),
  },
];
