import { and, eq, gte, inArray, isNull, lt, or, type SQL, sql } from 'drizzle-orm';
import { unionAll } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import type { Cursor } from '../pagination.ts';
import { auditLogs } from '../schema/audit-logs.ts';

export type AuditLogRow = typeof auditLogs.$inferSelect;
export type NewAuditLogRow = typeof auditLogs.$inferInsert;

/** Appends one entry; the table refuses UPDATE and DELETE. */
export async function insertAuditLog(db: DbOrTx, values: NewAuditLogRow): Promise<AuditLogRow> {
  const [row] = await db.insert(auditLogs).values(values).returning();
  if (!row) {
    throw new Error('audit insert returned nothing');
  }
  return row;
}

/** Which entries a list reads; the organization is always named (never "all organizations"). */
export type AuditLogFilter = {
  tenantId: string;
  /**
   * Also the platform-level entries (tenant_id null): the platform workspace's log, read by a
   * platform admin.
   */
  includePlatformLevel?: boolean;
  /** Exact action. */
  action?: string;
  /** Every action of this resource (`<resource>.*`). */
  resource?: string;
  /** Any of these actors (a user id or an API key id; the users of one email can be several). */
  actorIds?: string[];
  targetId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
};

/**
 * One page of the log, newest first: at most `limit` rows strictly after `after`. Every branch
 * is one range scan of an index (tenant_id[, action | actor_id | target_id], created_at desc,
 * id desc), so a page deep in the log costs what the first one costs (bench `audit-pages`):
 * - the order is spelled `desc nulls last`, as the indexes are built: plain `desc` means nulls
 *   first, which no index provides, and PostgreSQL then sorts every matching row;
 * - the cursor is a row comparison, which is an index condition (where the scan starts).
 *   `afterCursor`'s OR form is only a filter (EXPLAIN: "Rows Removed by Filter"), applied to
 *   every newer row before the page's first one is found: page 100 would read 5,000 rows.
 */
export async function listAuditLogs(db: DbOrTx, opts: { filter: AuditLogFilter; after?: Cursor; limit: number }): Promise<AuditLogRow[]> {
  const { filter, after, limit } = opts;
  const common = and(
    filter.action !== undefined ? eq(auditLogs.action, filter.action) : undefined,
    // No index leads with the resource part of the action: a filter over the organization's rows,
    // read newest first (see the report of the audit-log reader for the index it wants).
    filter.resource !== undefined ? sql`split_part(${auditLogs.action}, '.', 1) = ${filter.resource}` : undefined,
    filter.actorIds !== undefined ? inArray(auditLogs.actorId, filter.actorIds) : undefined,
    filter.targetId !== undefined ? eq(auditLogs.targetId, filter.targetId) : undefined,
    filter.from !== undefined ? gte(auditLogs.createdAt, filter.from) : undefined,
    filter.to !== undefined ? lt(auditLogs.createdAt, filter.to) : undefined,
    after ? sql`(${auditLogs.createdAt}, ${auditLogs.id}) < (${after.createdAt.toISOString()}::timestamptz, ${after.id})` : undefined,
  );
  const newestFirst = [sql`${auditLogs.createdAt} desc nulls last`, sql`${auditLogs.id} desc nulls last`];
  const page = (tenant: SQL) =>
    db
      .select()
      .from(auditLogs)
      .where(and(tenant, common))
      .orderBy(...newestFirst)
      .limit(limit);
  if (!filter.includePlatformLevel) {
    return page(eq(auditLogs.tenantId, filter.tenantId));
  }
  // Two index scans merged, rather than `tenant_id = $1 or tenant_id is null` (a bitmap scan
  // and a sort of every matching row).
  const merged = unionAll(page(eq(auditLogs.tenantId, filter.tenantId)), page(isNull(auditLogs.tenantId)))
    .orderBy(sql`created_at desc nulls last`, sql`id desc nulls last`)
    .limit(limit);
  return (await merged) as AuditLogRow[];
}

/**
 * One entry of an organization's log by id, or undefined; with `includePlatformLevel`, also a
 * platform-level entry (tenant_id null), as the list reads them.
 */
export async function findAuditLog(
  db: DbOrTx,
  opts: { tenantId: string; includePlatformLevel: boolean; id: string },
): Promise<AuditLogRow | undefined> {
  const tenant = opts.includePlatformLevel
    ? or(eq(auditLogs.tenantId, opts.tenantId), isNull(auditLogs.tenantId))
    : eq(auditLogs.tenantId, opts.tenantId);
  const [row] = await db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.id, opts.id), tenant))
    .limit(1);
  return row;
}

/**
 * In an export (queries/exports.ts): the organization's audit log, up to the snapshot's instant.
 */
export const auditLogsExportSection: ExportSection = {
  key: 'auditLogs',
  resource: 'audit_log',
  shape: 'many',
  source: 'table',
  from: 'audit_logs t',
  tenantColumn: 't.tenant_id',
  asOfColumn: 't.created_at',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('actorType', 't.actor_type'),
    exportField.text('actorId', 't.actor_id'),
    exportField.text('actorLabel', 't.actor_label'),
    exportField.text('action', 't.action'),
    exportField.text('targetType', 't.target_type'),
    exportField.text('targetId', 't.target_id'),
    exportField.text('ipAddress', 't.ip_address'),
    exportField.text('userAgent', 't.user_agent'),
    exportField.text('requestId', 't.request_id'),
    // Redacted when written (apps/api modules/access/audit.ts).
    exportField.json('summary', 't.summary'),
    exportField.time('createdAt', 't.created_at'),
  ],
};
