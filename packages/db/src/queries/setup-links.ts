import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { afterCursor, type Cursor } from '../pagination.ts';
import { organizations } from '../schema/organizations.ts';
import { setupLinks } from '../schema/setup-links.ts';

// Setup links (docs/enterprise.md "Setup links"). Every statement carries the tenant predicate,
// except `findSetupLinkTenant` (how an id from a /v1 request learns its tenant, which the caller
// then authorizes) and the two reads of the hosted page, which need the id and a hash together
// (the link's token, or the cookie its first open set), so one link's secret opens no other.

export type SetupLinkRow = typeof setupLinks.$inferSelect;

export async function findSetupLinkTenant(db: DbOrTx, opts: { untrustedId: string }): Promise<string | undefined> {
  const [row] = await db.select({ tenantId: setupLinks.tenantId }).from(setupLinks).where(eq(setupLinks.id, opts.untrustedId)).limit(1);
  return row?.tenantId;
}

export async function findSetupLink(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<SetupLinkRow | undefined> {
  const [row] = await db
    .select()
    .from(setupLinks)
    .where(and(eq(setupLinks.tenantId, opts.tenantId), eq(setupLinks.id, opts.id)))
    .limit(1);
  return row;
}

/**
 * The link a hosted-page request names, if `hash` is its token's (`by: 'token'`) or its opened
 * session's (`by: 'session'`). The organization must be a tenant.
 */
export async function findSetupLinkByHash(
  db: DbOrTx,
  opts: { untrustedId: string; hash: string; by: 'token' | 'session' },
): Promise<SetupLinkRow | undefined> {
  const column = opts.by === 'token' ? setupLinks.tokenHash : setupLinks.sessionHash;
  const [row] = await db
    .select({ link: setupLinks })
    .from(setupLinks)
    .innerJoin(organizations, eq(organizations.id, setupLinks.tenantId))
    .where(and(eq(setupLinks.id, opts.untrustedId), eq(column, opts.hash), eq(organizations.kind, 'tenant')))
    .limit(1);
  return row?.link;
}

export async function listSetupLinks(db: DbOrTx, opts: { tenantId: string; limit: number; cursor?: Cursor }): Promise<SetupLinkRow[]> {
  return db
    .select()
    .from(setupLinks)
    .where(and(eq(setupLinks.tenantId, opts.tenantId), afterCursor(setupLinks.createdAt, setupLinks.id, opts.cursor)))
    .orderBy(sql`${setupLinks.createdAt} desc nulls last`, sql`${setupLinks.id} desc nulls last`)
    .limit(opts.limit + 1);
}

export async function insertSetupLink(db: DbOrTx, values: typeof setupLinks.$inferInsert): Promise<SetupLinkRow> {
  const [row] = await db.insert(setupLinks).values(values).returning();
  if (!row) {
    throw new Error('setup link insert returned nothing');
  }
  return row;
}

/**
 * The first open: binds the link to `sessionHash`, only while it is unopened, unrevoked and
 * unexpired. One statement, so two browsers racing on one link cannot both win.
 */
export async function openSetupLink(
  db: DbOrTx,
  opts: { tenantId: string; id: string; sessionHash: string; now: Date },
): Promise<SetupLinkRow | undefined> {
  const [row] = await db
    .update(setupLinks)
    .set({ sessionHash: opts.sessionHash, openedAt: opts.now })
    .where(
      and(
        eq(setupLinks.tenantId, opts.tenantId),
        eq(setupLinks.id, opts.id),
        isNull(setupLinks.openedAt),
        isNull(setupLinks.revokedAt),
        gt(setupLinks.expiresAt, opts.now),
      ),
    )
    .returning();
  return row;
}

export async function revokeSetupLink(db: DbOrTx, opts: { tenantId: string; id: string; now: Date }): Promise<SetupLinkRow | undefined> {
  const [row] = await db
    .update(setupLinks)
    .set({ revokedAt: opts.now })
    .where(and(eq(setupLinks.tenantId, opts.tenantId), eq(setupLinks.id, opts.id), isNull(setupLinks.revokedAt)))
    .returning();
  return row;
}

/** Records the record the page made; only once (the first one stays the link's). */
export async function setSetupLinkTarget(
  db: DbOrTx,
  opts: { tenantId: string; id: string; targetId: string },
): Promise<SetupLinkRow | undefined> {
  const [row] = await db
    .update(setupLinks)
    .set({ targetId: opts.targetId })
    .where(and(eq(setupLinks.tenantId, opts.tenantId), eq(setupLinks.id, opts.id), isNull(setupLinks.targetId)))
    .returning();
  return row;
}
