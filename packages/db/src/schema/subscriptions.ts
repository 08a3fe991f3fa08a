import { sql } from 'drizzle-orm';
import { integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

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
    /**
     * Features the plan includes (`sso`, `audit_export`, ...): lower-case keys, sorted. The check
     * API and the `entitlements` token scope answer them (docs/authorization.md).
     */
    features: text('features').array().notNull().default(sql`'{}'::text[]`),
    isDefault: text('is_default', { enum: ['yes'] }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  // At most one default: `is_default` is 'yes' or null, and unique.
  (t) => [uniqueIndex('subscription_plans_one_default').on(t.isDefault)],
);

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
