import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '@svc/db/client';
import { ZTaskPayloads } from '@svc/db/jobs';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  type DeliveryResult,
  recordDeliveryResults,
  releaseClaims,
  scheduleNextDispatch,
} from '@svc/db/queries/webhook-dispatch';
import type { WebhookAttemptOutcome } from '@svc/db/schema/webhooks';
import type { SecretBox } from '@svc/db/secret-box';
import type { JobContext } from '../context.ts';
import type { JobLogger } from '../logger.ts';
import { webhookDeliveries, webhookDeliverySeconds } from '../metrics.ts';
import { openWebhookSecret, webhookSecretKey } from './secrets.ts';
import { webhookBody, webhookHeaders } from './signing.ts';

/**
 * The webhook delivery engine: the `webhooks:dispatch` task. The delivery row owns the state
 * (docs/architecture.md section 5), so the job itself carries nothing: any run, on any worker,
 * claims whatever is due, sends it, records the attempts, and schedules the next run. Runs are
 * cheap to repeat: a run that finds nothing due does two statements.
 *
 * One run is a pipeline: claim a batch of due deliveries (a lease, `locked_until`), keep up to
 * DISPATCH_CONCURRENCY requests in flight with the next batch already claimed behind them (so the
 * sends never wait for the database), and write finished attempts in batches, one statement per
 * batch, while the next requests are on the wire. It stops claiming when nothing more is due,
 * after RUN_BUDGET_MS, or when the worker begins a graceful stop: sends in flight finish and are
 * recorded, claimed deliveries not yet sent are given back. A stop that can wait no longer
 * interrupts the sends in flight (outcome `interrupted`, due again at once). Finally the run
 * queues another run now if work is still due, and a wake-up run for the earliest retry.
 *
 * One claiming run per worker: while a run is claiming, another `webhooks:dispatch` job on the
 * same worker (recordEvent queues one per event) ends at once, its work left to the running one,
 * which polls for LINGER_MS after the last due delivery. A run clears its mark before its final
 * "anything due?" check, so an event whose job ended that way is still picked up.
 *
 * Recovery: the worker queues a run when it starts, the crontab sweeps once a minute, and a claim
 * left by a worker that died expires after two send timeouts plus CLAIM_MARGIN_MS. A delivery is
 * sent at least once; the receiver deduplicates on `webhook-id` (the event id, the same on
 * every attempt).
 */

/** Requests in flight at once in one run. */
export const DISPATCH_CONCURRENCY = 32;
/**
 * Claimed deliveries a run holds at most (in flight plus waiting). It claims again once half of
 * that is left, so a claim statement's latency is hidden behind the sends still queued, and each
 * claim brings a large batch.
 */
const CLAIM_CAPACITY = 4 * DISPATCH_CONCURRENCY;
/** Deliveries one claim asks for. */
const CLAIM_BATCH = CLAIM_CAPACITY / 2;
/** A run stops claiming after this long and queues its successor: no run holds a worker slot for long. */
export const RUN_BUDGET_MS = 10_000;
/**
 * Once nothing more is due, a run keeps polling (every POLL_MS, an index probe that writes nothing)
 * for this long before it ends: under a steady stream of events one run picks each up within
 * POLL_MS, instead of a job per event waiting for a worker slot, its claim and its bookkeeping.
 */
export const LINGER_MS = 1_000;
const POLL_MS = 25;
/**
 * A claim lasts two send timeouts plus this margin. A claimed delivery is sent only while its
 * claim still covers a whole send and this margin (time to write the result); one that waited
 * longer behind slow receivers is given back instead, never sent on an expiring claim.
 */
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

/** Lets the claim loop sleep until something it waits on changed (a send finished). */
function changes() {
  let waiters: (() => void)[] = [];
  return {
    notify(): void {
      if (waiters.length === 0) {
        return;
      }
      const woken = waiters;
      waiters = [];
      for (const wake of woken) {
        wake();
      }
    },
    next(): Promise<void> {
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

/** The longest pause between two tries at writing a batch of attempts. */
const RECORD_RETRY_MAX_PAUSE_MS = 2_000;

/**
 * Buffers finished attempts and writes them in batches: while one batch is being written, the
 * next accumulates, so under load each statement carries many attempts.
 */
function createRecorder(db: Db, logger: JobLogger, retryForMs: number) {
  let buffer: DeliveryResult[] = [];
  let flushing: Promise<void> | null = null;
  let failure: unknown = null;

  // A database restart must not cost a resend: keep trying for as long as the batch's claims can
  // still hold (the claim guard makes a late write harmless: a row another worker took is skipped).
  const write = async (batch: DeliveryResult[]) => {
    const giveUpAt = Date.now() + retryForMs;
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
        const pause = Math.min(250 * 2 ** attempt, RECORD_RETRY_MAX_PAUSE_MS);
        if (Date.now() + pause > giveUpAt) {
          throw error;
        }
        await new Promise((r) => setTimeout(r, pause));
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
  // By endpoint, then ciphertext (compared, not concatenated into a key per call): an endpoint
  // has one or, during a rotation, two secrets.
  const cache = new Map<string, { sealed: string; key: Buffer }[]>();
  return (endpointId: string, sealed: string): Buffer => {
    let opened = cache.get(endpointId);
    if (!opened) {
      opened = [];
      cache.set(endpointId, opened);
    }
    for (const entry of opened) {
      if (entry.sealed === sealed) {
        return entry.key;
      }
    }
    const key = webhookSecretKey(openWebhookSecret(box, endpointId, sealed));
    opened.push({ sealed, key });
    return key;
  };
}

/** The `webhooks:dispatch` task. Payload `{}`, or `{ deliveryIds }` to dispatch only those (when due). */
export async function dispatchWebhooks(payload: unknown, ctx: JobContext, helpers: { abortSignal: AbortSignal }): Promise<void> {
  const { deliveryIds } = ZTaskPayloads['webhooks:dispatch'].parse(payload ?? {});
  let claimingDone = () => {};
  if (!deliveryIds) {
    if (claimingRuns.has(ctx)) {
      // This worker's claiming run will see this job's deliveries (see the module comment).
      return;
    }
    claimingRuns.add(ctx);
    let done = false;
    claimingDone = () => {
      if (!done) {
        done = true;
        claimingRuns.delete(ctx);
      }
    };
  }
  try {
    await dispatchRun({ deliveryIds, ctx, helpers, claimingDone });
  } finally {
    claimingDone();
  }
}

/** Workers (by their task context) with a run claiming right now. */
const claimingRuns = new WeakSet<JobContext>();

/** One run; `claimingDone` is called once it will claim no more, before its final "anything due?" check. */
async function dispatchRun(run: {
  deliveryIds: string[] | undefined;
  ctx: JobContext;
  helpers: { abortSignal: AbortSignal };
  claimingDone: () => void;
}): Promise<void> {
  const { deliveryIds, ctx, helpers } = run;
  const settings = ctx.webhooks;
  const started = Date.now();
  const lockMs = 2 * settings.timeoutMs + CLAIM_MARGIN_MS;
  const recorder = createRecorder(ctx.db, ctx.logger, lockMs);
  const openKey = keyOpener(ctx.secretBox);
  const counts: Partial<Record<WebhookAttemptOutcome, number>> = {};
  // Graphile's abort means the stop can wait no longer: in-flight sends end as `interrupted`.
  // Relayed through a signal of this run's own, so the run can stop listening when it ends.
  const interrupt = new AbortController();
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
    const next = stateAfter(sent.outcome, delivery.attemptNumber, settings.retryScheduleMs);
    // Field by field rather than spreads: this runs once per delivery.
    return {
      deliveryId: delivery.id,
      token,
      attemptNumber: delivery.attemptNumber,
      startedAt,
      durationMs: sent.durationMs,
      statusCode: sent.statusCode,
      outcome: sent.outcome,
      error: sent.error,
      responseExcerpt: sent.responseExcerpt,
      signatureCount: keys.length,
      status: next.status,
      retryInMs: next.retryInMs,
    };
  };

  /** Claimed, not yet sent; `sendBy` is the last moment a send still fits in the claim. */
  const queued: { delivery: ClaimedDelivery; token: string; sendBy: number }[] = [];
  /** Claims given back unsent (the run stopped, or a claim ran too short to cover a send). */
  const unsent: { deliveryId: string; token: string }[] = [];
  /** Sends started and not yet settled (a count: a Set joined and left per send costs GC time). */
  let inFlight = 0;
  const sendErrors: unknown[] = [];
  const changed = changes();
  const stopped = () => ctx.stopping.aborted || interrupt.signal.aborted;

  /** A send settled: start the next queued one and wake the claim loop. */
  const settled = () => {
    inFlight--;
    pump();
    changed.notify();
  };
  const onSent = (result: DeliveryResult) => {
    try {
      counts[result.outcome] = (counts[result.outcome] ?? 0) + 1;
      webhookDeliveries.inc({ outcome: result.outcome });
      webhookDeliverySeconds.observe({ outcome: result.outcome }, result.durationMs / 1000);
      recorder.add(result);
    } finally {
      settled();
    }
  };
  const onSendError = (error: unknown) => {
    // A bug, not a receiver's doing: the claim expires and the delivery is sent again.
    sendErrors.push(error);
    settled();
  };

  /** Starts queued sends while fewer than DISPATCH_CONCURRENCY are in flight. */
  const pump = () => {
    while (inFlight < DISPATCH_CONCURRENCY && !stopped()) {
      const next = queued.shift();
      if (!next) {
        return;
      }
      if (performance.now() > next.sendBy) {
        unsent.push({ deliveryId: next.delivery.id, token: next.token });
        continue;
      }
      inFlight++;
      attempt(next.delivery, next.token).then(onSent, onSendError);
    }
  };

  const claimAndSend = async (): Promise<void> => {
    for (;;) {
      while (queued.length + inFlight > CLAIM_CAPACITY / 2 && !stopped()) {
        await changed.next();
      }
      if (stopped() || recorder.failed || sendErrors.length > 0 || Date.now() - started >= RUN_BUDGET_MS) {
        return;
      }
      const token = `${WORKER_LABEL}:${randomBytes(6).toString('base64url')}`;
      // Always the same size (at least half the capacity is free here), so the claim statement
      // has one text and stays prepared on its connection.
      const limit = CLAIM_BATCH;
      // Measured before the claim: the claim's own expiry, taken at the database, is later.
      const sendBy = performance.now() + lockMs - settings.timeoutMs - CLAIM_MARGIN_MS;
      const claimed = await claimDueDeliveries(ctx.db, { token, limit, lockMs, deliveryIds });
      for (const delivery of claimed) {
        queued.push({ delivery, token, sendBy });
      }
      pump();
      if (claimed.length > 0) {
        lastWorkAt = Date.now();
      }
      if (claimed.length < limit) {
        // Nothing more is due right now: poll a while for more, unless told which to send.
        if (deliveryIds || Date.now() - lastWorkAt >= LINGER_MS) {
          return;
        }
        await sleep(POLL_MS);
      }
    }
  };

  let claimError: unknown = null;
  let lastWorkAt = Date.now();
  try {
    await claimAndSend();
  } catch (error) {
    // The database is unreachable, say: finish and record what is in flight, then fail the job
    // (Graphile retries it with backoff; the crontab sweep runs regardless).
    claimError = error;
  }
  // No more claims from this run: another job may claim from now on (the final check below
  // covers any job that ended because this run was still claiming).
  run.claimingDone();
  // Drain: each finished send starts the next queued one, until a stop leaves the rest queued.
  while (inFlight > 0) {
    await changed.next();
  }
  helpers.abortSignal.removeEventListener('abort', onAbort);
  await recorder.drain();
  // Claimed but never sent: due again at once, for whichever worker comes next.
  for (const q of queued.splice(0)) {
    unsent.push({ deliveryId: q.delivery.id, token: q.token });
  }
  await releaseClaims(ctx.db, unsent);
  const failure = claimError ?? sendErrors[0];
  if (failure) {
    throw failure;
  }
  const next = await scheduleNextDispatch(ctx.db);
  if (Object.keys(counts).length > 0) {
    ctx.logger.debug({ outcomes: counts, ms: Date.now() - started, dueNow: next.dueNow, wakeAt: next.wakeAt }, 'webhook dispatch run');
  }
}
