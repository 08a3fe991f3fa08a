import { JOB_QUEUE_LIST_LIMIT, type TJobQueueOverview } from '@svc/contracts/job-queue';
import type { Db } from '@svc/db/client';
import { countJobsByTaskAndState, databaseNow, findOldestWaitingJob, listFailedJobs, listLockedJobs } from '@svc/db/queries/job-queue';
import { redact } from '../access/audit.ts';

/**
 * last_error is whatever a task threw: it may quote a URL with a token, a provider's answer or a
 * key. Masked like audit summaries (secret-shaped values) and capped at 500 characters.
 */
function safeError(text: string | null): string | null {
  return text === null ? null : (redact(text) as string);
}

/**
 * GET /v1/platform/jobs: Graphile Worker's queue for platform admins (counts per task and state,
 * oldest waiting job, recent failures, locked jobs). Never a payload. One read-only snapshot, so
 * the counts and lists agree and every age is measured from the same `now()`. Who may read it
 * is the procedure's to decide (platformProcedure).
 */
export async function jobQueueOverview(db: Db): Promise<TJobQueueOverview> {
  return db.transaction(
    async (tx) => {
      const now = await databaseNow(tx);
      const counts = await countJobsByTaskAndState(tx);
      const oldest = await findOldestWaitingJob(tx);
      const failures = await listFailedJobs(tx, { limit: JOB_QUEUE_LIST_LIMIT });
      const locked = await listLockedJobs(tx, { limit: JOB_QUEUE_LIST_LIMIT });
      return {
        generatedAt: now.toISOString(),
        counts,
        oldestWaiting: oldest
          ? { id: oldest.id, task: oldest.task, runAt: oldest.runAt.toISOString(), ageSeconds: oldest.ageSeconds }
          : null,
        failures: failures.map((f) => ({
          id: f.id,
          task: f.task,
          attempts: f.attempts,
          maxAttempts: f.maxAttempts,
          lastError: safeError(f.lastError),
          runAt: f.runAt.toISOString(),
          createdAt: f.createdAt.toISOString(),
          updatedAt: f.updatedAt.toISOString(),
        })),
        locked: locked.map((l) => ({
          id: l.id,
          task: l.task,
          attempts: l.attempts,
          maxAttempts: l.maxAttempts,
          lockedAt: l.lockedAt.toISOString(),
          lockedBy: l.lockedBy,
          lockedSeconds: l.lockedSeconds,
          runAt: l.runAt.toISOString(),
          createdAt: l.createdAt.toISOString(),
        })),
      };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}
