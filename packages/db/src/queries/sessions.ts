import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { memberships, sessions, users } from '../schema/identity.ts';
import { organizations } from '../schema/organizations.ts';
import type { MembershipView } from './identity.ts';

export type SessionRow = typeof sessions.$inferSelect;
export type NewSessionRow = typeof sessions.$inferInsert;
export type SessionWithUser = {
  session: SessionRow;
  user: { id: string; email: string; name: string; status: 'active' | 'suspended' };
  /** The user's memberships, oldest first: every authorization decision starts from these. */
  memberships: MembershipView[];
};

/** Memberships as one JSON array per user, built inside the session read (no second round trip). */
const membershipsOfSessionUser = sql<MembershipView[]>`coalesce((
  select json_agg(json_build_object(
    'organization', json_build_object('id', ${organizations.id}, 'slug', ${organizations.slug}, 'name', ${organizations.name}, 'kind', ${organizations.kind}),
    'roleKey', ${memberships.roleKey}
  ) order by ${memberships.createdAt}, ${memberships.tenantId})
  from ${memberships} join ${organizations} on ${organizations.id} = ${memberships.tenantId}
  where ${memberships.userId} = ${users.id}
), '[]'::json)`;

export async function insertSession(db: DbOrTx, values: NewSessionRow): Promise<SessionRow> {
  const [row] = await db.insert(sessions).values(values).returning();
  if (!row) {
    throw new Error('session insert returned nothing');
  }
  return row;
}

/**
 * The one indexed read a session check costs: sessions by token hash, each with its user and the
 * user's memberships. Takes many hashes so concurrent checks can share one round trip. Prepared
 * once per database handle (a named statement per connection): unprepared, PostgreSQL would plan
 * the membership subquery again on every call, which costs more than running it.
 */
export function prepareFindSessions(db: DbOrTx): (tokenHashes: string[]) => Promise<Map<string, SessionWithUser>> {
  const query = db
    .select({
      session: sessions,
      user: { id: users.id, email: users.email, name: users.name, status: users.status },
      memberships: membershipsOfSessionUser,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(sql`${sessions.tokenHash} = any(${sql.placeholder('tokenHashes')}::text[])`)
    .prepare('svc_find_sessions');
  return async (tokenHashes) => {
    const rows = await query.execute({ tokenHashes });
    return new Map(rows.map((row) => [row.session.tokenHash, row]));
  };
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
