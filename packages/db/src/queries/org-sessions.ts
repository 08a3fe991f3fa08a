import { and, desc, eq, isNull, type SQL, sql } from 'drizzle-orm';
import { type AnyPgColumn, alias } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField, exportSqlText } from '../export-section.ts';
import type { Cursor } from '../pagination.ts';
import { memberships, users } from '../schema/identity.ts';
import { sessions } from '../schema/sessions.ts';

/**
 * Sessions as an organization's admins see them: the sessions active in the organization
 * (`active_tenant_id`) whose user is a member of it. Both are the tenant predicate of every
 * statement here, so a session of another organization is never listed, found or revoked.
 * Never the token hash.
 */
export type OrgSessionRow = {
  id: string;
  userId: string;
  userEmail: string;
  userName: string;
  ipAddress: string | null;
  userAgent: string | null;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  absoluteExpiresAt: Date;
  revokedAt: Date | null;
};

const orgSessionColumns = {
  id: sessions.id,
  userId: sessions.userId,
  userEmail: users.email,
  userName: users.name,
  ipAddress: sessions.ipAddress,
  userAgent: sessions.userAgent,
  createdAt: sessions.createdAt,
  lastSeenAt: sessions.lastSeenAt,
  expiresAt: sessions.expiresAt,
  absoluteExpiresAt: sessions.absoluteExpiresAt,
  revokedAt: sessions.revokedAt,
};

/**
 * The session's user is a member (active or suspended) of the organization the session is active
 * in: with `active_tenant_id`, what makes a session the organization's. Over any alias of
 * `sessions`, so the export applies this rule, not a copy of it.
 *
 * Not an `invited` membership: the person has consented to nothing yet, and the only sessions an
 * invited person can have open in the organization are a platform admin's (who may open any
 * workspace), so listing, counting or revoking them would show the organization who the
 * platform admins are, their name and address, and let it sign them out.
 */
function openedByMember(s: { userId: AnyPgColumn; activeTenantId: AnyPgColumn }): SQL {
  return sql`exists (select 1 from ${memberships} where ${memberships.tenantId} = ${s.activeTenantId} and ${memberships.userId} = ${s.userId} and ${memberships.status} <> 'invited')`;
}

function inOrganization(tenantId: string): SQL | undefined {
  return and(eq(sessions.activeTenantId, tenantId), openedByMember(sessions));
}

/** The session is usable at `now`: not revoked, neither idle- nor absolutely expired. */
function live(now: Date): SQL | undefined {
  const at = now.toISOString();
  return and(
    isNull(sessions.revokedAt),
    sql`${sessions.expiresAt} > ${at}::timestamptz`,
    sql`${sessions.absoluteExpiresAt} > ${at}::timestamptz`,
  );
}

/**
 * How many of the organization's sessions are live at `now` (what the Sessions page lists as
 * active), as a scalar subquery for a statement that reads more than this.
 */
export function liveOrgSessionCount(opts: { tenantId: string; now: Date }): SQL {
  return sql`(select count(*) from ${sessions} where ${and(inOrganization(opts.tenantId), live(opts.now))})`;
}

/**
 * One page of an organization's sessions, newest first (index sessions_tenant_created_idx): at
 * most `limit` rows strictly after `after`. `onlyLive` leaves out revoked and expired ones.
 */
export async function listOrgSessions(
  db: DbOrTx,
  opts: { tenantId: string; onlyLive: boolean; userId?: string; now: Date; after?: Cursor; limit: number },
): Promise<OrgSessionRow[]> {
  return db
    .select(orgSessionColumns)
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(
      and(
        inOrganization(opts.tenantId),
        opts.onlyLive ? live(opts.now) : undefined,
        opts.userId !== undefined ? eq(sessions.userId, opts.userId) : undefined,
        opts.after
          ? sql`(${sessions.createdAt}, ${sessions.id}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(sessions.createdAt), desc(sessions.id))
    .limit(opts.limit);
}

export async function findOrgSession(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<OrgSessionRow | undefined> {
  const [row] = await db
    .select(orgSessionColumns)
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.id, opts.id), inOrganization(opts.tenantId)))
    .limit(1);
  return row;
}

/**
 * Revokes one session of the organization; its id, or none when it was already revoked (or is not
 * the organization's). Every API process reads the row on each request, so it ends everywhere at
 * once. Called only by endSessions (apps/api modules/session-store/end.ts).
 */
export async function revokeOrgSession(db: DbOrTx, opts: { tenantId: string; id: string; at: Date }): Promise<string[]> {
  const rows = await db
    .update(sessions)
    .set({ revokedAt: opts.at, engineIdToken: null })
    .where(and(eq(sessions.id, opts.id), isNull(sessions.revokedAt), inOrganization(opts.tenantId)))
    .returning({ id: sessions.id });
  return rows.map((r) => r.id);
}

/** In an export (queries/exports.ts): the organization's sessions; never the token hashes. */
export const sessionsExportSection: ExportSection = {
  key: 'sessions',
  resource: 'session',
  shape: 'many',
  source: 'table',
  from: 'sessions t',
  // As the organization's admins see them (inOrganization): opened in it, by a member.
  tenantColumn: 't.active_tenant_id',
  where: exportSqlText(openedByMember(alias(sessions, 't'))),
  asOfColumn: 't.created_at',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('userId', 't.user_id'),
    exportField.text('ipAddress', 't.ip_address'),
    exportField.text('userAgent', 't.user_agent'),
    exportField.time('lastSeenAt', 't.last_seen_at'),
    exportField.time('expiresAt', 't.expires_at'),
    exportField.time('absoluteExpiresAt', 't.absolute_expires_at'),
    exportField.time('revokedAt', 't.revoked_at'),
    exportField.time('createdAt', 't.created_at'),
  ],
};
