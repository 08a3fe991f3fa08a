import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedCompletedExport } from './exports.fixtures.ts';

/**
 * Every export route needs exports.create and, for a person, org_admin (an export is everything
 * the organization owns). The download is a plain Express route, not a procedure: it is in this
 * matrix like the others (the OpenAPI document lists it, so the coverage test requires it).
 */
export const MATRIX: MatrixRoute[] = [
  {
    method: 'POST',
    template: '/v1/export/all',
    permission: 'exports.create',
    mutation: true,
    apiKey: true,
    okStatus: 202,
    prepare: async ({ org }) => ({ path: '/v1/export/all', body: { organization_slug: org.slug, format: 'csv' } }),
  },
  {
    method: 'GET',
    template: '/v1/exports',
    permission: 'exports.create',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/exports?organization_slug=${org.slug}` }),
  },
  {
    method: 'GET',
    template: '/v1/exports/{id}',
    permission: 'exports.create',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, server }) => ({ path: `/v1/exports/${await seedCompletedExport(server.services.db, { tenantId: org.id })}` }),
  },
  {
    method: 'GET',
    template: '/v1/exports/{id}/download',
    permission: 'exports.create',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, server }) => ({
      path: `/v1/exports/${await seedCompletedExport(server.services.db, { tenantId: org.id })}/download`,
    }),
  },
];
