import type { DbOrTx } from '../client.ts';
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
