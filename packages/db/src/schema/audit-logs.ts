import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** Who acted, as an audit entry records it. */
export type AuditActorType = 'user' | 'api_key' | 'system' | 'setup_link';

/**
 * The append-only audit log: one row per mutation, written in the mutation's transaction. A
 * trigger refuses UPDATE and DELETE (migration 0006). `tenant_id` is kept without a foreign key
 * so that entries outlive a deleted organization (its deletion is itself an entry). Partitioned
 * by month of `created_at` (docs/operations.md "Partitioned tables"), hence the primary key
 * (id, created_at).
 */
export const auditLogs = pgTable(
  'audit_logs',
  {
    /** `aud_` prefixed id (unique: ids are random). */
    id: text('id').notNull(),
    /** The organization acted on; null for platform-level actions. */
    tenantId: text('tenant_id'),
    /** `setup_link`: done on a setup link's hosted page (docs/enterprise.md "Setup links"). */
    actorType: text('actor_type', { enum: ['user', 'api_key', 'system', 'setup_link'] }).notNull(),
    /** `usr_...` or `key_...`; null for the system. */
    actorId: text('actor_id'),
    /** The actor's email or key name at the time, for reading without joins. */
    actorLabel: text('actor_label'),
    /** `resource.verb`, e.g. `invitation.created`. */
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id'),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    requestId: text('request_id'),
    /** A redacted summary of the change: never a secret, token, hash or cookie. */
    summary: jsonb('summary').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.createdAt] }),
    // Keyset pagination (created_at, id) newest first, per organization and with each filter.
    index('audit_logs_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('audit_logs_created_idx').on(t.createdAt.desc(), t.id.desc()),
    index('audit_logs_tenant_action_created_idx').on(t.tenantId, t.action, t.createdAt.desc(), t.id.desc()),
    index('audit_logs_tenant_actor_created_idx').on(t.tenantId, t.actorId, t.createdAt.desc(), t.id.desc()),
    index('audit_logs_tenant_target_created_idx').on(t.tenantId, t.targetId, t.createdAt.desc(), t.id.desc()),
    // The `resource.*` filter: the reader matches split_part(action, '.', 1) exactly like this.
    index('audit_logs_tenant_resource_created_idx').on(t.tenantId, sql`split_part(${t.action}, '.', 1)`, t.createdAt.desc(), t.id.desc()),
  ],
);
