import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

/**
 * POST /v1/permissions/check as the control plane's callers: a person's permission needs
 * members.read in the organization (org_member has it), a feature subscription.read. Application
 * secret keys, the check's third kind of caller, are walked in permission-check.test.ts.
 */
export const MATRIX: MatrixRoute[] = [
  {
    method: 'POST',
    template: '/v1/permissions/check',
    permission: 'members.read',
    mutation: false,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, admin }) => ({
      path: '/v1/permissions/check',
      body: { organizationId: org.id, userId: admin.user.id, permission: 'members.read' },
    }),
  },
];
