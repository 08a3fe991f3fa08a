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
