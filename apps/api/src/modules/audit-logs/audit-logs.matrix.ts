import { newId } from '@svc/contracts/ids';
import { insertAuditLog } from '@svc/db/queries/audit-logs';
import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/audit-logs',
    permission: 'audit.read',
    mutation: false,
    apiKey: true,
    // Named by slug: the outsider and the other organization's key must get 404 for it, and a
    // platform admin (whose active workspace is the platform) reads it by name.
    prepare: async ({ org }) => ({ path: `/v1/audit-logs?organization_slug=${org.slug}` }),
    okStatus: 200,
  },
  {
    method: 'GET',
    template: '/v1/audit-logs/{id}',
    permission: 'audit.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org, server }) => {
      const entry = await insertAuditLog(server.services.db, {
        id: newId('auditLog'),
        tenantId: org.id,
        actorType: 'system',
        action: 'tenant.updated',
        targetType: 'tenant',
        targetId: org.id,
        summary: { changes: { name: { from: 'Before', to: 'After' } } },
      });
      return { path: `/v1/audit-logs/${entry.id}?organization_slug=${org.slug}` };
    },
    okStatus: 200,
  },
];
