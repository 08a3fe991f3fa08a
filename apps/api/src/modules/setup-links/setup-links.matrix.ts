import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedSetupLink } from './setup-links.fixtures.ts';

/** A fresh link of the fixture's organization for each caller (revoke consumes it). */
async function linkOf({ server, org, admin }: MatrixFixture): Promise<string> {
  return (await seedSetupLink(server.services.db, { tenantId: org.id, createdByUserId: admin.user.id })).id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/setup-links',
    permission: 'sso.manage',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/setup-links?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/setup-links',
    permission: 'sso.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({ path: '/v1/setup-links', body: { organization_slug: org.slug, purpose: 'directory' } }),
  },
  {
    method: 'POST',
    template: '/v1/setup-links/{id}/revoke',
    permission: 'sso.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/setup-links/${await linkOf(f)}/revoke`, body: {} }),
  },
];
