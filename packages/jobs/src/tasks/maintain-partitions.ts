import { ZTaskPayloads } from '@svc/db/jobs';
import { createPartitionsAhead, dropPartitionsBefore, type PartitionedTable } from '@svc/db/queries/partitions';
import { sql } from 'drizzle-orm';
import type { JobContext, RetentionSettings } from '../context.ts';

/** Each partitioned table's retention setting. */
const RETENTION_OF: Record<PartitionedTable, keyof RetentionSettings> = {
  webhook_events: 'eventsDays',
  usage_events: 'usageDays',
  audit_logs: 'auditDays',
};

/**
 * `maintenance:partitions` (daily, crontab, and when a worker starts): makes the months ahead of
 * the partitioned tables, then drops each table's months that ended before its retention window
 * (docs/operations.md "Partitioned tables"). Creating or dropping a partition locks its table
 * briefly; a lock not granted within 5 s (a long query holding the table) fails the run, which
 * Graphile retries, rather than queueing every writer behind it. Idempotent: a re-run makes and
 * drops nothing more.
 */
export async function maintainPartitions(payload: unknown, ctx: JobContext): Promise<void> {
  await maintainPartitionsAt(payload, ctx, new Date());
}

/** maintainPartitions as of `now` (tests run it at other times). */
export async function maintainPartitionsAt(
  payload: unknown,
  ctx: Pick<JobContext, 'db' | 'logger' | 'retention'>,
  now: Date,
): Promise<void> {
  const { monthsAhead } = ZTaskPayloads['maintenance:partitions'].parse(payload ?? {});
  const made = await ctx.db.transaction(async (tx) => {
    await tx.execute(sql`set local lock_timeout = '5s'`);
    return createPartitionsAhead(tx, { now, monthsAhead });
  });
  const dropped: string[] = [];
  for (const [table, setting] of Object.entries(RETENTION_OF) as [PartitionedTable, keyof RetentionSettings][]) {
    const days = ctx.retention?.[setting] ?? null;
    if (days === null) {
      continue;
    }
    const cutoff = new Date(now.getTime() - days * 86_400_000);
    dropped.push(
      ...(await ctx.db.transaction(async (tx) => {
        await tx.execute(sql`set local lock_timeout = '5s'`);
        return dropPartitionsBefore(tx, table, cutoff);
      })),
    );
  }
  ctx.logger.info({ made, dropped }, 'partitions maintained');
}
