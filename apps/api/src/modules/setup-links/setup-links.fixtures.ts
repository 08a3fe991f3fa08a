import { createHash } from 'node:crypto';
import { newId, randomBase62 } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { setupLinks } from '@svc/db/schema/setup-links';

/** A setup link of `tenantId` straight in the table, with its token. */
export async function seedSetupLink(
  db: Db,
  opts: { tenantId: string; createdByUserId: string; purpose?: 'sso' | 'directory' | 'domain'; expiresAt?: Date },
): Promise<{ id: string; token: string }> {
  const id = newId('setupLink');
  const token = randomBase62(43);
  await db.insert(setupLinks).values({
    id,
    tenantId: opts.tenantId,
    purpose: opts.purpose ?? 'domain',
    label: 'Seeded link',
    tokenHash: createHash('sha256').update(token).digest('hex'),
    createdByUserId: opts.createdByUserId,
    expiresAt: opts.expiresAt ?? new Date(Date.now() + 3_600_000),
  });
  return { id, token };
}
