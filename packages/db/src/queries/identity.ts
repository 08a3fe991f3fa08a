import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { memberships, users } from '../schema/identity.ts';
import { organizations } from '../schema/organizations.ts';
import { sessions } from '../schema/sessions.ts';

export type UserRow = typeof users.$inferSelect;
export type MembershipView = {
  organization: { id: string; slug: string; name: string; kind: 'tenant' | 'platform' | 'keyless' };
  roleKey: string;
};
/** A membership an organization added the user to and the user has not accepted yet. */
export type PendingMembershipView = MembershipView & { invitedAt: string };

export async function findUserBySubject(db: DbOrTx, engineSubject: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.engineSubject, engineSubject)).limit(1);
  return row;
}

export async function findUserById(db: DbOrTx, id: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return row;
}

/** A pre-provisioned user (no engine subject yet) with this email, oldest first. */
export async function findUnlinkedUserByEmail(db: DbOrTx, email: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.email, email), isNull(users.engineSubject)))
    .orderBy(asc(users.createdAt))
    .limit(1);
  return row;
}

export async function insertUser(db: DbOrTx, values: typeof users.$inferInsert): Promise<UserRow> {
  // A concurrent first sign-in of the same subject inserts too: the loser reads the winner's row.
  await db.insert(users).values(values).onConflictDoNothing({ target: users.engineSubject });
  const row = values.engineSubject ? await findUserBySubject(db, values.engineSubject) : await findUserById(db, values.id);
  if (!row) {
    throw new Error('user vanished after insert');
  }
  return row;
}

export async function updateUserFromEngine(
  db: DbOrTx,
  opts: { id: string; engineSubject: string; email: string; emailVerified: boolean; name: string; at: Date },
): Promise<UserRow> {
  const [row] = await db
    .update(users)
    .set({
      engineSubject: opts.engineSubject,
      email: opts.email,
      emailVerified: opts.emailVerified,
      name: opts.name,
      lastSignInAt: opts.at,
      updatedAt: opts.at,
    })
    .where(eq(users.id, opts.id))
    .returning();
  if (!row) {
    throw new Error('user vanished during update');
  }
  return row;
}

/** Serialises the caller's transaction with any other touching the same user (released at commit). */
export async function lockUserForTransaction(tx: DbOrTx, userId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc.user:${userId}`}))`);
}

/** The user's active memberships (those they may act in), oldest first. */
export async function membershipsOfUser(db: DbOrTx, userId: string): Promise<MembershipView[]> {
  return db
    .select({
      organization: { id: organizations.id, slug: organizations.slug, name: organizations.name, kind: organizations.kind },
      roleKey: memberships.roleKey,
    })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.tenantId))
    .where(and(eq(memberships.userId, userId), eq(memberships.status, 'active')))
    .orderBy(asc(memberships.createdAt));
}

/** An active membership the user enters themselves (sign-up, the platform group, creating an organization). */
export async function insertMembership(db: DbOrTx, values: { tenantId: string; userId: string; roleKey: string }): Promise<void> {
  await db.insert(memberships).values(values).onConflictDoNothing();
}

/**
 * The engine no longer puts the user in the platform admin group: their platform workspace
 * membership goes, and so do their sessions opened as a platform admin (a session keeps the flag
 * it was signed in with). Returns how many memberships went and the ids of the sessions ended.
 * Called only by endSessions (apps/api modules/session-store/end.ts), which ends those sessions'
 * application sign-ins with them.
 */
export async function leavePlatformWorkspace(
  tx: DbOrTx,
  opts: { userId: string; at: Date },
): Promise<{ membershipsRemoved: number; sessionIds: string[] }> {
  const removed = await tx
    .delete(memberships)
    .where(
      and(
        eq(memberships.userId, opts.userId),
        sql`${memberships.tenantId} in (select ${organizations.id} from ${organizations} where ${organizations.kind} = 'platform')`,
      ),
    )
    .returning({ tenantId: memberships.tenantId });
  const ended = await tx
    .update(sessions)
    .set({ revokedAt: opts.at, engineIdToken: null })
    .where(and(eq(sessions.userId, opts.userId), eq(sessions.isPlatformAdmin, true), isNull(sessions.revokedAt)))
    .returning({ id: sessions.id });
  return { membershipsRemoved: removed.length, sessionIds: ended.map((r) => r.id) };
}
