import { newId } from '@svc/contracts/ids';
import type { DbOrTx } from '@svc/db/client';
import { claimThresholdCrossings, findThresholdTotals, type ThresholdCrossing } from '@svc/db/queries/usage';
import { recordEvents } from '@svc/db/queries/webhook-events';

/**
 * Usage thresholds (docs/api.md "Usage thresholds"): a plan's `usageThresholds`
 * are percentages of each of its usage limits. When an ingesting transaction brings an event
 * type's quantity in a calendar month (UTC) to a threshold, it records the crossing and a
 * `usage.threshold_reached` event, once per (organization, event type, month, threshold): the
 * crossing's primary key decides between concurrent writers, in any process.
 *
 * A threshold counts as reached when the month's quantity is at least `threshold`% of the limit,
 * whatever the quantity was before. The ingester checks the totals it locked and read (its own
 * statements, see ingester.ts) and asks the database only about thresholds this process does not
 * know to be recorded; a change of an organization's plan, or of a plan's limits or thresholds,
 * checks the organizations it touches (recordReachedThresholds), so a threshold that a change
 * brings below this month's quantity is recorded then, not at the next event.
 */

/** A month's quantity of one limited event type after a transaction's events, and the plan that limits it. */
export type CounterTotal = {
  tenantId: string;
  eventType: string;
  /** Epoch ms: the first instant of the calendar month (UTC). */
  periodStart: number;
  total: number;
  limit: number;
  thresholds: readonly number[];
  plan: string;
};

/** The quantity at which `threshold`% of `limit` is reached (rounded up: 80% of 5 is 4). */
export function thresholdQuantity(threshold: number, limit: number): number {
  return Number((BigInt(threshold) * BigInt(limit) + 99n) / 100n);
}

const crossingKey = (c: { tenantId: string; eventType: string; periodStart: number; threshold: number }) =>
  `${c.tenantId}\u0000${c.eventType}\u0000${c.periodStart}\u0000${c.threshold}`;

/**
 * Crossings this process knows to be recorded (committed), so a busy event type past 80% costs no
 * statement per transaction. Forgetting is always safe (the database refuses a second crossing);
 * the set is emptied when it grows past `max`.
 */
export class KnownCrossings {
  readonly #keys = new Set<string>();
  constructor(private readonly max = 50_000) {}

  has(c: Parameters<typeof crossingKey>[0]): boolean {
    return this.#keys.has(crossingKey(c));
  }

  /** Call once the transaction that claimed (or found) them has committed. */
  add(crossings: readonly Parameters<typeof crossingKey>[0][]): void {
    if (this.#keys.size + crossings.length > this.max) {
      this.#keys.clear();
    }
    for (const c of crossings) {
      this.#keys.add(crossingKey(c));
    }
  }
}

/** The thresholds `totals` have reached that `known` does not hold, each with a new event id, in ascending order. */
export function crossingsOf(totals: readonly CounterTotal[], known: KnownCrossings): ThresholdCrossing[] {
  const out: ThresholdCrossing[] = [];
  for (const t of totals) {
    if (t.total <= 0) {
      continue;
    }
    for (const threshold of t.thresholds) {
      if (t.total < thresholdQuantity(threshold, t.limit)) {
        break;
      }
      const crossing = {
        tenantId: t.tenantId,
        eventType: t.eventType,
        periodStart: t.periodStart,
        threshold,
        limit: t.limit,
        used: t.total,
        plan: t.plan,
        eventId: newId('event'),
      };
      if (!known.has(crossing)) {
        out.push(crossing);
      }
    }
  }
  return out;
}

function nextMonthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The `data` of a usage.threshold_reached event (docs/api.md "Webhooks"): what was reached, and where the month stands. */
export function thresholdEventData(c: ThresholdCrossing): Record<string, unknown> {
  return {
    object: 'usage_threshold',
    organizationId: c.tenantId,
    eventType: c.eventType,
    threshold: c.threshold,
    limit: c.limit,
    thresholdQuantity: thresholdQuantity(c.threshold, c.limit),
    used: c.used,
    periodStart: new Date(c.periodStart).toISOString(),
    periodEnd: new Date(nextMonthStart(c.periodStart)).toISOString(),
    plan: c.plan,
  };
}

/**
 * Claims the crossings not recorded yet and records a usage.threshold_reached event for each one
 * this transaction claimed (with the crossing's event id). Returns the crossings claimed.
 */
export async function recordCrossings(tx: DbOrTx, reached: readonly ThresholdCrossing[]): Promise<ThresholdCrossing[]> {
  if (reached.length === 0) {
    return [];
  }
  const claimed = await claimThresholdCrossings(tx, reached);
  await recordEvents(
    tx,
    claimed.map((c) => ({ id: c.eventId, tenantId: c.tenantId, type: 'usage.threshold_reached', data: thresholdEventData(c) })),
  );
  return claimed;
}

/**
 * After a change of an organization's plan (`tenantId`), or of a plan's limits or thresholds
 * (`planId`, every organization on it): records the thresholds this month's quantities have
 * reached under the new terms, in the changing transaction. Returns the crossings recorded.
 */
export async function recordReachedThresholds(
  tx: DbOrTx,
  target: { tenantId: string } | { planId: string },
  now = Date.now(),
): Promise<ThresholdCrossing[]> {
  const d = new Date(now);
  const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const totals = await findThresholdTotals(tx, target, { from, to: nextMonthStart(from) });
  const reached = crossingsOf(
    totals.map((t) => ({ ...t, periodStart: from })),
    new KnownCrossings(),
  );
  return recordCrossings(tx, reached);
}
