import { AppError } from '@svc/contracts/errors';
import { EVENT_READ_PERMISSIONS, type EventType, isEventType, TEST_EVENT_TYPE } from '@svc/contracts/events';
import { newId } from '@svc/contracts/ids';
import {
  type TCreateWebhookEndpointRequest,
  type TDeletedWebhookEndpoint,
  type TListWebhookDeliveriesRequest,
  type TListWebhookEndpointsRequest,
  type TUpdateWebhookEndpointRequest,
  type TWebhookDelivery,
  type TWebhookDeliveryDetail,
  type TWebhookDeliveryPage,
  type TWebhookDeliveryRef,
  type TWebhookEndpoint,
  type TWebhookEndpointHealth,
  type TWebhookEndpointPage,
  type TWebhookEndpointRef,
  type TWebhookEndpointWithSecret,
  type TWebhookEventTypeCatalog,
  type TWebhookReplayRequest,
  type TWebhookReplayResponse,
  type TWebhookRetryFailedResponse,
  type TWebhookTestResponse,
  WEBHOOK_EVENT_TYPE_CATALOG,
  WEBHOOK_HEALTH_WINDOW_HOURS,
  WEBHOOK_REPLAY_MAX_EVENTS,
  WEBHOOK_REPLAY_MAX_RANGE_DAYS,
  WEBHOOK_REPLAY_MAX_RANGE_MS,
  WEBHOOK_RETRY_FAILED_MAX,
} from '@svc/contracts/webhooks';
import type { Db, DbOrTx } from '@svc/db/client';
import { addJob } from '@svc/db/jobs';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { WEBHOOK_DISPATCH_JOB_KEY } from '@svc/db/queries/webhook-events';
import {
  deleteWebhookEndpoint,
  findWebhookDelivery,
  findWebhookDeliveryTenant,
  findWebhookEndpoint,
  findWebhookEndpointTenant,
  findWebhookEvent,
  insertEventForEndpoint,
  insertReplayDeliveries,
  insertWebhookEndpoint,
  listReplayEvents,
  listWebhookDeliveryAttempts,
  listWebhookDeliveries as listWebhookDeliveryRows,
  listWebhookEndpointHealth,
  listWebhookEndpoints as listWebhookEndpointRows,
  retryFailedWebhookDeliveries,
  retryWebhookDelivery as retryWebhookDeliveryRow,
  rotateWebhookEndpointSecret as rotateWebhookEndpointSecretRow,
  updateWebhookEndpoint as updateWebhookEndpointRow,
  type WebhookDeliveryRow,
  type WebhookEndpointChanges,
  type WebhookEndpointHealthRow,
  type WebhookEndpointRow,
  wakeWebhookDispatcher,
} from '@svc/db/queries/webhooks';
import type { SecretBox } from '@svc/db/secret-box';
import { generateWebhookSecret, sealWebhookSecret } from '@svc/jobs/webhooks/secrets';
import { checkWebhookUrl } from '@svc/jobs/webhooks/ssrf';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';

/** What the endpoint mutations need besides the database. */
export type WebhookSettings = {
  secretBox: SecretBox;
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private addresses pass the URL check (development, tests). */
  allowPrivate: boolean;
  /** How long the secret before a rotation keeps signing beside the new one (0: not at all). */
  secretGraceMs: number;
};

const ENDPOINT_NOT_FOUND = 'webhook endpoint not found';
const DELIVERY_NOT_FOUND = 'webhook delivery not found';
const EVENT_NOT_FOUND = 'webhook event not found';

const iso = (at: Date | null): string | null => at?.toISOString() ?? null;

/** An endpoint with no delivery in the health window. */
const NO_HEALTH: TWebhookEndpointHealth = {
  attempted: 0,
  succeeded: 0,
  successRate: null,
  unsucceeded: 0,
  failing: false,
  lastError: null,
};

function toHealth(row: WebhookEndpointHealthRow | undefined): TWebhookEndpointHealth {
  if (!row) {
    return NO_HEALTH;
  }
  return {
    attempted: row.attempted,
    succeeded: row.succeeded,
    successRate: row.attempted > 0 ? row.succeeded / row.attempted : null,
    unsucceeded: row.unsucceeded,
    failing: row.failing,
    lastError: row.lastError ? { ...row.lastError, at: row.lastError.at.toISOString() } : null,
  };
}

/** The health of each of `rows` (one statement), by endpoint id. */
async function healthOf(db: DbOrTx, tenantId: string, rows: readonly WebhookEndpointRow[]) {
  return listWebhookEndpointHealth(db, { tenantId, endpointIds: rows.map((r) => r.id), windowHours: WEBHOOK_HEALTH_WINDOW_HOURS });
}

/** An endpoint row with its health (docs/api.md "Webhooks"). */
async function withHealth(db: DbOrTx, row: WebhookEndpointRow): Promise<TWebhookEndpoint> {
  return toWebhookEndpoint(row, (await healthOf(db, row.tenantId, [row])).get(row.id));
}

/**
 * The safe view of an endpoint row: never a secret nor its ciphertext. `health` as
 * listWebhookEndpointHealth read it (none: an endpoint without deliveries, as a new one).
 */
export function toWebhookEndpoint(row: WebhookEndpointRow, health?: WebhookEndpointHealthRow): TWebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.eventTypes,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    disabledAt: iso(row.disabledAt),
    secretRotatedAt: iso(row.secretRotatedAt),
    // A grace period that has ended is not worth showing.
    previousSecretExpiresAt:
      row.previousSecretExpiresAt && row.previousSecretExpiresAt > new Date() ? iso(row.previousSecretExpiresAt) : null,
    health: toHealth(health),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The state of a delivery: never the worker's claim (locked_until, locked_by), never a signature. */
export function toWebhookDelivery(row: WebhookDeliveryRow): TWebhookDelivery {
  return {
    id: row.id,
    endpointId: row.endpointId,
    eventId: row.eventId,
    eventType: row.eventType,
    replay: row.replay,
    status: row.status,
    attemptCount: row.attemptCount,
    nextAttemptAt: iso(row.nextAttemptAt),
    lastAttemptAt: iso(row.lastAttemptAt),
    lastStatusCode: row.lastStatusCode,
    lastOutcome: row.lastOutcome,
    succeededAt: iso(row.succeededAt),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** Catalogued names only (never `webhook.test`, which only the test route sends); sorted, no repeats. */
export function checkEventTypes(types: readonly string[]): string[] {
  const unknown = types.filter((t) => !isEventType(t));
  if (unknown.length > 0) {
    throw new AppError(
      'unknown_event_type',
      `not in the event catalog: ${unknown.slice(0, 5).join(', ')} (GET /v1/webhook-event-types lists them)`,
    );
  }
  return [...new Set(types)].sort();
}

/**
 * An endpoint receives only what its author may read: each event type needs the read permission
 * of what it is about (EVENT_READ_PERMISSIONS), held by the caller at the time of the change
 * (403 naming the event types beyond the caller). Checked on create and on every update that
 * changes where events go or what is sent (event types, URL, re-enabling).
 */
export function assertReadable(
  access: Access,
  eventTypes: readonly string[],
  refusal = 'you cannot subscribe to events about what you may not read',
): void {
  const beyond = eventTypes.filter((t) => isEventType(t) && !isReadable(access, t));
  if (beyond.length > 0) {
    const needs = beyond.map((t) => `${t} (needs ${EVENT_READ_PERMISSIONS[t as EventType]})`);
    throw new AppError('forbidden', `${refusal}: ${needs.join(', ')}`);
  }
}

/** Whether the caller holds the read permission of what a catalogued event type is about. */
export function isReadable(access: Access, eventType: EventType): boolean {
  return access.permissions.has(EVENT_READ_PERMISSIONS[eventType]);
}

/** The URL as stored (normalized by the URL parser), or the check's own code and message. */
async function checkUrl(raw: string, settings: WebhookSettings): Promise<string> {
  const checked = await checkWebhookUrl(raw, { allowPrivate: settings.allowPrivate });
  if ('problem' in checked) {
    throw new AppError(checked.problem.code, checked.problem.message);
  }
  return checked.url.toString();
}

/**
 * Audit summaries name the receiver's host, not its URL: receivers often carry a token in the
 * path or query (chat webhooks do), and the audit log is readable by anyone with audit.read.
 */
function hostOf(url: string): string {
  return new URL(url).host;
}

/**
 * An endpoint's `{id}` routes find their organization from the endpoint: `organization_slug` when
 * named, else the one the id claims; an id of an organization the caller cannot see is an unknown
 * id (404) (modules/access/access-rule.ts).
 */
export const ENDPOINT_RECORD: RecordSource = { tenantOf: findWebhookEndpointTenant, notFound: ENDPOINT_NOT_FOUND };

/** A delivery's `{id}` routes, resolved like an endpoint's. */
export const DELIVERY_RECORD: RecordSource = { tenantOf: findWebhookDeliveryTenant, notFound: DELIVERY_NOT_FOUND };

/** The endpoint an `{id}` route names, in the organization its access resolved. */
function endpointOf(db: DbOrTx, access: Access, ref: TWebhookEndpointRef): Promise<WebhookEndpointRow> {
  return recordIn(db, access, findWebhookEndpoint, ref.id, ENDPOINT_NOT_FOUND);
}

/** The delivery an `{id}` route names, in the organization its access resolved. */
function deliveryOf(db: DbOrTx, access: Access, ref: TWebhookDeliveryRef): Promise<WebhookDeliveryRow> {
  return recordIn(db, access, findWebhookDelivery, ref.id, DELIVERY_NOT_FOUND);
}

/** GET /v1/webhook-event-types: the catalog endpoints subscribe to. */
export function listEventTypes(): TWebhookEventTypeCatalog {
  return { data: WEBHOOK_EVENT_TYPE_CATALOG, nextCursor: null };
}

export async function listEndpoints(db: Db, { organization }: Access, input: TListWebhookEndpointsRequest): Promise<TWebhookEndpointPage> {
  const scope = `webhook_endpoints:${organization.id}`;
  const rows = await listWebhookEndpointRows(db, {
    tenantId: organization.id,
    limit: input.limit,
    cursor: decodeCursor(scope, input.cursor),
  });
  const health = await healthOf(db, organization.id, rows.slice(0, input.limit));
  return toPage(scope, rows, input.limit, (row) => toWebhookEndpoint(row, health.get(row.id)));
}

export async function getEndpoint(db: Db, access: Access, input: TWebhookEndpointRef): Promise<TWebhookEndpoint> {
  return withHealth(db, await endpointOf(db, access, input));
}

/**
 * POST /v1/webhook-endpoints. The signing secret is generated here, sealed (bound to the new
 * endpoint's id) before it is stored, and returned in this answer and nowhere else, ever.
 */
export async function createEndpoint(
  db: Db,
  settings: WebhookSettings,
  access: Access,
  request: RequestMeta,
  input: TCreateWebhookEndpointRequest,
): Promise<TWebhookEndpointWithSecret> {
  const eventTypes = checkEventTypes(input.eventTypes);
  assertReadable(access, eventTypes);
  const url = await checkUrl(input.url, settings);
  const id = newId('webhookEndpoint');
  const secret = generateWebhookSecret();
  return db.transaction(async (tx) => {
    const row = await insertWebhookEndpoint(tx, {
      id,
      tenantId: access.organization.id,
      url,
      description: input.description || null,
      eventTypes,
      secretCiphertext: sealWebhookSecret(settings.secretBox, id, secret),
    });
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'webhook_endpoint.created',
      target: { type: 'webhook_endpoint', id: row.id },
      summary: { host: hostOf(row.url), eventTypes: row.eventTypes },
    });
    return { endpoint: toWebhookEndpoint(row), secret };
  });
}

/**
 * PATCH /v1/webhook-endpoints/{id}. Enabling clears why it was disabled (an admin, or a 410 from
 * the receiver); disabling records `manual` unless it is already disabled.
 */
export async function updateEndpoint(
  db: Db,
  settings: WebhookSettings,
  access: Access,
  request: RequestMeta,
  input: TUpdateWebhookEndpointRequest,
): Promise<TWebhookEndpoint> {
  const endpoint = await endpointOf(db, access, input);
  const changes: WebhookEndpointChanges = {};
  if (input.eventTypes !== undefined) {
    changes.eventTypes = checkEventTypes(input.eventTypes);
  }
  if (input.url !== undefined) {
    changes.url = await checkUrl(input.url, settings);
  }
  if (input.description !== undefined) {
    changes.description = input.description || null;
  }
  if (input.eventTypes !== undefined || input.url !== undefined || input.enabled === true) {
    assertReadable(access, changes.eventTypes ?? endpoint.eventTypes);
  }
  const now = new Date();
  return db.transaction(async (tx) => {
    const current = await findWebhookEndpoint(tx, { tenantId: access.organization.id, id: endpoint.id, forUpdate: true });
    if (!current) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    if (input.enabled === true && !current.enabled) {
      Object.assign(changes, { enabled: true, disabledReason: null, disabledAt: null });
    } else if (input.enabled === false && current.enabled) {
      Object.assign(changes, { enabled: false, disabledReason: 'manual', disabledAt: now });
    }
    const row = await updateWebhookEndpointRow(tx, { tenantId: access.organization.id, id: current.id, changes, now });
    if (!row) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'webhook_endpoint.updated',
      target: { type: 'webhook_endpoint', id: row.id },
      // Each field sent, before and after (docs/api.md "Audit log"); of a URL only its host.
      summary: {
        changes: {
          ...(changes.url !== undefined ? { host: { from: hostOf(current.url), to: hostOf(changes.url) } } : {}),
          ...(changes.eventTypes !== undefined ? { eventTypes: { from: current.eventTypes, to: changes.eventTypes } } : {}),
          ...(changes.description !== undefined ? { description: { from: current.description, to: changes.description } } : {}),
          ...(changes.enabled !== undefined ? { enabled: { from: current.enabled, to: changes.enabled } } : {}),
        },
        ...(input.enabled === true && current.disabledReason ? { wasDisabledFor: current.disabledReason } : {}),
      },
    });
    return withHealth(tx, row);
  });
}

/** DELETE /v1/webhook-endpoints/{id}: the endpoint, its deliveries and their attempts. */
export async function deleteEndpoint(
  db: Db,
  access: Access,
  request: RequestMeta,
  input: TWebhookEndpointRef,
): Promise<TDeletedWebhookEndpoint> {
  const endpoint = await endpointOf(db, access, input);
  return db.transaction(async (tx) => {
    if (!(await deleteWebhookEndpoint(tx, { tenantId: access.organization.id, id: endpoint.id }))) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'webhook_endpoint.deleted',
      target: { type: 'webhook_endpoint', id: endpoint.id },
      summary: { host: hostOf(endpoint.url), eventTypes: endpoint.eventTypes },
    });
    return { id: endpoint.id, deleted: true as const };
  });
}

/**
 * POST /v1/webhook-endpoints/{id}/rotate-secret. The new secret is shown once; the one it
 * replaces keeps signing beside it for the grace period (WEBHOOK_SECRET_GRACE_HOURS), so a
 * receiver can switch without dropping a delivery.
 */
export async function rotateEndpointSecret(
  db: Db,
  settings: WebhookSettings,
  access: Access,
  request: RequestMeta,
  input: TWebhookEndpointRef,
): Promise<TWebhookEndpointWithSecret> {
  const endpoint = await endpointOf(db, access, input);
  const secret = generateWebhookSecret();
  const now = new Date();
  const previousSecretExpiresAt = settings.secretGraceMs > 0 ? new Date(now.getTime() + settings.secretGraceMs) : null;
  return db.transaction(async (tx) => {
    const row = await rotateWebhookEndpointSecretRow(tx, {
      tenantId: access.organization.id,
      id: endpoint.id,
      secretCiphertext: sealWebhookSecret(settings.secretBox, endpoint.id, secret),
      previousSecretExpiresAt,
      now,
    });
    if (!row) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'webhook_endpoint.secret_rotated',
      target: { type: 'webhook_endpoint', id: row.id },
      summary: { previousSecretExpiresAt },
    });
    return { endpoint: await withHealth(tx, row), secret };
  });
}

/**
 * POST /v1/webhook-endpoints/{id}/test: a `webhook.test` event for this endpoint only, its
 * delivery queued and the dispatcher woken in one transaction. A disabled endpoint is refused
 * (it would never be sent).
 */
export async function sendTestEvent(
  db: Db,
  access: Access,
  request: RequestMeta,
  input: TWebhookEndpointRef,
): Promise<TWebhookTestResponse> {
  const endpoint = await endpointOf(db, access, input);
  return db.transaction(async (tx) => {
    // Locked so a concurrent disable or delete is ordered before or after, never in between.
    const current = await findWebhookEndpoint(tx, { tenantId: access.organization.id, id: endpoint.id, forUpdate: true });
    if (!current) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    if (!current.enabled) {
      throw new AppError('webhook_endpoint_disabled', 'this endpoint is disabled: enable it, then send the test again');
    }
    const { principal } = access;
    const actor =
      principal.kind === 'user'
        ? { type: 'user', id: principal.user.id }
        : principal.kind === 'api_key'
          ? { type: 'api_key', id: principal.apiKey.id }
          : { type: 'setup_link', id: principal.setupLink.id };
    const delivery = await insertEventForEndpoint(tx, {
      tenantId: current.tenantId,
      endpointId: current.id,
      eventId: newId('event'),
      deliveryId: newId('webhookDelivery'),
      type: TEST_EVENT_TYPE,
      data: {
        object: 'webhook_endpoint',
        id: current.id,
        organizationId: current.tenantId,
        message: 'A test event sent from svc. No action is needed.',
        actor,
      },
    });
    await recordAudit(tx, access.principal, request, {
      tenantId: current.tenantId,
      action: 'webhook_endpoint.tested',
      target: { type: 'webhook_endpoint', id: current.id },
      summary: { deliveryId: delivery.id, eventId: delivery.eventId },
    });
    return { delivery: toWebhookDelivery(delivery) };
  });
}

/** GET /v1/webhook-deliveries: newest first, filtered; never a secret or signature. */
export async function listDeliveries(
  db: Db,
  { organization }: Access,
  input: TListWebhookDeliveriesRequest,
): Promise<TWebhookDeliveryPage> {
  if (input.event_type !== undefined && !isEventType(input.event_type) && input.event_type !== TEST_EVENT_TYPE) {
    throw new AppError('unknown_event_type', `not in the event catalog: ${input.event_type} (GET /v1/webhook-event-types lists them)`);
  }
  if (input.endpoint_id !== undefined && !(await findWebhookEndpoint(db, { tenantId: organization.id, id: input.endpoint_id }))) {
    throw new AppError('not_found', ENDPOINT_NOT_FOUND);
  }
  const scope = `webhook_deliveries:${organization.id}:${input.endpoint_id ?? '*'}:${input.status ?? '*'}:${input.event_type ?? '*'}`;
  const rows = await listWebhookDeliveryRows(db, {
    filter: { tenantId: organization.id, endpointId: input.endpoint_id, status: input.status, eventType: input.event_type },
    cursor: decodeCursor(scope, input.cursor),
    limit: input.limit,
  });
  return toPage(scope, rows, input.limit, toWebhookDelivery);
}

/** GET /v1/webhook-deliveries/{id}: the delivery, every attempt (oldest first) and its event. */
export async function getDelivery(db: Db, access: Access, input: TWebhookDeliveryRef): Promise<TWebhookDeliveryDetail> {
  const delivery = await deliveryOf(db, access, input);
  const tenantId = access.organization.id;
  const [attempts, event] = await Promise.all([
    listWebhookDeliveryAttempts(db, { tenantId, deliveryId: delivery.id }),
    findWebhookEvent(db, { tenantId, id: delivery.eventId }),
  ]);
  if (!event) {
    // The event and its deliveries are removed together (foreign key cascade).
    throw new AppError('not_found', DELIVERY_NOT_FOUND);
  }
  return {
    ...toWebhookDelivery(delivery),
    attempts: attempts.map((a) => ({
      attemptNumber: a.attemptNumber,
      startedAt: a.startedAt.toISOString(),
      durationMs: a.durationMs,
      statusCode: a.statusCode,
      outcome: a.outcome,
      error: a.error,
      responseExcerpt: a.responseExcerpt,
    })),
    event: { id: event.id, type: event.type, createdAt: event.createdAt.toISOString(), data: event.data },
  };
}

/**
 * POST /v1/webhook-deliveries/{id}/retry (docs/api.md "Webhooks"): a failed or retrying delivery goes back to
 * pending, due now, its attempts kept; the dispatcher is woken in the same transaction and the
 * worker sends it. Any other state, or an attempt in flight, is 409 webhook_delivery_not_retryable.
 */
export async function retryDelivery(db: Db, access: Access, request: RequestMeta, input: TWebhookDeliveryRef): Promise<TWebhookDelivery> {
  const delivery = await deliveryOf(db, access, input);
  const tenantId = access.organization.id;
  if (delivery.status !== 'failed' && delivery.status !== 'retrying') {
    throw new AppError(
      'webhook_delivery_not_retryable',
      `this delivery is ${delivery.status}: only a failed or retrying delivery can be retried`,
    );
  }
  const endpoint = await findWebhookEndpoint(db, { tenantId, id: delivery.endpointId });
  if (endpoint && !endpoint.enabled) {
    throw new AppError('webhook_endpoint_disabled', 'the endpoint of this delivery is disabled: enable it, then retry');
  }
  const now = new Date();
  return db.transaction(async (tx) => {
    const row = await retryWebhookDeliveryRow(tx, { tenantId, id: delivery.id, now });
    if (!row) {
      const current = await findWebhookDelivery(tx, { tenantId, id: delivery.id });
      if (!current) {
        throw new AppError('not_found', DELIVERY_NOT_FOUND);
      }
      throw new AppError(
        'webhook_delivery_not_retryable',
        current.status === 'failed' || current.status === 'retrying'
          ? 'an attempt of this delivery is in progress: wait for its outcome'
          : `this delivery is ${current.status}: only a failed or retrying delivery can be retried`,
      );
    }
    await wakeWebhookDispatcher(tx);
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'webhook_delivery.retried',
      target: { type: 'webhook_delivery', id: row.id },
      summary: { endpointId: row.endpointId, eventType: row.eventType, previousStatus: delivery.status },
    });
    return toWebhookDelivery(row);
  });
}

/**
 * POST /v1/webhook-endpoints/{id}/retry-failed (docs/api.md "Webhooks"): the endpoint's failed
 * and retrying deliveries go back to pending, due now, their attempts kept, as a retry of each
 * would (at most WEBHOOK_RETRY_FAILED_MAX per call, oldest first; `more` says when some are
 * left). The dispatcher is woken and one audit entry records the count in the same transaction;
 * the worker sends them. A disabled endpoint is 409 `webhook_endpoint_disabled` (nothing would be
 * sent).
 */
export async function retryFailedDeliveries(
  db: Db,
  access: Access,
  request: RequestMeta,
  input: TWebhookEndpointRef,
): Promise<TWebhookRetryFailedResponse> {
  const endpoint = await endpointOf(db, access, input);
  const tenantId = access.organization.id;
  return db.transaction(async (tx) => {
    // Locked so a concurrent disable or delete is ordered before or after, never in between.
    const current = await findWebhookEndpoint(tx, { tenantId, id: endpoint.id, forUpdate: true });
    if (!current) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    if (!current.enabled) {
      throw new AppError('webhook_endpoint_disabled', 'this endpoint is disabled: enable it, then retry its failed deliveries');
    }
    const { ids: moved, more } = await retryFailedWebhookDeliveries(tx, {
      tenantId,
      endpointId: current.id,
      now: new Date(),
      limit: WEBHOOK_RETRY_FAILED_MAX,
    });
    if (moved.length > 0) {
      await wakeWebhookDispatcher(tx);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'webhook_endpoint.failed_retried',
      target: { type: 'webhook_endpoint', id: current.id },
      summary: { host: hostOf(current.url), count: moved.length },
    });
    return { endpointId: current.id, count: moved.length, more };
  });
}

/** What a replay needs besides the database. */
export type ReplaySettings = {
  /**
   * Spends one of the endpoint's replays (RATE_LIMIT_WEBHOOK_REPLAYS_PER_MINUTE), throwing
   * `rate_limited` when none is left. Called once every check has passed, so refused requests
   * spend nothing.
   */
  throttle: (endpointId: string) => Promise<void>;
};

/** A replay sends an endpoint nothing it is not subscribed to now (400 naming the types). */
function assertSubscribed(endpoint: WebhookEndpointRow, eventTypes: readonly string[]): void {
  const beyond = eventTypes.filter((t) => !endpoint.eventTypes.includes(t));
  if (beyond.length > 0) {
    throw new AppError(
      'webhook_event_type_not_subscribed',
      `this endpoint is not subscribed to ${beyond.slice(0, 5).join(', ')} (it receives ${endpoint.eventTypes.join(', ')})`,
    );
  }
}

/**
 * POST /v1/webhook-endpoints/{id}/replay: re-sends one event of the organization (`eventId`), or
 * every event with `from <= createdAt < to` of `types` (default: the endpoint's event types),
 * oldest first, to this endpoint only. Each becomes a new pending delivery with its own attempts,
 * carrying the original event id as `webhook-id` (receivers deduplicate on it), sent by the
 * worker: the deliveries and the dispatch job are written in one transaction, nothing is sent
 * from here. Only types the endpoint subscribes to and the caller may read (as for a
 * subscription); at most WEBHOOK_REPLAY_MAX_EVENTS events over at most
 * WEBHOOK_REPLAY_MAX_RANGE_DAYS days (400 `webhook_replay_too_large`); a disabled endpoint is 409
 * `webhook_endpoint_disabled`. Audited with the number of deliveries queued.
 */
export async function replayEvents(
  db: Db,
  settings: ReplaySettings,
  access: Access,
  request: RequestMeta,
  input: TWebhookReplayRequest,
): Promise<TWebhookReplayResponse> {
  const endpoint = await endpointOf(db, access, input);
  const tenantId = access.organization.id;
  if (!endpoint.enabled) {
    throw new AppError('webhook_endpoint_disabled', 'this endpoint is disabled: enable it, then replay');
  }
  let eventIds: string[];
  let eventTypes: string[];
  let range: { from: string; to: string } | null = null;
  if (input.eventId !== undefined) {
    const event = await findWebhookEvent(db, { tenantId, id: input.eventId });
    if (!event) {
      throw new AppError('not_found', EVENT_NOT_FOUND);
    }
    eventTypes = [event.type];
    assertSubscribed(endpoint, eventTypes);
    assertReadable(access, eventTypes);
    eventIds = [event.id];
  } else {
    // The contract requires both with eventId absent.
    const from = new Date(input.from as string);
    const to = new Date(input.to as string);
    if (to.getTime() - from.getTime() > WEBHOOK_REPLAY_MAX_RANGE_MS) {
      throw new AppError('webhook_replay_too_large', `a replay covers at most ${WEBHOOK_REPLAY_MAX_RANGE_DAYS} days: split the range`);
    }
    eventTypes = input.types !== undefined ? checkEventTypes(input.types) : endpoint.eventTypes;
    assertSubscribed(endpoint, eventTypes);
    assertReadable(access, eventTypes);
    const events = await listReplayEvents(db, { tenantId, from, to, types: eventTypes, limit: WEBHOOK_REPLAY_MAX_EVENTS + 1 });
    if (events.length > WEBHOOK_REPLAY_MAX_EVENTS) {
      throw new AppError(
        'webhook_replay_too_large',
        `more than ${WEBHOOK_REPLAY_MAX_EVENTS} events in this range: replay a shorter range or fewer types`,
      );
    }
    eventIds = events.map((e) => e.id);
    range = { from: from.toISOString(), to: to.toISOString() };
  }
  await settings.throttle(endpoint.id);
  return db.transaction(async (tx) => {
    // Locked so a concurrent disable or delete is ordered before or after, never in between.
    const current = await findWebhookEndpoint(tx, { tenantId, id: endpoint.id, forUpdate: true });
    if (!current) {
      throw new AppError('not_found', ENDPOINT_NOT_FOUND);
    }
    if (!current.enabled) {
      throw new AppError('webhook_endpoint_disabled', 'this endpoint is disabled: enable it, then replay');
    }
    const deliveryIds = await insertReplayDeliveries(tx, { tenantId, endpointId: current.id, eventIds });
    if (deliveryIds.length > 0) {
      await addJob(tx, 'webhooks:dispatch', {}, { jobKey: WEBHOOK_DISPATCH_JOB_KEY });
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'webhook_endpoint.replayed',
      target: { type: 'webhook_endpoint', id: current.id },
      summary: { count: deliveryIds.length, eventTypes, ...(range ?? { eventId: input.eventId }) },
    });
    const [first] = deliveryIds;
    const delivery = input.eventId !== undefined && first ? await findWebhookDelivery(tx, { tenantId, id: first }) : undefined;
    return {
      endpointId: current.id,
      count: deliveryIds.length,
      eventTypes,
      delivery: delivery ? toWebhookDelivery(delivery) : null,
    };
  });
}
