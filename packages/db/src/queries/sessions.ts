import { and, eq, isNull } from 'drizzle-orm';
import type { DbOrTx, Sql } from '../client.ts';
import { sessions } from '../schema/sessions.ts';
import type { MembershipView, PendingMembershipView } from './identity.ts';

export type SessionRow = typeof sessions.$inferSelect;
export type NewSessionRow = typeof sessions.$inferInsert;
/** What a session check knows of the session: never its token hash. */
export type LiveSession = Pick<
  SessionRow,
  'id' | 'userId' | 'activeTenantId' | 'isPlatformAdmin' | 'expiresAt' | 'absoluteExpiresAt' | 'lastSeenAt' | 'revokedAt' | 'createdAt'
>;

export type SessionWithUser = {
  session: LiveSession;
  user: { id: string; email: string; name: string; status: 'active' | 'suspended' };
  /**
   * The user's active memberships, oldest first: every authorization decision starts from these.
   * Invited and suspended memberships are never in here, so they grant nothing anywhere.
   */
  memberships: MembershipView[];
  /** Memberships organizations added the user to, waiting for the user to accept or decline. */
  pendingMemberships: PendingMembershipView[];
};

/** Inserts a session; the answer leaves out its sealed engine ID token. */
export async function insertSession(db: DbOrTx, values: NewSessionRow): Promise<Omit<SessionRow, 'engineIdToken'>> {
  const [row] = await db.insert(sessions).values(values).returning();
  if (!row) {
    throw new Error('session insert returned nothing');
  }
  const { engineIdToken: _sealed, ...rest } = row;
  return rest;
}

/** The sealed engine ID token of one session (revoked or not), or undefined. */
export async function findEngineIdToken(db: DbOrTx, sessionId: string): Promise<string | undefined> {
  const [row] = await db.select({ sealed: sessions.engineIdToken }).from(sessions).where(eq(sessions.id, sessionId)).limit(1);
  return row?.sealed ?? undefined;
}

/** A session as its check reads it: memberships come separately, by version (see below). */
export type SessionRead = Omit<SessionWithUser, 'memberships' | 'pendingMemberships'> & { membershipsVersion: number };

type SessionReadRow = {
  id: string;
  user_id: string;
  active_tenant_id: string | null;
  is_platform_admin: boolean;
  expires_at: number;
  absolute_expires_at: number;
  last_seen_at: number;
  revoked_at: number | null;
  created_at: number;
  token_hash: string;
  email: string;
  name: string;
  status: 'active' | 'suspended';
  memberships_version: string;
};

/**
 * The one indexed read a session check costs: sessions by token hash, each with its user and the
 * version of the user's memberships (users.memberships_version, bumped by triggers whenever they
 * change). Takes many hashes so concurrent checks can share one round trip.
 *
 * Plain postgres.js rather than the query builder, because this runs on every authenticated
 * request and its decoding cost is the route's cost: a prepared statement (named, planned once
 * per connection) and times as epoch milliseconds (parsing timestamp text was the largest CPU
 * item per row). Memberships are not aggregated here: building them cost PostgreSQL two thirds
 * of this read, and they rarely change; see findMembershipsOfUsers.
 */
export async function findSessionsByTokenHashes(sql: Sql, tokenHashes: string[]): Promise<Map<string, SessionRead>> {
  const rows = await sql<SessionReadRow[]>`
    select s.id, s.user_id, s.active_tenant_id, s.is_platform_admin, s.token_hash,
           (extract(epoch from s.expires_at) * 1000)::float8 as expires_at,
           (extract(epoch from s.absolute_expires_at) * 1000)::float8 as absolute_expires_at,
           (extract(epoch from s.last_seen_at) * 1000)::float8 as last_seen_at,
           (extract(epoch from s.revoked_at) * 1000)::float8 as revoked_at,
           (extract(epoch from s.created_at) * 1000)::float8 as created_at,
           u.email, u.name, u.status, u.memberships_version
    from sessions s join users u on u.id = s.user_id
    where s.token_hash = any(${tokenHashes}::text[])`;
  const found = new Map<string, SessionRead>();
  for (const row of rows) {
    found.set(row.token_hash, {
      session: {
        id: row.id,
        userId: row.user_id,
        activeTenantId: row.active_tenant_id,
        isPlatformAdmin: row.is_platform_admin,
        expiresAt: new Date(row.expires_at),
        absoluteExpiresAt: new Date(row.absolute_expires_at),
        lastSeenAt: new Date(row.last_seen_at),
        revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
        createdAt: new Date(row.created_at),
      },
      user: { id: row.user_id, email: row.email, name: row.name, status: row.status },
      membershipsVersion: Number(row.memberships_version),
    });
  }
  return found;
}

/** What a session check keeps of a user's memberships, per memberships_version. */
export type MembershipsRead = { version: number; memberships: MembershipView[]; pendingMemberships: PendingMembershipView[] };

/**
 * Users' active and invited memberships (oldest first), each with the memberships_version they
 * were read at. Suspended memberships are left out: they show nowhere in the user's session.
 */
export async function findMembershipsOfUsers(sql: Sql, userIds: string[]): Promise<Map<string, MembershipsRead>> {
  const rows = await sql<
    { id: string; memberships_version: string; memberships: (MembershipView & { status: 'active' | 'invited'; invitedAt: string })[] }[]
  >`
    select u.id, u.memberships_version,
           coalesce((
             select json_agg(json_build_object(
               'organization', json_build_object('id', o.id, 'slug', o.slug, 'name', o.name, 'kind', o.kind),
               'roleKey', m.role_key,
               'status', m.status,
               'invitedAt', m.created_at
             ) order by m.created_at, m.tenant_id)
             from memberships m join organizations o on o.id = m.tenant_id
             where m.user_id = u.id and m.status in ('active', 'invited')
           ), '[]'::json) as memberships
    from users u
    where u.id = any(${userIds}::text[])`;
  return new Map(
    rows.map((r) => [
      r.id,
      {
        version: Number(r.memberships_version),
        memberships: r.memberships.filter((m) => m.status === 'active').map((m) => ({ organization: m.organization, roleKey: m.roleKey })),
        pendingMemberships: r.memberships
          .filter((m) => m.status === 'invited')
          .map((m) => ({ organization: m.organization, roleKey: m.roleKey, invitedAt: new Date(m.invitedAt).toISOString() })),
      },
    ]),
  );
}

/** Slides the idle expiry; callers do it at most once an hour per session. */
export async function touchSession(db: DbOrTx, opts: { id: string; expiresAt: Date; lastSeenAt: Date }): Promise<void> {
  await db.update(sessions).set({ expiresAt: opts.expiresAt, lastSeenAt: opts.lastSeenAt }).where(eq(sessions.id, opts.id));
}

/**
 * Revokes one session (no-op when already revoked); its id when it was live. Called only by
 * endSessions (apps/api modules/session-store/end.ts), which ends the session's application sign-ins
 * with it.
 */
export async function revokeSessionById(db: DbOrTx, opts: { id: string; at: Date }): Promise<string[]> {
  const rows = await db
    .update(sessions)
    // The engine's ID token is of no use once the session is over (the logout that needs it
    // reads it first): it is dropped with the session.
    .set({ revokedAt: opts.at, engineIdToken: null })
    .where(and(eq(sessions.id, opts.id), isNull(sessions.revokedAt)))
    .returning({ id: sessions.id });
  return rows.map((r) => r.id);
}

/**
 * Moves a user's own live session to another workspace (the caller checked they may act there):
 * the workspace switch, and the hosted invitation page opening the organization just joined.
 */
export async function setSessionActiveTenant(db: DbOrTx, opts: { id: string; userId: string; tenantId: string }): Promise<void> {
  await db
    .update(sessions)
    .set({ activeTenantId: opts.tenantId })
    .where(and(eq(sessions.id, opts.id), eq(sessions.userId, opts.userId), isNull(sessions.revokedAt)));
}

/**
 * Whether a hosted session still stands for a user (not revoked, not expired, the user active)
 * and, when an organization is named, the user's active role there (null when not an active
 * member). What the OpenID Provider checks before a refresh token is honoured.
 */
export async function findSessionStanding(
  sql: Sql,
  opts: { sessionId: string; userId: string; tenantId: string | null },
): Promise<{ live: boolean; roleKey: string | null }> {
  const rows = await sql<{ live: boolean; role_key: string | null }[]>`
    select (s.revoked_at is null and s.expires_at > now() and s.absolute_expires_at > now() and u.status = 'active') as live,
           (select m.role_key from memberships m
             where m.user_id = s.user_id and m.tenant_id = ${opts.tenantId} and m.status = 'active') as role_key
    from sessions s join users u on u.id = s.user_id
    where s.id = ${opts.sessionId} and s.user_id = ${opts.userId}`;
  const [row] = rows;
  return { live: row?.live === true, roleKey: row?.role_key ?? null };
}
