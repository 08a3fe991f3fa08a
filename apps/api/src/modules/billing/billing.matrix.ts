import { billingProviders } from '@svc/db/schema/billing';
import { eq } from 'drizzle-orm';
import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedSyncLog } from './billing.fixtures.ts';

let n = 0;

/** A fresh failed sync log for each caller (a retry moves it to queued). */
async function failedLogOf({ server, org }: MatrixFixture): Promise<string> {
  const { id } = await seedSyncLog(server.services.db, { tenantId: org.id, status: 'failed' });
  return id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/tenants/{id}/billing/providers',
    permission: 'billing.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/billing/providers` }),
  },
  {
    method: 'POST',
    template: '/v1/tenants/{id}/billing/providers',
    permission: 'billing.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    // One record per provider: each caller starts from none (the route answers 409 otherwise).
    prepare: async ({ server, org }) => {
      await server.services.db.delete(billingProviders).where(eq(billingProviders.tenantId, org.id));
      return { path: `/v1/tenants/${org.id}/billing/providers`, body: { provider: 'paddle', externalAccountId: `sub_matrix_${++n}` } };
    },
  },
  {
    method: 'POST',
    template: '/v1/billing/connect/{provider}',
    permission: 'billing.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({
      path: '/v1/billing/connect/stripe',
      body: { organization_slug: org.slug, externalAccountId: `cus_matrix_${++n}`, mode: 'sandbox' },
    }),
  },
  {
    method: 'GET',
    template: '/v1/billing/mappings',
    permission: 'billing.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/billing/mappings?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/billing/mappings',
    permission: 'billing.manage',
    mutation: true,
    apiKey: true,
    // 201 when it creates the mapping, 200 when it re-points one (billing.test.ts checks which).
    prepare: async ({ org }) => ({
      path: '/v1/billing/mappings',
      body: { organization_slug: org.slug, provider: 'stripe', eventType: 'api.request', providerItemId: `meter_${++n}` },
    }),
  },
  {
    method: 'GET',
    template: '/v1/billing/sync-logs',
    permission: 'billing.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/billing/sync-logs?tenant_id=${org.id}&status=failed` }),
  },
  {
    method: 'POST',
    template: '/v1/billing/sync-logs/{id}/retry',
    permission: 'billing.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/billing/sync-logs/${await failedLogOf(f)}/retry`, body: {} }),
  },
];
