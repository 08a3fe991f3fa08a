import { and, asc, desc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import { addJob } from '../jobs.ts';
import type { Cursor } from '../pagination.ts';
import { type EmailDeliveryStatus, emailDeliveries } from '../schema/email-deliveries.ts';
import { invitations } from '../schema/invitations.ts';

export type EmailDeliveryRow = typeof emailDeliveries.$inferSelect;

/**
 * "Send what is due now": one queued job at a time; a second invitation while one waits replaces
 * it (run_at now) instead of adding another, and the job sends every due email in batches.
 */
export const EMAIL_DISPATCH_JOB_KEY = 'email:dispatch';

/**
 * The key of a wake-up at a later time (a retry, or the end of a claim's lease). One job per
 * second of the day it is due: every writer of one key asks for the same run_at, so replacing
 * never moves a wake-up later, and "send now" is never replaced by "send in six hours".
 */
function wakeUpKey(at: Date): string {
  return `${EMAIL_DISPATCH_JOB_KEY}@${Math.ceil(at.getTime() / 1000)}`;
}

export type NewEmailDelivery = {
  id: string;
  tenantId: string;
  invitationId: string;
  recipient: string;
  subject: string;
  /** Sealed `{ text, html }` (SecretBox, context `email_delivery:<id>`). */
  bodyCiphertext: string;
  metadata: Record<string, string>;
};

/**
 * Queues an invitation email through the caller's transaction, due now, and wakes the dispatcher:
 * the email exists, and will be attempted, if and only if the invitation commits.
 */
export async function queueEmailDelivery(tx: DbOrTx, values: NewEmailDelivery): Promise<EmailDeliveryRow> {
  const [row] = await tx
    .insert(emailDeliveries)
    .values({ ...values, kind: 'invitation', status: 'pending', nextAttemptAt: sql`now()` })
    .returning();
  if (!row) {
    throw new Error('email delivery insert returned nothing');
  }
  await addJob(tx, 'email:dispatch', {}, { jobKey: EMAIL_DISPATCH_JOB_KEY });
  return row;
}

/** Why a claimed invitation email must not be sent any more (null: its invitation is still pending). */
export type InvitationClosed = 'invitation_revoked' | 'invitation_accepted' | 'invitation_expired' | null;

/** A claimed delivery: the row as claimed, and whether its invitation can still be accepted. */
export type ClaimedEmailDelivery = EmailDeliveryRow & { lockedUntil: Date; invitationClosed: InvitationClosed };

/**
 * Claims up to `limit` deliveries for one attempt each: due ones (`next_attempt_at <= now()`), or
 * with `ids` exactly those (due or not: an admin asked for them now). Pending or retrying and not
 * under another live claim; rows another claimer is locking this instant are skipped, never waited
 * for. The claim counts the attempt and holds the row until `locked_until` (now + `leaseMs`),
 * which is also when it is due again should this claimer die before recording the result; a
 * wake-up job for that time is queued in the same transaction, so an abandoned claim is retried
 * even if nothing else ever wakes the dispatcher.
 */
export async function claimEmailDeliveries(
  db: Db,
  opts: { tenantId?: string; ids?: string[]; limit: number; leaseMs: number },
): Promise<ClaimedEmailDelivery[]> {
  const lease = sql`now() + ${`${Math.round(opts.leaseMs)} milliseconds`}::interval`;
  return db.transaction(async (tx) => {
    const picked = await tx
      .select({ id: emailDeliveries.id })
      .from(emailDeliveries)
      .where(
        and(
          opts.tenantId !== undefined ? eq(emailDeliveries.tenantId, opts.tenantId) : undefined,
          inArray(emailDeliveries.status, ['pending', 'retrying']),
          or(isNull(emailDeliveries.lockedUntil), lt(emailDeliveries.lockedUntil, sql`now()`)),
          opts.ids !== undefined ? inArray(emailDeliveries.id, opts.ids) : lte(emailDeliveries.nextAttemptAt, sql`now()`),
        ),
      )
      .orderBy(asc(emailDeliveries.nextAttemptAt), asc(emailDeliveries.id))
      .limit(opts.limit)
      .for('update', { skipLocked: true });
    if (picked.length === 0) {
      return [];
    }
    const rows = await tx
      .update(emailDeliveries)
      .set({
        lockedUntil: lease,
        nextAttemptAt: lease,
        attemptCount: sql`${emailDeliveries.attemptCount} + 1`,
        lastAttemptAt: sql`now()`,
        updatedAt: sql`now()`,
      })
      .where(
        inArray(
          emailDeliveries.id,
          picked.map((p) => p.id),
        ),
      )
      .returning();
    const leaseEnd = rows[0]?.lockedUntil;
    if (leaseEnd) {
      await addJob(tx, 'email:dispatch', {}, { runAt: leaseEnd, jobKey: wakeUpKey(leaseEnd) });
    }
    const closed = await invitationsClosed(tx, rows);
    return rows
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((row) => ({ ...row, lockedUntil: row.lockedUntil as Date, invitationClosed: closed.get(row.id) ?? null }));
  });
}

/** For each delivery of an invitation that is no longer pending: why. */
async function invitationsClosed(tx: DbOrTx, rows: EmailDeliveryRow[]): Promise<Map<string, InvitationClosed>> {
  const linked = rows.filter((r) => r.invitationId !== null);
  const out = new Map<string, InvitationClosed>();
  if (linked.length === 0) {
    return out;
  }
  // A batch may span organizations: both predicates, and each pair is matched below.
  const found = await tx
    .select({
      tenantId: invitations.tenantId,
      id: invitations.id,
      revokedAt: invitations.revokedAt,
      acceptedAt: invitations.acceptedAt,
      expired: sql<boolean>`${invitations.expiresAt} <= now()`,
    })
    .from(invitations)
    .where(
      and(
        inArray(invitations.tenantId, [...new Set(linked.map((r) => r.tenantId))]),
        inArray(
          invitations.id,
          linked.map((r) => r.invitationId as string),
        ),
      ),
    );
  for (const row of linked) {
    const inv = found.find((f) => f.id === row.invitationId && f.tenantId === row.tenantId);
    if (!inv || inv.revokedAt) {
      // A deleted invitation is as good as revoked: its link no longer works.
      out.set(row.id, 'invitation_revoked');
    } else if (inv.acceptedAt) {
      out.set(row.id, 'invitation_accepted');
    } else if (inv.expired) {
      out.set(row.id, 'invitation_expired');
    }
  }
  return out;
}

/** The claim a result is recorded under: the row is only updated while this claim still holds it. */
export type EmailClaim = { tenantId: string; id: string; lockedUntil: Date };

function underClaim(claim: EmailClaim) {
  return and(
    eq(emailDeliveries.tenantId, claim.tenantId),
    eq(emailDeliveries.id, claim.id),
    eq(emailDeliveries.lockedUntil, claim.lockedUntil),
  );
}

/**
 * The provider accepted it: sent, the body erased. Undefined when the claim was lost (it expired
 * and another claimer took the row), in which case nothing is written.
 */
export async function recordEmailSent(
  db: DbOrTx,
  claim: EmailClaim,
  result: { provider: string; providerMessageId: string | null },
): Promise<EmailDeliveryRow | undefined> {
  const [row] = await db
    .update(emailDeliveries)
    .set({
      status: 'sent',
      sentAt: sql`now()`,
      nextAttemptAt: null,
      lockedUntil: null,
      bodyCiphertext: null,
      provider: result.provider,
      providerMessageId: result.providerMessageId,
      lastError: null,
      updatedAt: sql`now()`,
    })
    .where(underClaim(claim))
    .returning();
  return row;
}

/**
 * The attempt failed. With `retryInMs` the delivery waits for its next attempt (and a wake-up job
 * for that time is queued in the same statement); without, it is final: failed, body erased.
 * `publicMetadata` is merged into the row's public metadata (e.g. why it was not sent).
 * Undefined when the claim was lost.
 */
export async function recordEmailFailure(
  db: DbOrTx,
  claim: EmailClaim,
  result: { provider: string | null; error: string; retryInMs: number | null; publicMetadata?: Record<string, string> },
): Promise<EmailDeliveryRow | undefined> {
  const next = result.retryInMs === null ? null : new Date(Date.now() + result.retryInMs);
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(emailDeliveries)
      .set({
        status: next ? 'retrying' : 'failed',
        nextAttemptAt: next ? sql`now() + ${`${result.retryInMs} milliseconds`}::interval` : null,
        lockedUntil: null,
        ...(next ? {} : { bodyCiphertext: null }),
        provider: result.provider,
        lastError: result.error,
        ...(result.publicMetadata ? { metadata: sql`${emailDeliveries.metadata} || ${JSON.stringify(result.publicMetadata)}::jsonb` } : {}),
        updatedAt: sql`now()`,
      })
      .where(underClaim(claim))
      .returning();
    if (row?.nextAttemptAt) {
      await addJob(tx, 'email:dispatch', {}, { runAt: row.nextAttemptAt, jobKey: wakeUpKey(row.nextAttemptAt) });
    }
    return row;
  });
}

/** One page of an organization's outbox, newest first, optionally of one status. */
export async function listEmailDeliveries(
  db: DbOrTx,
  opts: { tenantId: string; status?: EmailDeliveryStatus; after?: Cursor; limit: number },
): Promise<EmailDeliveryRow[]> {
  const { after } = opts;
  return db
    .select()
    .from(emailDeliveries)
    .where(
      and(
        eq(emailDeliveries.tenantId, opts.tenantId),
        opts.status !== undefined ? eq(emailDeliveries.status, opts.status) : undefined,
        after
          ? sql`(${emailDeliveries.createdAt}, ${emailDeliveries.id}) < (${after.createdAt.toISOString()}::timestamptz, ${after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(emailDeliveries.createdAt), desc(emailDeliveries.id))
    .limit(opts.limit);
}

/** The organization's deliveries among `ids` (ids of other organizations are simply absent). */
export async function findEmailDeliveriesByIds(db: DbOrTx, opts: { tenantId: string; ids: string[] }): Promise<EmailDeliveryRow[]> {
  if (opts.ids.length === 0) {
    return [];
  }
  return db
    .select()
    .from(emailDeliveries)
    .where(and(eq(emailDeliveries.tenantId, opts.tenantId), inArray(emailDeliveries.id, opts.ids)))
    .orderBy(desc(emailDeliveries.createdAt), desc(emailDeliveries.id));
}

/**
 * In an export (queries/exports.ts): the email outbox; never the body ciphertexts, the provider's
 * message ids and error texts, or the claim column.
 */
export const emailDeliveriesExportSection: ExportSection = {
  key: 'emailDeliveries',
  resource: 'email_delivery',
  shape: 'many',
  source: 'snapshot',
  from: 'email_deliveries t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('kind', 't.kind'),
    exportField.text('invitationId', 't.invitation_id'),
    exportField.text('recipient', 't.recipient'),
    exportField.text('subject', 't.subject'),
    exportField.text('status', 't.status'),
    exportField.number('attemptCount', 't.attempt_count'),
    exportField.time('nextAttemptAt', 't.next_attempt_at'),
    exportField.time('lastAttemptAt', 't.last_attempt_at'),
    exportField.time('sentAt', 't.sent_at'),
    // The public metadata keys only (contracts ZEmailDeliveryMetadata), whatever else the row holds.
    exportField.json(
      'metadata',
      "jsonb_strip_nulls(jsonb_build_object('invitationId', t.metadata->'invitationId', 'roleKey', t.metadata->'roleKey', 'notSentReason', t.metadata->'notSentReason'))",
    ),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
