import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';

// Graphile Worker's own tables, read through its public `graphile_worker.jobs` view (0.17: the
// private tables may change between its versions, the view is what it documents for reading).
// Not tenant data: these reads are for platform admins only, and never select the payload.

export type JobQueueCountsRow = { task: string; waiting: number; scheduled: number; locked: number; failed: number; total: number };
export type JobQueueFailureRow = {
  id: string;
  task: string;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  runAt: Date;
  createdAt: Date;
  updatedAt: Date;
};
export type JobQueueLockedRow = {
  id: string;
  task: string;
  attempts: number;
  maxAttempts: number;
  lockedAt: Date;
  lockedBy: string | null;
  lockedSeconds: number;
  runAt: Date;
  createdAt: Date;
};
export type JobQueueOldestWaitingRow = { id: string; task: string; runAt: Date; ageSeconds: number };

/**
 * How many characters of last_error leave the database: enough for the caller's own truncation
 * after redaction, without hauling a 1 MB stack trace over the wire.
 */
const LAST_ERROR_READ_CHARS = 2000;

/**
 * Jobs per task and state. The states are exclusive and checked in this order: locked (a worker
 * holds it; graphile counts the attempt when it locks, so a last attempt in progress is locked,
 * not failed), failed (attempts >= max_attempts), scheduled (run_at in the future), waiting.
 */
export async function countJobsByTaskAndState(db: DbOrTx): Promise<JobQueueCountsRow[]> {
  const rows = await db.execute<{ task: string; waiting: string; scheduled: string; locked: string; failed: string; total: string }>(sql`
    select task_identifier as task,
      count(*) filter (where locked_at is null and attempts < max_attempts and run_at <= now()) as waiting,
      count(*) filter (where locked_at is null and attempts < max_attempts and run_at > now()) as scheduled,
      count(*) filter (where locked_at is not null) as locked,
      count(*) filter (where locked_at is null and attempts >= max_attempts) as failed,
      count(*) as total
    from graphile_worker.jobs
    group by task_identifier
    order by task_identifier`);
  return rows.map((r) => ({
    task: r.task,
    waiting: Number(r.waiting),
    scheduled: Number(r.scheduled),
    locked: Number(r.locked),
    failed: Number(r.failed),
    total: Number(r.total),
  }));
}

/** The waiting job that has been due the longest, with how long (seconds, by the database's clock). */
export async function findOldestWaitingJob(db: DbOrTx): Promise<JobQueueOldestWaitingRow | null> {
  const rows = await db.execute<{ id: string; task: string; run_at: string; age_seconds: string }>(sql`
    select id::text, task_identifier as task, run_at, extract(epoch from now() - run_at) as age_seconds
    from graphile_worker.jobs
    where locked_at is null and attempts < max_attempts and run_at <= now()
    order by run_at, id
    limit 1`);
  const row = rows[0];
  return row ? { id: row.id, task: row.task, runAt: new Date(row.run_at), ageSeconds: Number(row.age_seconds) } : null;
}

/** Jobs that used up their attempts, most recently failed first. last_error is cut, not cleaned: redact it. */
export async function listFailedJobs(db: DbOrTx, opts: { limit: number }): Promise<JobQueueFailureRow[]> {
  const rows = await db.execute<{
    id: string;
    task: string;
    attempts: number;
    max_attempts: number;
    last_error: string | null;
    run_at: string;
    created_at: string;
    updated_at: string;
  }>(sql`
    select id::text, task_identifier as task, attempts, max_attempts, left(last_error, ${LAST_ERROR_READ_CHARS}) as last_error,
      run_at, created_at, updated_at
    from graphile_worker.jobs
    where locked_at is null and attempts >= max_attempts
    order by updated_at desc, id desc
    limit ${opts.limit}`);
  return rows.map((r) => ({
    id: r.id,
    task: r.task,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    lastError: r.last_error,
    runAt: new Date(r.run_at),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  }));
}

/** Jobs a worker holds, longest held first. */
export async function listLockedJobs(db: DbOrTx, opts: { limit: number }): Promise<JobQueueLockedRow[]> {
  const rows = await db.execute<{
    id: string;
    task: string;
    attempts: number;
    max_attempts: number;
    locked_at: string;
    locked_by: string | null;
    locked_seconds: string;
    run_at: string;
    created_at: string;
  }>(sql`
    select id::text, task_identifier as task, attempts, max_attempts, locked_at, locked_by,
      extract(epoch from now() - locked_at) as locked_seconds, run_at, created_at
    from graphile_worker.jobs
    where locked_at is not null
    order by locked_at, id
    limit ${opts.limit}`);
  return rows.map((r) => ({
    id: r.id,
    task: r.task,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    lockedAt: new Date(r.locked_at),
    lockedBy: r.locked_by,
    lockedSeconds: Number(r.locked_seconds),
    runAt: new Date(r.run_at),
    createdAt: new Date(r.created_at),
  }));
}

/** The database's clock, so ages and "now" agree with the statements above. */
export async function databaseNow(db: DbOrTx): Promise<Date> {
  const rows = await db.execute<{ now: string }>(sql`select now() as now`);
  return new Date(rows[0]?.now ?? Date.now());
}

/** Per task, how long its oldest waiting job has been due (seconds, by the database's clock); tasks with none waiting are absent. */
export async function oldestWaitingByTask(db: DbOrTx): Promise<{ task: string; ageSeconds: number }[]> {
  const rows = await db.execute<{ task: string; age_seconds: string }>(sql`
    select task_identifier as task, extract(epoch from now() - min(run_at)) as age_seconds
    from graphile_worker.jobs
    where locked_at is null and attempts < max_attempts and run_at <= now()
    group by task_identifier`);
  return rows.map((r) => ({ task: r.task, ageSeconds: Number(r.age_seconds) }));
}
