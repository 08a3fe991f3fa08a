import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/third-party-access',
    permission: 'connected_apps.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/third-party-access?organization_slug=${org.slug}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/third-party-access',
    permission: 'connected_apps.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: '/v1/third-party-access', body: { organization_slug: org.slug, mode: 'any' } }),
  },
];
