import type { DbOrTx } from '@svc/db/client';
import { sql } from 'drizzle-orm';
import type { TaskName, TaskPayloads } from './task-names.ts';

export type EnqueueOptions = {
  /** Deduplicates pending jobs: a second add with the same key replaces the first. */
  jobKey?: string;
  runAt?: Date;
  maxAttempts?: number;
};

/**
 * Adds a Graphile Worker job through the caller's transaction (`graphile_worker.add_job` is
 * plain SQL), so the job exists if and only if the mutation that caused it commits.
 */
export async function enqueueJob<N extends TaskName>(
  tx: DbOrTx,
  name: N,
  payload: TaskPayloads[N],
  opts: EnqueueOptions = {},
): Promise<void> {
  await tx.execute(sql`select graphile_worker.add_job(
    identifier => ${name}::text,
    payload => ${JSON.stringify(payload)}::json,
    run_at => ${opts.runAt?.toISOString() ?? null}::timestamptz,
    max_attempts => ${opts.maxAttempts ?? null}::int,
    job_key => ${opts.jobKey ?? null}::text
  )`);
}
