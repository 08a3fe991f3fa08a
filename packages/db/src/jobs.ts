import { SQL, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { DbOrTx } from './client.ts';

/**
 * The Graphile Worker jobs of svc, in one place: every task's name and payload schema (the
 * worker, packages/jobs, runs them and parses each payload at the top of its task: jobs may
 * outlive a deploy), and the one way to add a job, `addJob` (or `addJobSql` inside a statement
 * of the caller's). A job is added through the caller's transaction: it exists if and only if
 * the change that caused it commits.
 */

/** Payload schemas of every task, parsed at the top of the task (jobs may outlive a deploy). */
export const ZTaskPayloads = {
  'maintenance:prune_rate_limits': z.object({
    /** Keep windows newer than this many seconds. */
    keepSeconds: z.number().int().positive().default(120),
  }),
  /** Sign-ins started and never finished (abandoned, bots, stuffing) would otherwise pile up. */
  'maintenance:prune_pending_logins': z.object({}),
  /**
   * svc's OpenID Provider: deletes expired artifacts (codes, sessions, refresh tokens, ...) and
   * signing keys superseded long ago (no token they signed is still valid: the JWKS dropped them
   * after the longest token lifetime).
   */
  'maintenance:prune_oidc': z.object({
    supersededKeysKeepDays: z.number().int().positive().default(7),
  }),
  /**
   * svc's OpenID Provider: deletes dynamically registered clients no token was issued to for
   * OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS (the worker's setting).
   */
  'maintenance:prune_registered_clients': z.object({}),
  /** Sends due webhook deliveries (the rows hold the state; an empty payload means "whatever is due"). */
  'webhooks:dispatch': z.object({
    /** Only these deliveries, when due (a manual retry dispatching at once). */
    deliveryIds: z.array(z.string().min(1)).min(1).max(1000).optional(),
  }),
  /**
   * Sends one delivery whose rows are gone (an organization's `tenant.deleted`): the job carries
   * the endpoint and the event (detachEventDeliveries). Secrets stay sealed with SVC_ENCRYPTION_KEY.
   */
  'webhooks:send_detached': z.object({
    tenantId: z.string().min(1),
    endpointId: z.string().regex(/^wh_[0-9A-Za-z]{20}$/),
    url: z.string().min(1),
    secretCiphertext: z.string().min(1),
    previousSecretCiphertext: z.string().min(1).nullable(),
    event: z.object({
      id: z.string().min(1),
      type: z.string().min(1),
      createdAtMs: z.number(),
      /** The event's `data` as PostgreSQL prints jsonb: spliced into the body as is. */
      dataJson: z.string().min(2),
    }),
    /** 1 for the first attempt; each retry is a new job with the next number. */
    attempt: z.number().int().min(1),
  }),
  /**
   * Sends one OIDC Back-Channel Logout token to an application (oidc/backchannel-logout.ts): a
   * svc session's sign-in to it ended (apps/api endSessions). The application's URL and the
   * signing key are read when it runs.
   */
  'oidc:backchannel_logout': z.object({
    sessionId: z.string().regex(/^ses_[0-9A-Za-z]{20}$/),
    userId: z.string().regex(/^usr_[0-9A-Za-z]{20}$/),
    applicationId: z.string().regex(/^app_[0-9A-Za-z]{20}$/),
    /** The logout token's jti: the same on every attempt of the chain. */
    jti: z.string().min(16).max(64),
    /** 1 for the first attempt; each retry is a new job with the next number. */
    attempt: z.number().int().min(1),
  }),
  /** Sends due invitation emails (the outbox rows hold the state: nothing to carry). */
  'email:dispatch': z.object({}),
  /** Hands queued billing sync logs to their providers (the log rows hold the state: nothing to carry). */
  'billing:sync': z.object({}),
  /**
   * Records the hourly `usage.summary` events of one hour (tasks/usage-summary.ts): `hour` (any
   * instant in it) when run by hand, else the hour before the crontab tick Graphile passes.
   */
  'usage:summarize': z.object({
    hour: z.iso.datetime({ offset: true }).optional(),
    _cron: z.object({ ts: z.string().optional() }).partial().optional(),
  }),
  /**
   * Daily: checks every verified domain's TXT record again; one whose record is gone becomes
   * pending (domain.unverified). The rows hold the state: nothing to carry.
   */
  'domains:recheck': z.object({}),
  /**
   * The partitioned tables (docs/operations.md "Partitioned tables"): makes the months ahead, then
   * drops the months past each table's retention (the worker's settings; unset, kept).
   */
  'maintenance:partitions': z.object({
    /** Months made ahead of the current one. */
    monthsAhead: z.number().int().min(1).max(24).default(3),
  }),
  /** Builds one export snapshot (the export row holds the state: a re-run after completion does nothing). */
  'exports:build': z.object({
    exportId: z.string().regex(/^exp_[0-9A-Za-z]{20}$/),
    tenantId: z.string().min(1),
  }),
} as const;

export type TaskName = keyof typeof ZTaskPayloads;
export type TaskPayloads = { [N in TaskName]: z.input<(typeof ZTaskPayloads)[N]> };

export type AddJobOptions = {
  /** Deduplicates pending jobs: another add with the same key replaces it (job_key_mode 'replace'). */
  jobKey?: string | SQL;
  /** When it may run (default now); an SQL expression inside a statement of the caller's. */
  runAt?: Date | SQL;
  maxAttempts?: number;
};

/**
 * `graphile_worker.add_job(...)` as an SQL expression, for a statement that adds a job beside
 * its own work (a CTE, a `case`): `payload` is the task's payload, or an SQL expression that
 * builds it from the statement's rows. Only the options given are named, so the statement's text
 * is the same on every call of a call site (prepared statements stay few).
 */
export function addJobSql<N extends TaskName>(name: N, payload: TaskPayloads[N] | SQL, opts: AddJobOptions = {}): SQL {
  const args: SQL[] = [
    sql`identifier => ${name}::text`,
    payload instanceof SQL ? sql`payload => (${payload})::json` : sql`payload => ${JSON.stringify(payload)}::json`,
  ];
  if (opts.runAt !== undefined) {
    args.push(opts.runAt instanceof SQL ? sql`run_at => ${opts.runAt}` : sql`run_at => ${opts.runAt.toISOString()}::timestamptz`);
  }
  if (opts.maxAttempts !== undefined) {
    args.push(sql`max_attempts => ${opts.maxAttempts}::int`);
  }
  if (opts.jobKey !== undefined) {
    args.push(opts.jobKey instanceof SQL ? sql`job_key => ${opts.jobKey}` : sql`job_key => ${opts.jobKey}::text`);
    args.push(sql`job_key_mode => 'replace'`);
  }
  return sql`graphile_worker.add_job(${sql.join(args, sql`, `)})`;
}

/** Adds a job through the caller's transaction (see addJobSql). */
export async function addJob<N extends TaskName>(tx: DbOrTx, name: N, payload: TaskPayloads[N], opts: AddJobOptions = {}): Promise<void> {
  await tx.execute(sql`select ${addJobSql(name, payload, opts)}`);
}
