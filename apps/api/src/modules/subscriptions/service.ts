import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type {
  TCreateSubscriptionPlanRequest,
  TListSubscriptionPlansRequest,
  TSubscription,
  TSubscriptionPlan,
  TSubscriptionPlanPage,
  TUpdateSubscriptionPlanRequest,
  TUpdateSubscriptionRequest,
} from '@svc/contracts/subscriptions';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  clearDefaultSubscriptionPlan,
  findSubscriptionPlanById,
  findSubscriptionPlanByKey,
  findSubscriptionState,
  insertSubscriptionPlan,
  listSubscriptionPlans,
  listTenantIdsOnPlan,
  lockDefaultPlanChoice,
  lockSubscription,
  type SubscriptionPlanRow,
  type SubscriptionStateRow,
  updateSubscription,
  updateSubscriptionPlan,
} from '@svc/db/queries/subscriptions';
import { type RequestMeta, recordAudit, recordOrganizationEvents } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';
import type { UserPrincipal } from '../access/principal.ts';
import { recordReachedThresholds } from '../usage/thresholds.ts';
import { type FeaturesChange, featuresChange } from './entitlements.ts';
import { limitsOf, seatLimitOf, subscriptionBlock, usagePeriod } from './rules.ts';
import { upgradeUrlFor } from './upgrade-url.ts';

const NO_SUBSCRIPTION = 'this workspace has no subscription: the platform and keyless workspaces are never limited';
const PLAN_NOT_FOUND = 'subscription plan not found';

function toPlan(row: SubscriptionPlanRow): TSubscriptionPlan {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    seatLimit: row.seatLimit,
    usageLimits: row.usageLimits,
    usageThresholds: row.usageThresholds,
    features: row.features,
    isDefault: row.isDefault === 'yes',
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** What an audit entry keeps of a plan: its terms, without id and times. */
function planSummary(row: SubscriptionPlanRow): Record<string, unknown> {
  const { id: _id, createdAt: _created, updatedAt: _updated, ...terms } = toPlan(row);
  return terms;
}

// Plans -------------------------------------------------------------------------------------

/** GET /v1/subscription-plans: every plan, for anyone signed in (plans are not secret). */
export async function listPlans(db: Db, input: TListSubscriptionPlansRequest): Promise<TSubscriptionPlanPage> {
  const scope = 'subscription_plans';
  const rows = await listSubscriptionPlans(db, { after: decodeCursor(scope, input.cursor), limit: input.limit + 1 });
  return toPage(scope, rows, input.limit, toPlan);
}

/**
 * POST /v1/subscription-plans (platform admins: platformProcedure). A plan made the default replaces the previous
 * default in the same transaction: there is always exactly one.
 */
export async function createPlan(
  db: Db,
  principal: UserPrincipal,
  request: RequestMeta,
  input: TCreateSubscriptionPlanRequest,
): Promise<TSubscriptionPlan> {
  return db.transaction(async (tx) => {
    if (input.isDefault) {
      await lockDefaultPlanChoice(tx);
      await clearDefaultSubscriptionPlan(tx);
    }
    const row = await insertSubscriptionPlan(tx, {
      id: newId('subscriptionPlan'),
      key: input.key,
      name: input.name,
      seatLimit: input.seatLimit,
      usageLimits: input.usageLimits,
      usageThresholds: input.usageThresholds,
      features: input.features,
      isDefault: input.isDefault === true,
    });
    if (!row) {
      throw new AppError('plan_key_taken', `another plan has the key ${input.key}: choose another key`);
    }
    await recordAudit(tx, principal, request, {
      tenantId: null,
      action: 'subscription_plan.created',
      target: { type: 'subscription_plan', id: row.id },
      summary: planSummary(row),
    });
    return toPlan(row);
  });
}

/**
 * PATCH /v1/subscription-plans/{id} (platform admins: platformProcedure). Limits apply to every organization on the
 * plan from their next request. `isDefault: false` on the default plan is refused: make another
 * plan the default instead, so new organizations always get one.
 */
export async function updatePlan(
  db: Db,
  principal: UserPrincipal,
  request: RequestMeta,
  input: TUpdateSubscriptionPlanRequest,
): Promise<TSubscriptionPlan> {
  return db.transaction(async (tx) => {
    if (input.isDefault !== undefined) {
      await lockDefaultPlanChoice(tx);
    }
    const before = await findSubscriptionPlanById(tx, input.id);
    if (!before) {
      throw new AppError('plan_not_found', PLAN_NOT_FOUND);
    }
    if (input.isDefault === false && before.isDefault === 'yes') {
      throw new AppError('default_plan_required', `${before.key} is the default plan: make another plan the default instead`);
    }
    const makeDefault = input.isDefault === true && before.isDefault !== 'yes';
    if (makeDefault) {
      await clearDefaultSubscriptionPlan(tx, { exceptId: before.id });
    }
    const row = await updateSubscriptionPlan(tx, {
      id: input.id,
      key: input.key,
      name: input.name,
      seatLimit: input.seatLimit,
      usageLimits: input.usageLimits,
      usageThresholds: input.usageThresholds,
      features: input.features,
      isDefault: makeDefault ? true : undefined,
    });
    if (row === 'key_taken') {
      throw new AppError('plan_key_taken', `another plan has the key ${input.key}: choose another key`);
    }
    if (!row) {
      throw new AppError('plan_not_found', PLAN_NOT_FOUND);
    }
    await recordAudit(tx, principal, request, {
      tenantId: null,
      action: 'subscription_plan.updated',
      target: { type: 'subscription_plan', id: row.id },
      summary: { before: planSummary(before), after: planSummary(row) },
    });
    if (input.usageLimits !== undefined || input.usageThresholds !== undefined) {
      // Thresholds this month's usage reached under the new terms, for every organization on the plan.
      await recordReachedThresholds(tx, { planId: row.id });
    }
    const features = featuresChange(before.features, row.features);
    if (features) {
      // What each organization on the plan may use changed: its webhook endpoints hear of it.
      const tenantIds = await listTenantIdsOnPlan(tx, row.id);
      await recordOrganizationEvents(
        tx,
        principal,
        'subscription.updated',
        tenantIds.map((tenantId) => ({
          tenantId,
          target: { type: 'subscription', id: tenantId },
          summary: { changes: { features }, cause: 'plan_updated', plan: row.key },
        })),
      );
    }
    return toPlan(row);
  });
}

// Subscriptions -----------------------------------------------------------------------------

/** The subscription view: plan, status, seats bought and used, this month's usage against each limit, and what mutating routes answer now. */
function toSubscription(state: SubscriptionStateRow, period: { start: Date; end: Date }, upgradeUrl: string | null): TSubscription {
  const sub = state.subscription;
  if (!sub) {
    throw new AppError('not_found', NO_SUBSCRIPTION);
  }
  const limit = seatLimitOf(sub);
  const used = sub.members ?? 0;
  const seatsOver = limit !== null && used > limit;
  const limits = sub.usage.map((u) => ({
    eventType: u.eventType,
    limit: u.limit,
    used: u.used,
    remaining: Math.max(0, u.limit - u.used),
    overLimit: u.used > u.limit,
  }));
  const block = subscriptionBlock(sub, { periodEnd: period.end });
  return {
    organization: { id: state.organization.id, slug: state.organization.slug, name: state.organization.name },
    plan: toPlan(sub.plan),
    status: sub.status,
    seats: {
      bought: sub.seats,
      limit,
      used,
      available: limit === null ? null : Math.max(0, limit - used),
      overLimit: seatsOver,
    },
    usage: { periodStart: period.start.toISOString(), periodEnd: period.end.toISOString(), limits },
    overLimit: seatsOver || limits.some((l) => l.overLimit),
    limits: limitsOf(sub, period.end),
    blocked: block ? { ...block, upgradeUrl: upgradeUrlFor(upgradeUrl, state.organization.id) } : null,
    updatedAt: sub.updatedAt.toISOString(),
  };
}

/** `upgradeUrl`: SUBSCRIPTION_UPGRADE_URL (config.subscriptionUpgradeUrl), for `blocked`. */
async function readSubscription(db: DbOrTx, organizationId: string, upgradeUrl: string | null): Promise<TSubscription> {
  const period = usagePeriod();
  const state = await findSubscriptionState(db, {
    organizationId,
    usageSince: period.start,
    usageUntil: period.end,
    countMembers: true,
    alwaysUsage: true,
  });
  if (!state) {
    throw new AppError('not_found', 'organization not found');
  }
  return toSubscription(state, period, upgradeUrl);
}

/** GET /v1/subscription?organization_slug= (subscription.read). */
export async function getSubscription(db: Db, { organization }: Access, upgradeUrl: string | null): Promise<TSubscription> {
  return readSubscription(db, organization.id, upgradeUrl);
}

/**
 * PATCH /v1/subscription?organization_slug= (platform admins: platformProcedureWithQuerySlug): plan (by key), seats bought (null:
 * back to the plan's) and status. Audited as `subscription.updated`, which also emits the webhook
 * event, in the same transaction; a PATCH that changes nothing records nothing.
 */
export async function updateSubscriptionFor(
  db: Db,
  { organization, principal }: Access,
  request: RequestMeta,
  input: TUpdateSubscriptionRequest,
  upgradeUrl: string | null,
): Promise<TSubscription> {
  if (organization.kind !== 'tenant') {
    throw new AppError('not_found', NO_SUBSCRIPTION);
  }
  return db.transaction(async (tx) => {
    const before = await lockSubscription(tx, organization.id);
    if (!before) {
      throw new AppError('not_found', NO_SUBSCRIPTION);
    }
    let planId: string | undefined;
    let planKeys: { before: string; after: string } | undefined;
    let features: FeaturesChange | undefined;
    if (input.planKey !== undefined) {
      const plan = await findSubscriptionPlanByKey(tx, input.planKey);
      if (!plan) {
        throw new AppError('plan_not_found', `no plan has the key ${input.planKey} (GET /v1/subscription-plans lists them)`);
      }
      if (plan.id !== before.planId) {
        const previous = await findSubscriptionPlanById(tx, before.planId);
        planId = plan.id;
        planKeys = { before: previous?.key ?? before.planId, after: plan.key };
        features = featuresChange(previous?.features ?? [], plan.features);
      }
    }
    const seats = input.seats !== undefined && input.seats !== before.seats ? input.seats : undefined;
    const status = input.status !== undefined && input.status !== before.status ? input.status : undefined;
    if (planId === undefined && seats === undefined && status === undefined) {
      return readSubscription(tx, organization.id, upgradeUrl);
    }
    await updateSubscription(tx, { tenantId: organization.id, planId, seats, status });
    if (planId !== undefined) {
      // Thresholds this month's usage has reached on the new plan.
      await recordReachedThresholds(tx, { tenantId: organization.id });
    }
    await recordAudit(tx, principal, request, {
      tenantId: organization.id,
      action: 'subscription.updated',
      target: { type: 'subscription', id: organization.id },
      summary: {
        changes: {
          ...(planKeys ? { planKey: planKeys } : {}),
          ...(features ? { features } : {}),
          ...(seats !== undefined ? { seats: { before: before.seats, after: seats } } : {}),
          ...(status !== undefined ? { status: { before: before.status, after: status } } : {}),
        },
      },
    });
    return readSubscription(tx, organization.id, upgradeUrl);
  });
}
