import { and, asc, desc, eq, isNotNull, isNull, ne, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import type { Cursor } from '../pagination.ts';
import { memberships, sessions, users } from '../schema/identity.ts';
import type { UserRow } from './identity.ts';

/**
 * Users as an organization's admins see them: a user row joined with its membership of that
 * organization. `users` has no tenant column (one person, many organizations), so the tenant
 * predicate of every statement here is the membership: a user of another organization is not
 * found, not updated, not counted.
 */
export type OrgUserRow = {
  /** The user's id. */
  id: string;
  email: string;
  name: string;
  emailVerified: boolean;
  status: 'active' | 'suspended';
  lastSignInAt: Date | null;
  userCreatedAt: Date;
  /** Null for a user pre-provisioned and not linked to an engine identity yet. */
  engineSubject: string | null;
  roleKey: string;
  /** When the membership began: the list's keyset order. */
  createdAt: Date;
};

const orgUserColumns = {
  id: users.id,
  email: users.email,
  name: users.name,
  emailVerified: users.emailVerified,
  status: users.status,
  lastSignInAt: users.lastSignInAt,
  userCreatedAt: users.createdAt,
  engineSubject: users.engineSubject,
  roleKey: memberships.roleKey,
  createdAt: memberships.createdAt,
};

/** `like` pattern for "starts with": the user's text is matched literally. */
function startsWith(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * One page of an organization's users, newest member first: at most `limit` rows strictly after
 * `after` (membership created_at, user id).
 */
export async function listOrgUsers(
  db: DbOrTx,
  opts: { tenantId: string; status?: 'active' | 'suspended'; emailPrefix?: string; after?: Cursor; limit: number },
): Promise<OrgUserRow[]> {
  return db
    .select(orgUserColumns)
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(
      and(
        eq(memberships.tenantId, opts.tenantId),
        opts.status !== undefined ? eq(users.status, opts.status) : undefined,
        opts.emailPrefix !== undefined ? sql`${users.email} like ${startsWith(opts.emailPrefix)}` : undefined,
        opts.after
          ? sql`(${memberships.createdAt}, ${memberships.userId}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(memberships.createdAt), desc(memberships.userId))
    .limit(opts.limit);
}

/** The user `userId` as a member of `tenantId`; undefined when they are not one. */
export async function findOrgUser(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<OrgUserRow | undefined> {
  const [row] = await db
    .select(orgUserColumns)
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)))
    .limit(1);
  return row;
}

/** Whether a member of `tenantId` has this (lower-cased) email. */
export async function isOrgMemberEmail(db: DbOrTx, opts: { tenantId: string; email: string }): Promise<boolean> {
  const [row] = await db
    .select({ id: users.id })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(users.email, opts.email)))
    .limit(1);
  return row !== undefined;
}

/** Adds a membership; false when the user already is a member. */
export async function addOrgMember(db: DbOrTx, opts: { tenantId: string; userId: string; roleKey: string }): Promise<boolean> {
  const rows = await db
    .insert(memberships)
    .values({ tenantId: opts.tenantId, userId: opts.userId, roleKey: opts.roleKey })
    .onConflictDoNothing()
    .returning({ userId: memberships.userId });
  return rows.length === 1;
}

export async function updateOrgMemberRole(db: DbOrTx, opts: { tenantId: string; userId: string; roleKey: string }): Promise<void> {
  await db
    .update(memberships)
    .set({ roleKey: opts.roleKey })
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)));
}

/**
 * Changes a member's name or status. Both live on the user (one person, one name, one status), so
 * the membership of `tenantId` is the predicate: nobody outside the organization is touched.
 */
export async function updateOrgUserProfile(
  db: DbOrTx,
  opts: { tenantId: string; userId: string; name?: string; status?: 'active' | 'suspended' },
): Promise<void> {
  await db
    .update(users)
    .set({
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.status !== undefined ? { status: opts.status } : {}),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(users.id, opts.userId),
        sql`exists (select 1 from ${memberships} where ${memberships.tenantId} = ${opts.tenantId} and ${memberships.userId} = ${opts.userId})`,
      ),
    );
}

/**
 * Ends every live session of a member of `tenantId` (a suspended user is signed out everywhere:
 * their status is the person's, not the membership's). Returns how many were live.
 */
export async function revokeSessionsOfOrgUser(db: DbOrTx, opts: { tenantId: string; userId: string; at: Date }): Promise<number> {
  const rows = await db
    .update(sessions)
    .set({ revokedAt: opts.at })
    .where(
      and(
        eq(sessions.userId, opts.userId),
        isNull(sessions.revokedAt),
        sql`exists (select 1 from ${memberships} where ${memberships.tenantId} = ${opts.tenantId} and ${memberships.userId} = ${opts.userId})`,
      ),
    )
    .returning({ id: sessions.id });
  return rows.length;
}

/**
 * Removes a membership; false when there was none. The user's sessions that had this
 * organization open first move to their oldest other membership (or to none), so no session
 * keeps pointing at an organization its user left.
 */
export async function removeOrgMember(
  db: DbOrTx,
  opts: { tenantId: string; userId: string },
): Promise<{ removed: boolean; sessionsMoved: number }> {
  const moved = await db
    .update(sessions)
    .set({
      activeTenantId: sql`(
        select m.tenant_id from ${memberships} m
        join organizations o on o.id = m.tenant_id
        where m.user_id = ${opts.userId} and m.tenant_id <> ${opts.tenantId} and o.kind <> 'keyless'
        order by m.created_at, m.tenant_id
        limit 1
      )`,
    })
    .where(and(eq(sessions.userId, opts.userId), eq(sessions.activeTenantId, opts.tenantId)))
    .returning({ id: sessions.id });
  const rows = await db
    .delete(memberships)
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)))
    .returning({ userId: memberships.userId });
  return { removed: rows.length === 1, sessionsMoved: moved.length };
}

/** Active org admins of `tenantId` other than `exceptUserId`. */
export async function countOtherActiveOrgAdmins(db: DbOrTx, opts: { tenantId: string; exceptUserId: string }): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(
      and(
        eq(memberships.tenantId, opts.tenantId),
        eq(memberships.roleKey, 'org_admin'),
        eq(users.status, 'active'),
        ne(memberships.userId, opts.exceptUserId),
      ),
    );
  return row?.n ?? 0;
}

/**
 * Whether the member `userId` of `tenantId` also belongs to another organization that has other
 * members: changing the person (name, status) from here would then reach into an organization
 * this one does not manage. A workspace of their own, with nobody else in it, does not count.
 */
export async function sharesAnotherOrganization(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<boolean> {
  const rows = await db.execute<{ shared: boolean }>(sql`
    select exists (
      select 1 from ${memberships} mine
      where mine.user_id = ${opts.userId}
        and mine.tenant_id <> ${opts.tenantId}
        and exists (select 1 from ${memberships} other where other.tenant_id = mine.tenant_id and other.user_id <> ${opts.userId})
    ) and exists (
      select 1 from ${memberships} here where here.tenant_id = ${opts.tenantId} and here.user_id = ${opts.userId}
    ) as shared`);
  return rows[0]?.shared === true;
}

/**
 * Serialises changes to an organization's admins (role changes, suspensions) so that two admins
 * demoting each other at once cannot both pass the "someone stays admin" check.
 */
export async function lockOrgAdmins(tx: DbOrTx, tenantId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc.org-admins:${tenantId}`}))`);
}

/** Serialises everything that creates, links or merges users of one email (released at commit). */
export async function lockEmail(tx: DbOrTx, email: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc.email:${email}`}))`);
}

/** The one user linked to an engine identity whose engine-verified email this is, if exactly one. */
export async function findOnlyVerifiedUserByEmail(db: DbOrTx, email: string): Promise<UserRow | undefined> {
  const rows = await db
    .select()
    .from(users)
    .where(and(eq(users.email, email), eq(users.emailVerified, true), isNotNull(users.engineSubject)))
    .limit(2);
  return rows.length === 1 ? rows[0] : undefined;
}

/** Gives a pre-provisioned user (no subject yet) its engine subject; false when it has one. */
export async function linkUserToSubject(db: DbOrTx, opts: { id: string; engineSubject: string }): Promise<boolean> {
  const rows = await db
    .update(users)
    .set({ engineSubject: opts.engineSubject, updatedAt: sql`now()` })
    .where(and(eq(users.id, opts.id), isNull(users.engineSubject)))
    .returning({ id: users.id });
  return rows.length === 1;
}

/**
 * Folds the pre-provisioned users (no engine subject) of `email` into `userId`, a user who just
 * signed in with that email verified by the engine: their memberships move over (a role already
 * held is kept) and the placeholders are deleted. Returns the organizations that gained a member.
 */
export async function adoptPreProvisionedUsers(db: DbOrTx, opts: { userId: string; email: string }): Promise<string[]> {
  const placeholders = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.email, opts.email), isNull(users.engineSubject), ne(users.id, opts.userId)))
    .orderBy(asc(users.createdAt));
  const adopted: string[] = [];
  for (const placeholder of placeholders) {
    const moved = await db.execute<{ tenant_id: string }>(sql`
      insert into ${memberships} (tenant_id, user_id, role_key, created_at)
      select tenant_id, ${opts.userId}, role_key, created_at from ${memberships} where user_id = ${placeholder.id}
      on conflict do nothing
      returning tenant_id`);
    adopted.push(...moved.map((r) => r.tenant_id));
    await db.delete(users).where(and(eq(users.id, placeholder.id), isNull(users.engineSubject)));
  }
  return adopted;
}
