import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedApiKey } from '../../../../../test/support/tenancy.ts';

let n = 0;

/** A fresh live key of the fixture's organization for each caller: rotate and revoke consume it. */
async function freshKey(tenantId: string, server: Parameters<MatrixRoute['prepare']>[0]['server']): Promise<string> {
  const key = await seedApiKey(server.services.db, { tenantId, scopes: ['tenant.read'], name: `Matrix ${++n}` });
  return key.id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/tenants/{id}/api-keys',
    permission: 'api_keys.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/api-keys` }),
  },
  {
    method: 'GET',
    template: '/v1/api-keys/{id}',
    permission: 'api_keys.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org, server }) => ({ path: `/v1/api-keys/${await freshKey(org.id, server)}` }),
  },
  {
    method: 'POST',
    template: '/v1/tenants/{id}/api-keys',
    permission: 'api_keys.manage',
    mutation: true,
    // An API key may not mint keys (privilege escalation): 403 even with the scope.
    apiKey: false,
    okStatus: 201,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/api-keys`, body: { name: `Matrix ${++n}`, scopes: ['tenant.read'] } }),
  },
  {
    method: 'POST',
    template: '/v1/api-keys/{id}/rotate',
    permission: 'api_keys.manage',
    mutation: true,
    // Rotating hands out the key's new secret: as minting, session only.
    apiKey: false,
    okStatus: 200,
    prepare: async ({ org, server }) => ({ path: `/v1/api-keys/${await freshKey(org.id, server)}/rotate`, body: {} }),
  },
  {
    method: 'POST',
    template: '/v1/api-keys/{id}/revoke',
    permission: 'api_keys.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, server }) => ({ path: `/v1/api-keys/${await freshKey(org.id, server)}/revoke`, body: {} }),
  },
];
