import { AppError } from '@svc/contracts/errors';
import { BLOCKING_STATUSES, SEATS_LIMIT, type TSubscriptionBlock, type TSubscriptionLimit } from '@svc/contracts/subscriptions';
import type { SubscriptionStateRow } from '@svc/db/queries/subscriptions';

/**
 * The subscription rule (docs/api.md "The 402 rule"), as one pure function: the middleware that guards
 * mutating project, user, webhook and usage routes (trpc/subscription-gate.ts) and the
 * subscription view's `blocked` field both call it, so what the console announces is what the
 * routes answer.
 */

/** Usage limits count calendar months in UTC: [start, end). */
export function usagePeriod(now = new Date()): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
  };
}

export type SubscriptionState = NonNullable<SubscriptionStateRow['subscription']>;

/** The seat limit in force: seats bought, else the plan's; null is unlimited. */
export function seatLimitOf(state: Pick<SubscriptionState, 'seats' | 'plan'>): number | null {
  return state.seats ?? state.plan.seatLimit;
}

/** What a route does to seats, which changes what the seat rule asks of it. */
export type SeatEffect =
  /** Neither adds nor removes members. */
  | 'none'
  /** Adds a member (POST /v1/users): refused when every seat is taken. */
  | 'adds'
  /**
   * Removes a member (DELETE /v1/users/{id}): allowed while the only problem is being over the
   * seat limit, because removing members is how an organization gets back under it without a
   * platform admin. A cancelled organization, or one over a usage limit, is still refused.
   */
  | 'removes';

/** A 402 as the rule decides it: ZSubscriptionBlock's fields but upgradeUrl, which the answer adds from the configuration. */
export type SubscriptionBlock = TSubscriptionBlock extends infer B ? (B extends unknown ? Omit<B, 'upgradeUrl'> : never) : never;

/**
 * The limits in force and where they stand (ZSubscriptionLimit): seats when limited (and
 * counted), then each limited event type this month. GET /v1/subscription lists these; a 402
 * names one of them.
 */
export function limitsOf(state: SubscriptionState, periodEnd: Date): TSubscriptionLimit[] {
  const plan = state.plan.key;
  const seats = seatLimitOf(state);
  const out: TSubscriptionLimit[] = [];
  if (seats !== null && state.members !== null) {
    out.push({ kind: 'seats', limit: SEATS_LIMIT, max: seats, used: state.members, periodEnd: null, plan });
  }
  for (const u of state.usage) {
    out.push({ kind: 'usage', limit: u.eventType, max: u.limit, used: u.used, periodEnd: periodEnd.toISOString(), plan });
  }
  return out;
}

/** The AppError a block is answered with: 402, its message, its fields; upgradeUrl made for `organizationId`. */
export function blockError(block: SubscriptionBlock, organizationId: string): AppError {
  const { code, message, ...details } = block;
  return new AppError(code, message, { details, organizationId });
}

const STATUS_WORDS = {
  inactive: 'is inactive: a platform admin can reactivate it',
  cancelled: 'is cancelled: a platform admin can reactivate it',
  expired: 'has expired: a platform admin can renew it',
} as const;

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * Why a mutating route of this organization is refused with 402, or null when it may go ahead.
 * In order: a blocking status (subscription_inactive), then seats, then usage this month
 * (subscription_limit_exceeded). Each message says what to do about it.
 */
export function subscriptionBlock(state: SubscriptionState, opts: { seatEffect?: SeatEffect; periodEnd: Date }): SubscriptionBlock | null {
  const { status, plan } = state;
  if (BLOCKING_STATUSES.has(status)) {
    const words = STATUS_WORDS[status as keyof typeof STATUS_WORDS];
    return {
      code: 'subscription_inactive',
      message: `the organization's subscription ${words} (PATCH /v1/subscription); until then changes to its applications, users, webhooks and usage are refused, reads keep working`,
      status: status as keyof typeof STATUS_WORDS,
      plan: plan.key,
    };
  }
  const limits = limitsOf(state, opts.periodEnd);
  const seatEffect = opts.seatEffect ?? 'none';
  const seats = limits.find((l) => l.kind === 'seats');
  if (seats) {
    const { max, used } = seats;
    if (used > max && seatEffect !== 'removes') {
      return {
        code: 'subscription_limit_exceeded',
        message: `the organization has ${plural(used, 'member', 'members')} but ${plural(max, 'seat', 'seats')} (plan ${plan.name}): remove members, or ask a platform admin for more seats or another plan`,
        ...seats,
        requested: seatEffect === 'adds' ? 1 : 0,
      };
    }
    if (seatEffect === 'adds' && used >= max) {
      return {
        code: 'subscription_limit_exceeded',
        message: `${max === 1 ? "the organization's only seat is" : `all ${max} seats of the organization are`} taken (plan ${plan.name}): remove a member, or ask a platform admin for more seats or another plan`,
        ...seats,
        requested: 1,
      };
    }
  }
  const over = limits.find((l) => l.kind === 'usage' && l.used > l.max);
  if (over) {
    const resets = opts.periodEnd.toISOString().slice(0, 10);
    return {
      code: 'subscription_limit_exceeded',
      message: `the organization used ${over.used} ${over.limit} this month, over its limit of ${over.max} (plan ${plan.name}): ask a platform admin for another plan; the count starts again on ${resets}`,
      ...over,
      requested: 0,
    };
  }
  return null;
}
