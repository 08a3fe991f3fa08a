import { and, asc, desc, eq, isNotNull, isNull, ne, or, type SQL, sql } from 'drizzle-orm';
import { type AnyPgColumn, alias } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField, exportSqlText } from '../export-section.ts';
import { likeStartingWith } from '../like-pattern.ts';
import type { Cursor } from '../pagination.ts';
import { type MembershipStatus, memberships, users } from '../schema/identity.ts';
import { organizations } from '../schema/organizations.ts';
import { sessions } from '../schema/sessions.ts';
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
  /** The membership's status in this organization (not the person's account status). */
  status: MembershipStatus;
  /** The person's own account status (users.status): only a platform admin changes it. */
  accountStatus: 'active' | 'suspended';
  lastSignInAt: Date | null;
  userCreatedAt: Date;
  /** Null for a user pre-provisioned and not linked to an engine identity yet. */
  engineSubject: string | null;
  roleKey: string;
  /** What the organization typed when it added the person (null: they joined by themselves). */
  invitedEmail: string | null;
  invitedName: string | null;
  /** When the membership began: the list's keyset order. */
  createdAt: Date;
};

const orgUserColumns = {
  id: users.id,
  email: users.email,
  name: users.name,
  emailVerified: users.emailVerified,
  status: memberships.status,
  accountStatus: users.status,
  lastSignInAt: users.lastSignInAt,
  userCreatedAt: users.createdAt,
  engineSubject: users.engineSubject,
  roleKey: memberships.roleKey,
  invitedEmail: memberships.invitedEmail,
  invitedName: memberships.invitedName,
  createdAt: memberships.createdAt,
};

/**
 * The email an organization is shown for a member: what it typed while the person has not
 * accepted, their own afterwards. Over any aliases of `memberships` and `users`, so the export
 * shows members by this rule, not a copy of it.
 */
function shownEmailOf(m: { status: AnyPgColumn; invitedEmail: AnyPgColumn }, u: { email: AnyPgColumn }): SQL {
  return sql`case when ${m.status} = 'invited' then coalesce(${m.invitedEmail}, ${u.email}) else ${u.email} end`;
}

const shownEmail: SQL = shownEmailOf(memberships, users);

/**
 * One page of an organization's users, newest member first: at most `limit` rows strictly after
 * `after` (membership created_at, user id).
 */
export async function listOrgUsers(
  db: DbOrTx,
  opts: { tenantId: string; status?: MembershipStatus; emailPrefix?: string; after?: Cursor; limit: number },
): Promise<OrgUserRow[]> {
  return db
    .select(orgUserColumns)
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(
      and(
        eq(memberships.tenantId, opts.tenantId),
        opts.status !== undefined ? eq(memberships.status, opts.status) : undefined,
        opts.emailPrefix !== undefined ? sql`${shownEmail} like ${likeStartingWith(opts.emailPrefix)}` : undefined,
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

/** Whether a member of `tenantId` (whatever the membership's status) has, or was added with, this (lower-cased) email. */
export async function isOrgMemberEmail(db: DbOrTx, opts: { tenantId: string; email: string }): Promise<boolean> {
  const [row] = await db
    .select({ id: users.id })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.tenantId, opts.tenantId), or(eq(users.email, opts.email), eq(memberships.invitedEmail, opts.email))))
    .limit(1);
  return row !== undefined;
}

/**
 * Adds a membership; false when the user already is a member (in whatever status). `invited`
 * memberships carry what the organization typed (`invitedEmail`, `invitedName`).
 */
export async function addOrgMember(
  db: DbOrTx,
  opts: { tenantId: string; userId: string; roleKey: string; status?: MembershipStatus; invitedEmail?: string; invitedName?: string },
): Promise<boolean> {
  const rows = await db
    .insert(memberships)
    .values({
      tenantId: opts.tenantId,
      userId: opts.userId,
      roleKey: opts.roleKey,
      status: opts.status ?? 'active',
      invitedEmail: opts.invitedEmail ?? null,
      invitedName: opts.invitedName ?? null,
    })
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
 * Suspends or reactivates a membership of `tenantId` (never an `invited` one: that is the
 * person's to accept). The row's update bumps users.memberships_version (migration 0008), so
 * every API process drops its cached memberships of the user at their next request.
 */
export async function setOrgMemberStatus(
  db: DbOrTx,
  opts: { tenantId: string; userId: string; status: 'active' | 'suspended' },
): Promise<boolean> {
  const rows = await db
    .update(memberships)
    .set({ status: opts.status })
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId), ne(memberships.status, 'invited')))
    .returning({ userId: memberships.userId });
  return rows.length === 1;
}

/**
 * The person's own name or account status (a suspended user cannot sign in anywhere): platform
 * admins only, checked by the caller. The membership of `tenantId` is the predicate, so the
 * statement stays within the organization the request named.
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
 * Ends every live session of a member of `tenantId`: a platform admin suspended the person's
 * account, which signs them out everywhere. Returns the ids of those that were live. Called only
 * by endSessions (apps/api modules/session-store/end.ts).
 */
export async function revokeSessionsOfOrgUser(db: DbOrTx, opts: { tenantId: string; userId: string; at: Date }): Promise<string[]> {
  const rows = await db
    .update(sessions)
    .set({ revokedAt: opts.at, engineIdToken: null })
    .where(
      and(
        eq(sessions.userId, opts.userId),
        isNull(sessions.revokedAt),
        sql`exists (select 1 from ${memberships} where ${memberships.tenantId} = ${opts.tenantId} and ${memberships.userId} = ${opts.userId})`,
      ),
    )
    .returning({ id: sessions.id });
  return rows.map((r) => r.id);
}

/**
 * Moves the user's sessions that have `tenantId` open to their oldest other active membership
 * (or to none): run when the membership is removed or suspended, so no session keeps pointing at
 * an organization its user may no longer act in. Returns how many moved.
 */
export async function moveSessionsOfMemberOut(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<number> {
  const moved = await db
    .update(sessions)
    .set({
      activeTenantId: sql`(
        select m.tenant_id from ${memberships} m
        join organizations o on o.id = m.tenant_id
        where m.user_id = ${opts.userId} and m.tenant_id <> ${opts.tenantId} and o.kind <> 'keyless' and m.status = 'active'
        order by m.created_at, m.tenant_id
        limit 1
      )`,
    })
    .where(and(eq(sessions.userId, opts.userId), eq(sessions.activeTenantId, opts.tenantId)))
    .returning({ id: sessions.id });
  return moved.length;
}

/**
 * Removes a membership; false when there was none. The user's sessions that had this
 * organization open first move elsewhere (moveSessionsOfMemberOut).
 */
export async function removeOrgMember(
  db: DbOrTx,
  opts: { tenantId: string; userId: string },
): Promise<{ removed: boolean; sessionsMoved: number }> {
  const sessionsMoved = await moveSessionsOfMemberOut(db, opts);
  const rows = await db
    .delete(memberships)
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)))
    .returning({ userId: memberships.userId });
  return { removed: rows.length === 1, sessionsMoved };
}

/** Org admins of `tenantId` with an active membership, other than `exceptUserId`. */
export async function countOtherActiveOrgAdmins(db: DbOrTx, opts: { tenantId: string; exceptUserId: string }): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(memberships)
    .where(
      and(
        eq(memberships.tenantId, opts.tenantId),
        eq(memberships.roleKey, 'org_admin'),
        eq(memberships.status, 'active'),
        ne(memberships.userId, opts.exceptUserId),
      ),
    );
  return row?.n ?? 0;
}

/**
 * Whether `userId` is a member of `tenantId` who accepted the membership (active or suspended) and
 * is a platform admin: a member of the platform workspace, or signed in (ever) as a member of the
 * engine's platform admin group. Nobody in a tenant may suspend, demote or remove them.
 *
 * An `invited` membership never counts: anyone's email can be added, so an answer that depended
 * on who the person is would tell any organization who the platform admins are. Until the person
 * accepts, the membership grants nothing and the organization may change or withdraw it as for
 * anyone else.
 */
export async function isPlatformAdminMember(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<boolean> {
  const rows = await db.execute<{ platform: boolean }>(sql`
    select exists (
      select 1 from ${memberships} here
      where here.tenant_id = ${opts.tenantId} and here.user_id = ${opts.userId} and here.status <> 'invited'
    ) and (
      exists (
        select 1 from ${memberships} m join ${organizations} o on o.id = m.tenant_id
        where m.user_id = ${opts.userId} and o.kind = 'platform'
      ) or exists (
        select 1 from ${sessions} s where s.user_id = ${opts.userId} and s.is_platform_admin
      )
    ) as platform`);
  return rows[0]?.platform === true;
}

/**
 * The person accepts a membership an organization added them to: `invited` becomes `active`.
 * Undefined when there is no such invited membership (never added, declined, removed meanwhile,
 * or its organization deleted). `roleKey` replaces the role (an invite link accepted instead).
 */
export async function acceptInvitedMembership(
  db: DbOrTx,
  opts: { tenantId: string; userId: string; roleKey?: string },
): Promise<{ roleKey: string } | undefined> {
  const [row] = await db
    .update(memberships)
    .set({ status: 'active', ...(opts.roleKey !== undefined ? { roleKey: opts.roleKey } : {}) })
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId), eq(memberships.status, 'invited')))
    .returning({ roleKey: memberships.roleKey });
  return row;
}

/** The person declines a membership an organization added them to: it is deleted. */
export async function declineInvitedMembership(
  db: DbOrTx,
  opts: { tenantId: string; userId: string },
): Promise<{ roleKey: string } | undefined> {
  const [row] = await db
    .delete(memberships)
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId), eq(memberships.status, 'invited')))
    .returning({ roleKey: memberships.roleKey });
  return row;
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

/**
 * The ids of every user with this email (lowercase, as stored): a pre-provisioned user and the one
 * who later signed in with it can be two. Users are people, not organization data: what the ids
 * are used for (the audit log's actor filter) carries the organization.
 */
export async function findUserIdsByEmail(db: DbOrTx, email: string): Promise<string[]> {
  const rows = await db.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(20);
  return rows.map((row) => row.id);
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
 * signed in with that email verified by the engine: their memberships move over as they are (an
 * `invited` one stays invited until the person accepts it; a role already held is kept) and the
 * placeholders are deleted. Returns the organizations that gained a member.
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
      insert into ${memberships} (tenant_id, user_id, role_key, status, invited_email, invited_name, created_at)
      select tenant_id, ${opts.userId}, role_key, status, invited_email, invited_name, created_at
      from ${memberships} where user_id = ${placeholder.id}
      on conflict do nothing
      returning tenant_id`);
    adopted.push(...moved.map((r) => r.tenant_id));
    await db.delete(users).where(and(eq(users.id, placeholder.id), isNull(users.engineSubject)));
  }
  return adopted;
}

/** In an export (queries/exports.ts): the organization's members, as GET /v1/users shows them. */
export const membersExportSection: ExportSection = {
  key: 'members',
  resource: 'member',
  shape: 'many',
  source: 'snapshot',
  from: 'memberships t join users u on u.id = t.user_id',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.user_id',
  // As GET /v1/users shows them: a member who has not accepted yet is only what the
  // organization typed (modules/users toUser); `status` is the membership's.
  fields: [
    exportField.text('id', 'u.id'),
    exportField.text('email', exportSqlText(shownEmailOf(alias(memberships, 't'), alias(users, 'u')))),
    exportField.text('name', "case when t.status = 'invited' then coalesce(t.invited_name, '') else u.name end"),
    exportField.boolean('emailVerified', "(u.email_verified and t.status <> 'invited')"),
    exportField.text('status', 't.status'),
    exportField.text('roleKey', 't.role_key'),
    exportField.time('lastSignInAt', "case when t.status = 'invited' then null else u.last_sign_in_at end"),
    exportField.time('joinedAt', 't.created_at'),
    exportField.time('createdAt', "case when t.status = 'invited' then t.created_at else u.created_at end"),
  ],
};
