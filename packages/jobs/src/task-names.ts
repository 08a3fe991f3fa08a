import { z } from 'zod';

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
  /** Builds one export snapshot (the export row holds the state: a re-run after completion does nothing). */
  'exports:build': z.object({
    exportId: z.string().regex(/^exp_[0-9A-Za-z]{20}$/),
    tenantId: z.string().min(1),
  }),
} as const;

export type TaskName = keyof typeof ZTaskPayloads;
export type TaskPayloads = { [N in TaskName]: z.input<(typeof ZTaskPayloads)[N]> };
