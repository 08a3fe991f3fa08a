import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

/**
 * GET /v1/subscription is the one organization-scoped route here that any member may call. The
 * plan routes are not organization-scoped, and POST/PATCH plans and PATCH /v1/subscription are for
 * platform admins only: subscriptions.test.ts runs those as every kind of caller
 * ("platform-only routes"), and test/auth-matrix-coverage.test.ts lists them with that reason.
 */
export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/subscription',
    permission: 'subscription.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org }) => ({ path: `/v1/subscription?organization_slug=${org.slug}` }),
  },
];
