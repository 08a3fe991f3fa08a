import { createHash } from 'node:crypto';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type { TUsageChannel } from '@svc/contracts/usage';
import { type Db, type DbOrTx, isDatabaseUnavailable } from '@svc/db/client';
import { queueBillingSync } from '@svc/db/queries/billing-sync-queue';
import {
  addToHourlyTotals,
  findUsageEventsByKeys,
  findUsageLimits,
  insertUsageEvents,
  lockAdvisory,
  type NewUsageEvent,
  sumUsageQuantities,
  type ThresholdCrossing,
  type UsageEventRecord,
} from '@svc/db/queries/usage';
import { recordEvents } from '@svc/db/queries/webhook-events';
import { usageEventsAccepted, usageEventsRefused } from '../../metrics.ts';
import { assertSubscriptionAllows } from '../subscriptions/enforce.ts';
import { blockError, type SubscriptionState } from '../subscriptions/rules.ts';
import { type CounterTotal, crossingsOf, KnownCrossings, recordCrossings } from './thresholds.ts';

/** One event, validated, with its canonical payload hash (see `prepareEvent`). */
export type PreparedEvent = {
  idempotencyKey: string;
  eventType: string;
  quantity: number;
  /** Epoch ms. */
  occurredAt: number;
  properties: Record<string, unknown>;
  propertiesJson: string;
  requestHash: string;
};

/** Who sent a submission, as its events and their webhook payloads name it. */
export type UsageActor = { type: 'application' | 'api_key' | 'user'; id: string };

/** The events of one request, for one organization. */
export type Submission = {
  tenantId: string;
  channel: TUsageChannel;
  actor: UsageActor;
  events: PreparedEvent[];
  /**
   * Usage that already happened and was allowed when it did (machine tokens issued,
   * machine-tokens.ts): written whatever the subscription rule and the plan's limits say now,
   * since refusing the record would not take the usage back.
   */
  issued?: true;
};

/** Per event, in the submission's order: the event as recorded, and whether an earlier request recorded it. */
export type SubmissionOutcome = { event: UsageEventRecord; duplicate: boolean }[];

export type IngesterOptions = {
  /** Most events one transaction carries (a submission is never split; a bigger one goes alone). */
  maxBatchEvents?: number;
  /** Transactions one process keeps running at once. */
  maxInFlight?: number;
};

type Pending = { submission: Submission; resolve: (outcome: SubmissionOutcome) => void; reject: (error: unknown) => void };

/** Thrown inside a transaction to roll it back and write the batch again without the newly refused submissions. */
class RetryWithout extends Error {}

const keyOf = (tenantId: string, idempotencyKey: string) => `${tenantId}\u0000${idempotencyKey}`;

function monthStartOf(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function nextMonthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The advisory lock of one (organization, event type, month) counter: 64 bits of a SHA-256. */
function limitLockKey(tenantId: string, eventType: string, month: number): bigint {
  return createHash('sha256').update(`svc:usage-limit\u0000${tenantId}\u0000${eventType}\u0000${month}`).digest().readBigInt64BE(0);
}

/** PostgreSQL's deadlock and serialization failures: the transaction may simply be run again. */
function isTransient(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === '40P01' || code === '40001') {
      return true;
    }
  }
  return false;
}

export function reusedKeyError(idempotencyKey: string): AppError {
  return new AppError(
    'idempotency_key_reused',
    `idempotency key ${JSON.stringify(idempotencyKey)} was already used for an event with another payload; nothing in this request was recorded`,
  );
}

/**
 * Group commit for usage events. Requests arriving while a transaction runs are gathered and
 * written together in the next one: one multi-row insert (conflicting keys skipped), the hourly
 * totals, the `usage_event.created` webhook events and the billing sync queue, so the commit
 * (and its fsync) is shared by every request in the batch. Each request still gets its own
 * answer: a submission refused (reused key, usage limit) is answered alone and its events are
 * never written; a transaction that fails for another reason is retried one submission at a
 * time, so a bad request never fails its neighbours.
 *
 * Nothing here is needed by another process: deduplication is the unique index on
 * (tenant_id, idempotency_key), limits are counted under a PostgreSQL advisory lock, usage
 * thresholds are claimed through the primary key of usage_threshold_crossings (thresholds.ts).
 */
export class UsageIngester {
  #queue: Pending[] = [];
  #scheduled = false;
  #inFlight = 0;
  readonly #maxBatchEvents: number;
  readonly #maxInFlight: number;
  /** Usage thresholds known to be recorded (committed). */
  readonly #knownCrossings = new KnownCrossings();

  constructor(
    private readonly db: Db,
    opts: IngesterOptions = {},
  ) {
    this.#maxBatchEvents = opts.maxBatchEvents ?? 2000;
    this.#maxInFlight = opts.maxInFlight ?? 2;
  }

  submit(submission: Submission): Promise<SubmissionOutcome> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ submission, resolve, reject });
      if (!this.#scheduled && this.#inFlight < this.#maxInFlight) {
        // The next turn of the event loop: requests read in this one join the batch.
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  #flush = (): void => {
    this.#scheduled = false;
    while (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) {
      const batch: Pending[] = [];
      let events = 0;
      while (this.#queue.length > 0) {
        const next = this.#queue[0] as Pending;
        if (batch.length > 0 && events + next.submission.events.length > this.#maxBatchEvents) {
          break;
        }
        batch.push(next);
        events += next.submission.events.length;
        this.#queue.shift();
      }
      this.#inFlight++;
      void this.#run(batch)
        // Never expected (#run settles every submission itself): fail the batch rather than hang it.
        .catch((error: unknown) => {
          for (const p of batch) {
            p.reject(error);
          }
        })
        .finally(() => {
          this.#inFlight--;
          this.#flush();
        });
    }
  };

  /** Writes a batch; every pending submission is resolved or rejected exactly once. */
  async #run(batch: Pending[]): Promise<void> {
    const refused = new Map<Pending, AppError>();
    for (let attempt = 0; ; attempt++) {
      const active = batch.filter((p) => !refused.has(p));
      if (active.length === 0) {
        break;
      }
      const refusedBefore = refused.size;
      try {
        const seen: ThresholdCrossing[] = [];
        const outcomes = await this.db.transaction((tx) => write(tx, active, refused, { known: this.#knownCrossings, seen }));
        this.#knownCrossings.add(seen);
        for (const p of active) {
          const outcome = outcomes.get(p);
          if (outcome && !refused.has(p)) {
            const created = outcome.reduce((n, r) => (r.duplicate ? n : n + 1), 0);
            if (created > 0) {
              usageEventsAccepted.inc({ channel: p.submission.channel }, created);
            }
            p.resolve(outcome);
          }
        }
        break;
      } catch (error) {
        // A retry that refused someone new always makes progress; others get three tries.
        if (
          (error instanceof RetryWithout && refused.size > refusedBefore) ||
          ((error instanceof RetryWithout || isTransient(error)) && attempt < 3)
        ) {
          continue;
        }
        if (isDatabaseUnavailable(error)) {
          // Nothing in the batch is at fault and trying each alone would only wait again.
          for (const p of active) {
            p.reject(error);
          }
          break;
        }
        if (active.length > 1) {
          // Something in the batch broke the transaction: each submission alone, so only its own fails.
          for (const p of active) {
            await this.#run([p]);
          }
          break;
        }
        (active[0] as Pending).reject(error);
        break;
      }
    }
    for (const [p, error] of refused) {
      if (error.status === 402) {
        usageEventsRefused.inc({ channel: p.submission.channel, code: error.code });
      }
      p.reject(error);
    }
  }
}

/**
 * The usage-limit rule of POST /v1/usage-events: the plan allows `limit` of an event type per
 * calendar month (UTC, the month of occurredAt); an event that would bring the month's quantity
 * (`recorded`, every route's events of that type, plus this one) past it is refused with 402
 * subscription_limit_exceeded. Reaching the limit exactly is allowed. The caller holds the
 * counter's advisory lock, so `recorded` cannot change before it commits. The 402 names the
 * limit (ZSubscriptionLimit): `used` is the month's quantity before the request, `requested` what
 * the whole request would add to it (`counted`, asked only when refusing), `periodEnd` the end of
 * the month counted.
 */
export function assertWithinUsageLimit(opts: {
  organizationId: string;
  plan: string;
  eventType: string;
  limit: number;
  recorded: number;
  quantity: number;
  month: number;
  counted: () => { used: number; requested: number };
}): void {
  if (opts.recorded + opts.quantity <= opts.limit) {
    return;
  }
  const { used, requested } = opts.counted();
  const month = new Date(opts.month).toISOString().slice(0, 7);
  throw blockError(
    {
      code: 'subscription_limit_exceeded',
      message: `the plan allows ${opts.limit} ${opts.eventType} per calendar month (UTC); ${month} is at ${used} and this request would bring it to ${used + requested}; nothing in this request was recorded`,
      kind: 'usage',
      limit: opts.eventType,
      max: opts.limit,
      used,
      requested,
      periodEnd: new Date(nextMonthStart(opts.month)).toISOString(),
      plan: opts.plan,
    },
    opts.organizationId,
  );
}

/**
 * The subscription rule's refusal of one submission: when it names a usage limit, `requested` is
 * the submission's quantity of that event type dated in the period counted (the rule itself
 * answers 0: it refuses because the organization is already over, whatever the route adds).
 */
function refusalOf(error: AppError, p: Pending): AppError {
  const details = error.details;
  if (details?.kind !== 'usage' || typeof details.periodEnd !== 'string') {
    return error;
  }
  const end = Date.parse(details.periodEnd);
  const start = monthStartOf(end - 1);
  let requested = 0;
  for (const e of p.submission.events) {
    if (e.eventType === details.limit && e.occurredAt >= start && e.occurredAt < end) {
      requested += e.quantity;
    }
  }
  return new AppError(error.code, error.message, { details: { ...details, requested }, organizationId: error.organizationId });
}

/** Usage limits of the batch's metering events: the running totals they are counted against. */
type LimitState = {
  /** (organization, type, month) -> quantity recorded so far, updated as submissions are accepted. */
  totals: Map<string, number>;
  /** (organization, type, month) -> quantity recorded before this transaction, read under the lock. */
  initial: ReadonlyMap<string, number>;
  /** Recorded events among the limited ones (a replay is answered, never counted again). */
  existing: Map<string, UsageEventRecord>;
  limits: Map<string, { plan: string; limits: Record<string, number> }>;
};

const counterOf = (tenantId: string, eventType: string, month: number) => `${tenantId}\u0000${eventType}\u0000${month}`;

/** A (organization, event type, calendar month) counter: the quantity in [from, to). */
type Counter = { tenantId: string; eventType: string; from: number; to: number };

/**
 * Locks counters (ascending lock order, so transactions never deadlock) and reads their totals:
 * under the lock no other transaction that counts can change them until this one commits, in any
 * process. One connection runs both statements in order, so the sums' snapshot is taken once the
 * locks are held; they go out together.
 */
async function lockAndSum(tx: DbOrTx, counters: readonly Counter[]): Promise<number[]> {
  const [, sums] = await Promise.all([
    lockAdvisory(
      tx,
      counters.map((c) => limitLockKey(c.tenantId, c.eventType, c.from)),
    ),
    sumUsageQuantities(tx, counters),
  ]);
  return sums;
}

/**
 * For metering submissions whose event types have a plan limit: locks each (organization, type,
 * month) counter and reads the month's totals (lockAndSum), and which of the events already
 * exist. When it locks anything, it also locks the counters usage thresholds watch for the rest
 * of the batch (`watched`), in the same statement: a transaction takes all its counter locks at
 * once, in one order, so two never wait for each other in a cycle.
 */
async function prepareLimits(
  tx: DbOrTx,
  active: Pending[],
  watched: (p: Pending) => Map<string, Counter>,
): Promise<LimitState | undefined> {
  const metering = active.filter((p) => p.submission.channel === 'metering' && !p.submission.issued);
  if (metering.length === 0) {
    return undefined;
  }
  const limits = await findUsageLimits(tx, [...new Set(metering.map((p) => p.submission.tenantId))]);
  const counters = new Map<string, Counter>();
  const keys: { tenantId: string; idempotencyKey: string }[] = [];
  for (const p of metering) {
    const { tenantId } = p.submission;
    const planLimits = limits.get(tenantId)?.limits ?? {};
    for (const e of p.submission.events) {
      if (planLimits[e.eventType] === undefined) {
        continue;
      }
      const month = monthStartOf(e.occurredAt);
      counters.set(counterOf(tenantId, e.eventType, month), { tenantId, eventType: e.eventType, from: month, to: nextMonthStart(month) });
      keys.push({ tenantId, idempotencyKey: e.idempotencyKey });
    }
  }
  if (counters.size === 0) {
    return undefined;
  }
  for (const p of active) {
    for (const [key, counter] of watched(p)) {
      counters.set(key, counter);
    }
  }
  const list = [...counters.entries()];
  const [sums, existingRows] = await Promise.all([
    lockAndSum(
      tx,
      list.map(([, c]) => c),
    ),
    findUsageEventsByKeys(tx, keys),
  ]);
  return {
    totals: new Map(list.map(([key], i) => [key, sums[i] ?? 0])),
    initial: new Map(list.map(([key], i) => [key, sums[i] ?? 0])),
    existing: new Map(existingRows.map((r) => [keyOf(r.tenantId, r.idempotencyKey), r])),
    limits,
  };
}

/** How one event of a submission is answered once the batch is written. */
type Slot =
  /** This submission claimed the key in the batch: created, or (when it already existed) the existing row. */
  | { kind: 'claim'; key: string; event: PreparedEvent }
  /** An earlier submission of the batch claimed the key. */
  | { kind: 'same'; key: string }
  /** Already recorded (found under the limit lock). */
  | { kind: 'existing'; row: UsageEventRecord };

/** A key claimed in the batch: the submission that claimed it, its event and the row to insert. */
type Claim = { owner: Pending; event: PreparedEvent; row: NewUsageEvent };

/**
 * One attempt at writing `active` in the caller's transaction, in four phases: the gate (the
 * subscription rule), the limits (claim each idempotency key and count it against its month's
 * limit), the insert (and what each submission answers), then the side effects of the events it
 * created. Adds the submissions it refuses to `refused`; throws RetryWithout when a refusal is
 * discovered after rows of the refused submission were inserted (the transaction must roll back
 * and the batch run again). Adds to `thresholds.seen` the usage thresholds it found recorded or
 * recorded itself, which the caller adds to `thresholds.known` once the transaction commits.
 */
async function write(
  tx: DbOrTx,
  active: Pending[],
  refused: Map<Pending, AppError>,
  thresholds: { known: KnownCrossings; seen: ThresholdCrossing[] },
): Promise<Map<Pending, SubmissionOutcome>> {
  const { admitted, subscriptions } = await gate(tx, active, refused);
  const limitState = await prepareLimits(tx, admitted, (p) =>
    watchedCounters(
      p.submission.events.map((e) => ({ tenantId: p.submission.tenantId, eventType: e.eventType, occurredAt: e.occurredAt })),
      subscriptions,
      undefined,
    ),
  );
  const { claims, slots } = claimWithinLimits(admitted, limitState, refused);
  const outcomes = await insertClaims(tx, claims, slots, refused);
  await recordSideEffects(tx, outcomes, subscriptions, limitState, thresholds);
  return outcomes;
}

/**
 * The gate: the subscription rule (modules/subscriptions: 402 while the subscription is inactive,
 * cancelled, expired or over a limit), once per organization of the batch, before any write;
 * usage already `issued` passes. Gives the submissions it admits and the subscriptions it read.
 */
async function gate(
  tx: DbOrTx,
  active: Pending[],
  refused: Map<Pending, AppError>,
): Promise<{ admitted: Pending[]; subscriptions: Map<string, SubscriptionState> }> {
  const tenants = [...new Set(active.filter((p) => !p.submission.issued).map((p) => p.submission.tenantId))];
  const subscriptions = new Map<string, SubscriptionState>();
  const blocked = await Promise.all(
    tenants.map((id) =>
      assertSubscriptionAllows(tx, id).then(
        (subscription) => {
          if (subscription) {
            subscriptions.set(id, subscription);
          }
          return undefined;
        },
        (error: unknown) => error,
      ),
    ),
  );
  for (const [i, error] of blocked.entries()) {
    if (error === undefined) {
      continue;
    }
    if (!(error instanceof AppError)) {
      throw error;
    }
    for (const p of active) {
      if (p.submission.tenantId === tenants[i] && !p.submission.issued) {
        refused.set(p, refusalOf(error, p));
      }
    }
  }
  return { admitted: refused.size > 0 ? active.filter((p) => !refused.has(p)) : active, subscriptions };
}

/**
 * The limits: each event claims its idempotency key in the batch (or is answered by the row
 * already recorded, or by an earlier claim of the batch), and a metering event of a limited type
 * is counted against its month (assertWithinUsageLimit). A submission with a reused key or over a
 * limit is refused whole, and its claims and counts are dropped.
 */
function claimWithinLimits(
  admitted: Pending[],
  limitState: LimitState | undefined,
  refused: Map<Pending, AppError>,
): { claims: Map<string, Claim>; slots: Map<Pending, Slot[]> } {
  const claims = new Map<string, Claim>();
  const slots = new Map<Pending, Slot[]>();

  for (const p of admitted) {
    const { submission } = p;
    const plan = submission.channel === 'metering' && !submission.issued ? limitState?.limits.get(submission.tenantId) : undefined;
    const planLimits = plan?.limits;
    const mine: Slot[] = [];
    const newClaims: [string, Claim][] = [];
    const added = new Map<string, number>();
    let refusal: AppError | undefined;
    for (const event of submission.events) {
      const key = keyOf(submission.tenantId, event.idempotencyKey);
      const existing = limitState?.existing.get(key);
      if (existing) {
        if (existing.requestHash !== event.requestHash) {
          refusal = reusedKeyError(event.idempotencyKey);
          break;
        }
        mine.push({ kind: 'existing', row: existing });
        continue;
      }
      if (claims.has(key)) {
        // Compared once the batch is written: the original may be the claimant's event or one
        // recorded earlier (by another request, or another process).
        mine.push({ kind: 'same', key });
        continue;
      }
      const limit = planLimits?.[event.eventType];
      if (limit !== undefined && limitState) {
        const month = monthStartOf(event.occurredAt);
        const counter = counterOf(submission.tenantId, event.eventType, month);
        const recorded = (limitState.totals.get(counter) ?? 0) + (added.get(counter) ?? 0);
        try {
          assertWithinUsageLimit({
            organizationId: submission.tenantId,
            plan: plan?.plan ?? '',
            eventType: event.eventType,
            limit,
            recorded,
            quantity: event.quantity,
            month,
            counted: () => ({
              used: limitState.totals.get(counter) ?? 0,
              requested: submission.events
                .filter(
                  (e) =>
                    e.eventType === event.eventType &&
                    monthStartOf(e.occurredAt) === month &&
                    !limitState.existing.has(keyOf(submission.tenantId, e.idempotencyKey)),
                )
                .reduce((sum, e) => sum + e.quantity, 0),
            }),
          });
        } catch (error) {
          refusal = error as AppError;
          break;
        }
        added.set(counter, (added.get(counter) ?? 0) + event.quantity);
      }
      newClaims.push([
        key,
        {
          owner: p,
          event,
          row: {
            id: newId('usageEvent'),
            tenantId: submission.tenantId,
            idempotencyKey: event.idempotencyKey,
            requestHash: event.requestHash,
            eventType: event.eventType,
            quantity: event.quantity,
            occurredAt: event.occurredAt,
            propertiesJson: event.propertiesJson,
            sourceId: submission.actor.id,
            channel: submission.channel,
          },
        },
      ]);
      mine.push({ kind: 'claim', key, event });
    }
    if (refusal) {
      refused.set(p, refusal);
      continue;
    }
    for (const [key, claim] of newClaims) {
      claims.set(key, claim);
    }
    for (const [counter, quantity] of added) {
      limitState?.totals.set(counter, (limitState.totals.get(counter) ?? 0) + quantity);
    }
    slots.set(p, mine);
  }
  return { claims, slots };
}

/**
 * The insert: one multi-row statement for every claimed key (conflicting keys skipped), the rows
 * that were there already read back, and each submission's answer. A key reused with another
 * payload refuses its submission; when that submission had inserted rows, the batch runs again.
 */
async function insertClaims(
  tx: DbOrTx,
  claims: Map<string, Claim>,
  slots: Map<Pending, Slot[]>,
  refused: Map<Pending, AppError>,
): Promise<Map<Pending, SubmissionOutcome>> {
  const created = new Map<string, { id: string; createdAt: number }>();
  for (const row of await insertUsageEvents(
    tx,
    [...claims.values()].map((c) => c.row),
  )) {
    created.set(row.id, row);
  }

  // Claimed keys that were not inserted exist already (committed by another request, possibly in
  // another process, before or while this statement ran): read them now, in a new snapshot.
  const missing = [...claims.entries()].filter(([, c]) => !created.has(c.row.id));
  const found = new Map<string, UsageEventRecord>();
  for (const row of await findUsageEventsByKeys(
    tx,
    missing.map(([, c]) => ({ tenantId: c.row.tenantId, idempotencyKey: c.row.idempotencyKey })),
  )) {
    found.set(keyOf(row.tenantId, row.idempotencyKey), row);
  }

  const recordOf = (key: string): { record: UsageEventRecord; createdHere: boolean } => {
    const claim = claims.get(key);
    if (!claim) {
      throw new Error('usage ingestion: slot without claim');
    }
    const inserted = created.get(claim.row.id);
    if (inserted) {
      const { propertiesJson: _json, ...row } = claim.row;
      return { record: { ...row, properties: claim.event.properties, createdAt: inserted.createdAt }, createdHere: true };
    }
    const existing = found.get(key);
    if (!existing) {
      // The conflicting row vanished (its organization was deleted meanwhile): run the batch again.
      throw new RetryWithout('conflicting usage event not found');
    }
    return { record: existing, createdHere: false };
  };

  const outcomes = new Map<Pending, SubmissionOutcome>();
  let mustRetry = false;
  for (const [p, mine] of slots) {
    const outcome: SubmissionOutcome = [];
    let refusal: AppError | undefined;
    let wroteRows = false;
    for (const [i, slot] of mine.entries()) {
      const event = p.submission.events[i] as PreparedEvent;
      if (slot.kind === 'existing') {
        outcome.push({ event: slot.row, duplicate: true });
        continue;
      }
      const { record, createdHere } = recordOf(slot.key);
      const ownClaim = slot.kind === 'claim' && claims.get(slot.key)?.owner === p;
      if (createdHere && ownClaim) {
        wroteRows = true;
        outcome.push({ event: record, duplicate: false });
      } else if (record.requestHash === event.requestHash) {
        outcome.push({ event: record, duplicate: true });
      } else {
        refusal ??= reusedKeyError(event.idempotencyKey);
      }
    }
    if (refusal) {
      refused.set(p, refusal);
      if (wroteRows) {
        mustRetry = true;
      }
      continue;
    }
    outcomes.set(p, outcome);
  }
  if (mustRetry) {
    throw new RetryWithout('a submission was refused after its rows were inserted');
  }
  return outcomes;
}

/**
 * The side effects of the events this transaction created, committed with them: their
 * `usage_event.created` webhook events, the billing sync queue, the hourly totals and the usage
 * thresholds they reach.
 */
async function recordSideEffects(
  tx: DbOrTx,
  outcomes: Map<Pending, SubmissionOutcome>,
  subscriptions: ReadonlyMap<string, SubscriptionState>,
  limitState: LimitState | undefined,
  thresholds: { known: KnownCrossings; seen: ThresholdCrossing[] },
): Promise<void> {
  const fresh: { event: UsageEventRecord; actor: UsageActor }[] = [];
  for (const [p, outcome] of outcomes) {
    for (const r of outcome) {
      if (!r.duplicate) {
        fresh.push({ event: r.event, actor: p.submission.actor });
      }
    }
  }
  if (fresh.length === 0) {
    return;
  }
  const byTenant = new Map<string, { id: string; eventType: string }[]>();
  for (const { event } of fresh) {
    const list = byTenant.get(event.tenantId) ?? [];
    list.push({ id: event.id, eventType: event.eventType });
    byTenant.set(event.tenantId, list);
  }
  // The counters usage thresholds watch that the limit check has not locked (every limited
  // type with thresholds on POST /v1/usage/events): locked and summed here, late, so that
  // concurrent transactions wait for each other only from this point to commit, as they do for
  // the hourly totals' rows.
  const watched = watchedCounters(
    fresh.map((f) => f.event),
    subscriptions,
    limitState,
  );
  // One connection: postgres.js pipelines these statements (sent together, run in this order)
  // rather than waiting for each. The hourly totals go last: they lock the hot counter rows,
  // which a concurrent batch then waits for only until this one commits.
  const [, , lateSums] = await Promise.all([
    recordEvents(
      tx,
      fresh.map(({ event, actor }) => ({ tenantId: event.tenantId, type: 'usage_event.created', data: webhookData(event, actor) })),
    ),
    Promise.all([...byTenant].map(([tenantId, events]) => queueBillingSync(tx, tenantId, events))),
    watched.size > 0 ? lockAndSum(tx, [...watched.values()]) : Promise.resolve([]),
    addToHourlyTotals(
      tx,
      fresh.map(({ event }) => event),
    ),
  ]);
  const before = new Map(limitState?.initial);
  for (const [i, key] of [...watched.keys()].entries()) {
    before.set(key, lateSums[i] ?? 0);
  }
  await recordThresholds(tx, thresholdTotals(fresh, subscriptions, before), thresholds);
}

/** The fields of an event that say which counter it counts in. */
type Counted = { tenantId: string; eventType: string; occurredAt: number };

/** The limit and thresholds of an event's type when its plan has both (null otherwise). */
function thresholdRule(event: Counted, subscriptions: ReadonlyMap<string, SubscriptionState>) {
  const plan = subscriptions.get(event.tenantId)?.plan;
  const limit = plan?.usageLimits[event.eventType];
  return plan && limit !== undefined && plan.usageThresholds.length > 0 ? { plan, limit } : null;
}

/** The counters of `events` that usage thresholds watch and the limit check did not lock. */
function watchedCounters(
  events: readonly Counted[],
  subscriptions: ReadonlyMap<string, SubscriptionState>,
  limitState: LimitState | undefined,
): Map<string, Counter> {
  const out = new Map<string, Counter>();
  for (const event of events) {
    if (!thresholdRule(event, subscriptions)) {
      continue;
    }
    const month = monthStartOf(event.occurredAt);
    const key = counterOf(event.tenantId, event.eventType, month);
    if (!limitState?.initial.has(key)) {
      out.set(key, { tenantId: event.tenantId, eventType: event.eventType, from: month, to: nextMonthStart(month) });
    }
  }
  return out;
}

/**
 * The month's total of every limited event type with usage thresholds that this transaction's
 * new events changed: the total read under the counter's lock (`before`) plus what the
 * transaction adds.
 */
function thresholdTotals(
  fresh: readonly { event: UsageEventRecord }[],
  subscriptions: ReadonlyMap<string, SubscriptionState>,
  before: ReadonlyMap<string, number>,
): CounterTotal[] {
  const totals = new Map<string, CounterTotal>();
  for (const { event } of fresh) {
    const rule = thresholdRule(event, subscriptions);
    const month = monthStartOf(event.occurredAt);
    const counter = counterOf(event.tenantId, event.eventType, month);
    const recorded = before.get(counter);
    if (!rule || recorded === undefined) {
      continue;
    }
    let total = totals.get(counter);
    if (!total) {
      total = {
        tenantId: event.tenantId,
        eventType: event.eventType,
        periodStart: month,
        total: recorded,
        limit: rule.limit,
        thresholds: rule.plan.usageThresholds,
        plan: rule.plan.key,
      };
      totals.set(counter, total);
    }
    total.total += event.quantity;
  }
  return [...totals.values()];
}

/**
 * Records the thresholds `totals` reached that are not recorded yet: the crossings this
 * transaction claims get their `usage.threshold_reached` event (with the crossing's event id),
 * the others were recorded by someone else. No statement at all when this process already
 * knows every reached threshold to be recorded.
 */
async function recordThresholds(
  tx: DbOrTx,
  totals: readonly CounterTotal[],
  { known, seen }: { known: KnownCrossings; seen: ThresholdCrossing[] },
): Promise<void> {
  if (totals.length === 0) {
    return;
  }
  const reached = crossingsOf(totals, known);
  if (reached.length === 0) {
    return;
  }
  await recordCrossings(tx, reached);
  seen.push(...reached);
}

/** The `data` of a usage_event.created webhook: the event, its organization and who sent it. */
function webhookData(e: UsageEventRecord, actor: UsageActor): Record<string, unknown> {
  return {
    object: 'usage_event',
    id: e.id,
    organizationId: e.tenantId,
    idempotencyKey: e.idempotencyKey,
    eventType: e.eventType,
    quantity: e.quantity,
    occurredAt: new Date(e.occurredAt).toISOString(),
    properties: e.properties,
    channel: e.channel,
    actor: { type: actor.type, id: actor.id },
  };
}
