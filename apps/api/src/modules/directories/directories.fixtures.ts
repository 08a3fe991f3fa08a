import { createHash } from 'node:crypto';
import { newId, randomBase62 } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { scimDirectories } from '@svc/db/schema/directories';

/** A directory of `tenantId` straight in the table, with its token. */
export async function seedDirectory(db: Db, opts: { tenantId: string; name?: string }): Promise<{ id: string; token: string }> {
  const id = newId('directory');
  const token = `scim_${randomBase62(40)}`;
  await db.insert(scimDirectories).values({
    id,
    tenantId: opts.tenantId,
    name: opts.name ?? 'Seeded directory',
    tokenHash: createHash('sha256').update(token).digest('hex'),
    tokenPrefix: token.slice(0, 11),
  });
  return { id, token };
}
