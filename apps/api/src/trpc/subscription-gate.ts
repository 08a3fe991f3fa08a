import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { SubscriptionTarget } from '@svc/db/queries/subscriptions';
import type { RequestContext } from '../context.ts';
import type { Principal } from '../modules/access/principal.ts';
import { refuseWhenBlocked } from '../modules/subscriptions/enforce.ts';
import type { SeatEffect } from '../modules/subscriptions/rules.ts';

/**
 * A route's part in the subscription rule (SPEC.md 3, 7, 8.4), declared in its meta:
 * `.meta({ openapi, subscription: { ... } })`. Every mutating project (application), user,
 * webhook and usage route declares it; `subscription-gate.test.ts` walks those routes and fails
 * for one that does not.
 */
export type SubscriptionRule = {
  /**
   * The kind of record the route's `id` names, when the route finds its organization from that
   * record (no `organization_slug` sent): the gate reads the same record's organization.
   */
  record?: 'application' | 'webhookEndpoint' | 'webhookDelivery';
  /** What the route does to seats (default `none`). */
  seats?: SeatEffect;
  /**
   * `handler`: the route's handler finds and authorizes the organization itself and then calls
   * `assertSubscriptionAllows` from modules/subscriptions/enforce.ts (usage ingestion, inside
   * its writing transaction), or `claimSeat` (accepting an invitation, whose
   * organization is the invitation's); the middleware leaves it alone. The route still documents
   * its 402 (http/openapi.ts).
   */
  organization?: 'handler';
};

/** What the gate needs of a procedure's call (tRPC middleware options). */
export type GateCall = {
  ctx: RequestContext & { principal?: Principal; application?: ApplicationWithOrganization };
  meta: { subscription?: SubscriptionRule } | undefined;
  type: 'query' | 'mutation' | 'subscription';
  getRawInput: () => Promise<unknown>;
};

const RECORD_TARGET = {
  application: (id: string): SubscriptionTarget => ({ applicationId: id }),
  webhookEndpoint: (id: string): SubscriptionTarget => ({ webhookEndpointId: id }),
  webhookDelivery: (id: string): SubscriptionTarget => ({ webhookDeliveryId: id }),
} as const;

/**
 * The organization the route will act on, named the way the route names it: an application
 * secret key's own organization; else `organization_slug`; else the record the `id` names (for
 * routes that declare one); else the API key's organization or the session's active workspace.
 * Untrusted: only used to find the subscription, and only acted on once `canSee` agrees.
 */
async function targetOf(call: GateCall, rule: SubscriptionRule): Promise<SubscriptionTarget | undefined> {
  const { principal, application } = call.ctx;
  if (!principal) {
    return application ? { organizationId: application.organization.id } : undefined;
  }
  const raw = await call.getRawInput();
  const input = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  if (typeof input.organization_slug === 'string') {
    return { organizationSlug: input.organization_slug };
  }
  if (rule.record && typeof input.id === 'string') {
    return RECORD_TARGET[rule.record](input.id);
  }
  if (principal.kind === 'api_key') {
    return { organizationId: principal.apiKey.tenantId };
  }
  return principal.session.activeTenantId ? { organizationId: principal.session.activeTenantId } : undefined;
}

/**
 * Whether the caller can see the organization at all, from what the principal already holds (no
 * query). One it cannot see is left to the route, which answers 404: a 402 must not tell an
 * outsider that an organization exists, nor how its subscription stands.
 */
function canSee(call: GateCall, organizationId: string): boolean {
  const { principal, application } = call.ctx;
  if (!principal) {
    return application?.organization.id === organizationId;
  }
  if (principal.kind === 'api_key') {
    return principal.apiKey.tenantId === organizationId;
  }
  return principal.session.isPlatformAdmin || principal.memberships.some((m) => m.organization.id === organizationId);
}

/**
 * The subscription rule, in one place: a mutation of a route that declares `subscription` in its
 * meta is refused with 402 while its organization's subscription is inactive, cancelled or
 * expired (subscription_inactive), over its seat limit, over a usage limit this month, or (for a
 * route adding a member) out of seats (subscription_limit_exceeded). Reads never reach the
 * database here. One statement per guarded mutation (organizations ⋈ subscriptions ⋈ plans, a
 * member count when a seat limit applies, the month's hourly usage totals of the limited types).
 * The platform and keyless workspaces have no subscription and are never refused.
 *
 * Runs before the route's own checks, after authentication, outside the route's transaction: a
 * route that adds a member also calls `claimSeat` (modules/subscriptions/enforce.ts) inside the
 * transaction that inserts it, so members added at the same instant cannot share the last seat.
 */
export async function enforceSubscription(call: GateCall): Promise<void> {
  const rule = call.meta?.subscription;
  if (!rule || rule.organization === 'handler' || call.type !== 'mutation') {
    return;
  }
  const target = await targetOf(call, rule);
  if (target) {
    await refuseWhenBlocked(call.ctx.services.db, target, { seats: rule.seats, canSee: (id) => canSee(call, id) });
  }
}
