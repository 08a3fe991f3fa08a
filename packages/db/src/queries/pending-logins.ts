import { eq, lt } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { pendingLogins } from '../schema/pending-logins.ts';

export type PendingLoginRow = typeof pendingLogins.$inferSelect;

export async function insertPendingLogin(db: DbOrTx, values: typeof pendingLogins.$inferInsert): Promise<void> {
  await db.insert(pendingLogins).values(values);
}

/** Reads and deletes in one statement: a handle can be redeemed once, by one callback. */
export async function consumePendingLogin(db: DbOrTx, handleHash: string): Promise<PendingLoginRow | undefined> {
  const [row] = await db.delete(pendingLogins).where(eq(pendingLogins.handleHash, handleHash)).returning();
  return row;
}

export async function prunePendingLogins(db: DbOrTx, before: Date): Promise<number> {
  const result = await db.delete(pendingLogins).where(lt(pendingLogins.expiresAt, before));
  return result.count;
}
