import { BLOCKING_STATUSES, type TSubscriptionStatus } from '@svc/contracts/subscriptions';
import type { DbOrTx } from '@svc/db/client';
import { type EntitlementTermsRow, findEntitlementTerms, findSubscriptionState } from '@svc/db/queries/subscriptions';
import { usagePeriod } from './rules.ts';

/**
 * What an organization's subscription entitles it to (docs/authorization.md
 * "Features"): the plan's key, the subscription's status, and the plan's features while the
 * subscription is in good standing (`active` or `trialing`, the statuses the 402 rule lets
 * through). An inactive, cancelled or expired subscription keeps its plan and status but
 * entitles to no feature, so an API gating on `features` refuses it without knowing the statuses.
 */
export type Entitlements = { plan: string; status: TSubscriptionStatus; features: string[] };

function entitlementsOfTerms(terms: Pick<EntitlementTermsRow, 'planKey' | 'status' | 'features'>): Entitlements {
  return { plan: terms.planKey, status: terms.status, features: BLOCKING_STATUSES.has(terms.status) ? [] : [...terms.features] };
}

/**
 * The organization's entitlements now, for the `entitlements` token scope: one read of its
 * subscription and plan. Null when it has no subscription (the platform and keyless workspaces
 * are never limited and have no plan to name) or does not exist. A feature that is also a usage
 * event type the plan limits is listed while the subscription stands; whether quantity is left
 * this month is the check API's to say (`featureStanding`), a token cannot follow it.
 */
export async function entitlementsOf(db: DbOrTx, tenantId: string): Promise<Entitlements | null> {
  const terms = await findEntitlementTerms(db, tenantId);
  return terms ? entitlementsOfTerms(terms) : null;
}

/** May the organization use a feature now, and why (POST /v1/permissions/check with `feature`). */
export type FeatureStanding = {
  allowed: boolean;
  /** The plan's key and the subscription's status; absent without a subscription. */
  plan?: string;
  status?: TSubscriptionStatus;
  /** Quantity of the feature's event type left this month when the plan limits it; null: not limited. */
  remaining: number | null;
};

/**
 * Whether the organization may use `feature` now: its plan includes it, its subscription is
 * active or trialing, and, when the feature's key is also a usage event type the plan limits,
 * this month's quantity is below the limit (remaining > 0). `terms` is the organization's
 * subscription as findEntitlementTerms read it (the check caches it; undefined: none). Usage is
 * read fresh, by the 402 rule's own count (findSubscriptionState: the month's hourly totals), only
 * for a limited feature: usage changes on every event and is never cached.
 */
export async function featureStanding(
  db: DbOrTx,
  tenantId: string,
  feature: string,
  terms: EntitlementTermsRow | undefined,
): Promise<FeatureStanding> {
  if (!terms) {
    return { allowed: false, remaining: null };
  }
  const limit = terms.usageLimits[feature];
  if (limit === undefined) {
    const entitled = entitlementsOfTerms(terms);
    return { allowed: entitled.features.includes(feature), plan: entitled.plan, status: entitled.status, remaining: null };
  }
  const period = usagePeriod();
  const state = await findSubscriptionState(db, {
    organizationId: tenantId,
    usageSince: period.start,
    usageUntil: period.end,
    alwaysUsage: true,
  });
  const subscription = state?.subscription;
  if (!subscription) {
    return { allowed: false, remaining: null };
  }
  // The fresh read decides: the plan may have changed since `terms` was cached.
  const entitled = entitlementsOfTerms({
    planKey: subscription.plan.key,
    status: subscription.status,
    features: subscription.plan.features,
  });
  const usage = subscription.usage.find((u) => u.eventType === feature);
  const remaining = usage ? Math.max(0, usage.limit - usage.used) : null;
  return {
    allowed: entitled.features.includes(feature) && (remaining === null || remaining > 0),
    plan: entitled.plan,
    status: entitled.status,
    remaining,
  };
}

/** A plan's features before and after a change, with what was added and removed; undefined when they are the same. */
export type FeaturesChange = { before: string[]; after: string[]; added: string[]; removed: string[] };

export function featuresChange(before: readonly string[], after: readonly string[]): FeaturesChange | undefined {
  const was = new Set(before);
  const is = new Set(after);
  const added = [...is].filter((f) => !was.has(f)).sort();
  const removed = [...was].filter((f) => !is.has(f)).sort();
  if (added.length === 0 && removed.length === 0) {
    return undefined;
  }
  return { before: [...before].sort(), after: [...after].sort(), added, removed };
}
