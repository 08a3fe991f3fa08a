import { and, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { sessions, users } from '../schema/identity.ts';

export type SessionRow = typeof sessions.$inferSelect;
export type NewSessionRow = typeof sessions.$inferInsert;
export type SessionWithUser = {
  session: SessionRow;
  user: { id: string; email: string; name: string; status: 'active' | 'suspended' };
};

export async function insertSession(db: DbOrTx, values: NewSessionRow): Promise<SessionRow> {
  const [row] = await db.insert(sessions).values(values).returning();
  if (!row) {
    throw new Error('session insert returned nothing');
  }
  return row;
}

/** The one indexed read a session check costs: the session by token hash, with its user. */
export async function findSessionByTokenHash(db: DbOrTx, tokenHash: string): Promise<SessionWithUser | undefined> {
  const [row] = await db
    .select({
      session: sessions,
      user: { id: users.id, email: users.email, name: users.name, status: users.status },
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(eq(sessions.tokenHash, tokenHash))
    .limit(1);
  return row;
}

/** Slides the idle expiry; callers do it at most once an hour per session. */
export async function touchSession(db: DbOrTx, opts: { id: string; expiresAt: Date; lastSeenAt: Date }): Promise<void> {
  await db.update(sessions).set({ expiresAt: opts.expiresAt, lastSeenAt: opts.lastSeenAt }).where(eq(sessions.id, opts.id));
}

/** Revokes one session (no-op when already revoked); true when it was live. */
export async function revokeSessionById(db: DbOrTx, opts: { id: string; at: Date }): Promise<boolean> {
  const rows = await db
    .update(sessions)
    .set({ revokedAt: opts.at })
    .where(and(eq(sessions.id, opts.id), isNull(sessions.revokedAt)))
    .returning({ id: sessions.id });
  return rows.length === 1;
}
