import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

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
];
