import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedDomain } from './domains.fixtures.ts';

// The server running this matrix needs DNS_RESOLVER pointed at a test DNS server: verify asks it.

let n = 0;

/** A fresh domain of the fixture's organization for each caller (delete consumes it). */
async function domainOf({ server, org }: MatrixFixture): Promise<string> {
  return (await seedDomain(server.services.db, { tenantId: org.id })).id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/domains',
    permission: 'domains.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/domains?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/domains',
    permission: 'domains.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({
      path: '/v1/domains',
      body: { organization_slug: org.slug, domain: `matrix-${++n}-${org.id.slice(-6)}.example.org` },
    }),
  },
  {
    method: 'GET',
    template: '/v1/domains/{id}',
    permission: 'domains.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/domains/${await domainOf(f)}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/domains/{id}',
    permission: 'domains.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/domains/${await domainOf(f)}`, body: { policy: 'require_sso' } }),
  },
  {
    method: 'DELETE',
    template: '/v1/domains/{id}',
    permission: 'domains.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/domains/${await domainOf(f)}` }),
  },
  {
    method: 'POST',
    template: '/v1/domains/{id}/verify',
    permission: 'domains.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/domains/${await domainOf(f)}/verify`, body: {} }),
  },
];
