import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

/** A body naming the fixture's organization: an outsider's key or session gets 404 for it. */
const event = (slug: string) => ({
  organization_slug: slug,
  idempotencyKey: `matrix-${++n}-${Math.random().toString(36).slice(2)}`,
  eventType: 'matrix',
});

export const MATRIX: MatrixRoute[] = [
  {
    method: 'POST',
    template: '/v1/usage/events',
    permission: 'usage.write',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({ path: '/v1/usage/events', body: event(org.slug) }),
  },
  {
    method: 'POST',
    template: '/v1/usage-events',
    permission: 'usage.write',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({ path: '/v1/usage-events', body: event(org.slug) }),
  },
  {
    method: 'GET',
    template: '/v1/tenants/{id}/usage/events',
    permission: 'usage.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/usage/events` }),
  },
  {
    method: 'GET',
    template: '/v1/tenants/{id}/usage/summary',
    permission: 'usage.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/usage/summary?bucket=hour` }),
  },
  {
    method: 'GET',
    template: '/v1/usage',
    permission: 'usage.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/usage?organization_slug=${org.slug}` }),
  },
];
