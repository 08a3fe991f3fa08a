import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';

/**
 * Which applications svc sessions signed in to (table session_applications). Not tenant-owned by
 * a column of its own: a row belongs to the application's organization and, with scope
 * `organization`, to the organization the grant speaks for; every read here names one of them.
 */

/**
 * Records that a session signed in to an application (the OpenID Provider granted an
 * authorization): one idempotent upsert. `started` is true when this sign-in began the row (the
 * first one of the session, or the first since the row ended), which is what gets audited and
 * announced (`session.created`); a silent re-authorization only moves last_signed_in_at.
 */
export async function recordApplicationSignIn(
  db: DbOrTx,
  opts: { sessionId: string; applicationId: string; organizationId: string | null; at: Date },
): Promise<{ started: boolean }> {
  const at = opts.at.toISOString();
  const rows = await db.execute<{ started: boolean }>(sql`
    insert into session_applications as sa (session_id, application_id, organization_id, first_signed_in_at, last_signed_in_at)
    values (${opts.sessionId}, ${opts.applicationId}, ${opts.organizationId}, ${at}::timestamptz, ${at}::timestamptz)
    on conflict (session_id, application_id) do update set
      organization_id = excluded.organization_id,
      last_signed_in_at = excluded.last_signed_in_at,
      first_signed_in_at = case when sa.ended_at is null then sa.first_signed_in_at else excluded.first_signed_in_at end,
      ended_at = null
    returning (sa.first_signed_in_at = ${at}::timestamptz) as started`);
  return { started: rows[0]?.started === true };
}

/** An application sign-in that just ended, and what its end is announced with. */
export type EndedSignIn = {
  sessionId: string;
  userId: string;
  applicationId: string;
  /** The organization told of it: the one the grant spoke for, else the application's. */
  organizationId: string;
  /** The application takes OIDC Back-Channel Logout tokens. */
  backchannelLogout: boolean;
};

/**
 * Ends application sign-ins that stand (ended_at null) and returns them: those of sessions just
 * revoked, those a person made for an organization (their membership there ended: the grants
 * that spoke for it, and those of the organization's members-only applications), or every one of
 * an application (it was disabled). Called only by endSessions (apps/api modules/session-store/end.ts),
 * in the transaction of the change.
 */
export async function endApplicationSignIns(
  db: DbOrTx,
  of: { sessionIds: string[] } | { userId: string; organizationId: string } | { applicationId: string },
  at: Date,
): Promise<EndedSignIn[]> {
  let which: ReturnType<typeof sql>;
  if ('sessionIds' in of) {
    if (of.sessionIds.length === 0) {
      return [];
    }
    which = sql`sa.session_id = any(${sql.param(of.sessionIds)}::text[])`;
  } else if ('applicationId' in of) {
    which = sql`sa.application_id = ${of.applicationId}`;
  } else {
    which = sql`s.user_id = ${of.userId} and (sa.organization_id = ${of.organizationId}
      or (a.tenant_id = ${of.organizationId} and a.sign_in_audience = 'members'))`;
  }
  const rows = await db.execute<EndedSignIn>(sql`
    update session_applications sa set ended_at = ${at.toISOString()}::timestamptz
    from sessions s, applications a
    where s.id = sa.session_id and a.id = sa.application_id and sa.ended_at is null and ${which}
    returning sa.session_id as "sessionId", s.user_id as "userId", sa.application_id as "applicationId",
              coalesce(sa.organization_id, a.tenant_id) as "organizationId",
              (a.backchannel_logout_url is not null) as "backchannelLogout"`);
  return [...rows];
}

/** An application a session signed in to, as an organization's admins see it. */
export type SessionApplicationRow = {
  sessionId: string;
  id: string;
  name: string;
  organizationId: string | null;
  firstSignedInAt: Date;
  lastSignedInAt: Date;
  endedAt: Date | null;
};

/**
 * The applications the sessions signed in to that concern `tenantId`: its own applications, and
 * any application a grant spoke for it to. Another organization's application signed in to for
 * another organization is never shown. Most recent sign-in first.
 */
export async function listApplicationsOfSessions(
  db: DbOrTx,
  opts: { tenantId: string; sessionIds: string[] },
): Promise<Map<string, SessionApplicationRow[]>> {
  const out = new Map<string, SessionApplicationRow[]>();
  if (opts.sessionIds.length === 0) {
    return out;
  }
  const rows = await db.execute<{
    sessionId: string;
    id: string;
    name: string;
    organizationId: string | null;
    firstSignedInAt: string;
    lastSignedInAt: string;
    endedAt: string | null;
  }>(sql`
    select sa.session_id as "sessionId", a.id, a.name, sa.organization_id as "organizationId",
           sa.first_signed_in_at as "firstSignedInAt", sa.last_signed_in_at as "lastSignedInAt", sa.ended_at as "endedAt"
    from session_applications sa join applications a on a.id = sa.application_id
    where sa.session_id = any(${sql.param(opts.sessionIds)}::text[])
      and (a.tenant_id = ${opts.tenantId} or sa.organization_id = ${opts.tenantId})
    order by sa.last_signed_in_at desc, a.id`);
  for (const row of rows) {
    const list = out.get(row.sessionId) ?? [];
    list.push({
      sessionId: row.sessionId,
      id: row.id,
      name: row.name,
      organizationId: row.organizationId,
      firstSignedInAt: new Date(row.firstSignedInAt),
      lastSignedInAt: new Date(row.lastSignedInAt),
      endedAt: row.endedAt === null ? null : new Date(row.endedAt),
    });
    out.set(row.sessionId, list);
  }
  return out;
}

/** The application's name and back-channel logout URL, for its logout token (null: gone or none). */
export async function findBackchannelLogoutTarget(
  db: DbOrTx,
  applicationId: string,
): Promise<{ id: string; tenantId: string; url: string } | undefined> {
  const rows = await db.execute<{ id: string; tenantId: string; url: string | null }>(sql`
    select id, tenant_id as "tenantId", backchannel_logout_url as url from applications where id = ${applicationId}`);
  const row = rows[0];
  return row?.url ? { id: row.id, tenantId: row.tenantId, url: row.url } : undefined;
}

/**
 * The active people who signed in to an application through svc (a recorded sign-in, standing or
 * ended, of a session still on record), but for members of `notMembersOf` in any status: whom
 * claiming the keyless development application into that organization adds as members.
 */
export async function findSignedInPeople(db: DbOrTx, opts: { applicationId: string; notMembersOf?: string }): Promise<string[]> {
  const notMember =
    opts.notMembersOf === undefined
      ? sql``
      : sql`and not exists (select 1 from memberships m where m.tenant_id = ${opts.notMembersOf} and m.user_id = u.id)`;
  const rows = await db.execute<{ userId: string }>(sql`
    select distinct u.id as "userId"
    from session_applications sa
    join sessions s on s.id = sa.session_id
    join users u on u.id = s.user_id
    where sa.application_id = ${opts.applicationId} and u.status = 'active' ${notMember}
    order by u.id`);
  return rows.map((r) => r.userId);
}
