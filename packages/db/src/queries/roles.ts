import { and, eq } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { roles } from '../schema/roles.ts';

export type RoleRow = typeof roles.$inferSelect;

export async function findRoleByKey(db: DbOrTx, opts: { tenantId: string; key: string }): Promise<RoleRow | undefined> {
  const [row] = await db
    .select()
    .from(roles)
    .where(and(eq(roles.tenantId, opts.tenantId), eq(roles.key, opts.key)))
    .limit(1);
  return row;
}
