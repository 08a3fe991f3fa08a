import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/**
 * Usage events (`uev_`): append-only (a trigger refuses UPDATE and DELETE while the organization
 * exists), deduplicated per tenant by `idempotency_key`. `request_hash` is the SHA-256 of the
 * event's canonical payload, so a replay with the same key and another payload is refused.
 */
export const usageEvents = pgTable(
  'usage_events',
  {
    /** `uev_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    idempotencyKey: text('idempotency_key').notNull(),
    /** Hex SHA-256 of the canonical payload (eventType, quantity, occurredAt, properties). */
    requestHash: text('request_hash').notNull(),
    eventType: text('event_type').notNull(),
    quantity: bigint('quantity', { mode: 'number' }).notNull().default(1),
    /** When it happened, as the sender says (defaults to when svc received it). */
    occurredAt: timestamp('occurred_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
    properties: jsonb('properties').$type<Record<string, unknown>>().notNull().default({}),
    /** Who sent it: `usr_...`, `key_...` or `app_...`. */
    sourceId: text('source_id'),
    /** Which route received it: `usage` (POST /v1/usage/events) or `metering` (POST /v1/usage-events). */
    channel: text('channel', { enum: ['usage', 'metering'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('usage_events_tenant_idempotency_key').on(t.tenantId, t.idempotencyKey),
    index('usage_events_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('usage_events_tenant_type_occurred_idx').on(t.tenantId, t.eventType, t.occurredAt.desc(), t.id.desc()),
  ],
);

/**
 * Hourly totals per organization and event type, kept in the ingesting transaction, so
 * summaries and current-period counters read a few hundred rows whatever the event count.
 */
export const usageHourly = pgTable(
  'usage_hourly',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    eventType: text('event_type').notNull(),
    /** date_trunc('hour', occurred_at) in UTC. */
    hour: timestamp('hour', { withTimezone: true, mode: 'date' }).notNull(),
    events: bigint('events', { mode: 'number' }).notNull().default(0),
    quantity: bigint('quantity', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.eventType, t.hour] })],
);

/** Subscription plans (`pln_`), managed by platform admins. Exactly one may be the default. */
export const subscriptionPlans = pgTable(
  'subscription_plans',
  {
    /** `pln_` prefixed id. */
    id: text('id').primaryKey(),
    /** Stable, URL-safe, unique (e.g. `free`). */
    key: text('key').notNull().unique(),
    name: text('name').notNull(),
    /** Members allowed; null is unlimited. */
    seatLimit: integer('seat_limit'),
    /** Per event type, events (quantity) allowed per calendar month (UTC). A missing type is unlimited. */
    usageLimits: jsonb('usage_limits').$type<Record<string, number>>().notNull().default({}),
    /** Percentages of each usage limit that record a `usage.threshold_reached` event (ascending; empty: none). */
    usageThresholds: integer('usage_thresholds').array().notNull().default(sql`'{50,80,100}'::integer[]`),
    isDefault: text('is_default', { enum: ['yes'] }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  // At most one default: `is_default` is 'yes' or null, and unique.
  (t) => [uniqueIndex('subscription_plans_one_default').on(t.isDefault)],
);

/**
 * Usage thresholds reached: one row per (organization, event type, calendar month, percentage),
 * written by the ingesting transaction that brought the month's quantity to it. The primary key
 * is what makes each crossing recorded once, whatever the number of concurrent writers; the row's
 * `event_id` is the `usage.threshold_reached` event recorded with it.
 */
export const usageThresholdCrossings = pgTable(
  'usage_threshold_crossings',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    eventType: text('event_type').notNull(),
    /** The first instant of the calendar month (UTC) counted. */
    periodStart: timestamp('period_start', { withTimezone: true, mode: 'date' }).notNull(),
    /** The percentage of the limit reached (a plan's usage threshold). */
    threshold: integer('threshold').notNull(),
    /** The plan's limit and the month's quantity when the threshold was reached. */
    usageLimit: bigint('usage_limit', { mode: 'number' }).notNull(),
    used: bigint('used', { mode: 'number' }).notNull(),
    plan: text('plan').notNull(),
    eventId: text('event_id').notNull(),
    reachedAt: timestamp('reached_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.eventType, t.periodStart, t.threshold] })],
);

/**
 * Hours whose `usage.summary` events are recorded (packages/jobs usage-summary task): the
 * primary key makes each hour summarized once, by whichever worker gets there first.
 */
export const usageSummaryHours = pgTable('usage_summary_hours', {
  /** The first instant of the hour summarized (UTC). */
  hour: timestamp('hour', { withTimezone: true, mode: 'date' }).primaryKey(),
  /** Organizations that got a summary. */
  organizations: integer('organizations').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});

/** Subscription states: the last three block mutating routes with 402 subscription_inactive. */
export type SubscriptionStatus = 'active' | 'trialing' | 'inactive' | 'cancelled' | 'expired';

/** One subscription per organization (manual model: platform admins set plan, seats and status). */
export const subscriptions = pgTable('subscriptions', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  planId: text('plan_id')
    .notNull()
    .references(() => subscriptionPlans.id),
  status: text('status', { enum: ['active', 'trialing', 'inactive', 'cancelled', 'expired'] })
    .notNull()
    .default('active'),
  /** Seats bought; null means the plan's seat limit. */
  seats: integer('seats'),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});

/** Billing providers svc hands off to; it never charges, invoices, taxes or refunds. */
export type BillingProvider = 'stripe' | 'razorpay' | 'paddle';

/** A tenant's handoff record with a provider (`bpr_`): which external account, which mode. */
export const billingProviders = pgTable(
  'billing_providers',
  {
    /** `bpr_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    provider: text('provider', { enum: ['stripe', 'razorpay', 'paddle'] }).notNull(),
    /** The customer/account id at the provider (never a key). */
    externalAccountId: text('external_account_id'),
    mode: text('mode', { enum: ['sandbox', 'live'] }).notNull(),
    status: text('status', { enum: ['connected', 'pending', 'disconnected'] })
      .notNull()
      .default('connected'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('billing_providers_tenant_provider_key').on(t.tenantId, t.provider),
    index('billing_providers_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
  ],
);

/** Usage event type -> provider item (`bmp_`): a Stripe meter event name, a Razorpay/Paddle item or price id. */
export const billingMappings = pgTable(
  'billing_mappings',
  {
    /** `bmp_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    provider: text('provider', { enum: ['stripe', 'razorpay', 'paddle'] }).notNull(),
    eventType: text('event_type').notNull(),
    providerItemId: text('provider_item_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('billing_mappings_tenant_provider_type_key').on(t.tenantId, t.provider, t.eventType),
    index('billing_mappings_tenant_type_idx').on(t.tenantId, t.eventType),
  ],
);

/** Sync log states: queued until the task runs; skipped says why (e.g. provider not configured). */
export type BillingSyncStatus = 'queued' | 'succeeded' | 'failed' | 'skipped';

/**
 * One usage event pushed through one mapping (`bsl_`), unique per event x mapping: the task is
 * idempotent per pair, and the provider call carries the same idempotency key on every attempt.
 */
export const billingSyncLogs = pgTable(
  'billing_sync_logs',
  {
    /** `bsl_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    provider: text('provider', { enum: ['stripe', 'razorpay', 'paddle'] }).notNull(),
    mappingId: text('mapping_id')
      .notNull()
      .references(() => billingMappings.id, { onDelete: 'cascade' }),
    usageEventId: text('usage_event_id')
      .notNull()
      .references(() => usageEvents.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['queued', 'succeeded', 'failed', 'skipped'] })
      .notNull()
      .default('queued'),
    attempts: integer('attempts').notNull().default(0),
    /** Why it failed or was skipped, in safe words (never provider error text with secrets). */
    reason: text('reason'),
    /** The provider's id for the usage record it created. */
    providerRecordId: text('provider_record_id'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('billing_sync_logs_event_mapping_key').on(t.usageEventId, t.mappingId),
    index('billing_sync_logs_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('billing_sync_logs_queued_idx').on(t.createdAt).where(sql`${t.status} = 'queued'`),
  ],
);

/**
 * Export snapshots (`exp_`). Everything small is captured at creation in `snapshot`; usage
 * events, being append-only, are the rows with `created_at <= as_of` and are streamed from the
 * table at download time, so a snapshot of millions of events costs no copy.
 */
export const exportSnapshots = pgTable(
  'export_snapshots',
  {
    /** `exp_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    format: text('format', { enum: ['json', 'csv'] }).notNull(),
    status: text('status', { enum: ['pending', 'running', 'completed', 'failed'] })
      .notNull()
      .default('pending'),
    /** The instant the snapshot describes. */
    asOf: timestamp('as_of', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    /** Sanitized resources captured at `as_of` (no secret-shaped field). */
    snapshot: jsonb('snapshot').$type<Record<string, unknown[]>>(),
    /** Rows per resource. */
    counts: jsonb('counts').$type<Record<string, number>>().notNull().default({}),
    requestedBy: text('requested_by'),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date', precision: 3 }),
    completedAt: timestamp('completed_at', { withTimezone: true, mode: 'date', precision: 3 }),
  },
  (t) => [index('export_snapshots_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc())],
);
