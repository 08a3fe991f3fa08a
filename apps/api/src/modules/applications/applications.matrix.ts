import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';

let n = 0;

/** A fresh application of the fixture's organization (each caller acts on its own one). */
async function appOf({ server, org }: MatrixFixture): Promise<string> {
  const created = await seedApplication(server.services.db, { org: org.slug, name: `Matrix app ${++n}` });
  return created.application.id;
}

// The {id} routes are called both ways a client may: with organization_slug (find the
// application within that organization) and without it (the organization the id belongs to).
export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/applications',
    permission: 'applications.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/applications?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/applications',
    permission: 'applications.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({ path: '/v1/applications', body: { organization_slug: org.slug, name: `Created ${++n}` } }),
  },
  {
    method: 'GET',
    template: '/v1/applications/{id}',
    permission: 'applications.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/applications/${await appOf(f)}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/applications/{id}',
    permission: 'applications.manage',
    mutation: true,
    apiKey: true,
    prepare: async (f) => ({
      path: `/v1/applications/${await appOf(f)}`,
      body: { organization_slug: f.org.slug, name: `Renamed ${++n}`, redirectUrls: ['https://app.example.com/callback'] },
    }),
  },
  {
    method: 'POST',
    template: '/v1/applications/{id}/status',
    permission: 'applications.manage',
    mutation: true,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/applications/${await appOf(f)}/status`, body: { status: 'disabled' } }),
  },
  {
    method: 'GET',
    template: '/v1/product-permissions',
    permission: 'applications.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/product-permissions?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/applications/{id}/rotate-secret',
    permission: 'applications.manage',
    mutation: true,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/applications/${await appOf(f)}/rotate-secret`, body: { organization_slug: f.org.slug } }),
  },
];
