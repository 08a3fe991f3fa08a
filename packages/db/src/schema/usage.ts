import { bigint, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/**
 * Usage events (`uev_`): append-only (a trigger refuses UPDATE and DELETE while the organization
 * exists), deduplicated per tenant by `idempotency_key` through usage_event_keys. `request_hash` is
 * the SHA-256 of the event's canonical payload, so a replay with the same key and another payload
 * is refused. Partitioned by month of `created_at` (migration 0031, docs/operations.md
 * "Partitioned tables"): the primary key holds the partition key, so uniqueness of the key is kept
 * by usage_event_keys, which is not partitioned.
 */
export const usageEvents = pgTable(
  'usage_events',
  {
    /** `uev_` prefixed id (unique: ids are random, and the primary key is (id, created_at)). */
    id: text('id').notNull(),
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
    primaryKey({ columns: [t.id, t.createdAt] }),
    index('usage_events_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('usage_events_tenant_type_occurred_idx').on(t.tenantId, t.eventType, t.occurredAt.desc(), t.id.desc()),
  ],
);

/**
 * One row per (organization, idempotency key) of usage_events: the uniqueness the partitioned
 * table cannot hold, since its unique indexes must include the month. The ingesting statement
 * inserts here first (ON CONFLICT DO NOTHING waits for a concurrent writer of the same key) and
 * writes the event only for the keys it got, so a key is recorded once whatever month it comes
 * back in. `event_id` and `created_at` find the event in its partition.
 */
export const usageEventKeys = pgTable(
  'usage_event_keys',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    idempotencyKey: text('idempotency_key').notNull(),
    /** The usage_events row recorded under this key. */
    eventId: text('event_id').notNull(),
    /** The event's created_at (its partition): the same transaction's now(). */
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  // Retention removes the keys of the months it drops, by this index.
  (t) => [primaryKey({ columns: [t.tenantId, t.idempotencyKey] }), index('usage_event_keys_created_idx').on(t.createdAt)],
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
