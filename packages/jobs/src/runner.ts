import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '@svc/db/client';
import { addJob, type TaskName } from '@svc/db/jobs';
import { BILLING_SYNC_JOB_KEY } from '@svc/db/queries/billing-sync-queue';
import { EMAIL_DISPATCH_JOB_KEY } from '@svc/db/queries/email-deliveries';
import { WEBHOOK_DISPATCH_JOB_KEY } from '@svc/db/queries/webhook-events';
import type { SecretBox } from '@svc/db/secret-box';
import { type JobHelpers, Logger, type Runner, run, type Task, type TaskList } from 'graphile-worker';
import pg from 'pg';
import type { BillingSyncSettings } from './billing/sync.ts';
import type { JobContext, RetentionSettings, WebhookDeliverySettings } from './context.ts';
import type { DnsSettings } from './domains/dns-check.ts';
import type { EmailOutboxSettings } from './email/providers.ts';
import type { JobLogger } from './logger.ts';
import { sendBackchannelLogout } from './oidc/backchannel-logout.ts';
import { syncBilling } from './tasks/billing-sync.ts';
import { recheckDomains } from './tasks/domains-recheck.ts';
import { dispatchEmail } from './tasks/email-dispatch.ts';
import { buildExport } from './tasks/exports-build.ts';
import { maintainPartitions } from './tasks/maintain-partitions.ts';
import { pruneOidc } from './tasks/prune-oidc.ts';
import { prunePendingLogins } from './tasks/prune-pending-logins.ts';
import { pruneRateLimits } from './tasks/prune-rate-limits.ts';
import { pruneRegisteredClients } from './tasks/prune-registered-clients.ts';
import { summarizeUsage } from './tasks/usage-summary.ts';
import { dispatchWebhooks } from './webhooks/dispatch.ts';
import { sendDetachedDelivery } from './webhooks/send-detached.ts';
import { createWebhookSender, type WebhookSender } from './webhooks/sender.ts';

export type { JobContext, JobLogger, WebhookDeliverySettings };

type SvcTask = (payload: unknown, ctx: JobContext, helpers: JobHelpers) => Promise<void>;

const TASKS: Record<TaskName, SvcTask> = {
  'maintenance:prune_rate_limits': pruneRateLimits,
  'maintenance:prune_pending_logins': prunePendingLogins,
  'maintenance:prune_oidc': pruneOidc,
  'maintenance:prune_registered_clients': pruneRegisteredClients,
  'webhooks:dispatch': dispatchWebhooks,
  'webhooks:send_detached': sendDetachedDelivery,
  'email:dispatch': dispatchEmail,
  'billing:sync': syncBilling,
  'exports:build': buildExport,
  'oidc:backchannel_logout': sendBackchannelLogout,
  'usage:summarize': summarizeUsage,
  'domains:recheck': recheckDomains,
  'maintenance:partitions': maintainPartitions,
};

/** Recurring jobs. Graphile's cron is exactly-once per tick across any number of workers. */
export const CRONTAB = [
  `*/5 * * * * maintenance:prune_rate_limits ?max=1 {"keepSeconds":120}`,
  '*/10 * * * * maintenance:prune_pending_logins ?max=1',
  '*/15 * * * * maintenance:prune_oidc ?max=1',
  // Dynamically registered clients unused for OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS (docs/oidc.md).
  '23 * * * * maintenance:prune_registered_clients ?max=1',
  // A sweep for webhook deliveries nothing else woke (a wake job lost with its worker, say).
  `* * * * * webhooks:dispatch ?max=1&jobKey=${WEBHOOK_DISPATCH_JOB_KEY}`,
  // Billing sync logs nothing else woke (a wake-up lost with its worker, say).
  `* * * * * billing:sync ?max=1&jobKey=${BILLING_SYNC_JOB_KEY}`,
  // The usage.summary events of the hour before (a worker down at the time catches up on return).
  '5 * * * * usage:summarize ?max=5&fill=1d',
  // Verified domains whose TXT record is gone become pending again (docs/enterprise.md "Domains").
  '17 3 * * * domains:recheck ?max=1',
  // The partitioned tables' months ahead, and retention's drops (docs/operations.md "Partitioned tables").
  '41 2 * * * maintenance:partitions ?max=1',
].join('\n');

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
  /** STRIPE_* / RAZORPAY_* / PADDLE_* (apps/api env.ts `config.billing`); absent, every sync log is skipped as not configured. */
  billing?: BillingSyncSettings;
  /**
   * PUBLIC_URL, the OpenID Provider's issuer (absent, back-channel logout jobs wait for a worker
   * that has it), and OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS (absent, 30).
   */
  oidc?: { issuer: string; registeredClientUnusedDays?: number };
  /** DNS_RESOLVER and DNS_TIMEOUT_MS; absent, the system's resolvers (DEFAULT_DNS_SETTINGS). */
  dns?: DnsSettings;
  /** EVENTS_RETENTION_DAYS, USAGE_RETENTION_DAYS, AUDIT_RETENTION_DAYS; absent, nothing is dropped. */
  retention?: RetentionSettings;
};

export type WorkerHandle = {
  /** Graceful stop: no new jobs, running ones finish (see JobContext.stopping). */
  stop: () => Promise<void>;
  /** A runner is taking jobs: false once stopped, and while a runner that ended is being replaced. */
  running: () => boolean;
};

/** Waits before starting a runner again after one stopped on its own (the last delay repeats). */
const RESTART_DELAYS_MS = [250, 1_000, 2_000, 5_000];
/** How long a runner that gave up may take to finish the jobs it still runs before it is killed. */
const RETIRED_RUNNER_GRACE_MS = 30_000;

/**
 * Starts a Graphile Worker runner for svc's tasks, and keeps one running until `stop()`.
 * Migrations must already be applied.
 *
 * Graphile 0.17.3 shuts its worker pool down ("queue is in an inconsistent state") the first time
 * it cannot record a job's completion or failure, which a database restart at the wrong moment
 * causes; the process would then live on without running any job. So a runner that ends on its
 * own is replaced by a fresh one (after RESTART_DELAYS_MS, retrying while the database is
 * unreachable), as soon as it reports the fatal error: its own shutdown can hang. The job it
 * could not record runs again later: tasks are idempotent.
 */
export async function startWorker(opts: StartWorkerOptions): Promise<WorkerHandle> {
  const webhookSender = createWebhookSender(opts.webhooks);
  let current: Launched;
  try {
    current = await launch(opts, webhookSender);
  } catch (error) {
    webhookSender.close();
    throw error;
  }
  const stopped = new AbortController();
  let restarting: Promise<void> | undefined;

  const restart = async () => {
    for (let i = 0; ; i++) {
      try {
        await sleep(RESTART_DELAYS_MS[Math.min(i, RESTART_DELAYS_MS.length - 1)], undefined, { signal: stopped.signal });
        current = await launch(opts, webhookSender);
        opts.logger.info({}, 'job runner started again');
        supervise(current);
        return;
      } catch (error) {
        if (stopped.signal.aborted) {
          return;
        }
        opts.logger.error({ err: error }, 'could not start the job runner again; retrying');
      }
    }
  };
  const supervise = (launched: Launched) => {
    const retire = (error: unknown) => {
      if (launched.retired || stopped.signal.aborted || launched !== current) {
        return;
      }
      launched.retired = true;
      opts.logger.error({ err: error }, 'the job runner stopped on its own; starting a new one');
      restarting = restart();
      // Its own shutdown can hang (its pool waiting on a connection the restart killed): after
      // a grace period for the jobs it still runs, it is cut off.
      const cutOff = setTimeout(() => {
        launched.runner.kill().catch(() => {});
      }, RETIRED_RUNNER_GRACE_MS);
      cutOff.unref();
      launched.runner.promise.then(
        () => clearTimeout(cutOff),
        () => clearTimeout(cutOff),
      );
    };
    // A fatal error: the pool is shutting down, which may take long or never end; replace it now.
    launched.runner.events.on('pool:fatalError', ({ error }) => retire(error));
    launched.runner.promise.then(
      () => retire(null),
      (error: unknown) => retire(error),
    );
  };
  supervise(current);

  return {
    running: () => !stopped.signal.aborted && !current.retired,
    stop: async () => {
      stopped.abort();
      try {
        // A restart under way either gave up (aborted) or finished: then `current` is its runner.
        await restarting;
        if (current.retired) {
          // Already shutting down on its own, perhaps for ever: cut it off.
          await current.runner.kill().catch(() => {});
        } else {
          await current.stop();
        }
      } finally {
        webhookSender.close();
      }
    },
  };
}

type Launched = {
  runner: Runner;
  stop: () => Promise<void>;
  /** It stopped, or is stopping, on its own; another runner replaces it. */
  retired: boolean;
};

/** `application_name` of the job runner's connections. */
export const WORKER_APPLICATION_NAME = 'svc-worker';

/**
 * A runner's PostgreSQL pool, owned here rather than by Graphile: 0.17.3 removes the error
 * listeners of a pool it made and calls its end() without waiting when the runner stops, so an
 * idle connection that the database closed a moment later (an embedded PostgreSQL stopped after
 * svc's pools, a restart) raised an unhandled 'error' and crashed the process. This pool keeps its
 * listeners for life, and `end` resolves once every connection is closed.
 */
function workerPool(opts: StartWorkerOptions): { pool: pg.Pool; end: () => Promise<void> } {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: (opts.concurrency ?? 5) + 5,
    // Tells the worker's connections apart in pg_stat_activity.
    application_name: WORKER_APPLICATION_NAME,
  });
  const onError = (error: Error) => {
    // pg drops the broken connection itself; a checked-out one fails its next query, which the
    // runner handles. Expected while the database restarts, so not an error of its own.
    opts.logger.info({ code: (error as { code?: string }).code }, `job runner database connection closed: ${error.message}`);
  };
  pool.on('error', onError);
  // pg-pool's end() resolves once no client is checked out, while the idle ones it ends are
  // still saying goodbye to the server: the connections are counted here until each is closed.
  const open = new Set<pg.PoolClient>();
  let allClosed: (() => void) | undefined;
  pool.on('connect', (client) => {
    client.on('error', onError);
    open.add(client);
  });
  pool.on('remove', (client) => {
    open.delete(client);
    if (open.size === 0) {
      allClosed?.();
    }
  });
  let ended: Promise<void> | undefined;
  return {
    pool,
    end: () => {
      ended ??= (async () => {
        const closed = new Promise<void>((resolve) => {
          allClosed = resolve;
        });
        await pool.end().catch(() => {});
        if (open.size > 0) {
          // Bounded: a connection whose server vanished is given up on, not waited for forever.
          await Promise.race([closed, sleep(POOL_CLOSE_GRACE_MS, undefined, { ref: false })]);
        }
      })();
      return ended;
    },
  };
}

/** How long stopping waits for the worker's last connections to close. */
const POOL_CLOSE_GRACE_MS = 5_000;

/** One Graphile runner with its own stop signal, and the start-up jobs queued. */
async function launch(opts: StartWorkerOptions, webhookSender: WebhookSender): Promise<Launched> {
  const stopping = new AbortController();
  const ctx: JobContext = {
    db: opts.db,
    logger: opts.logger,
    secretBox: opts.secretBox,
    webhooks: opts.webhooks,
    webhookSender,
    email: opts.email,
    billing: opts.billing ?? { settings: { stripe: null, razorpay: null, paddle: null } },
    ...(opts.oidc ? { oidc: opts.oidc } : {}),
    ...(opts.dns ? { dns: opts.dns } : {}),
    ...(opts.retention ? { retention: opts.retention } : {}),
    stopping: stopping.signal,
  };
  const taskList: TaskList = {};
  for (const [name, task] of Object.entries(TASKS)) {
    const wrapped: Task = async (payload, helpers) => {
      await task(payload, ctx, helpers);
    };
    taskList[name] = wrapped;
  }
  const connections = workerPool(opts);
  let runner: Runner;
  try {
    runner = await run({
      pgPool: connections.pool,
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
  } catch (error) {
    await connections.end();
    throw error;
  }
  // The pool closes once its runner has ended, however it ended (stop, kill, its own shutdown).
  const poolEnded = runner.promise.then(connections.end, connections.end);
  // Graphile's own shutdown (after a fatal error) stops claiming new work too.
  runner.events.on('pool:gracefulShutdown', () => stopping.abort());
  const stop = async () => {
    stopping.abort();
    try {
      await runner.stop();
    } catch (error) {
      // A runner that already ended on its own has nothing left to stop.
      if (!/already stopped/i.test((error as Error).message)) {
        throw error;
      }
    }
    // Every connection closed before stop() resolves: the database may be stopped next.
    await poolEnded;
  };
  // Deliveries left due by a worker that stopped or crashed are picked up now, not at the next sweep.
  try {
    await addJob(opts.db, 'webhooks:dispatch', {}, { jobKey: WEBHOOK_DISPATCH_JOB_KEY });
    // A worker back after a long stop makes the months it missed before rows need them.
    await addJob(opts.db, 'maintenance:partitions', {}, { jobKey: 'maintenance:partitions' });
    if (opts.email?.enabled) {
      // Emails left due while no worker with a provider ran are sent now.
      await addJob(opts.db, 'email:dispatch', {}, { jobKey: EMAIL_DISPATCH_JOB_KEY });
    }
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
  return { runner, stop, retired: false };
}
