import { type AnyColumn, and, desc, eq, ilike, ne, or, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { likeContaining } from '../like-pattern.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { applications } from '../schema/applications.ts';
import { auditLogs } from '../schema/audit-logs.ts';
import { type MembershipStatus, memberships, users } from '../schema/identity.ts';
import { invitations } from '../schema/invitations.ts';
import { organizations } from '../schema/organizations.ts';
import { sessions } from '../schema/sessions.ts';
import { type SubscriptionStatus, subscriptionPlans, subscriptions } from '../schema/subscriptions.ts';
import { webhookEndpoints } from '../schema/webhooks.ts';
import { liveOrgSessionCount } from './org-sessions.ts';
import type { OrganizationRow } from './organizations.ts';
import { usageAgainstPlanLimits, usageEventCount } from './usage.ts';

/**
 * Whose organizations a tenant list shows: a user's active memberships, every organization (platform
 * admins), or exactly one (a tenant API key's own).
 */
export type OrganizationListFilter = { kind: 'member'; userId: string } | { kind: 'all' } | { kind: 'one'; tenantId: string };

/** What the platform admins' Organizations page shows of an organization beside its row. */
export type OrganizationSummaryRow = {
  memberCount: number;
  /** Null for an organization without a subscription (the platform workspace). */
  subscription: { planKey: string; planName: string; status: SubscriptionStatus } | null;
};

export type OrganizationListRow = OrganizationRow & { summary: OrganizationSummaryRow | null };

/**
 * An organization's memberships in any status (invited, active, suspended): the seats in use and
 * what its Members page lists. `tenantId` is a value or the outer statement's column.
 */
function memberCountOf(tenantId: SQL | AnyColumn | string): SQL {
  return sql`(select count(*)::int from ${memberships} where ${memberships.tenantId} = ${tenantId})`;
}

/** The summary of the organization of the outer statement's row, as one JSON value. */
const organizationSummary: SQL = sql`json_build_object(
  'memberCount', ${memberCountOf(organizations.id)},
  'subscription', (
    select json_build_object('planKey', p.key, 'planName', p.name, 'status', s.status)
    from ${subscriptions} s join ${subscriptionPlans} p on p.id = s.plan_id
    where s.tenant_id = ${organizations.id}
  )
)`;

/**
 * One page of organizations, newest first: `limit + 1` rows (the extra one says a next page
 * exists), in one statement. The keyless development workspace belongs to no one and is never
 * listed. `search` keeps those whose name or slug contains it, ignoring case, matched literally;
 * `withSummary` adds each one's summary (null otherwise), computed for the page's rows only.
 */
export async function listOrganizations(
  db: DbOrTx,
  opts: { filter: OrganizationListFilter; search?: string; withSummary: boolean; cursor: Cursor | undefined; limit: number },
): Promise<OrganizationListRow[]> {
  const { filter } = opts;
  const pattern = opts.search ? likeContaining(opts.search) : undefined;
  const where = and(
    ne(organizations.kind, 'keyless'),
    pattern !== undefined ? or(ilike(organizations.name, pattern), ilike(organizations.slug, pattern)) : undefined,
    afterCursor(organizations.createdAt, organizations.id, opts.cursor),
  );
  const selection = {
    organization: organizations,
    summary: opts.withSummary ? sql<OrganizationSummaryRow>`${organizationSummary}` : sql<null>`null`,
  };
  const order = [desc(organizations.createdAt), desc(organizations.id)];
  const rows =
    filter.kind === 'member'
      ? await db
          .select(selection)
          .from(memberships)
          .innerJoin(organizations, eq(organizations.id, memberships.tenantId))
          .where(and(eq(memberships.userId, filter.userId), eq(memberships.status, 'active'), where))
          .orderBy(...order)
          .limit(opts.limit + 1)
      : await db
          .select(selection)
          .from(organizations)
          .where(and(filter.kind === 'one' ? eq(organizations.id, filter.tenantId) : undefined, where))
          .orderBy(...order)
          .limit(opts.limit + 1);
  return rows.map((r) => ({ ...r.organization, summary: r.summary }));
}

/** The counts and flags of an organization's Overview page (GET /v1/tenants/{id}/overview). */
export type TenantOverviewRow = {
  members: number;
  applications: number;
  activeSessions: number;
  usageEvents: number;
  usageLimits: { eventType: string; limit: number; quantity: number }[];
  signInTried: boolean;
  memberInvited: boolean;
  webhookAdded: boolean;
};

/**
 * What an organization's Overview page shows, in one statement of scalar subqueries, each with
 * the organization's predicate and each an index lookup or range: counts now, the usage of
 * [periodStart, periodEnd) from the hourly totals, and the getting-started flags. A sign-in
 * tried is a `session.created` entry in its audit log: svc's OpenID Provider appends one for each
 * session's first sign-in to one of its applications (or to an application for it), and audit
 * entries are never removed, so the flag, once set, stays.
 */
export async function findTenantOverview(
  db: DbOrTx,
  opts: { tenantId: string; periodStart: Date; periodEnd: Date; now: Date },
): Promise<TenantOverviewRow> {
  const t = opts.tenantId;
  const period = { tenantId: t, from: opts.periodStart, to: opts.periodEnd };
  const [row] = await db.execute<{
    members: number;
    applications: number;
    active_sessions: number;
    usage_events: number;
    usage_limits: { eventType: string; limit: number | string; quantity: number | string }[];
    sign_in_tried: boolean;
    member_invited: boolean;
    webhook_added: boolean;
  }>(sql`
    select
      ${memberCountOf(t)} as members,
      (select count(*)::int from ${applications} where ${applications.tenantId} = ${t}) as applications,
      ${liveOrgSessionCount({ tenantId: t, now: opts.now })}::int as active_sessions,
      ${usageEventCount(period)}::float8 as usage_events,
      ${usageAgainstPlanLimits(period)} as usage_limits,
      exists (select 1 from ${auditLogs} where ${auditLogs.tenantId} = ${t} and ${auditLogs.action} = 'session.created') as sign_in_tried,
      exists (select 1 from ${invitations} where ${invitations.tenantId} = ${t}) as member_invited,
      exists (select 1 from ${webhookEndpoints} where ${webhookEndpoints.tenantId} = ${t}) as webhook_added`);
  if (!row) {
    throw new Error('a select without from answers one row');
  }
  return {
    members: row.members,
    applications: row.applications,
    activeSessions: row.active_sessions,
    usageEvents: row.usage_events,
    usageLimits: row.usage_limits.map((l) => ({ eventType: l.eventType, limit: Number(l.limit), quantity: Number(l.quantity) })),
    signInTried: row.sign_in_tried,
    memberInvited: row.member_invited,
    webhookAdded: row.webhook_added,
  };
}

export type MemberRow = {
  userId: string;
  email: string;
  name: string;
  roleKey: string;
  status: MembershipStatus;
  createdAt: Date;
};

/**
 * One page of an organization's members, newest membership first (`limit + 1` rows). A member
 * who has not accepted yet shows only what the organization typed (users list: the same rule).
 */
export async function listMembers(db: DbOrTx, opts: { tenantId: string; cursor: Cursor | undefined; limit: number }): Promise<MemberRow[]> {
  return db
    .select({
      userId: memberships.userId,
      email: sql<string>`case when ${memberships.status} = 'invited' then coalesce(${memberships.invitedEmail}, ${users.email}) else ${users.email} end`,
      name: sql<string>`case when ${memberships.status} = 'invited' then coalesce(${memberships.invitedName}, '') else ${users.name} end`,
      roleKey: memberships.roleKey,
      status: memberships.status,
      createdAt: memberships.createdAt,
    })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.tenantId, opts.tenantId), afterCursor(memberships.createdAt, memberships.userId, opts.cursor)))
    .orderBy(desc(memberships.createdAt), desc(memberships.userId))
    .limit(opts.limit + 1);
}

/**
 * Sessions whose workspace is this organization move to their user's oldest other active membership
 * (none: no workspace). Run before deleting the organization: afterwards those sessions cannot
 * be told apart from ones that never had a workspace.
 */
export async function moveSessionsOutOf(db: DbOrTx, opts: { tenantId: string }): Promise<number> {
  const rows = await db
    .update(sessions)
    .set({
      activeTenantId: sql`(
        select ${memberships.tenantId} from ${memberships}
        join ${organizations} on ${organizations.id} = ${memberships.tenantId}
        where ${memberships.userId} = ${sessions.userId}
          and ${memberships.tenantId} <> ${opts.tenantId}
          and ${organizations.kind} <> 'keyless'
          and ${memberships.status} = 'active'
        order by ${memberships.createdAt}, ${memberships.tenantId}
        limit 1
      )`,
    })
    .where(eq(sessions.activeTenantId, opts.tenantId))
    .returning({ id: sessions.id });
  return rows.length;
}

/**
 * Deletes a tenant organization and, by cascade, everything it owns (memberships, roles,
 * invitations, API keys, applications). Never the platform or keyless workspace. Undefined when
 * there was no such tenant organization.
 */
/**
 * Locks a tenant organization's row for the rest of the transaction, or says it is gone. A
 * delete takes it first, so a concurrent delete waits and then finds nothing (404) instead of
 * writing rows that point at a deleted organization.
 */
export async function lockTenantOrganization(db: DbOrTx, opts: { tenantId: string }): Promise<boolean> {
  const rows = await db
    .select({ id: organizations.id })
    .from(organizations)
    .where(and(eq(organizations.id, opts.tenantId), eq(organizations.kind, 'tenant')))
    .for('update');
  return rows.length > 0;
}

export async function deleteTenantOrganization(db: DbOrTx, opts: { tenantId: string }): Promise<OrganizationRow | undefined> {
  const [row] = await db
    .delete(organizations)
    .where(and(eq(organizations.id, opts.tenantId), eq(organizations.kind, 'tenant')))
    .returning();
  return row;
}

/** An organization as the operator's `svc orgs list` shows it: the row and who is in it. */
export type OperatorOrganizationRow = OrganizationRow & {
  members: { email: string; roleKey: string; status: MembershipStatus }[];
};

/**
 * Every organization but the keyless development workspace, newest first, each with its members
 * (email, role, status; oldest membership first), for the operator's command line, which acts
 * across organizations as whoever holds the database does. `memberEmail` keeps those where that
 * address (any case) has a membership: how a person finds their own workspace.
 */
export async function listOrganizationsForOperator(db: DbOrTx, opts: { memberEmail?: string } = {}): Promise<OperatorOrganizationRow[]> {
  // Raw names with aliases: in a subquery of the select list drizzle writes bare column names,
  // and memberships and users both have a status.
  const members = sql<OperatorOrganizationRow['members']>`coalesce((
    select json_agg(json_build_object('email', mu.email, 'roleKey', mm.role_key, 'status', mm.status) order by mm.created_at, mm.user_id)
    from memberships mm join users mu on mu.id = mm.user_id
    where mm.tenant_id = organizations.id
  ), '[]'::json)`;
  const rows = await db
    .select({ organization: organizations, members })
    .from(organizations)
    .where(
      and(
        ne(organizations.kind, 'keyless'),
        opts.memberEmail === undefined
          ? undefined
          : sql`exists (select 1 from memberships fm join users fu on fu.id = fm.user_id
              where fm.tenant_id = organizations.id and lower(fu.email) = lower(${opts.memberEmail}))`,
      ),
    )
    .orderBy(desc(organizations.createdAt), desc(organizations.id));
  return rows.map((r) => ({ ...r.organization, members: r.members }));
}
