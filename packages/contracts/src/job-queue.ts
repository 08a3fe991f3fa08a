import { z } from 'zod';

/** How many rows the failure and locked lists return at most (newest failures, longest locks). */
export const JOB_QUEUE_LIST_LIMIT = 50;

/**
 * One task's jobs by state. The states do not overlap: locked first (a worker holds it), then
 * failed (attempts used up, never run again), then scheduled (run_at in the future, including
 * retries waiting for their backoff), else waiting (due and free to be picked up).
 */
export const ZJobQueueTaskCounts = z.object({
  task: z.string(),
  waiting: z.number().int(),
  scheduled: z.number().int(),
  locked: z.number().int(),
  failed: z.number().int(),
  total: z.number().int(),
});
export type TJobQueueTaskCounts = z.infer<typeof ZJobQueueTaskCounts>;

/** A failed job. Never the payload; last_error truncated and with secret-shaped values masked. */
export const ZJobQueueFailure = z.object({
  /** Graphile Worker's job id (a bigint, as a string): what `graphile_worker.reschedule_jobs` takes. */
  id: z.string(),
  task: z.string(),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  lastError: z.string().nullable(),
  runAt: z.string(),
  createdAt: z.string(),
  /** When the last attempt failed. */
  updatedAt: z.string(),
});
export type TJobQueueFailure = z.infer<typeof ZJobQueueFailure>;

/** A job a worker holds. */
export const ZJobQueueLockedJob = z.object({
  id: z.string(),
  task: z.string(),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  lockedAt: z.string(),
  /** The worker id (graphile's `worker-...`), not a host name. */
  lockedBy: z.string().nullable(),
  lockedSeconds: z.number(),
  runAt: z.string(),
  createdAt: z.string(),
});
export type TJobQueueLockedJob = z.infer<typeof ZJobQueueLockedJob>;

/** GET /v1/platform/jobs: the state of Graphile Worker's queue, for platform admins. */
export const ZJobQueueOverview = z
  .object({
    /** The database's clock when the overview was read; every age is relative to it. */
    generatedAt: z.string(),
    counts: z.array(ZJobQueueTaskCounts),
    /** The waiting job due longest ago, or null when none is waiting. */
    oldestWaiting: z.object({ id: z.string(), task: z.string(), runAt: z.string(), ageSeconds: z.number() }).nullable(),
    /** The most recently failed jobs, newest first, at most JOB_QUEUE_LIST_LIMIT. */
    failures: z.array(ZJobQueueFailure),
    /** Locked jobs, longest held first, at most JOB_QUEUE_LIST_LIMIT. */
    locked: z.array(ZJobQueueLockedJob),
  })
  .meta({ id: 'JobQueueOverview' });
export type TJobQueueOverview = z.infer<typeof ZJobQueueOverview>;
