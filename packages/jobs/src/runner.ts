import type { Db } from '@svc/db/client';
import { Logger, type Runner, run, type Task, type TaskList } from 'graphile-worker';
import type { TaskName } from './task-names.ts';
import { prunePendingLogins } from './tasks/prune-pending-logins.ts';
import { pruneRateLimits } from './tasks/prune-rate-limits.ts';

export type JobLogger = {
  debug: (obj: object, msg: string) => void;
  info: (obj: object, msg: string) => void;
  error: (obj: object, msg: string) => void;
};
/** What every task receives besides its payload. */
export type JobContext = { db: Db; logger: JobLogger };

type SvcTask = (payload: unknown, ctx: JobContext) => Promise<void>;

const TASKS: Record<TaskName, SvcTask> = {
  'maintenance:prune_rate_limits': pruneRateLimits,
  'maintenance:prune_pending_logins': prunePendingLogins,
};

/** Recurring jobs. Graphile's cron is exactly-once per tick across any number of workers. */
const CRONTAB = [
  `*/5 * * * * maintenance:prune_rate_limits ?max=1 {"keepSeconds":120}`,
  '*/10 * * * * maintenance:prune_pending_logins ?max=1',
].join('\n');

export type WorkerHandle = { stop: () => Promise<void>; runner: Runner };

export type StartWorkerOptions = {
  connectionString: string;
  db: Db;
  logger: JobLogger;
  concurrency?: number;
  pollInterval?: number;
};

/** Starts a Graphile Worker runner for svc's tasks. Migrations must already be applied. */
export async function startWorker(opts: StartWorkerOptions): Promise<WorkerHandle> {
  const ctx: JobContext = { db: opts.db, logger: opts.logger };
  const taskList: TaskList = {};
  for (const [name, task] of Object.entries(TASKS)) {
    const wrapped: Task = async (payload) => {
      await task(payload, ctx);
    };
    taskList[name] = wrapped;
  }
  const runner = await run({
    connectionString: opts.connectionString,
    concurrency: opts.concurrency ?? 5,
    pollInterval: opts.pollInterval ?? 2000,
    noHandleSignals: true,
    taskList,
    crontab: CRONTAB,
    logger: new Logger((scope) => (level, message) => {
      const fields = { worker: scope.workerId, task: scope.taskIdentifier, job: scope.jobId };
      // Called as methods: pino's log functions need their logger as `this`.
      if (level === 'error') {
        opts.logger.error(fields, message);
      } else if (level === 'debug') {
        opts.logger.debug(fields, message);
      } else {
        opts.logger.info(fields, message);
      }
    }),
    preset: {
      // 0.17.3 loses job completions still waiting in a batch on graceful shutdown unless the
      // batch delay is 0: a completed job would then run again after a restart.
      worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 },
    },
  });
  return {
    runner,
    stop: async () => {
      await runner.stop();
    },
  };
}
