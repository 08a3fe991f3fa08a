import { and, desc, eq, ne, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { type MembershipStatus, memberships, users } from '../schema/identity.ts';
import { organizations } from '../schema/organizations.ts';
import { sessions } from '../schema/sessions.ts';
import type { OrganizationRow } from './organizations.ts';

/**
 * Whose organizations a tenant list shows: a user's active memberships, every organization (platform
 * admins), or exactly one (a tenant API key's own).
 */
export type OrganizationListFilter = { kind: 'member'; userId: string } | { kind: 'all' } | { kind: 'one'; tenantId: string };

/**
 * One page of organizations, newest first: `limit + 1` rows (the extra one says a next page
 * exists). The keyless development workspace belongs to no one and is never listed.
 */
export async function listOrganizations(
  db: DbOrTx,
  opts: { filter: OrganizationListFilter; cursor: Cursor | undefined; limit: number },
): Promise<OrganizationRow[]> {
  const visible = ne(organizations.kind, 'keyless');
  const page = afterCursor(organizations.createdAt, organizations.id, opts.cursor);
  const order = [desc(organizations.createdAt), desc(organizations.id)];
  const { filter } = opts;
  if (filter.kind === 'member') {
    return db
      .select({ organization: organizations })
      .from(memberships)
      .innerJoin(organizations, eq(organizations.id, memberships.tenantId))
      .where(and(eq(memberships.userId, filter.userId), eq(memberships.status, 'active'), visible, page))
      .orderBy(...order)
      .limit(opts.limit + 1)
      .then((rows) => rows.map((r) => r.organization));
  }
  const scope: SQL | undefined = filter.kind === 'one' ? eq(organizations.id, filter.tenantId) : undefined;
  return db
    .select()
    .from(organizations)
    .where(and(scope, visible, page))
    .orderBy(...order)
    .limit(opts.limit + 1);
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
