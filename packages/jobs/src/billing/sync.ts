import type { Db } from '@svc/db/client';
import {
  type BillingSyncResult,
  type BillingSyncTiming,
  type ClaimedBillingSync,
  claimBillingSyncLogs,
  recordBillingSyncResult,
} from '@svc/db/queries/billing';
import type { JobLogger } from '../logger.ts';
import {
  type BillingAdapter,
  type BillingProviderName,
  type BillingSettings,
  billingSecretsOf,
  createBillingAdapters,
  type SendOutcome,
} from './providers.ts';

/**
 * Waits after a failed attempt (a 429 or 5xx answer, or no answer from a provider that
 * deduplicates): 30 s, 2 min, 10 min, 1 h, 6 h. After the sixth attempt the log is failed
 * (about 7 hours after it was queued); POST /v1/billing/sync-logs/{id}/retry starts a new round.
 */
export const BILLING_RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 3_600_000, 21_600_000];

/** How long one provider call may take before it counts as unanswered. */
export const BILLING_SEND_TIMEOUT_MS = 20_000;

/** Logs claimed at once; they are sent concurrently. */
const CLAIM_BATCH = 10;

const PROVIDER_LABEL: Record<BillingProviderName, string> = { stripe: 'Stripe', razorpay: 'Razorpay', paddle: 'Paddle' };
const PROVIDER_SETTING: Record<BillingProviderName, string> = {
  stripe: 'STRIPE_SECRET_KEY',
  razorpay: 'RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET',
  paddle: 'PADDLE_API_KEY',
};

/** Everything a sync run needs besides the database. */
export type BillingSync = {
  settings: BillingSettings;
  logger: JobLogger;
  /** Defaults to BILLING_SEND_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Defaults to BILLING_RETRY_DELAYS_MS; its length + 1 is the number of attempts. */
  retryDelaysMs?: number[];
  /** How long a claim lasts; defaults to the send timeout plus 30 s. */
  leaseMs?: number;
};

/** The billing settings a worker is started with (StartWorkerOptions.billing): everything but the logger. */
export type BillingSyncSettings = Omit<BillingSync, 'logger'>;

export function billingSyncTiming(sync: BillingSync): BillingSyncTiming {
  const timeoutMs = sync.timeoutMs ?? BILLING_SEND_TIMEOUT_MS;
  return { retryDelaysMs: sync.retryDelaysMs ?? BILLING_RETRY_DELAYS_MS, leaseMs: sync.leaseMs ?? timeoutMs + 30_000 };
}

export type BillingSyncRunResult = { processed: number; succeeded: number; failed: number; skipped: number; retrying: number };

/**
 * Claims due sync logs in batches and hands each to its provider through the provider's SDK,
 * recording the outcome on the log: succeeded (with the provider's record id), skipped (why:
 * provider not configured, no connection, mode mismatch, nothing to record), failed (a safe
 * reason), or queued again for a later attempt. Safe to run in any number of workers at once:
 * each log is claimed by one (`for update skip locked`, then a lease), and an outcome is only
 * recorded while the claim holds.
 *
 * Idempotent per (usage event, mapping): a succeeded log is never claimed again, every attempt
 * carries the same key, and for providers that take no idempotency key an attempt whose outcome
 * is unknown (no answer, or a worker that died mid-call) is never repeated automatically: the log
 * fails and says to check the provider before a manual retry.
 */
export async function processBillingSync(
  db: Db,
  sync: BillingSync,
  opts: { limit: number; signal?: AbortSignal },
): Promise<BillingSyncRunResult> {
  const timing = billingSyncTiming(sync);
  const adapters = createBillingAdapters(sync.settings, { timeoutMs: sync.timeoutMs ?? BILLING_SEND_TIMEOUT_MS });
  const secrets = billingSecretsOf(sync.settings);
  const result: BillingSyncRunResult = { processed: 0, succeeded: 0, failed: 0, skipped: 0, retrying: 0 };
  // A log whose attempt failed may be due again at once (a retry delay shorter than this run):
  // its next attempt belongs to a later run.
  const attempted: string[] = [];
  while (result.processed < opts.limit && !opts.signal?.aborted) {
    const claimed = await claimBillingSyncLogs(db, {
      ...timing,
      limit: Math.min(CLAIM_BATCH, opts.limit - result.processed),
      excludeIds: attempted,
    });
    if (claimed.length === 0) {
      break;
    }
    attempted.push(...claimed.map((log) => log.id));
    const recorded = await Promise.all(
      claimed.map(async (log) => {
        const outcome = mask(await attempt(log, adapters[log.provider], timing), secrets);
        const row = await recordBillingSyncResult(db, { tenantId: log.tenantId, id: log.id, attempts: log.attempts }, outcome);
        const fields = { syncLogId: log.id, tenantId: log.tenantId, provider: log.provider, attempt: log.attempts, status: outcome.status };
        if (!row) {
          sync.logger.error(fields, 'billing sync: the claim expired before the outcome was recorded (another worker owns the log now)');
        } else if (outcome.status === 'failed') {
          sync.logger.error(fields, 'billing sync failed');
        } else {
          sync.logger.info(
            fields,
            outcome.status === 'queued' ? 'billing sync attempt failed: will retry' : `billing sync ${outcome.status}`,
          );
        }
        return row ? outcome.status : undefined;
      }),
    );
    for (const status of recorded) {
      result.processed += 1;
      if (status === 'succeeded') {
        result.succeeded += 1;
      } else if (status === 'failed') {
        result.failed += 1;
      } else if (status === 'skipped') {
        result.skipped += 1;
      } else if (status === 'queued') {
        result.retrying += 1;
      }
    }
  }
  return result;
}

/** Decides and, when there is something to send, sends one claimed log. */
async function attempt(
  log: ClaimedBillingSync,
  adapter: BillingAdapter | undefined,
  timing: BillingSyncTiming,
): Promise<BillingSyncResult> {
  const name = PROVIDER_LABEL[log.provider];
  if (!adapter) {
    return { status: 'skipped', reason: `${name} is not configured on this svc (${PROVIDER_SETTING[log.provider]} unset)` };
  }
  const connection = log.connection;
  if (!connection) {
    return { status: 'skipped', reason: `the organization has no ${name} connection (POST /v1/billing/connect/${log.provider})` };
  }
  if (connection.status !== 'connected' || !connection.externalAccountId) {
    return { status: 'skipped', reason: `the ${name} connection is ${connection.status}: it needs an external account id` };
  }
  if (adapter.mode !== null && adapter.mode !== connection.mode) {
    return {
      status: 'skipped',
      reason: `the ${name} connection is ${connection.mode} but the configured ${name} key is ${adapter.mode}: nothing was sent`,
    };
  }
  if (!Number.isSafeInteger(log.quantity) || log.quantity <= 0) {
    return { status: 'skipped', reason: `quantity ${log.quantity}: nothing to record` };
  }
  const maxAttempts = timing.retryDelaysMs.length + 1;
  if (log.previousOutcomeUnknown && !adapter.deduplicates) {
    return {
      status: 'failed',
      reason: `an earlier attempt ended without an outcome (its worker stopped mid-call): check ${name} for it before retrying`,
    };
  }
  if (log.attempts > maxAttempts) {
    return { status: 'failed', reason: `no outcome after ${maxAttempts} attempts` };
  }
  const outcome: SendOutcome = await adapter.send({
    idempotencyKey: `svc-${log.usageEventId}-${log.mappingId}`,
    usageEventId: log.usageEventId,
    mappingId: log.mappingId,
    eventType: log.eventType,
    quantity: log.quantity,
    occurredAt: log.occurredAt,
    providerItemId: log.providerItemId,
    externalAccountId: connection.externalAccountId,
  });
  switch (outcome.kind) {
    case 'recorded':
      return { status: 'succeeded', reason: null, providerRecordId: outcome.providerRecordId };
    case 'rejected':
      return { status: 'failed', reason: outcome.reason };
    case 'uncertain':
      if (!adapter.deduplicates) {
        return { status: 'failed', reason: `${outcome.reason}: it may or may not have been recorded; check ${name} before retrying` };
      }
      return retryOrFail(outcome.reason, log.attempts, maxAttempts);
    case 'transient':
      return retryOrFail(outcome.reason, log.attempts, maxAttempts);
  }
}

function retryOrFail(reason: string, attempts: number, maxAttempts: number): BillingSyncResult {
  if (attempts >= maxAttempts) {
    return { status: 'failed', reason: `${reason} (attempt ${attempts} of ${maxAttempts}: giving up)` };
  }
  return { status: 'queued', reason: `${reason} (attempt ${attempts} of ${maxAttempts}: will retry)` };
}

const KEY_SHAPED = /\b((?:sk|rk)_(?:test|live)_|rzp_(?:test|live)_|pdl_(?:live|sdbx|test)_(?:apikey_)?)[0-9A-Za-z*_]+/g;

/** Defence in depth: a configured secret never reaches a sync log, whatever a provider echoed. */
function mask(result: BillingSyncResult, secrets: string[]): BillingSyncResult {
  if (result.reason === null) {
    return result;
  }
  let reason = result.reason;
  for (const secret of secrets) {
    reason = reason.split(secret).join('[redacted]');
  }
  // Key-shaped text of any account (a provider quoting a key it was sent, even partly masked).
  reason = reason.replace(KEY_SHAPED, '$1[redacted]');
  return { ...result, reason };
}
