import type { DbOrTx } from '@svc/db/client';
import { findSubscriptionState, lockSeats } from '@svc/db/queries/subscriptions';
import { blockError, type SeatEffect, type SubscriptionState, subscriptionBlock, usagePeriod } from './rules.ts';

/**
 * Refuses with 402 when the subscription of the organization `organizationId` blocks a mutating
 * project, user, webhook or usage route (rules.ts says when, with which message and fields). One
 * statement: organizations ⋈ subscriptions ⋈ plans, a member count when a seat limit applies, and
 * this month's hourly usage totals of the limited event types. Call it only on an organization
 * the caller was authorized to see (an outsider must get the route's 404, never a 402). Nothing
 * is refused for the platform and keyless workspaces, which have no subscription. Returns the subscription it judged (this
 * month's usage of each limited event type included), undefined when there is none to judge.
 */
export async function refuseWhenBlocked(
  db: DbOrTx,
  organizationId: string,
  opts: { seats?: SeatEffect } = {},
): Promise<SubscriptionState | undefined> {
  const period = usagePeriod();
  const state = await findSubscriptionState(db, { organizationId, usageSince: period.start, usageUntil: period.end });
  if (!state?.subscription || state.organization.kind !== 'tenant') {
    return undefined;
  }
  const block = subscriptionBlock(state.subscription, { seatEffect: opts.seats, periodEnd: period.end });
  if (block) {
    throw blockError(block, state.organization.id);
  }
  return state.subscription;
}

/**
 * The subscription rule for a handler that has already found and authorized the organization
 * (usage ingestion, which applies it inside its writing transaction, once per organization per
 * batch): call it right after authorizing, before anything is written. Every other guarded route gets the rule from its
 * procedure's meta (apps/api/src/trpc/subscription-gate.ts). Returns the subscription allowed
 * (undefined without one): usage ingestion reads its plan from it.
 */
export async function assertSubscriptionAllows(
  db: DbOrTx,
  organizationId: string,
  opts: { seats?: SeatEffect } = {},
): Promise<SubscriptionState | undefined> {
  return refuseWhenBlocked(db, organizationId, { seats: opts.seats });
}

/**
 * The seat check of a write that adds a member, serialized per organization: call it inside the
 * transaction that inserts the membership, right before the insert. It locks the organization's
 * seats (lockSeats), then applies the whole subscription rule with a fresh member count, so of N
 * concurrent adds to an organization with one free seat exactly one commits and the others get
 * 402 subscription_limit_exceeded. The lock is held until that transaction ends.
 */
export async function claimSeat(tx: DbOrTx, organizationId: string): Promise<void> {
  await lockSeats(tx, { tenantId: organizationId });
  await refuseWhenBlocked(tx, organizationId, { seats: 'adds' });
}
