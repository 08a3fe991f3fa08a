import type { Db } from '@svc/db/client';
import type { SecretBox } from '@svc/db/secret-box';
import type { BillingSyncSettings } from './billing/sync.ts';
import type { DnsSettings } from './domains/dns-check.ts';
import type { EmailOutboxSettings } from './email/providers.ts';
import type { JobLogger } from './logger.ts';
import type { WebhookSender } from './webhooks/sender.ts';

/*
 * What the worker hands its tasks. Tasks import it from here, never from runner.ts (which imports
 * them): the package's imports have no cycle.
 */

/** What the worker needs to deliver webhooks (apps/api env.ts `config.webhooks`). */
export type WebhookDeliverySettings = {
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private receivers allowed (local development and tests). */
  allowPrivate: boolean;
  /** A receiver's whole answer (connect, status, body) must arrive within this. */
  timeoutMs: number;
  /** `retryScheduleMs[n]` is the delay before attempt n+1; its length is the number of attempts. */
  retryScheduleMs: number[];
  /**
   * How long a rotated-out secret keeps signing. Applied by the rotation itself
   * (previous_secret_expires_at); the dispatcher only reads that column.
   */
  secretGraceMs: number;
};

/**
 * How long the partitioned tables keep their rows, in days (docs/operations.md "Partitioned
 * tables"); null keeps them. Retention drops whole months, once all of a month is past it.
 */
export type RetentionSettings = {
  /** EVENTS_RETENTION_DAYS: webhook events (the events feed) and their deliveries. */
  eventsDays: number | null;
  /** USAGE_RETENTION_DAYS: usage events and their idempotency keys. */
  usageDays: number | null;
  /** AUDIT_RETENTION_DAYS: the audit log. */
  auditDays: number | null;
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
  /** The billing providers' credentials; a provider left out has its sync logs skipped. */
  billing: BillingSyncSettings;
  /**
   * svc's OpenID Provider (PUBLIC_URL is its issuer): back-channel logout tokens are signed for
   * it; registered clients unused for registeredClientUnusedDays are deleted.
   */
  oidc?: { issuer: string; registeredClientUnusedDays?: number };
  /** What maintenance:partitions drops; absent, nothing is dropped (partitions are still made ahead). */
  retention?: RetentionSettings;
  /** The resolver domain verification asks (domains:recheck); absent, the system's (DEFAULT_DNS_SETTINGS). */
  dns?: DnsSettings;
  /**
   * Aborted when a graceful stop begins: a task that loops over batches claims no new work and
   * finishes what it holds. (Graphile's own `helpers.abortSignal` fires only once the stop has
   * waited gracefulShutdownAbortTimeout: that one means "give up what is in flight".)
   */
  stopping: AbortSignal;
};
