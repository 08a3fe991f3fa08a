import { and, desc, eq, gt, isNotNull, isNull, lte, ne, type SQL, sql } from 'drizzle-orm';
import { type AnyPgColumn, alias } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField, exportSqlText } from '../export-section.ts';
import type { Cursor } from '../pagination.ts';
import { memberships } from '../schema/identity.ts';
import { invitations } from '../schema/invitations.ts';

export type InvitationRow = typeof invitations.$inferSelect;
export type InvitationStatus = 'pending' | 'accepted' | 'revoked' | 'expired';

/** The one place status is derived (the column set is the state; nothing stores the status). */
export function invitationStatus(row: Pick<InvitationRow, 'revokedAt' | 'acceptedAt' | 'expiresAt'>, now: Date): InvitationStatus {
  if (row.revokedAt) {
    return 'revoked';
  }
  if (row.acceptedAt) {
    return 'accepted';
  }
  return row.expiresAt.getTime() <= now.getTime() ? 'expired' : 'pending';
}

type StatusColumns = { revokedAt: AnyPgColumn; acceptedAt: AnyPgColumn; expiresAt: AnyPgColumn };

/**
 * The same derivation as a filter, at `now` (a time, or SQL such as `now()`), over `invitations`
 * or an alias of it.
 */
function statusIs(status: InvitationStatus, now: Date | SQL, t: StatusColumns = invitations): SQL | undefined {
  switch (status) {
    case 'revoked':
      return isNotNull(t.revokedAt);
    case 'accepted':
      return isNotNull(t.acceptedAt);
    case 'expired':
      return and(isNull(t.revokedAt), isNull(t.acceptedAt), lte(t.expiresAt, now));
    case 'pending':
      return and(isNull(t.revokedAt), isNull(t.acceptedAt), gt(t.expiresAt, now));
  }
}

/** The derivation as one SQL value, from the filters above (the export's `status`). */
function statusSql(t: StatusColumns, now: SQL): SQL {
  return sql`case when ${statusIs('revoked', now, t)} then 'revoked' when ${statusIs('accepted', now, t)} then 'accepted' when ${statusIs('expired', now, t)} then 'expired' else 'pending' end`;
}

export async function insertInvitation(db: DbOrTx, values: typeof invitations.$inferInsert): Promise<InvitationRow> {
  const [row] = await db.insert(invitations).values(values).returning();
  if (!row) {
    throw new Error('invitation insert returned nothing');
  }
  return row;
}

/**
 * Serialises invitation writes for one email in one organization until the transaction ends, so
 * two racing creates cannot both find "no pending invitation" and both insert one.
 */
export async function lockInvitationEmail(tx: DbOrTx, opts: { tenantId: string; email: string }): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc.invitation:${opts.tenantId}:${opts.email}`}))`);
}

export async function findPendingInvitationByEmail(
  db: DbOrTx,
  opts: { tenantId: string; email: string; now: Date },
): Promise<InvitationRow | undefined> {
  const [row] = await db
    .select()
    .from(invitations)
    .where(and(eq(invitations.tenantId, opts.tenantId), eq(invitations.email, opts.email), statusIs('pending', opts.now)))
    .limit(1);
  return row;
}

/**
 * How many of the organization's invitations are pending at `now` with the role `roleKey`.
 * `tenantId: null` counts them in every organization: for a product role, which every
 * organization shares (the one count without a tenant predicate, by design).
 */
export async function countPendingInvitationsWithRole(
  db: DbOrTx,
  opts: { tenantId: string | null; roleKey: string; now: Date },
): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(invitations)
    .where(
      and(
        opts.tenantId !== null ? eq(invitations.tenantId, opts.tenantId) : undefined,
        eq(invitations.roleKey, opts.roleKey),
        statusIs('pending', opts.now),
      ),
    );
  return row?.n ?? 0;
}

/** An invitation of the organization by id, locked for the transaction when `forUpdate`. */
export async function findInvitationById(
  db: DbOrTx,
  opts: { tenantId: string; id: string; forUpdate?: boolean },
): Promise<InvitationRow | undefined> {
  const query = db
    .select()
    .from(invitations)
    .where(and(eq(invitations.tenantId, opts.tenantId), eq(invitations.id, opts.id)))
    .limit(1);
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  return row;
}

/**
 * The invitation a token opens, locked for the transaction when `forUpdate` (two accepts of one
 * token then run one after the other). No tenant predicate: the token, unique across svc and
 * known only to whoever received the link, is what selects the organization here.
 */
export async function findInvitationByTokenHash(
  db: DbOrTx,
  opts: { tokenHash: string; forUpdate?: boolean },
): Promise<InvitationRow | undefined> {
  const query = db.select().from(invitations).where(eq(invitations.tokenHash, opts.tokenHash)).limit(1);
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  return row;
}

/** One page of the organization's invitations, newest first, optionally of one status. */
export async function listInvitations(
  db: DbOrTx,
  opts: { tenantId: string; status?: InvitationStatus; now: Date; after?: Cursor; limit: number },
): Promise<InvitationRow[]> {
  return db
    .select()
    .from(invitations)
    .where(
      and(
        eq(invitations.tenantId, opts.tenantId),
        opts.status ? statusIs(opts.status, opts.now) : undefined,
        opts.after ? lte(invitations.createdAt, opts.after.createdAt) : undefined,
        opts.after
          ? sql`(${invitations.createdAt}, ${invitations.id}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(invitations.createdAt), desc(invitations.id))
    .limit(opts.limit);
}

/** Marks a pending or expired invitation revoked; undefined when it was accepted or revoked meanwhile. */
export async function revokeInvitation(db: DbOrTx, opts: { tenantId: string; id: string; at: Date }): Promise<InvitationRow | undefined> {
  const [row] = await db
    .update(invitations)
    .set({ revokedAt: opts.at })
    .where(
      and(
        eq(invitations.tenantId, opts.tenantId),
        eq(invitations.id, opts.id),
        isNull(invitations.revokedAt),
        isNull(invitations.acceptedAt),
      ),
    )
    .returning();
  return row;
}

/** Marks a pending invitation accepted by `userId`; undefined when it no longer is pending. */
export async function markInvitationAccepted(
  db: DbOrTx,
  opts: { tenantId: string; id: string; userId: string; at: Date },
): Promise<InvitationRow | undefined> {
  const [row] = await db
    .update(invitations)
    .set({ acceptedAt: opts.at, acceptedByUserId: opts.userId })
    .where(
      and(
        eq(invitations.tenantId, opts.tenantId),
        eq(invitations.id, opts.id),
        isNull(invitations.revokedAt),
        isNull(invitations.acceptedAt),
        gt(invitations.expiresAt, opts.at),
      ),
    )
    .returning();
  return row;
}

/**
 * Whether the user is a member (active or suspended) of `tenantId`. A membership the organization
 * added and the user has not accepted yet (`invited`) does not count: an invite link accepts it.
 */
export async function isMember(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<boolean> {
  const [row] = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId), ne(memberships.status, 'invited')))
    .limit(1);
  return row !== undefined;
}

/** In an export (queries/exports.ts): the organization's invitations; never the token hashes. */
export const invitationsExportSection: ExportSection = {
  key: 'invitations',
  resource: 'invitation',
  shape: 'many',
  source: 'snapshot',
  from: 'invitations t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('email', 't.email'),
    exportField.text('roleKey', 't.role_key'),
    // The derivation of invitationStatus (statusSql), at the snapshot's instant.
    exportField.text('status', exportSqlText(statusSql(alias(invitations, 't'), sql`now()`))),
    exportField.boolean('requireEmailMatch', 't.require_email_match'),
    exportField.text('invitedByUserId', 't.invited_by_user_id'),
    exportField.time('expiresAt', 't.expires_at'),
    exportField.time('acceptedAt', 't.accepted_at'),
    exportField.text('acceptedByUserId', 't.accepted_by_user_id'),
    exportField.time('revokedAt', 't.revoked_at'),
    exportField.time('createdAt', 't.created_at'),
  ],
};
