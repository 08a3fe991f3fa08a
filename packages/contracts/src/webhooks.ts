import { z } from 'zod';
import { EVENT_TYPES, type EventType } from './events.ts';
import { ZInstant, ZListQuery, ZPage, ZSlug } from './lists.ts';

// The id shapes of ids.ts, written out: that module draws random bytes with node:crypto at load,
// and this one is also bundled into the console.

/** `wh_` + 20 base62: a webhook endpoint id. Anything else is a 400, never a lookup. */
export const ZWebhookEndpointId = z.string().regex(/^wh_[0-9A-Za-z]{20}$/, 'expected a webhook endpoint id (wh_...)');

/** `whd_` + 20 base62: a webhook delivery id. */
export const ZWebhookDeliveryId = z.string().regex(/^whd_[0-9A-Za-z]{20}$/, 'expected a webhook delivery id (whd_...)');

/** `evt_` + 20 base62: an event id (the `webhook-id` of every delivery of the event). */
export const ZWebhookEventId = z.string().regex(/^evt_[0-9A-Za-z]{20}$/, 'expected an event id (evt_...)');

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

/** What each catalogued event type reports (GET /v1/webhook-event-types, the console's checkboxes). */
export const EVENT_TYPE_DESCRIPTIONS: Record<EventType, string> = {
  'setup_link.created': 'An admin created a setup link for an IT admin (SSO, directory sync or a domain)',
  'setup_link.opened': 'A setup link was opened: it now works in that browser only, until it expires',
  'setup_link.revoked': 'An admin revoked a setup link',
  'usage_event.created': 'A usage event was recorded',
  'usage.threshold_reached': "An event type's usage this month reached one of the plan's thresholds (a percentage of its limit)",
  'usage.summary': 'Hourly: the usage events recorded in the past hour, totalled per event type (instead of one usage_event.created each)',
  'invitation.created': 'Someone was invited to the organization',
  'invitation.accepted': 'An invitation was accepted',
  'invitation.revoked': 'An invitation was revoked',
  'member.added': 'A user joined the organization',
  'member.removed': 'A user left or was removed from the organization',
  'user.created': 'A user was created',
  'user.updated': "A user's name, role or status changed",
  'session.revoked': 'A session was signed out by an admin',
  'session.created': "A session signed in to one of the organization's applications, or to an application for the organization",
  'session.ended': "A session's sign-in to applications ended (sign-out, revocation, suspension, membership ended, application disabled)",
  'role.created': 'A custom role was created',
  'role.updated': 'A custom role was changed',
  'role.deleted': 'A custom role was deleted',
  'api_resource.created': 'Platform workspace only: an API of the product was registered, with its first permissions',
  'api_resource.updated': 'Platform workspace only: an API resource was renamed, or a permission was added, changed or deleted',
  'api_resource.deleted': 'Platform workspace only: an API resource and its permissions were deleted',
  'product_role.created': 'Platform workspace only: a product role every organization has was created',
  'product_role.updated': "Platform workspace only: a product role's name or permissions changed (the built-in rows' permissions included)",
  'product_role.deleted': 'Platform workspace only: a product role was deleted',
  'api_key.created': 'An API key was created',
  'api_key.rotated': "An API key's secret was replaced",
  'api_key.revoked': 'An API key was revoked',
  'application.created': 'An application was created',
  'application.updated': "An application's settings or status changed",
  'application.secret_rotated': "An application's secret key was rotated: the previous one (and the client secret it was) no longer works",
  'tenant.created': 'The organization was created',
  'tenant.updated': 'The organization was renamed or its slug changed',
  'tenant.deleted': 'The organization was deleted',
  'subscription.updated': "The subscription changed: plan, seats, status, or the plan's features",
  'export.completed': 'An export finished',
  'domain.created': 'An email domain was added to the organization (not yet verified)',
  'third_party_access.updated': 'Which third-party apps and agents may connect to the organization changed',
  'connected_app.revoked': "An admin revoked a third-party app's or agent's grant: its refresh tokens stopped",
  'domain.updated': "A domain's sign-in policy changed (none, auto-join with a role, or require SSO)",
  'domain.verified': "A domain's DNS TXT record was found: the organization owns it",
  'domain.unverified': "A verified domain's DNS TXT record was no longer found by the daily re-check: it is pending again",
  'domain.deleted': 'An email domain was removed from the organization',
  'directory.created': 'A SCIM directory was created',
  'directory.updated': "A SCIM directory's name, default role or group-to-role mapping changed",
  'directory.token_rotated': "A SCIM directory's bearer token was replaced: the previous one no longer works",
  'directory.deleted': 'A SCIM directory was deleted (the memberships it made stay)',
  'directory_group.created': "The organization's directory provisioned a group",
  'directory_group.updated': "A directory group's name or members changed (its members' roles follow the mapping)",
  'directory_group.deleted': 'A directory group was deleted',
  'sso.connection_created': 'An SSO connection (SAML or OIDC) was added to the organization',
  'sso.connection_updated': "An SSO connection's settings changed (IdP, mapping, roles, enabled)",
  'sso.connection_deleted': 'An SSO connection was removed from the organization',
  'sso.signed_in': "A person signed in through one of the organization's SSO connections",
};

/** The catalog as GET /v1/webhook-event-types answers it, in catalog order. */
export const WEBHOOK_EVENT_TYPE_CATALOG = EVENT_TYPES.map((type) => ({ type, description: EVENT_TYPE_DESCRIPTIONS[type] }));

export const ZWebhookEventTypeCatalog = z
  .object({
    data: z.array(z.object({ type: z.string(), description: z.string() })),
    nextCursor: z.null().describe('always null: the catalog is one page'),
  })
  .meta({ id: 'WebhookEventTypeCatalog' });
export type TWebhookEventTypeCatalog = z.infer<typeof ZWebhookEventTypeCatalog>;

/**
 * Event types in requests: at least one. Names are checked against the catalog by the service, so
 * an unknown one is 400 `unknown_event_type` naming it (not a generic validation error).
 * Repeats are dropped and the list is sorted when stored.
 */
export const ZWebhookEventTypes = z
  .array(z.string().trim().min(1).max(100))
  .min(1, 'choose at least one event type')
  .max(EVENT_TYPES.length * 2);

/**
 * The URL receivers are reached at. Its rules (http or https, no credentials, a public address
 * unless WEBHOOK_ALLOW_PRIVATE) are checked by the service, which answers `webhook_url_invalid`
 * or `webhook_url_not_allowed`.
 */
export const ZWebhookUrl = z.string().trim().min(1, 'enter the URL of your receiver').max(4096);

/** Free text for people: at most 500 characters. */
export const ZWebhookDescription = z.string().trim().max(500, 'at most 500 characters');

export const ZWebhookDisabledReason = z.enum(['manual', 'gone']).meta({ id: 'WebhookDisabledReason' });

/** The window endpoint health looks back over (docs/api.md "Webhooks"). */
export const WEBHOOK_HEALTH_WINDOW_HOURS = 24;

/**
 * How an endpoint's receiver has answered lately: the deliveries created in the last
 * WEBHOOK_HEALTH_WINDOW_HOURS hours.
 */
export const ZWebhookEndpointHealth = z
  .object({
    /** Deliveries of the window attempted at least once. */
    attempted: z.number().int(),
    /** Of those, how many succeeded. */
    succeeded: z.number().int(),
    /** succeeded / attempted, 0 to 1; null when nothing was attempted. */
    successRate: z.number().nullable(),
    /** Deliveries of the window that are failed or retrying now (POST .../retry-failed sends them again). */
    unsucceeded: z.number().int(),
    /** True when the window's most recent attempt did not succeed: the receiver is failing now. */
    failing: z.boolean(),
    /** The window's most recent failed attempt: when, which delivery, what the receiver said. */
    lastError: z
      .object({
        at: z.string(),
        deliveryId: z.string(),
        statusCode: z.number().int().nullable(),
        outcome: z.string(),
        error: z.string().nullable(),
      })
      .nullable(),
  })
  .meta({ id: 'WebhookEndpointHealth' });
export type TWebhookEndpointHealth = z.infer<typeof ZWebhookEndpointHealth>;

/**
 * A webhook endpoint as every read shows it. Never the signing secret (docs/architecture.md section 5): it is shown
 * once, beside the endpoint, on create and on rotate.
 */
export const ZWebhookEndpoint = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    /** Catalogued event types this endpoint receives, sorted. */
    eventTypes: z.array(z.string()),
    enabled: z.boolean(),
    /** `manual` (an admin turned it off) or `gone` (the receiver answered 410); null while enabled. */
    disabledReason: ZWebhookDisabledReason.nullable(),
    disabledAt: z.string().nullable(),
    secretRotatedAt: z.string().nullable(),
    /** Until then deliveries carry a second signature made with the secret before the last rotation. */
    previousSecretExpiresAt: z.string().nullable(),
    /** How the receiver has answered over the last 24 hours. */
    health: ZWebhookEndpointHealth,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'WebhookEndpoint' });
export type TWebhookEndpoint = z.infer<typeof ZWebhookEndpoint>;

export const ZWebhookEndpointPage = ZPage(ZWebhookEndpoint).meta({ id: 'WebhookEndpointPage' });
export type TWebhookEndpointPage = z.infer<typeof ZWebhookEndpointPage>;

/** 201 of create and 200 of rotate-secret: `secret` (`whsec_...`) is shown this once. */
export const ZWebhookEndpointWithSecret = z
  .object({ endpoint: ZWebhookEndpoint, secret: z.string() })
  .meta({ id: 'WebhookEndpointWithSecret' });
export type TWebhookEndpointWithSecret = z.infer<typeof ZWebhookEndpointWithSecret>;

/** GET /v1/webhook-endpoints. */
export const ZListWebhookEndpointsRequest = ZListQuery.extend({ organization_slug: organizationSlug });
export type TListWebhookEndpointsRequest = z.infer<typeof ZListWebhookEndpointsRequest>;

/** The body of POST /v1/webhook-endpoints without the organization (the console's form). */
export const ZCreateWebhookEndpointBody = z.object({
  url: ZWebhookUrl,
  eventTypes: ZWebhookEventTypes,
  description: ZWebhookDescription.optional(),
});
export type TCreateWebhookEndpointBody = z.infer<typeof ZCreateWebhookEndpointBody>;

export const ZCreateWebhookEndpointRequest = ZCreateWebhookEndpointBody.extend({ organization_slug: organizationSlug });
export type TCreateWebhookEndpointRequest = z.infer<typeof ZCreateWebhookEndpointRequest>;

/** `{id}` routes: the endpoint, optionally within a named organization. */
export const ZWebhookEndpointRef = z.object({ id: ZWebhookEndpointId, organization_slug: organizationSlug });
export type TWebhookEndpointRef = z.infer<typeof ZWebhookEndpointRef>;

/** The fields PATCH may change (the console's edit form). */
export const ZUpdateWebhookEndpointBody = z.object({
  url: ZWebhookUrl.optional(),
  eventTypes: ZWebhookEventTypes.optional(),
  /** null or an empty string clears it. */
  description: ZWebhookDescription.nullable().optional(),
  /**
   * A literal pair, not z.boolean(): the REST adapter coerces boolean fields, which would read
   * "false" as true. Enabling an endpoint disabled by a 410 clears that reason.
   */
  enabled: z.literal([true, false]).optional(),
});
export type TUpdateWebhookEndpointBody = z.infer<typeof ZUpdateWebhookEndpointBody>;

/** PATCH /v1/webhook-endpoints/{id}. */
export const ZUpdateWebhookEndpointRequest = ZWebhookEndpointRef.extend(ZUpdateWebhookEndpointBody.shape).refine(
  (v) => v.url !== undefined || v.eventTypes !== undefined || v.description !== undefined || v.enabled !== undefined,
  { message: 'send url, eventTypes, description or enabled' },
);
export type TUpdateWebhookEndpointRequest = z.infer<typeof ZUpdateWebhookEndpointRequest>;

export const ZDeletedWebhookEndpoint = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedWebhookEndpoint' });
export type TDeletedWebhookEndpoint = z.infer<typeof ZDeletedWebhookEndpoint>;

/** pending and retrying are due work; failed and succeeded are final (docs/api.md). */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'retrying', 'failed', 'succeeded'] as const;
export const ZWebhookDeliveryStatus = z.enum(WEBHOOK_DELIVERY_STATUSES).meta({ id: 'WebhookDeliveryStatus' });
export type TWebhookDeliveryStatus = z.infer<typeof ZWebhookDeliveryStatus>;

/** One event to one endpoint: its state, never a signature or a secret (docs/architecture.md section 7). */
export const ZWebhookDelivery = z
  .object({
    id: z.string(),
    endpointId: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    /** True for a delivery a replay queued (POST /v1/webhook-endpoints/{id}/replay); false for the live one. */
    replay: z.boolean(),
    status: ZWebhookDeliveryStatus,
    attemptCount: z.number().int(),
    /** When the next attempt is due; null once the delivery is final. */
    nextAttemptAt: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    lastStatusCode: z.number().int().nullable(),
    /** The last attempt's outcome: succeeded, http_error, gone, redirect, timeout, ... */
    lastOutcome: z.string().nullable(),
    succeededAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });
export type TWebhookDelivery = z.infer<typeof ZWebhookDelivery>;

export const ZWebhookDeliveryPage = ZPage(ZWebhookDelivery).meta({ id: 'WebhookDeliveryPage' });
export type TWebhookDeliveryPage = z.infer<typeof ZWebhookDeliveryPage>;

/** One attempt: when, how long, what the receiver said (a short, sanitized excerpt). */
export const ZWebhookDeliveryAttempt = z
  .object({
    attemptNumber: z.number().int(),
    startedAt: z.string(),
    durationMs: z.number().int(),
    statusCode: z.number().int().nullable(),
    outcome: z.string(),
    error: z.string().nullable(),
    responseExcerpt: z.string().nullable(),
  })
  .meta({ id: 'WebhookDeliveryAttempt' });
export type TWebhookDeliveryAttempt = z.infer<typeof ZWebhookDeliveryAttempt>;

/** The event a delivery carries: the payload's id, type, time and data. */
export const ZWebhookEvent = z
  .object({ id: z.string(), type: z.string(), createdAt: z.string(), data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'WebhookEvent' });
export type TWebhookEvent = z.infer<typeof ZWebhookEvent>;

/** GET /v1/webhook-deliveries/{id}: the delivery, its attempts (oldest first) and its event. */
export const ZWebhookDeliveryDetail = ZWebhookDelivery.extend({
  attempts: z.array(ZWebhookDeliveryAttempt),
  event: ZWebhookEvent,
}).meta({ id: 'WebhookDeliveryDetail' });
export type TWebhookDeliveryDetail = z.infer<typeof ZWebhookDeliveryDetail>;

/** 202 of POST /v1/webhook-endpoints/{id}/test: the queued delivery of the test event. */
export const ZWebhookTestResponse = z.object({ delivery: ZWebhookDelivery }).meta({ id: 'WebhookTestDelivery' });
export type TWebhookTestResponse = z.infer<typeof ZWebhookTestResponse>;

/** The filters of GET /v1/webhook-deliveries (the console's filter form). */
export const ZWebhookDeliveryFilters = z.object({
  endpoint_id: ZWebhookEndpointId.optional(),
  status: ZWebhookDeliveryStatus.optional(),
  /** A catalogued type or `webhook.test`; anything else is 400 `unknown_event_type`. */
  event_type: z.string().trim().min(1).max(100).optional(),
});
export type TWebhookDeliveryFilters = z.infer<typeof ZWebhookDeliveryFilters>;

export const ZListWebhookDeliveriesRequest = ZListQuery.extend({
  organization_slug: organizationSlug,
  ...ZWebhookDeliveryFilters.shape,
});
export type TListWebhookDeliveriesRequest = z.infer<typeof ZListWebhookDeliveriesRequest>;

/** GET /v1/webhook-deliveries/{id} and POST .../retry (`organization_slug` in the query or the body). */
export const ZWebhookDeliveryRef = z.object({ id: ZWebhookDeliveryId, organization_slug: organizationSlug });
export type TWebhookDeliveryRef = z.infer<typeof ZWebhookDeliveryRef>;

/** The most events one replay re-sends (else 400 `webhook_replay_too_large`). */
export const WEBHOOK_REPLAY_MAX_EVENTS = 10_000;
/** The longest time range one replay covers, `to - from` (else 400 `webhook_replay_too_large`). */
export const WEBHOOK_REPLAY_MAX_RANGE_DAYS = 7;
export const WEBHOOK_REPLAY_MAX_RANGE_MS = WEBHOOK_REPLAY_MAX_RANGE_DAYS * 24 * 60 * 60 * 1000;

type ReplayTarget = { eventId?: string; from?: string; to?: string; types?: string[] };
/** One event, or a range: never both, never half a range. */
const oneEventOrRange = (v: ReplayTarget) =>
  v.eventId !== undefined
    ? v.from === undefined && v.to === undefined && v.types === undefined
    : v.from !== undefined && v.to !== undefined;
const ONE_EVENT_OR_RANGE = { message: 'send eventId alone, or from and to (and optionally types)' };
const fromBeforeTo = (v: ReplayTarget) => v.from === undefined || v.to === undefined || Date.parse(v.from) < Date.parse(v.to);
const FROM_NOT_BEFORE_TO = { message: 'from must be before to', path: ['from'] };

const replayShape = {
  eventId: ZWebhookEventId.optional(),
  /** Events at or after this instant (ISO 8601 with Z or an offset). */
  from: ZInstant.optional(),
  /** Events strictly before this instant. */
  to: ZInstant.optional(),
  /** Some of the endpoint's event types; default: all of them. */
  types: ZWebhookEventTypes.optional(),
};

/**
 * What to re-send to one endpoint (the console's forms): one event (`eventId`), or every event of
 * the organization with `from <= createdAt < to` of `types` (default: the endpoint's event types).
 */
export const ZWebhookReplayBody = z
  .object(replayShape)
  .refine(oneEventOrRange, ONE_EVENT_OR_RANGE)
  .refine(fromBeforeTo, FROM_NOT_BEFORE_TO);
export type TWebhookReplayBody = z.infer<typeof ZWebhookReplayBody>;

/** POST /v1/webhook-endpoints/{id}/replay. */
export const ZWebhookReplayRequest = ZWebhookEndpointRef.extend(replayShape)
  .refine(oneEventOrRange, ONE_EVENT_OR_RANGE)
  .refine(fromBeforeTo, FROM_NOT_BEFORE_TO);
export type TWebhookReplayRequest = z.infer<typeof ZWebhookReplayRequest>;

/**
 * 202 of a replay: how many new deliveries were queued, of which event types; `delivery` is the
 * new delivery of a one-event replay (null for a range).
 */
export const ZWebhookReplayResponse = z
  .object({
    endpointId: z.string(),
    count: z.number().int(),
    eventTypes: z.array(z.string()),
    delivery: ZWebhookDelivery.nullable(),
  })
  .meta({ id: 'WebhookReplay' });
export type TWebhookReplayResponse = z.infer<typeof ZWebhookReplayResponse>;

/** The most deliveries one POST /v1/webhook-endpoints/{id}/retry-failed moves back to pending. */
export const WEBHOOK_RETRY_FAILED_MAX = 1_000;

/** 202 of POST /v1/webhook-endpoints/{id}/retry-failed. */
export const ZWebhookRetryFailedResponse = z
  .object({
    endpointId: z.string(),
    /** How many failed or retrying deliveries went back to pending, due now. */
    count: z.number().int(),
    /** True when more than WEBHOOK_RETRY_FAILED_MAX were waiting: call again for the rest. */
    more: z.boolean(),
  })
  .meta({ id: 'WebhookRetryFailed' });
export type TWebhookRetryFailedResponse = z.infer<typeof ZWebhookRetryFailedResponse>;
