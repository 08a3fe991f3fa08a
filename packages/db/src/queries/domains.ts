import { and, eq, isNotNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { organizationDomains } from '../schema/domains.ts';
import { memberships } from '../schema/identity.ts';

export type DomainRow = typeof organizationDomains.$inferSelect;
export type DomainCheckError = NonNullable<DomainRow['lastCheckError']>;
export type DomainPolicy = DomainRow['policy'];

// An organization's email domains (docs/enterprise.md "Domains"). Every statement carries the
// tenant predicate, except `findDomainTenant` (how an id from the request learns its tenant, which
// the caller then authorizes) and the reads by domain name across organizations that the one-owner
// rule, the daily re-check and sign-in need (each says so).

/** The organization a domain id claims: read without a tenant predicate, because it is how the tenant is learnt. */
export async function findDomainTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db
    .select({ tenantId: organizationDomains.tenantId })
    .from(organizationDomains)
    .where(eq(organizationDomains.id, opts.untrustedId))
    .limit(1);
  return row?.tenantId;
}

export async function findDomain(db: DbOrTx, opts: { tenantId: string; id: string; forUpdate?: boolean }): Promise<DomainRow | undefined> {
  const query = db
    .select()
    .from(organizationDomains)
    .where(and(eq(organizationDomains.tenantId, opts.tenantId), eq(organizationDomains.id, opts.id)))
    .limit(1);
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function findDomainByName(db: DbOrTx, opts: { tenantId: string; domain: string }): Promise<DomainRow | undefined> {
  const [row] = await db
    .select()
    .from(organizationDomains)
    .where(and(eq(organizationDomains.tenantId, opts.tenantId), eq(organizationDomains.domain, opts.domain)))
    .limit(1);
  return row;
}

/** One page of an organization's domains, newest first (`limit + 1` rows: the extra says "more"). */
export async function listDomains(db: DbOrTx, opts: { tenantId: string; limit: number; cursor?: Cursor }): Promise<DomainRow[]> {
  return db
    .select()
    .from(organizationDomains)
    .where(
      and(eq(organizationDomains.tenantId, opts.tenantId), afterCursor(organizationDomains.createdAt, organizationDomains.id, opts.cursor)),
    )
    .orderBy(sql`${organizationDomains.createdAt} desc nulls last`, sql`${organizationDomains.id} desc nulls last`)
    .limit(opts.limit + 1);
}

/** Inserts a domain; undefined when the organization already has it (the unique index decides). */
export async function insertDomain(db: DbOrTx, values: typeof organizationDomains.$inferInsert): Promise<DomainRow | undefined> {
  const [row] = await db.insert(organizationDomains).values(values).onConflictDoNothing().returning();
  return row;
}

export async function deleteDomain(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<DomainRow | undefined> {
  const [row] = await db
    .delete(organizationDomains)
    .where(and(eq(organizationDomains.tenantId, opts.tenantId), eq(organizationDomains.id, opts.id)))
    .returning();
  return row;
}

export async function updateDomainPolicy(
  db: DbOrTx,
  opts: { tenantId: string; id: string; policy: DomainPolicy; autoJoinRoleKey: string | null; now: Date },
): Promise<DomainRow | undefined> {
  const [row] = await db
    .update(organizationDomains)
    .set({ policy: opts.policy, autoJoinRoleKey: opts.autoJoinRoleKey, updatedAt: opts.now })
    .where(and(eq(organizationDomains.tenantId, opts.tenantId), eq(organizationDomains.id, opts.id)))
    .returning();
  return row;
}

/**
 * Records a check's outcome: found (`error` null) keeps or sets `verified_at`; not found clears it
 * (the domain is pending again), unless `keepVerified` (a lookup that failed proves nothing).
 * Returns the row as it is now.
 */
export async function recordDomainCheck(
  db: DbOrTx,
  opts: { tenantId: string; id: string; error: DomainCheckError | null; now: Date; keepVerified?: boolean },
): Promise<DomainRow | undefined> {
  const [row] = await db
    .update(organizationDomains)
    .set({
      lastCheckedAt: opts.now,
      lastCheckError: opts.error,
      ...(opts.keepVerified
        ? {}
        : {
            verifiedAt:
              opts.error === null ? sql`coalesce(${organizationDomains.verifiedAt}, ${opts.now.toISOString()}::timestamptz)` : null,
          }),
      updatedAt: opts.now,
    })
    .where(and(eq(organizationDomains.tenantId, opts.tenantId), eq(organizationDomains.id, opts.id)))
    .returning();
  return row;
}

/**
 * Serialises everything that verifies a domain name, in every organization (released at commit):
 * of two organizations verifying one domain at once, the second sees the first's verification.
 */
export async function lockDomainName(tx: DbOrTx, domain: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc.domain:${domain}`}))`);
}

/**
 * The organization that has `domain` verified, other than `exceptTenantId`: across organizations
 * by design (a domain is verified by at most one). Only whether one exists leaves the service.
 */
export async function findVerifiedElsewhere(db: DbOrTx, opts: { domain: string; exceptTenantId: string }): Promise<boolean> {
  const rows = await db
    .select({ id: organizationDomains.id })
    .from(organizationDomains)
    .where(
      and(
        eq(organizationDomains.domain, opts.domain),
        isNotNull(organizationDomains.verifiedAt),
        sql`${organizationDomains.tenantId} <> ${opts.exceptTenantId}`,
      ),
    )
    .limit(1);
  return rows.length > 0;
}

/**
 * The verified domain of this name, in whichever organization holds it (at most one): how a
 * sign-in with a verified email finds the organization whose policy applies.
 */
export async function findVerifiedDomain(db: DbOrTx, domain: string): Promise<DomainRow | undefined> {
  const [row] = await db
    .select()
    .from(organizationDomains)
    .where(and(eq(organizationDomains.domain, domain), isNotNull(organizationDomains.verifiedAt)))
    .limit(1);
  return row;
}

/**
 * A batch of verified domains for the daily re-check, across organizations, in id order after
 * `afterId` (the task pages through them all).
 */
export async function listVerifiedDomainsAfter(db: DbOrTx, opts: { afterId: string | null; limit: number }): Promise<DomainRow[]> {
  return db
    .select()
    .from(organizationDomains)
    .where(and(isNotNull(organizationDomains.verifiedAt), opts.afterId ? sql`${organizationDomains.id} > ${opts.afterId}` : undefined))
    .orderBy(organizationDomains.id)
    .limit(opts.limit);
}

/** Whether the user has a membership of the organization in any status (auto-join leaves those alone). */
export async function hasMembership(db: DbOrTx, opts: { tenantId: string; userId: string }): Promise<boolean> {
  const rows = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.tenantId, opts.tenantId), eq(memberships.userId, opts.userId)))
    .limit(1);
  return rows.length > 0;
}

/** How many of the organization's domains give `roleKey` by auto-join (a role in use there cannot be deleted). */
export async function countAutoJoinDomainsWithRole(db: DbOrTx, opts: { tenantId: string; roleKey: string }): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(organizationDomains)
    .where(
      and(
        eq(organizationDomains.tenantId, opts.tenantId),
        eq(organizationDomains.policy, 'auto_join'),
        eq(organizationDomains.autoJoinRoleKey, opts.roleKey),
      ),
    );
  return row?.n ?? 0;
}

/** In an export (queries/exports.ts): the organization's email domains; not the verification tokens. */
export const domainsExportSection: ExportSection = {
  key: 'domains',
  resource: 'domain',
  shape: 'many',
  source: 'snapshot',
  from: 'organization_domains t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('domain', 't.domain'),
    exportField.time('verifiedAt', 't.verified_at'),
    exportField.time('lastCheckedAt', 't.last_checked_at'),
    exportField.text('lastCheckError', 't.last_check_error'),
    exportField.text('policy', 't.policy'),
    exportField.text('autoJoinRoleKey', 't.auto_join_role_key'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
