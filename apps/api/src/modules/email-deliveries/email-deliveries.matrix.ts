import { newId } from '@svc/contracts/ids';
import { emailDeliveries } from '@svc/db/schema/email-deliveries';
import type { MatrixRoute } from '../../../../../test/support/auth-matrix.ts';

let n = 0;

/**
 * The file that runs these (email-deliveries.test.ts) starts its server with an SMTP provider:
 * POST /process answers 200 for an allowed caller only when email delivery is enabled.
 */
export const MATRIX: MatrixRoute[] = [
  {
    method: 'GET',
    template: '/v1/email-deliveries',
    permission: 'email.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/email-deliveries?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/email-deliveries/process',
    permission: 'email.process',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async ({ org, server }) => {
      // A delivery already sent: selecting it exercises the id check without sending anything.
      const id = newId('emailDelivery');
      await server.services.db.insert(emailDeliveries).values({
        id,
        tenantId: org.id,
        kind: 'invitation',
        recipient: `matrix-${++n}@example.com`,
        subject: 'Matrix',
        status: 'sent',
        sentAt: new Date(),
      });
      return { path: '/v1/email-deliveries/process', body: { organization_slug: org.slug, ids: [id] } };
    },
  },
];
