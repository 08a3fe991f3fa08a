import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedSignedIn } from '../../../../../test/support/tenancy.ts';

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/sessions',
    permission: 'sessions.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/sessions?organization_slug=${org.slug}` }),
  },
  {
    method: 'GET',
    template: '/v1/sessions/{id}',
    permission: 'sessions.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org, server }) => {
      const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
      return { path: `/v1/sessions/${member.sessionId}?organization_slug=${org.slug}` };
    },
  },
  {
    method: 'POST',
    template: '/v1/sessions/{id}/revoke',
    permission: 'sessions.revoke',
    mutation: true,
    apiKey: true,
    prepare: async ({ org, server }) => {
      // A fresh live session of a member of `org` for each caller.
      const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
      return { path: `/v1/sessions/${member.sessionId}/revoke?organization_slug=${org.slug}`, body: {} };
    },
  },
];
