import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedDirectory } from './directories.fixtures.ts';

/** A fresh directory of the fixture's organization for each caller (delete consumes it). */
async function directoryOf({ server, org }: MatrixFixture): Promise<string> {
  return (await seedDirectory(server.services.db, { tenantId: org.id })).id;
}

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/directories',
    permission: 'directories.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/directories?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/directories',
    permission: 'directories.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({ path: '/v1/directories', body: { organization_slug: org.slug, name: 'Matrix directory' } }),
  },
  {
    method: 'GET',
    template: '/v1/directories/{id}',
    permission: 'directories.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/directories/${await directoryOf(f)}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/directories/{id}',
    permission: 'directories.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/directories/${await directoryOf(f)}`, body: { name: 'Renamed' } }),
  },
  {
    method: 'POST',
    template: '/v1/directories/{id}/rotate-token',
    permission: 'directories.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/directories/${await directoryOf(f)}/rotate-token`, body: {} }),
  },
  {
    method: 'DELETE',
    template: '/v1/directories/{id}',
    permission: 'directories.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/directories/${await directoryOf(f)}` }),
  },
  {
    method: 'GET',
    template: '/v1/directories/{id}/requests',
    permission: 'directories.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/directories/${await directoryOf(f)}/requests` }),
  },
];
