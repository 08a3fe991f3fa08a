import { newId } from '@svc/contracts/ids';
import { invitations } from '@svc/db/schema/invitations';
import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/invitations',
    permission: 'invitations.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/invitations?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/invitations',
    permission: 'invitations.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({
      path: '/v1/invitations',
      body: { organization_slug: org.slug, email: `matrix-${++n}-${Date.now()}@example.com` },
    }),
  },
  {
    method: 'GET',
    template: '/v1/invitations/{id}',
    permission: 'invitations.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org, server }) => {
      const id = newId('invitation');
      await server.services.db.insert(invitations).values({
        id,
        tenantId: org.id,
        email: `read-${++n}@example.com`,
        roleKey: 'org_member',
        tokenHash: `matrix-${id}`,
        expiresAt: new Date(Date.now() + 3_600_000),
      });
      return { path: `/v1/invitations/${id}?organization_slug=${org.slug}` };
    },
  },
  {
    method: 'POST',
    template: '/v1/invitations/{id}/revoke',
    permission: 'invitations.manage',
    mutation: true,
    apiKey: true,
    prepare: async ({ org, server }) => {
      const id = newId('invitation');
      await server.services.db.insert(invitations).values({
        id,
        tenantId: org.id,
        email: `revoke-${++n}@example.com`,
        roleKey: 'org_member',
        tokenHash: `matrix-${id}`,
        expiresAt: new Date(Date.now() + 3_600_000),
      });
      return { path: `/v1/invitations/${id}/revoke?organization_slug=${org.slug}` };
    },
  },
  {
    method: 'POST',
    template: '/v1/invitations/{id}/resend',
    permission: 'invitations.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org, server }) => {
      const id = newId('invitation');
      await server.services.db.insert(invitations).values({
        id,
        tenantId: org.id,
        email: `resend-${++n}-${Date.now()}@example.com`,
        roleKey: 'org_member',
        tokenHash: `matrix-${id}`,
        expiresAt: new Date(Date.now() + 3_600_000),
      });
      return { path: `/v1/invitations/${id}/resend?organization_slug=${org.slug}` };
    },
  },
];
