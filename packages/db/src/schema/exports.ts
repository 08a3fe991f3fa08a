import { index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

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
