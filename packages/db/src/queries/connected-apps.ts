import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { thirdPartyAccess } from '../schema/connected-apps.ts';

export type ThirdPartyAccessRow = typeof thirdPartyAccess.$inferSelect;

// Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third
// parties an organization allows"). Every statement carries the tenant predicate.

/** The organization's choice, or undefined when it never chose (the default applies). */
export async function findThirdPartyAccess(db: DbOrTx, opts: { tenantId: string }): Promise<ThirdPartyAccessRow | undefined> {
  const [row] = await db.select().from(thirdPartyAccess).where(eq(thirdPartyAccess.tenantId, opts.tenantId)).limit(1);
  return row;
}

/** Records the organization's choice (replacing an earlier one); answers it as stored. */
export async function setThirdPartyAccess(
  db: DbOrTx,
  opts: { tenantId: string; mode: ThirdPartyAccessRow['mode']; clients: string[] },
): Promise<ThirdPartyAccessRow> {
  const [row] = await db
    .insert(thirdPartyAccess)
    .values({ tenantId: opts.tenantId, mode: opts.mode, clients: opts.clients })
    .onConflictDoUpdate({
      target: thirdPartyAccess.tenantId,
      set: { mode: opts.mode, clients: opts.clients, updatedAt: new Date() },
    })
    .returning();
  if (!row) {
    throw new Error('third_party_access upsert returned nothing');
  }
  return row;
}
