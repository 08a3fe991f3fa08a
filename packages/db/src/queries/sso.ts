import { and, eq, gte, isNull, lt, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { auditLogs } from '../schema/audit-logs.ts';
import { memberships, users } from '../schema/identity.ts';
import { ssoAssertions, ssoConnections, ssoIdentities, ssoRequests } from '../schema/sso.ts';

export type SsoConnectionRow = typeof ssoConnections.$inferSelect;
export type SsoRequestRow = typeof ssoRequests.$inferSelect;

// An organization's SSO connections (docs/enterprise.md "SSO connections"). Every statement on
// connections carries the tenant predicate, except `findSsoConnectionTenant` (how an id from the
// request learns its tenant, which the caller then authorizes) and `findSsoConnectionById` (the
// public sign-in routes, whose path names the connection; each answer is then the connection's
// own tenant's).

export async function findSsoConnectionTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: ssoConnections.tenantId })
    .from(ssoConnections)
    .where(eq(ssoConnections.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findSsoConnection(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<SsoConnectionRow | undefined> {
  const [row] = await db
    .select()
    .from(ssoConnections)
    .where(and(eq(ssoConnections.tenantId, opts.tenantId), eq(ssoConnections.id, opts.id)))
    .limit(1);
  return row;
}

/** The public sign-in routes' read: the path names the connection, which names its tenant. */
export async function findSsoConnectionById(db: DbOrTx, id: string): Promise<SsoConnectionRow | undefined> {
  const [row] = await db.select().from(ssoConnections).where(eq(ssoConnections.id, id)).limit(1);
  return row;
}

/** The enabled connections of an organization, oldest first (the first is where its people go). */
export async function enabledSsoConnectionsOf(db: DbOrTx, tenantId: string): Promise<SsoConnectionRow[]> {
  return db
    .select()
    .from(ssoConnections)
    .where(and(eq(ssoConnections.tenantId, tenantId), eq(ssoConnections.enabled, true)))
    .orderBy(ssoConnections.createdAt, ssoConnections.id)
    .limit(20);
}

/** Whether any organization has an enabled connection: hosted sign-in then asks for the email first. */
export async function anySsoConnectionEnabled(db: DbOrTx): Promise<boolean> {
  const [row] = await db.select({ id: ssoConnections.id }).from(ssoConnections).where(eq(ssoConnections.enabled, true)).limit(1);
  return row !== undefined;
}

export async function listSsoConnections(
  db: DbOrTx,
  opts: { tenantId: string; limit: number; cursor?: Cursor },
): Promise<SsoConnectionRow[]> {
  return db
    .select()
    .from(ssoConnections)
    .where(and(eq(ssoConnections.tenantId, opts.tenantId), afterCursor(ssoConnections.createdAt, ssoConnections.id, opts.cursor)))
    .orderBy(sql`${ssoConnections.createdAt} desc nulls last`, sql`${ssoConnections.id} desc nulls last`)
    .limit(opts.limit + 1);
}

export async function insertSsoConnection(db: DbOrTx, values: typeof ssoConnections.$inferInsert): Promise<SsoConnectionRow> {
  const [row] = await db.insert(ssoConnections).values(values).returning();
  if (!row) {
    throw new Error('sso connection insert returned nothing');
  }
  return row;
}

export async function updateSsoConnection(
  db: DbOrTx,
  opts: { tenantId: string; id: string; set: Partial<typeof ssoConnections.$inferInsert> },
): Promise<SsoConnectionRow | undefined> {
  const [row] = await db
    .update(ssoConnections)
    .set(opts.set)
    .where(and(eq(ssoConnections.tenantId, opts.tenantId), eq(ssoConnections.id, opts.id)))
    .returning();
  return row;
}

export async function deleteSsoConnection(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<SsoConnectionRow | undefined> {
  const [row] = await db
    .delete(ssoConnections)
    .where(and(eq(ssoConnections.tenantId, opts.tenantId), eq(ssoConnections.id, opts.id)))
    .returning();
  return row;
}

export async function insertSsoRequest(db: DbOrTx, values: typeof ssoRequests.$inferInsert): Promise<void> {
  await db.insert(ssoRequests).values(values);
  // Expired requests of the connection go as new ones come: the table stays the size of the
  // sign-ins in flight.
  await db.delete(ssoRequests).where(and(eq(ssoRequests.connectionId, values.connectionId), lt(ssoRequests.expiresAt, sql`now()`)));
}

/** The request a relay state (hashed) names at this connection, used or not, expired or not. */
export async function findSsoRequestByRelay(
  db: DbOrTx,
  opts: { connectionId: string; relayHash: string },
): Promise<SsoRequestRow | undefined> {
  const [row] = await db
    .select()
    .from(ssoRequests)
    .where(and(eq(ssoRequests.connectionId, opts.connectionId), eq(ssoRequests.relayHash, opts.relayHash)))
    .limit(1);
  return row;
}

/** Marks a request used; false when another answer used it first. */
export async function useSsoRequest(db: DbOrTx, opts: { id: string; at: Date }): Promise<boolean> {
  const rows = await db
    .update(ssoRequests)
    .set({ usedAt: opts.at })
    .where(and(eq(ssoRequests.id, opts.id), isNull(ssoRequests.usedAt)))
    .returning({ id: ssoRequests.id });
  return rows.length === 1;
}

/** Records an accepted assertion id; false when the connection accepted it before (a replay). */
export async function rememberAssertion(
  db: DbOrTx,
  opts: { connectionId: string; assertionId: string; expiresAt: Date },
): Promise<boolean> {
  const rows = await db.insert(ssoAssertions).values(opts).onConflictDoNothing().returning({ id: ssoAssertions.assertionId });
  await db.delete(ssoAssertions).where(and(eq(ssoAssertions.connectionId, opts.connectionId), lt(ssoAssertions.expiresAt, sql`now()`)));
  return rows.length === 1;
}

export async function findSsoIdentity(db: DbOrTx, opts: { connectionId: string; subject: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ userId: ssoIdentities.userId })
    .from(ssoIdentities)
    .where(and(eq(ssoIdentities.connectionId, opts.connectionId), eq(ssoIdentities.subject, opts.subject)))
    .limit(1);
  return row?.userId;
}

export async function upsertSsoIdentity(
  db: DbOrTx,
  values: { connectionId: string; subject: string; userId: string; lastProfile: Record<string, unknown>; at: Date },
): Promise<void> {
  await db
    .insert(ssoIdentities)
    .values({ ...values, lastSignInAt: values.at })
    .onConflictDoUpdate({
      target: [ssoIdentities.connectionId, ssoIdentities.subject],
      set: { userId: values.userId, lastProfile: values.lastProfile, lastSignInAt: values.at },
    });
}

/** A person's membership of the organization (any status), if any. */
export async function membershipOf(
  db: DbOrTx,
  opts: { tenantId: string; userId: string },
): Promise<{ status: string; roleKey: string } | undefined> {
  const [row] = await db
    .select({ status: memberships.status, roleKey: memberships.roleKey })
    .from(memberships)
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)))
    .limit(1)
    .for('update');
  return row;
}

export async function setMembershipFromSso(
  db: DbOrTx,
  opts: { tenantId: string; userId: string; roleKey: string; activate: boolean },
): Promise<void> {
  await db
    .update(memberships)
    .set(opts.activate ? { roleKey: opts.roleKey, status: 'active' } : { roleKey: opts.roleKey })
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)));
}

/**
 * The connection's last sign-in, written at most once a minute: a connection hundreds of people
 * sign in through each minute does not rewrite its row (and hold its lock) for each of them.
 */
export async function touchSsoConnection(db: DbOrTx, opts: { tenantId: string; id: string; at: Date }): Promise<void> {
  const minuteBefore = new Date(opts.at.getTime() - 60_000);
  await db
    .update(ssoConnections)
    .set({ lastSignInAt: opts.at })
    .where(
      and(
        eq(ssoConnections.tenantId, opts.tenantId),
        eq(ssoConnections.id, opts.id),
        or(isNull(ssoConnections.lastSignInAt), lt(ssoConnections.lastSignInAt, minuteBefore)),
      ),
    );
}

/**
 * How many SSO sign-ins each connection of the organization had since `since`, from the audit
 * log's `sso.signed_in` entries (one per sign-in, in the sign-in's transaction); read through the
 * (tenant, action, created_at) index. Connections without any are absent.
 */
export async function countSsoSignIns(db: DbOrTx, opts: { tenantId: string; since: Date }): Promise<Map<string, number>> {
  const rows = await db
    .select({ connectionId: sql<string>`${auditLogs.summary}->>'connectionId'`, count: sql<number>`count(*)::int` })
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, opts.tenantId), eq(auditLogs.action, 'sso.signed_in'), gte(auditLogs.createdAt, opts.since)))
    .groupBy(sql`${auditLogs.summary}->>'connectionId'`);
  return new Map(rows.map((r) => [r.connectionId, r.count]));
}

/** The person's email, name and last sign-in as the organization's IdP gives them. */
export async function updateUserFromSso(
  db: DbOrTx,
  opts: { id: string; email: string; name: string; at: Date },
): Promise<typeof users.$inferSelect | undefined> {
  const [row] = await db
    .update(users)
    .set({ email: opts.email, emailVerified: true, name: opts.name, lastSignInAt: opts.at, updatedAt: opts.at })
    .where(eq(users.id, opts.id))
    .returning();
  return row;
}
