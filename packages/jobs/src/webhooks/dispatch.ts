import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { Db } from '@svc/db/client';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  type DeliveryResult,
  recordDeliveryResults,
  scheduleNextDispatch,
} from '@svc/db/queries/webhook-dispatch';
import type { WebhookAttemptOutcome } from '@svc/db/schema/webhooks';
import type { SecretBox } from '@svc/db/secret-box';
import type { JobContext, JobLogger } from '../runner.ts';
import { ZTaskPayloads } from '../task-names.ts';
import { openWebhookSecret, webhookSecretKey } from './secrets.ts';
import { webhookBody, webhookHeaders } from './signing.ts';

/**
 * The webhook delivery engine: the `webhooks:dispatch` task. The delivery row owns the state
 * (ARCHITECTURE.md section 5), so the job itself carries nothing: any run, on any worker,
 * claims whatever is due, sends it, records the attempts, and schedules the next run. Runs are
 * cheap to repeat: a run that finds nothing due does two statements.
 *
 * One run: claim a batch of due deliveries (a short lease, `locked_until`), send them with up to
 * DISPATCH_CONCURRENCY requests in flight, claim again as slots free up, and write finished
 * attempts in batches, one statement per batch, while the next requests are on the wire. It stops
 * claiming when nothing more is due, after RUN_BUDGET_MS, or when the worker begins a graceful
 * stop; sends already in flight finish and are recorded (a stop that can wait no longer
 * interrupts them: outcome `interrupted`, due again at once). Finally it queues a run now if
 * work is still due, and a wake-up run for the earliest retry.
 *
 * Recovery: the worker queues a run when it starts, the crontab sweeps once a minute, and a claim
 * left by a worker that died expires after the send timeout plus CLAIM_MARGIN_MS. A delivery is
 * sent at least once; the receiver deduplicates on `webhook-id` (the event id, the same on
 * every attempt).
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

/** Requests in flight at once in one run. */
export const DISPATCH_CONCURRENCY = 32;
/** A run stops claiming after this long and queues its successor: no run holds a worker slot for long. */
export const RUN_BUDGET_MS = 10_000;
/** A claim outlives the send timeout by this much: time to write the result after the answer. */
export const CLAIM_MARGIN_MS = 10_000;
/** Retry delays vary by up to this fraction either way, so failures at one moment do not retry in lockstep. */
export const RETRY_JITTER = 0.2;

/** Identifies this process in `locked_by` (with a random part per claim). */
const WORKER_LABEL = `${hostname()}:${process.pid}`;

/**
 * The delay before the attempt after `attemptNumber` (1-based) failed, jittered by ±RETRY_JITTER
 * (a 0 stays 0: "immediately"), or null when the schedule is exhausted.
 */
export function retryDelayMs(scheduleMs: readonly number[], attemptNumber: number, random: () => number = Math.random): number | null {
  const base = scheduleMs[attemptNumber];
  if (base === undefined) {
    return null;
  }
  return Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
}

/** Where an attempt's outcome moves its delivery. */
export function stateAfter(
  outcome: WebhookAttemptOutcome,
  attemptNumber: number,
  scheduleMs: readonly number[],
): Pick<DeliveryResult, 'status' | 'retryInMs'> {
  switch (outcome) {
    case 'succeeded':
      return { status: 'succeeded', retryInMs: null };
    // The receiver said it is gone for good (the endpoint is disabled with it), or the endpoint
    // was disabled before this attempt: retrying would go nowhere.
    case 'gone':
    case 'endpoint_disabled':
      return { status: 'failed', retryInMs: null };
    // Cut off by a shutdown, not a verdict on the receiver: due again at once, on another worker.
    case 'interrupted':
      return { status: 'retrying', retryInMs: 0 };
    case 'http_error':
    case 'redirect':
    case 'timeout':
    case 'response_too_large':
    case 'connection_failed':
    case 'address_not_allowed': {
      const delay = retryDelayMs(scheduleMs, attemptNumber);
      return delay === null ? { status: 'failed', retryInMs: null } : { status: 'retrying', retryInMs: delay };
    }
    default:
      return outcome satisfies never;
  }
}

/** Counts free request slots; `atLeast` waits until enough are free. */
class Slots {
  private used = 0;
  private waiters: (() => void)[] = [];
  constructor(readonly size: number) {}
  get free(): number {
    return this.size - this.used;
  }
  take(): void {
    this.used++;
  }
  release(): void {
    this.used--;
    for (const wake of this.waiters.splice(0)) {
      wake();
    }
  }
  async atLeast(n: number): Promise<void> {
    while (this.free < n) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

/** Write attempts, up to this many times per batch: a database restart should not cost a resend. */
const RECORD_TRIES = 4;

/**
 * Buffers finished attempts and writes them in batches: while one batch is being written, the
 * next accumulates, so under load each statement carries many attempts.
 */
function createRecorder(db: Db, logger: JobLogger) {
  let buffer: DeliveryResult[] = [];
  let flushing: Promise<void> | null = null;
  let failure: unknown = null;

  const write = async (batch: DeliveryResult[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const written = await recordDeliveryResults(db, batch);
        if (written.length < batch.length) {
          // The claim expired and another worker took the row: its result is the one that counts.
          const lost = batch.map((r) => r.deliveryId).filter((id) => !written.includes(id));
          logger.info({ deliveries: lost }, 'webhook attempts not recorded: the claim had passed to another worker');
        }
        return;
      } catch (error) {
        if (attempt >= RECORD_TRIES) {
          throw error;
        }
        await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
      }
    }
  };
  const flushLoop = async () => {
    while (buffer.length > 0) {
      const batch = buffer;
      buffer = [];
      try {
        await write(batch);
      } catch (error) {
        // The claims of this batch expire and the deliveries are sent again: at least once.
        failure ??= error;
      }
    }
    flushing = null;
  };
  return {
    add(result: DeliveryResult): void {
      buffer.push(result);
      flushing ??= flushLoop();
    },
    /** Waits for every buffered attempt to be written; throws the first write failure. */
    async drain(): Promise<void> {
      while (flushing) {
        await flushing;
      }
      if (failure) {
        throw failure;
      }
    },
    get failed(): boolean {
      return failure !== null;
    },
  };
}

/** HMAC keys of a run, by endpoint and ciphertext: each secret is decrypted once per run. */
function keyOpener(box: SecretBox) {
  const cache = new Map<string, Buffer>();
  return (endpointId: string, sealed: string): Buffer => {
    const cacheKey = `${endpointId}\u0000${sealed}`;
    let key = cache.get(cacheKey);
    if (!key) {
      key = webhookSecretKey(openWebhookSecret(box, endpointId, sealed));
      cache.set(cacheKey, key);
    }
    return key;
  };
}

/** The `webhooks:dispatch` task. Payload `{}`, or `{ deliveryIds }` to dispatch only those (when due). */
export async function dispatchWebhooks(payload: unknown, ctx: JobContext, helpers: { abortSignal: AbortSignal }): Promise<void> {
  const { deliveryIds } = ZTaskPayloads['webhooks:dispatch'].parse(payload ?? {});
  const settings = ctx.webhooks;
  const started = Date.now();
  const lockMs = settings.timeoutMs + CLAIM_MARGIN_MS;
  const slots = new Slots(DISPATCH_CONCURRENCY);
  const recorder = createRecorder(ctx.db, ctx.logger);
  const openKey = keyOpener(ctx.secretBox);
  const inFlight = new Set<Promise<void>>();
  const counts: Partial<Record<WebhookAttemptOutcome, number>> = {};
  // Graphile's abort means the stop can wait no longer: in-flight sends end as `interrupted`.
  // One listener on its signal, fanned out to the sends through a signal of this run's own.
  const interrupt = new AbortController();
  setMaxListeners(DISPATCH_CONCURRENCY + 1, interrupt.signal);
  const onAbort = () => interrupt.abort();
  if (helpers.abortSignal.aborted) {
    interrupt.abort();
  }
  helpers.abortSignal.addEventListener('abort', onAbort, { once: true });

  const attempt = async (delivery: ClaimedDelivery, token: string): Promise<DeliveryResult> => {
    const startedAt = new Date();
    const base = { deliveryId: delivery.id, token, attemptNumber: delivery.attemptNumber, startedAt };
    if (!delivery.endpointEnabled) {
      const outcome = 'endpoint_disabled';
      return {
        ...base,
        durationMs: 0,
        statusCode: null,
        outcome,
        error: 'the endpoint is disabled; nothing was sent',
        responseExcerpt: null,
        signatureCount: 0,
        ...stateAfter(outcome, delivery.attemptNumber, settings.retryScheduleMs),
      };
    }
    let keys: Buffer[];
    try {
      keys = [openKey(delivery.endpointId, delivery.secretCiphertext)];
      if (delivery.previousSecretCiphertext) {
        keys.push(openKey(delivery.endpointId, delivery.previousSecretCiphertext));
      }
    } catch {
      // SVC_ENCRYPTION_KEY changed or the row was tampered with: nothing can be signed. Retried
      // on the schedule, so restoring the key recovers the deliveries still in it.
      const outcome = 'connection_failed';
      return {
        ...base,
        durationMs: 0,
        statusCode: null,
        outcome,
        error: "not sent: the endpoint's signing secret does not decrypt with SVC_ENCRYPTION_KEY",
        responseExcerpt: null,
        signatureCount: 0,
        ...stateAfter(outcome, delivery.attemptNumber, settings.retryScheduleMs),
      };
    }
    const body = webhookBody({
      id: delivery.eventId,
      type: delivery.eventType,
      createdAt: delivery.eventCreatedAt,
      dataJson: delivery.eventDataJson,
    });
    const headers = webhookHeaders({ id: delivery.eventId, body, keys, now: startedAt });
    const sent = await ctx.webhookSender.send({ url: delivery.url, headers, body, signal: interrupt.signal });
    return {
      ...base,
      ...sent,
      signatureCount: keys.length,
      ...stateAfter(sent.outcome, delivery.attemptNumber, settings.retryScheduleMs),
    };
  };

  const shouldClaim = () => !ctx.stopping.aborted && !interrupt.signal.aborted && !recorder.failed && Date.now() - started < RUN_BUDGET_MS;

  const claimAndSend = async (): Promise<void> => {
    while (shouldClaim()) {
      // Claim in batches of at least half the slots: fewer, fuller claim statements.
      await slots.atLeast(Math.ceil(slots.size / 2));
      if (!shouldClaim()) {
        break;
      }
      const token = `${WORKER_LABEL}:${randomBytes(6).toString('base64url')}`;
      const limit = slots.free;
      const claimed = await claimDueDeliveries(ctx.db, { token, limit, lockMs, deliveryIds });
      for (const delivery of claimed) {
        slots.take();
        const sending = attempt(delivery, token)
          .then((result) => {
            counts[result.outcome] = (counts[result.outcome] ?? 0) + 1;
            recorder.add(result);
          })
          .finally(() => {
            slots.release();
            inFlight.delete(sending);
          });
        inFlight.add(sending);
      }
      if (claimed.length < limit) {
        break;
      }
    }
  };

  let claimError: unknown = null;
  try {
    await claimAndSend();
  } catch (error) {
    // The database is unreachable, say: finish and record what is in flight, then fail the job
    // (Graphile retries it with backoff; the crontab sweep runs regardless).
    claimError = error;
  }
  const sends = await Promise.allSettled(inFlight);
  helpers.abortSignal.removeEventListener('abort', onAbort);
  await recorder.drain();
  if (claimError) {
    throw claimError;
  }
  for (const send of sends) {
    if (send.status === 'rejected') {
      throw send.reason;
    }
  }
  const next = await scheduleNextDispatch(ctx.db);
  if (Object.keys(counts).length > 0) {
    ctx.logger.debug({ outcomes: counts, ms: Date.now() - started, dueNow: next.dueNow, wakeAt: next.wakeAt }, 'webhook dispatch run');
  }
}
