import { and, desc, eq, isNotNull, lte, ne, sql } from 'drizzle-orm';
import { type DbOrTx, executePrepared } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import type { Cursor } from '../pagination.ts';
import { type SubscriptionStatus, subscriptionPlans, subscriptions } from '../schema/subscriptions.ts';

export type SubscriptionPlanRow = typeof subscriptionPlans.$inferSelect;
export type SubscriptionRow = typeof subscriptions.$inferSelect;

// Plans -------------------------------------------------------------------------------------

/** Plans, newest first: at most `limit` rows after `after`. Plans are few; no tenant predicate (they are platform-wide). */
export async function listSubscriptionPlans(db: DbOrTx, opts: { after?: Cursor; limit: number }): Promise<SubscriptionPlanRow[]> {
  return db
    .select()
    .from(subscriptionPlans)
    .where(
      and(
        opts.after ? lte(subscriptionPlans.createdAt, opts.after.createdAt) : undefined,
        opts.after
          ? sql`(${subscriptionPlans.createdAt}, ${subscriptionPlans.id}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(subscriptionPlans.createdAt), desc(subscriptionPlans.id))
    .limit(opts.limit);
}

export async function findSubscriptionPlanById(db: DbOrTx, id: string): Promise<SubscriptionPlanRow | undefined> {
  const [row] = await db.select().from(subscriptionPlans).where(eq(subscriptionPlans.id, id)).limit(1);
  return row;
}

export async function findSubscriptionPlanByKey(db: DbOrTx, key: string): Promise<SubscriptionPlanRow | undefined> {
  const [row] = await db.select().from(subscriptionPlans).where(eq(subscriptionPlans.key, key)).limit(1);
  return row;
}

/**
 * Serializes changes of which plan is the default (one transaction-scoped advisory lock): two
 * admins making two plans the default at once end with one default, never a unique violation.
 */
export async function lockDefaultPlanChoice(tx: DbOrTx): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('svc:subscription_plans:default'))`);
}

/** The current default stops being one (call under `lockDefaultPlanChoice`). */
export async function clearDefaultSubscriptionPlan(tx: DbOrTx, opts: { exceptId?: string } = {}): Promise<void> {
  await tx
    .update(subscriptionPlans)
    .set({ isDefault: null, updatedAt: sql`now()` })
    .where(and(isNotNull(subscriptionPlans.isDefault), opts.exceptId ? ne(subscriptionPlans.id, opts.exceptId) : undefined));
}

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; cause?: { code?: string } };
  return e.code === '23505' || e.cause?.code === '23505';
}

/** Inserts a plan; undefined when the key is taken (the unique index decides). */
export async function insertSubscriptionPlan(
  tx: DbOrTx,
  values: {
    id: string;
    key: string;
    name: string;
    seatLimit: number | null;
    usageLimits: Record<string, number>;
    usageThresholds: number[];
    /** Sorted, each once. */
    features: string[];
    isDefault: boolean;
  },
): Promise<SubscriptionPlanRow | undefined> {
  const [row] = await tx
    .insert(subscriptionPlans)
    .values({ ...values, isDefault: values.isDefault ? 'yes' : null })
    .onConflictDoNothing({ target: subscriptionPlans.key })
    .returning();
  return row;
}

/**
 * Changes a plan. `'key_taken'` when another plan has the new key; undefined when no plan has
 * the id.
 */
export async function updateSubscriptionPlan(
  tx: DbOrTx,
  opts: {
    id: string;
    key?: string;
    name?: string;
    seatLimit?: number | null;
    usageLimits?: Record<string, number>;
    usageThresholds?: number[];
    features?: string[];
    isDefault?: true;
  },
): Promise<SubscriptionPlanRow | 'key_taken' | undefined> {
  if (opts.key !== undefined) {
    const [holder] = await tx
      .select({ id: subscriptionPlans.id })
      .from(subscriptionPlans)
      .where(and(eq(subscriptionPlans.key, opts.key), ne(subscriptionPlans.id, opts.id)))
      .limit(1);
    if (holder) {
      return 'key_taken';
    }
  }
  try {
    const [row] = await tx
      .update(subscriptionPlans)
      .set({
        ...(opts.key !== undefined ? { key: opts.key } : {}),
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        ...(opts.seatLimit !== undefined ? { seatLimit: opts.seatLimit } : {}),
        ...(opts.usageLimits !== undefined ? { usageLimits: opts.usageLimits } : {}),
        ...(opts.usageThresholds !== undefined ? { usageThresholds: opts.usageThresholds } : {}),
        ...(opts.features !== undefined ? { features: opts.features } : {}),
        ...(opts.isDefault ? { isDefault: 'yes' as const } : {}),
        updatedAt: sql`now()`,
      })
      .where(eq(subscriptionPlans.id, opts.id))
      .returning();
    return row;
  } catch (error) {
    // Another transaction took the key between the check and the update.
    if (opts.key !== undefined && isUniqueViolation(error)) {
      return 'key_taken';
    }
    throw error;
  }
}

// Subscriptions -----------------------------------------------------------------------------

/** What an organization's subscription entitles it to: its plan's key, features and usage limits, and its status. */
export type EntitlementTermsRow = {
  planKey: string;
  status: SubscriptionStatus;
  features: string[];
  usageLimits: Record<string, number>;
};

/**
 * The organization's subscription terms (entitlements, the feature check), in one read by the
 * two primary keys; undefined when it has no subscription (the platform and keyless workspaces,
 * an organization that does not exist). No member count and no usage: findSubscriptionState
 * counts those when a feature needs them.
 */
export async function findEntitlementTerms(db: DbOrTx, tenantId: string): Promise<EntitlementTermsRow | undefined> {
  const [row] = await db
    .select({
      planKey: subscriptionPlans.key,
      status: subscriptions.status,
      features: subscriptionPlans.features,
      usageLimits: subscriptionPlans.usageLimits,
    })
    .from(subscriptions)
    .innerJoin(subscriptionPlans, eq(subscriptionPlans.id, subscriptions.planId))
    .where(eq(subscriptions.tenantId, tenantId))
    .limit(1);
  return row;
}

/**
 * The organizations subscribed to a plan (a change of its features is announced to each). Plans
 * are platform-wide: the predicate is the plan, not a tenant.
 */
export async function listTenantIdsOnPlan(db: DbOrTx, planId: string): Promise<string[]> {
  const rows = await db.select({ tenantId: subscriptions.tenantId }).from(subscriptions).where(eq(subscriptions.planId, planId));
  return rows.map((r) => r.tenantId);
}

/** One limited event type this month. */
export type UsageAgainstLimitRow = { eventType: string; limit: number; used: number };

/** An organization's subscription with what its limits are measured against. */
export type SubscriptionStateRow = {
  organization: { id: string; slug: string; name: string; kind: 'tenant' | 'platform' | 'keyless' };
  /** Null for the platform and keyless workspaces (never subscribed, never limited). */
  subscription: {
    status: SubscriptionStatus;
    /** Seats bought (null: the plan's). */
    seats: number | null;
    createdAt: Date;
    updatedAt: Date;
    plan: SubscriptionPlanRow;
    /** Members now; null when no seat limit applies and `countMembers` was not asked for. */
    members: number | null;
    /** Per limited event type, the quantity since `periodStart`; empty when not asked for. */
    usage: UsageAgainstLimitRow[];
  } | null;
};

type StateDbRow = {
  id: string;
  slug: string;
  name: string;
  kind: 'tenant' | 'platform' | 'keyless';
  status: SubscriptionStatus | null;
  seats: number | null;
  sub_created_at: string | null;
  sub_updated_at: string | null;
  plan: {
    id: string;
    key: string;
    name: string;
    seat_limit: number | null;
    usage_limits: Record<string, number>;
    usage_thresholds: number[];
    features?: string[];
    is_default: 'yes' | null;
    created_at: string;
    updated_at: string;
  } | null;
  members: string | number | null;
  usage: { eventType: string; limit: string | number; used: string | number }[] | null;
};

/**
 * One statement, one row: the organization, its subscription and plan, its member count (only
 * when a seat limit applies, unless `countMembers`), and, when `usageSince` is given and the
 * subscription is in good standing (or `alwaysUsage`), each limited event type's quantity since
 * then (and before `usageUntil`) from the hourly totals (primary key (tenant_id, event_type, hour): a few hundred rows per
 * type per month whatever the event count). Undefined when no organization matches.
 */
export async function findSubscriptionState(
  db: DbOrTx,
  opts: { organizationId: string; usageSince?: Date; usageUntil?: Date; countMembers?: boolean; alwaysUsage?: boolean },
): Promise<SubscriptionStateRow | undefined> {
  const since = opts.usageSince?.toISOString() ?? null;
  const until = opts.usageUntil?.toISOString() ?? null;
  const countAlways = opts.countMembers === true;
  const usageAlways = opts.alwaysUsage === true;
  const rows = await executePrepared<StateDbRow>(
    db,
    sql`
    select o.id, o.slug, o.name, o.kind,
      s.status, s.seats, s.created_at as sub_created_at, s.updated_at as sub_updated_at,
      case when p.id is null then null else json_build_object(
        'id', p.id, 'key', p.key, 'name', p.name, 'seat_limit', p.seat_limit, 'usage_limits', p.usage_limits,
        'usage_thresholds', p.usage_thresholds, 'features', p.features, 'is_default', p.is_default, 'created_at', p.created_at, 'updated_at', p.updated_at) end as plan,
      case when s.tenant_id is not null and (${countAlways}::boolean or coalesce(s.seats, p.seat_limit) is not null)
        then (select count(*) from memberships m where m.tenant_id = o.id) end as members,
      case when s.tenant_id is not null and ${since}::timestamptz is not null
          and (${usageAlways}::boolean or s.status in ('active', 'trialing'))
        then (
          select coalesce(json_agg(json_build_object('eventType', l.key, 'limit', l.value::bigint, 'used', u.used) order by l.key), '[]'::json)
          from jsonb_each_text(p.usage_limits) l
          cross join lateral (
            select coalesce(sum(h.quantity), 0) as used from usage_hourly h
            where h.tenant_id = o.id and h.event_type = l.key and h.hour >= ${since}::timestamptz
              and (${until}::timestamptz is null or h.hour < ${until}::timestamptz)
          ) u
        ) end as usage
    from organizations o
    left join subscriptions s on s.tenant_id = o.id
    left join subscription_plans p on p.id = s.plan_id
    where o.id = ${opts.organizationId}
    limit 1`,
  );
  const row = rows[0];
  if (!row) {
    return undefined;
  }
  const organization = { id: row.id, slug: row.slug, name: row.name, kind: row.kind };
  if (row.status === null || row.plan === null || row.sub_created_at === null || row.sub_updated_at === null) {
    return { organization, subscription: null };
  }
  const plan = row.plan;
  return {
    organization,
    subscription: {
      status: row.status,
      seats: row.seats,
      createdAt: new Date(row.sub_created_at),
      updatedAt: new Date(row.sub_updated_at),
      plan: {
        id: plan.id,
        key: plan.key,
        name: plan.name,
        seatLimit: plan.seat_limit,
        usageLimits: plan.usage_limits,
        usageThresholds: plan.usage_thresholds,
        features: plan.features ?? [],
        isDefault: plan.is_default,
        createdAt: new Date(plan.created_at),
        updatedAt: new Date(plan.updated_at),
      },
      members: row.members === null ? null : Number(row.members),
      usage: (row.usage ?? []).map((u) => ({ eventType: u.eventType, limit: Number(u.limit), used: Number(u.used) })),
    },
  };
}

/**
 * Takes the organization's seats for the rest of the transaction: its subscription row, locked
 * (FOR NO KEY UPDATE, which PATCH /v1/subscription's FOR UPDATE also waits for). Every write that
 * adds a member calls it, in the transaction that adds the member, before counting the members
 * (findSubscriptionState): the count then sees every member a concurrent add committed, so two
 * adds racing for the last seat cannot both pass. Without a transaction it protects nothing.
 * Organizations without a subscription (platform, keyless) lock nothing: they have no seat limit.
 *
 * The organization row is share-locked first (FOR KEY SHARE, what the membership insert's foreign
 * key check takes anyway): a concurrent deletion of the organization, which locks that row before
 * its cascade deletes the subscription, then waits for this transaction (or this one for it)
 * instead of each holding the row the other needs.
 */
export async function lockSeats(tx: DbOrTx, opts: { tenantId: string }): Promise<void> {
  await tx.execute(sql`select 1 from organizations where id = ${opts.tenantId} for key share`);
  await tx.execute(sql`select 1 from subscriptions where tenant_id = ${opts.tenantId} for no key update`);
}

/** The organization's subscription row, locked until the transaction ends (PATCH reads, then writes). */
export async function lockSubscription(tx: DbOrTx, tenantId: string): Promise<SubscriptionRow | undefined> {
  const [row] = await tx.select().from(subscriptions).where(eq(subscriptions.tenantId, tenantId)).for('update').limit(1);
  return row;
}

/** Sets plan, seats and/or status of the organization's subscription. */
export async function updateSubscription(
  tx: DbOrTx,
  opts: { tenantId: string; planId?: string; seats?: number | null; status?: SubscriptionStatus },
): Promise<SubscriptionRow | undefined> {
  const [row] = await tx
    .update(subscriptions)
    .set({
      ...(opts.planId !== undefined ? { planId: opts.planId } : {}),
      ...(opts.seats !== undefined ? { seats: opts.seats } : {}),
      ...(opts.status !== undefined ? { status: opts.status } : {}),
      updatedAt: sql`now()`,
    })
    .where(eq(subscriptions.tenantId, opts.tenantId))
    .returning();
  return row;
}

/** In an export (queries/exports.ts): the subscription with its plan. */
export const subscriptionExportSection: ExportSection = {
  key: 'subscription',
  resource: 'subscription',
  shape: 'one',
  source: 'snapshot',
  from: 'subscriptions t join subscription_plans p on p.id = t.plan_id',
  tenantColumn: 't.tenant_id',
  orderBy: 't.tenant_id',
  fields: [
    exportField.text('planId', 't.plan_id'),
    exportField.text('planKey', 'p.key'),
    exportField.text('planName', 'p.name'),
    exportField.text('status', 't.status'),
    exportField.number('seats', 't.seats'),
    exportField.number('seatLimit', 'p.seat_limit'),
    exportField.json('usageLimits', 'p.usage_limits'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
