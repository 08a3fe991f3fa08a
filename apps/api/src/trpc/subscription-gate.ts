import type { OrganizationGuard } from '../modules/access/authorize.ts';
import { refuseWhenBlocked } from '../modules/subscriptions/enforce.ts';
import type { SeatEffect } from '../modules/subscriptions/rules.ts';

/**
 * A route's part in the subscription rule (docs/api.md "The 402 rule"), declared in its meta:
 * `.meta({ openapi, subscription: { ... } })`. Every mutating project (application), user,
 * webhook and usage route declares it; `subscription-gate.test.ts` walks those routes and fails
 * for one that does not.
 */
export type SubscriptionRule = {
  /** What the route does to seats (default `none`). */
  seats?: SeatEffect;
  /**
   * `handler`: the route's handler finds and authorizes the organization itself and then calls
   * `assertSubscriptionAllows` from modules/subscriptions/enforce.ts (usage ingestion, inside
   * its writing transaction), or `claimSeat` (accepting an invitation, whose
   * organization is the invitation's); the ladder attaches no guard. The route still documents
   * its 402 (http/openapi.ts).
   */
  organization?: 'handler';
};

/** What the gate needs of a procedure's call (tRPC middleware options). */
export type GateCall = {
  meta: { subscription?: SubscriptionRule } | undefined;
  type: 'query' | 'mutation' | 'subscription';
};

/**
 * The subscription rule, in one place: a mutation of a route that declares `subscription` in its
 * meta is refused with 402 while its organization's subscription is inactive, cancelled or
 * expired (subscription_inactive), over its seat limit, over a usage limit this month, or (for a
 * route adding a member) out of seats (subscription_limit_exceeded). Reads never reach the
 * database here. One statement per guarded mutation (organizations ⋈ subscriptions ⋈ plans, a
 * member count when a seat limit applies, the month's hourly usage totals of the limited types).
 * The platform and keyless workspaces have no subscription and are never refused.
 *
 * The guard the ladder attaches to the caller for such a mutation (undefined for every other
 * call): `authorize` runs it on the organization it resolved for the route, once the caller may
 * see it and before the permission. So the rule judges exactly the organization the route acts
 * on, however the route names it (organization_slug, a record's id, the API key's organization,
 * the active workspace), and an outsider gets the route's 404, never a 402. Outside the route's
 * transaction unless the route authorizes inside one: a route that adds a member also calls
 * `claimSeat` (modules/subscriptions/enforce.ts) inside the transaction that inserts it, so
 * members added at the same instant cannot share the last seat.
 */
export function subscriptionGuard(call: GateCall): OrganizationGuard | undefined {
  const rule = call.meta?.subscription;
  if (!rule || rule.organization === 'handler' || call.type !== 'mutation') {
    return undefined;
  }
  // A route that authorizes the same organization twice is judged once.
  const judged = new Set<string>();
  return async (db, organization) => {
    if (judged.has(organization.id)) {
      return;
    }
    await refuseWhenBlocked(db, organization.id, { seats: rule.seats });
    judged.add(organization.id);
  };
}
