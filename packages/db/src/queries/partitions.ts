import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';

/**
 * The tables partitioned by month of created_at (migration 0031, docs/operations.md
 * "Partitioned tables"). Their partitions are `<table>_pYYYYMM` (UTC months) and `<table>_default`.
 */
export const PARTITIONED_TABLES = ['usage_events', 'webhook_events', 'audit_logs'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/**
 * Creates the monthly partitions of every partitioned table from the month of `now` through
 * `monthsAhead` months after it, keeping those that exist. Returns how many were made.
 */
export async function createPartitionsAhead(db: DbOrTx, opts: { now: Date; monthsAhead: number }): Promise<number> {
  let made = 0;
  for (const table of PARTITIONED_TABLES) {
    const [row] = (await db.execute(sql`
      select svc_create_monthly_partitions(${table}, ${opts.now.toISOString()}::timestamptz,
        ${opts.now.toISOString()}::timestamptz + make_interval(months => ${opts.monthsAhead}::int)) as made`)) as unknown as {
      made: number;
    }[];
    made += row?.made ?? 0;
  }
  return made;
}

/**
 * Retention: drops the monthly partitions of `table` that end at or before `cutoff`, whole (no
 * row is deleted from the table itself; the deliveries of dropped events and the idempotency keys
 * of dropped usage events are deleted with them). Returns the partitions dropped.
 */
export async function dropPartitionsBefore(db: DbOrTx, table: PartitionedTable, cutoff: Date): Promise<string[]> {
  const rows = (await db.execute(
    sql`select svc_drop_partitions_before(${table}, ${cutoff.toISOString()}::timestamptz) as dropped`,
  )) as unknown as { dropped: string }[];
  return rows.map((r) => r.dropped);
}

/** The monthly partitions of `table`, oldest first (for the operator's view and tests). */
export async function listPartitions(db: DbOrTx, table: PartitionedTable): Promise<string[]> {
  const rows = (await db.execute(sql`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${table}::regclass order by c.relname`)) as unknown as { name: string }[];
  return rows.map((r) => r.name);
}
