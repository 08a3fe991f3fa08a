import { ZFeedEventPage, ZListFeedEventsRequest } from '@svc/contracts/events-feed';
import {
  ZCreateWebhookEndpointRequest,
  ZDeletedWebhookEndpoint,
  ZListWebhookDeliveriesRequest,
  ZListWebhookEndpointsRequest,
  ZUpdateWebhookEndpointRequest,
  ZWebhookDelivery,
  ZWebhookDeliveryDetail,
  ZWebhookDeliveryPage,
  ZWebhookDeliveryRef,
  ZWebhookEndpoint,
  ZWebhookEndpointPage,
  ZWebhookEndpointRef,
  ZWebhookEndpointWithSecret,
  ZWebhookEventTypeCatalog,
  ZWebhookReplayRequest,
  ZWebhookReplayResponse,
  ZWebhookRetryFailedResponse,
  ZWebhookTestResponse,
} from '@svc/contracts/webhooks';
import { z } from 'zod';
import type { AppServices } from '../../context.ts';
import { spendBudget } from '../../http/rate-limit.ts';
import { listEvents } from '../../modules/webhooks/events-feed.ts';
import {
  createEndpoint,
  DELIVERY_RECORD,
  deleteEndpoint,
  ENDPOINT_RECORD,
  getDelivery,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  listEventTypes,
  type ReplaySettings,
  replayEvents,
  retryDelivery,
  retryFailedDeliveries,
  rotateEndpointSecret,
  sendTestEvent,
  updateEndpoint,
  type WebhookSettings,
} from '../../modules/webhooks/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../procedures.ts';

const tags = ['webhooks'];

/** RATE_LIMIT_WEBHOOK_REPLAYS_PER_MINUTE replays per endpoint per minute, in the shared counters. */
function replaySettingsOf(services: AppServices, res: Parameters<typeof spendBudget>[1]): ReplaySettings {
  const perMinute = services.config.rateLimit.webhookReplaysPerMinute;
  return {
    throttle: (endpointId) =>
      spendBudget(services, res, {
        key: `webhook-replay:${endpointId}`,
        perMinute,
        refusal: `at most ${perMinute} replays per endpoint per minute`,
      }),
  };
}

function settingsOf(services: AppServices): WebhookSettings {
  return {
    secretBox: services.secretBox,
    allowPrivate: services.config.webhooks.allowPrivate,
    secretGraceMs: services.config.webhooks.secretGraceMs,
  };
}

/** Lists and creation name their organization by organization_slug; `{id}` routes find it from the endpoint or delivery. */
const read = { permission: 'webhooks.read', organization: 'slug' } as const;
const manage = { permission: 'webhooks.manage', organization: 'slug', adminOnly: true } as const;
const readEndpoint = { permission: 'webhooks.read', organization: ENDPOINT_RECORD } as const;
const manageEndpoint = { permission: 'webhooks.manage', organization: ENDPOINT_RECORD, adminOnly: true } as const;
const readDelivery = { permission: 'webhooks.read', organization: DELIVERY_RECORD } as const;
const manageDelivery = { permission: 'webhooks.manage', organization: DELIVERY_RECORD, adminOnly: true } as const;

/**
 * Webhook endpoints and their deliveries (issue 5). Reads need webhooks.read, changes
 * webhooks.manage (and, for a person, the org_admin role). Tenant API keys with the scope may
 * call every route: a signing secret only lets its holder check svc's signatures.
 */
export const webhooksRouter = router({
  eventTypes: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/webhook-event-types', tags, summary: 'The event types webhook endpoints can subscribe to' } })
    .input(z.void())
    .output(ZWebhookEventTypeCatalog)
    .query(() => listEventTypes()),
  endpoint: router({
    list: controlProcedure
      .meta({
        access: read,
        openapi: { method: 'GET', path: '/webhook-endpoints', tags, summary: "List an organization's webhook endpoints" },
      })
      .input(ZListWebhookEndpointsRequest)
      .use(resolveAccess)
      .output(ZWebhookEndpointPage)
      .query(({ ctx, input }) => listEndpoints(ctx.services.db, ctx.access, input)),
    create: controlProcedure
      .meta({
        access: manage,
        errors: ['unknown_event_type', 'webhook_url_invalid', 'webhook_url_not_allowed'],
        openapi: {
          method: 'POST',
          path: '/webhook-endpoints',
          tags,
          summary: 'Create a webhook endpoint; its signing secret (whsec_...) is returned this once',
        },
        successStatus: 201,
        subscription: {},
      })
      .input(ZCreateWebhookEndpointRequest)
      .use(resolveAccess)
      .output(ZWebhookEndpointWithSecret)
      .mutation(({ ctx, input }) => createEndpoint(ctx.services.db, settingsOf(ctx.services), ctx.access, ctx.request, input)),
    get: controlProcedure
      .meta({
        access: readEndpoint,
        openapi: { method: 'GET', path: '/webhook-endpoints/{id}', tags, summary: 'Read a webhook endpoint' },
      })
      .input(ZWebhookEndpointRef)
      .use(resolveAccess)
      .output(ZWebhookEndpoint)
      .query(({ ctx, input }) => getEndpoint(ctx.services.db, ctx.access, input)),
    update: controlProcedure
      .meta({
        access: manageEndpoint,
        errors: ['unknown_event_type', 'webhook_url_invalid', 'webhook_url_not_allowed'],
        openapi: {
          method: 'PATCH',
          path: '/webhook-endpoints/{id}',
          tags,
          summary: "Change a webhook endpoint's URL, event types or description, or enable / disable it",
        },
        subscription: {},
      })
      .input(ZUpdateWebhookEndpointRequest)
      .use(resolveAccess)
      .output(ZWebhookEndpoint)
      .mutation(({ ctx, input }) => updateEndpoint(ctx.services.db, settingsOf(ctx.services), ctx.access, ctx.request, input)),
    delete: controlProcedure
      .meta({
        access: manageEndpoint,
        openapi: { method: 'DELETE', path: '/webhook-endpoints/{id}', tags, summary: 'Delete a webhook endpoint and its deliveries' },
        subscription: {},
      })
      .input(ZWebhookEndpointRef)
      .use(resolveAccess)
      .output(ZDeletedWebhookEndpoint)
      .mutation(({ ctx, input }) => deleteEndpoint(ctx.services.db, ctx.access, ctx.request, input)),
    rotateSecret: controlProcedureWithQuerySlug
      .meta({
        access: manageEndpoint,
        openapi: {
          method: 'POST',
          path: '/webhook-endpoints/{id}/rotate-secret',
          tags,
          summary: 'Replace the signing secret (returned this once); the old one keeps signing during the grace period',
        },
        subscription: {},
      })
      .input(ZWebhookEndpointRef)
      .use(resolveAccess)
      .output(ZWebhookEndpointWithSecret)
      .mutation(({ ctx, input }) => rotateEndpointSecret(ctx.services.db, settingsOf(ctx.services), ctx.access, ctx.request, input)),
    test: controlProcedureWithQuerySlug
      .meta({
        access: manageEndpoint,
        errors: ['webhook_endpoint_disabled'],
        openapi: {
          method: 'POST',
          path: '/webhook-endpoints/{id}/test',
          tags,
          summary: 'Queue a webhook.test event for this endpoint only',
        },
        successStatus: 202,
        subscription: {},
      })
      .input(ZWebhookEndpointRef)
      .use(resolveAccess)
      .output(ZWebhookTestResponse)
      .mutation(({ ctx, input }) => sendTestEvent(ctx.services.db, ctx.access, ctx.request, input)),
    replay: controlProcedureWithQuerySlug
      .meta({
        access: manageEndpoint,
        errors: ['webhook_endpoint_disabled', 'webhook_event_type_not_subscribed', 'webhook_replay_too_large'],
        openapi: {
          method: 'POST',
          path: '/webhook-endpoints/{id}/replay',
          tags,
          summary:
            'Re-send one event, or every event of a time range (at most 10,000 over at most 7 days), to this endpoint only, with the original webhook-id',
        },
        successStatus: 202,
        subscription: {},
      })
      .input(ZWebhookReplayRequest)
      .use(resolveAccess)
      .output(ZWebhookReplayResponse)
      .mutation(({ ctx, input }) => replayEvents(ctx.services.db, replaySettingsOf(ctx.services, ctx.res), ctx.access, ctx.request, input)),
    retryFailed: controlProcedureWithQuerySlug
      .meta({
        access: manageEndpoint,
        errors: ['webhook_endpoint_disabled'],
        openapi: {
          method: 'POST',
          path: '/webhook-endpoints/{id}/retry-failed',
          tags,
          summary: "Move the endpoint's failed and retrying deliveries (at most 1,000 per call) back to pending, due now",
        },
        successStatus: 202,
        subscription: {},
      })
      .input(ZWebhookEndpointRef)
      .use(resolveAccess)
      .output(ZWebhookRetryFailedResponse)
      .mutation(({ ctx, input }) => retryFailedDeliveries(ctx.services.db, ctx.access, ctx.request, input)),
  }),
  delivery: router({
    list: controlProcedure
      .meta({
        access: read,
        errors: ['unknown_event_type'],
        openapi: {
          method: 'GET',
          path: '/webhook-deliveries',
          tags,
          summary: 'List webhook deliveries, filtered by endpoint, status and event type',
        },
      })
      .input(ZListWebhookDeliveriesRequest)
      .use(resolveAccess)
      .output(ZWebhookDeliveryPage)
      .query(({ ctx, input }) => listDeliveries(ctx.services.db, ctx.access, input)),
    get: controlProcedure
      .meta({
        access: readDelivery,
        openapi: { method: 'GET', path: '/webhook-deliveries/{id}', tags, summary: 'Read a webhook delivery with its attempts' },
      })
      .input(ZWebhookDeliveryRef)
      .use(resolveAccess)
      .output(ZWebhookDeliveryDetail)
      .query(({ ctx, input }) => getDelivery(ctx.services.db, ctx.access, input)),
    retry: controlProcedureWithQuerySlug
      .meta({
        access: manageDelivery,
        errors: ['webhook_delivery_not_retryable', 'webhook_endpoint_disabled'],
        openapi: {
          method: 'POST',
          path: '/webhook-deliveries/{id}/retry',
          tags,
          summary: 'Move a failed or retrying delivery back to pending, due now',
        },
        subscription: {},
      })
      .input(ZWebhookDeliveryRef)
      .use(resolveAccess)
      .output(ZWebhookDelivery)
      .mutation(({ ctx, input }) => retryDelivery(ctx.services.db, ctx.access, ctx.request, input)),
  }),
});

/**
 * The events feed: the events webhooks deliver, pulled in pages (docs/api.md "Events feed").
 * Needs webhooks.read, and serves each event type only to a caller holding its read permission.
 */
export const eventsRouter = router({
  list: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/events',
        tags: ['events'],
        summary: "Read the organization's events, oldest first, after a cursor",
        description:
          'Needs webhooks.read and, per event type, the read permission of what it is about. Filters: types (comma-separated), from (inclusive) and to (exclusive), ISO 8601. limit 1-500 (default 100). Each event has the id (webhook-id), type, createdAt (the payload timestamp) and data its webhooks carry. Keep nextCursor and ask again: no event is skipped however transactions interleave. A cursor only continues the feed (organization and filters) it came from (else 400 invalid_cursor); one before the retention window (EVENTS_RETENTION_DAYS) answers 410 cursor_expired.',
      },
      errors: ['unknown_event_type', 'invalid_cursor', 'cursor_expired'],
    })
    .input(ZListFeedEventsRequest)
    .use(resolveAccess)
    .output(ZFeedEventPage)
    .query(({ ctx, input }) =>
      listEvents(
        ctx.services.db,
        { secretBox: ctx.services.secretBox, retentionMs: ctx.services.config.eventsRetentionMs },
        ctx.access,
        input,
      ),
    ),
});
