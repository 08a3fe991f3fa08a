import type { Db } from '@svc/db/client';
import { EMAIL_DISPATCH_JOB_KEY } from '@svc/db/queries/email-deliveries';
import { WEBHOOK_DISPATCH_JOB_KEY } from '@svc/db/queries/webhook-events';
import type { SecretBox } from '@svc/db/secret-box';
import { type JobHelpers, Logger, type Runner, run, type Task, type TaskList } from 'graphile-worker';
import type { EmailOutboxSettings } from './email/providers.ts';
import type { TaskName } from './task-names.ts';
import { dispatchEmail } from './tasks/email-dispatch.ts';
import { prunePendingLogins } from './tasks/prune-pending-logins.ts';
import { pruneRateLimits } from './tasks/prune-rate-limits.ts';
import { dispatchWebhooks, type WebhookDeliverySettings } from './webhooks/dispatch.ts';
import { createWebhookSender, type WebhookSender } from './webhooks/sender.ts';

export type JobLogger = {
  debug: (obj: object, msg: string) => void;
  info: (obj: object, msg: string) => void;
  error: (obj: object, msg: string) => void;
};
/** What every task receives besides its payload. */
export type JobContext = {
  db: Db;
  logger: JobLogger;
  /** Opens sealed values (webhook signing secrets, queued email bodies) with SVC_ENCRYPTION_KEY. */
  secretBox: SecretBox;
  webhooks: WebhookDeliverySettings;
  /** The pooled HTTP client of webhook deliveries (closed when the worker stops). */
  webhookSender: WebhookSender;
  /** The invitation email outbox's provider; absent or disabled, `email:dispatch` sends nothing. */
  email?: EmailOutboxSettings;
  /**
   * Aborted when a graceful stop begins: a task that loops over batches claims no new work and
   * finishes what it holds. (Graphile's own `helpers.abortSignal` fires only once the stop has
   * waited gracefulShutdownAbortTimeout: that one means "give up what is in flight".)
   */
  stopping: AbortSignal;
};

type SvcTask = (payload: unknown, ctx: JobContext, helpers: JobHelpers) => Promise<void>;

const TASKS: Record<TaskName, SvcTask> = {
  'maintenance:prune_rate_limits': pruneRateLimits,
  'maintenance:prune_pending_logins': prunePendingLogins,
  'webhooks:dispatch': dispatchWebhooks,
  'email:dispatch': dispatchEmail,
};

/** Recurring jobs. Graphile's cron is exactly-once per tick across any number of workers. */
const CRONTAB = [
  `*/5 * * * * maintenance:prune_rate_limits ?max=1 {"keepSeconds":120}`,
  '*/10 * * * * maintenance:prune_pending_logins ?max=1',
  // A sweep for webhook deliveries nothing else woke (a wake job lost with its worker, say).
  `* * * * * webhooks:dispatch ?max=1&jobKey=${WEBHOOK_DISPATCH_JOB_KEY}`,
].join('\n');

export type WorkerHandle = { stop: () => Promise<void>; runner: Runner };

export type StartWorkerOptions = {
  connectionString: string;
  db: Db;
  logger: JobLogger;
  concurrency?: number;
  pollInterval?: number;
  secretBox: SecretBox;
  // Settings of each task family, one field each (the email outbox's goes beside this one).
  webhooks: WebhookDeliverySettings;
  /** EMAIL_* (apps/api env.ts `config.email`); absent or disabled, no email is sent by this worker. */
  email?: EmailOutboxSettings;
};

/** Starts a Graphile Worker runner for svc's tasks. Migrations must already be applied. */
export async function startWorker(opts: StartWorkerOptions): Promise<WorkerHandle> {
  const stopping = new AbortController();
  const webhookSender = createWebhookSender(opts.webhooks);
  const ctx: JobContext = {
    db: opts.db,
    logger: opts.logger,
    secretBox: opts.secretBox,
    webhooks: opts.webhooks,
    webhookSender,
    email: opts.email,
    stopping: stopping.signal,
  };
  const taskList: TaskList = {};
  for (const [name, task] of Object.entries(TASKS)) {
    const wrapped: Task = async (payload, helpers) => {
      await task(payload, ctx, helpers);
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
  // runner.stop() called directly (not through the handle) begins the same graceful stop.
  runner.events.on('pool:gracefulShutdown', () => stopping.abort());
  // Deliveries left due by a worker that stopped or crashed are picked up now, not at the next sweep.
  try {
    await runner.addJob('webhooks:dispatch', {}, { jobKey: WEBHOOK_DISPATCH_JOB_KEY, jobKeyMode: 'replace' });
    if (opts.email?.enabled) {
      // Emails left due while no worker with a provider ran are sent now.
      await runner.addJob('email:dispatch', {}, { jobKey: EMAIL_DISPATCH_JOB_KEY, jobKeyMode: 'replace' });
    }
  } catch (error) {
    await runner.stop().catch(() => {});
    webhookSender.close();
    throw error;
  }
  return {
    runner,
    stop: async () => {
      stopping.abort();
      try {
        await runner.stop();
      } finally {
        webhookSender.close();
      }
    },
  };
}
