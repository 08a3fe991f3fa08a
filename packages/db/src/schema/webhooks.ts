import { sql } from 'drizzle-orm';
import { bigint, boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/** Webhook delivery states: pending and retrying are due work; failed and succeeded are final. */
export type WebhookDeliveryStatus = 'pending' | 'retrying' | 'failed' | 'succeeded';

/** Why an endpoint is disabled: an admin turned it off, or the receiver answered 410 Gone. */
export type WebhookDisabledReason = 'manual' | 'gone';

/**
 * A tenant's webhook endpoint. The signing secret (`whsec_...`) must be usable to sign, so it is
 * AES-256-GCM encrypted with SVC_ENCRYPTION_KEY (never hashed, never shown after create/rotate).
 * After a rotation the previous secret also signs until `previous_secret_expires_at`.
 */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    /** `wh_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** http(s) URL, checked against the SSRF rules when saved and again at every delivery. */
    url: text('url').notNull(),
    description: text('description'),
    /** Event type names from the catalog, sorted, no repeats; at least one. */
    eventTypes: text('event_types').array().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason', { enum: ['manual', 'gone'] }),
    disabledAt: timestamp('disabled_at', { withTimezone: true, mode: 'date', precision: 3 }),
    /** `v1.<iv>.<tag>.<ciphertext>` (base64url) of the secret, bound to this row's id. */
    secretCiphertext: text('secret_ciphertext').notNull(),
    /** The secret before the last rotation, still signing during the grace period. */
    previousSecretCiphertext: text('previous_secret_ciphertext'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true, mode: 'date', precision: 3 }),
    secretRotatedAt: timestamp('secret_rotated_at', { withTimezone: true, mode: 'date', precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('webhook_endpoints_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    // Fan-out: the enabled endpoints of an organization subscribed to a type.
    index('webhook_endpoints_tenant_enabled_idx').on(t.tenantId).where(sql`${t.enabled}`),
  ],
);

/**
 * PostgreSQL's 64-bit transaction id (`xid8`), read and written as its decimal text: it
 * outgrows a JavaScript number's exact integers in principle, and is only compared in SQL.
 */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' });

/**
 * An event a mutation caused (`evt_`), recorded in the mutation's transaction. `data` is the
 * payload's `data` object: ids and safe fields, never a secret.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    /**
     * `evt_` prefixed id; also the `webhook-id` header of every delivery of this event. Unique
     * (random), though the primary key is (id, created_at): the table is partitioned by month of
     * created_at (docs/operations.md "Partitioned tables").
     */
    id: text('id').notNull(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    /**
     * The writing transaction's id (`pg_current_xact_id()`), set by the column default so every
     * writer records it without saying so. GET /v1/events orders by (xid, id) and serves only
     * rows whose xid is below the oldest transaction still running, a prefix of that order no
     * commit can add to any more (queries/events-feed.ts). Rows older than the column carry
     * values below the migration's transaction, in created_at order (migration 0020).
     */
    xid: xid8('xid').notNull().default(sql`pg_current_xact_id()`),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.createdAt] }),
    index('webhook_events_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    // A replay's range: the events of some types in a time range, read type by type in order, so
    // it reads only the events it may send, however many of other types the organization has.
    index('webhook_events_tenant_type_created_idx').on(t.tenantId, t.type, t.createdAt, t.id),
    // The events feed in commit-safe order: all readable types in one range ...
    index('webhook_events_tenant_xid_idx').on(t.tenantId, t.xid, t.id),
    // ... or the requested types, type by type, then merged (as a replay reads them).
    index('webhook_events_tenant_type_xid_idx').on(t.tenantId, t.type, t.xid, t.id),
  ],
);

/**
 * One event to one endpoint (`whd_`): the live one unique per event x endpoint, beside any number
 * of replays (`replay`, POST /v1/webhook-endpoints/{id}/replay). This row owns the state: the
 * worker claims a due row (`locked_until`) before sending, so a job that runs twice never sends
 * twice while the claim holds, and a worker that dies mid-send leaves a claim that expires.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    /** `whd_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    /**
     * The event delivered. No foreign key: webhook_events is partitioned and its primary key is
     * (id, created_at). Events leave with their organization (which takes these rows too) or by
     * retention, which removes the deliveries of the months it drops (docs/operations.md
     * "Partitioned tables").
     */
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    /**
     * True for a delivery a replay queued: a second (third, ...) delivery of an event to an
     * endpoint. The live delivery, written when the event was recorded, is false.
     */
    replay: boolean('replay').notNull().default(false),
    status: text('status', { enum: ['pending', 'retrying', 'failed', 'succeeded'] })
      .notNull()
      .default('pending'),
    attemptCount: integer('attempt_count').notNull().default(0),
    /** When the next attempt is due; null once the delivery is final. */
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date', precision: 3 }),
    /** A worker's claim on the row while it sends; a claim past this time is abandoned. */
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date', precision: 3 }),
    lockedBy: text('locked_by'),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true, mode: 'date', precision: 3 }),
    lastStatusCode: integer('last_status_code'),
    /** The last attempt's outcome code (see webhook_delivery_attempts.outcome). */
    lastOutcome: text('last_outcome'),
    succeededAt: timestamp('succeeded_at', { withTimezone: true, mode: 'date', precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    // One live delivery per event and endpoint (fan-out's ON CONFLICT guard); replays are not counted.
    uniqueIndex('webhook_deliveries_event_endpoint_key').on(t.eventId, t.endpointId).where(sql`not ${t.replay}`),
    index('webhook_deliveries_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('webhook_deliveries_endpoint_created_idx').on(t.endpointId, t.createdAt.desc(), t.id.desc()),
    // The worker's claim query: due rows only, oldest due first.
    index('webhook_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} in ('pending', 'retrying')`),
  ],
);

/** Outcome of one attempt: success, or why it failed. */
export type WebhookAttemptOutcome =
  | 'succeeded'
  | 'http_error'
  | 'gone'
  | 'redirect'
  | 'timeout'
  | 'response_too_large'
  | 'connection_failed'
  | 'address_not_allowed'
  | 'endpoint_disabled'
  | 'interrupted';

/** Every attempt of a delivery: time, status code, duration and a sanitized response excerpt. */
export const webhookDeliveryAttempts = pgTable(
  'webhook_delivery_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    /** The delivery's organization, copied from the delivery row when the attempt is written. */
    tenantId: text('tenant_id').notNull(),
    /**
     * No foreign keys on this table: their two referential checks per attempt were about a sixth
     * of the worker's database CPU per delivery (59 us -> 49 in the throughput bench). Attempts are only written from the delivery row they belong to,
     * in the statement that updates it (recordDeliveryResults), so neither key can dangle; a
     * statement trigger on webhook_deliveries (migration 0014) removes a delivery's attempts with
     * it, as the cascade did, whether the delivery goes alone, with its endpoint or event, or
     * with its organization.
     */
    deliveryId: text('delivery_id').notNull(),
    /** 1 for the first attempt. */
    attemptNumber: integer('attempt_number').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
    durationMs: integer('duration_ms').notNull(),
    /** The receiver's HTTP status, when it answered. */
    statusCode: integer('status_code'),
    outcome: text('outcome').$type<WebhookAttemptOutcome>().notNull(),
    /** A short, safe description of a failure (never a secret, never the request). */
    error: text('error'),
    /** The first bytes of the receiver's answer, control characters removed, secrets masked. */
    responseExcerpt: text('response_excerpt'),
    /** Which `webhook-signature` values were sent: 1, or 2 during a rotation's grace period. */
    signatureCount: integer('signature_count').notNull().default(1),
  },
  (t) => [uniqueIndex('webhook_delivery_attempts_delivery_number_key').on(t.deliveryId, t.attemptNumber)],
);
