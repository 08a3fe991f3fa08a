import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedWebhookDelivery, seedWebhookEndpoint } from './webhooks.fixtures.ts';

// The server running this matrix needs WEBHOOK_ALLOW_PRIVATE=true: endpoints point at loopback.

let n = 0;

/** A fresh endpoint of the fixture's organization for each caller (delete and rotate consume it). */
async function endpointOf({ server, org }: MatrixFixture): Promise<string> {
  const { id } = await seedWebhookEndpoint(server.services.db, server.services.secretBox, { tenantId: org.id });
  return id;
}

/** A fresh failed delivery for each caller (a retry moves it to pending). */
async function failedDeliveryOf(fixture: MatrixFixture): Promise<string> {
  const endpointId = await endpointOf(fixture);
  const { id } = await seedWebhookDelivery(fixture.server.services.db, { tenantId: fixture.org.id, endpointId, status: 'failed' });
  return id;
}

export const MATRIX: MatrixRoute[] = [
  {
    // The events feed: webhooks.read, then each event type's read permission (events-feed tests).
    method: 'GET',
    template: '/v1/events',
    permission: 'webhooks.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/events?organization_slug=${org.slug}` }),
  },
  {
    method: 'GET',
    template: '/v1/webhook-endpoints',
    permission: 'webhooks.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/webhook-endpoints?organization_slug=${org.slug}` }),
  },
  {
    method: 'POST',
    template: '/v1/webhook-endpoints',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 201,
    prepare: async ({ org }) => ({
      path: '/v1/webhook-endpoints',
      body: { organization_slug: org.slug, url: `http://127.0.0.1:9/matrix-${++n}`, eventTypes: ['user.created'] },
    }),
  },
  {
    method: 'GET',
    template: '/v1/webhook-endpoints/{id}',
    permission: 'webhooks.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/webhook-endpoints/${await endpointOf(f)}` }),
  },
  {
    method: 'PATCH',
    template: '/v1/webhook-endpoints/{id}',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({
      path: `/v1/webhook-endpoints/${await endpointOf(f)}`,
      body: { organization_slug: f.org.slug, description: `Matrix ${++n}`, eventTypes: ['user.created', 'user.updated'] },
    }),
  },
  {
    method: 'DELETE',
    template: '/v1/webhook-endpoints/{id}',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/webhook-endpoints/${await endpointOf(f)}` }),
  },
  {
    method: 'POST',
    template: '/v1/webhook-endpoints/{id}/rotate-secret',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/webhook-endpoints/${await endpointOf(f)}/rotate-secret`, body: {} }),
  },
  {
    method: 'POST',
    template: '/v1/webhook-endpoints/{id}/test',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 202,
    prepare: async (f) => ({ path: `/v1/webhook-endpoints/${await endpointOf(f)}/test?organization_slug=${f.org.slug}`, body: {} }),
  },
  {
    method: 'POST',
    template: '/v1/webhook-endpoints/{id}/replay',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 202,
    prepare: async (f) => {
      const endpointId = await endpointOf(f);
      const { eventId } = await seedWebhookDelivery(f.server.services.db, { tenantId: f.org.id, endpointId, status: 'succeeded' });
      return { path: `/v1/webhook-endpoints/${endpointId}/replay?organization_slug=${f.org.slug}`, body: { eventId } };
    },
  },
  {
    method: 'POST',
    template: '/v1/webhook-endpoints/{id}/retry-failed',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 202,
    prepare: async (f) => {
      const endpointId = await endpointOf(f);
      await seedWebhookDelivery(f.server.services.db, { tenantId: f.org.id, endpointId, status: 'failed' });
      return { path: `/v1/webhook-endpoints/${endpointId}/retry-failed?organization_slug=${f.org.slug}`, body: {} };
    },
  },
  {
    method: 'GET',
    template: '/v1/webhook-deliveries',
    permission: 'webhooks.read',
    mutation: false,
    apiKey: true,
    prepare: async ({ org }) => ({ path: `/v1/webhook-deliveries?organization_slug=${org.slug}&status=failed` }),
  },
  {
    method: 'GET',
    template: '/v1/webhook-deliveries/{id}',
    permission: 'webhooks.read',
    mutation: false,
    apiKey: true,
    prepare: async (f) => ({ path: `/v1/webhook-deliveries/${await failedDeliveryOf(f)}` }),
  },
  {
    method: 'POST',
    template: '/v1/webhook-deliveries/{id}/retry',
    permission: 'webhooks.manage',
    mutation: true,
    apiKey: true,
    okStatus: 200,
    prepare: async (f) => ({ path: `/v1/webhook-deliveries/${await failedDeliveryOf(f)}/retry?organization_slug=${f.org.slug}`, body: {} }),
  },
];
