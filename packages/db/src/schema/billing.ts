import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

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
    /**
     * The usage event synced. No foreign key: usage_events is partitioned and its primary key is
     * (id, created_at). Usage events leave only with their organization (which takes these rows
     * too) or by retention's partition drop (docs/operations.md "Partitioned tables").
     */
    usageEventId: text('usage_event_id').notNull(),
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
