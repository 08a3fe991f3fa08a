import { newId, randomBase62 } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { organizationDomains } from '@svc/db/schema/domains';

let n = 0;

/** A domain of `tenantId` straight in the table (pending unless `verified`); a fresh name by default. */
export async function seedDomain(
  db: Db,
  opts: { tenantId: string; domain?: string; verified?: boolean },
): Promise<{ id: string; domain: string; token: string }> {
  const id = newId('domain');
  const domain = opts.domain ?? `seed-${++n}-${randomBase62(6).toLowerCase()}.example.org`;
  const token = randomBase62(32);
  await db.insert(organizationDomains).values({
    id,
    tenantId: opts.tenantId,
    domain,
    verificationToken: token,
    verifiedAt: opts.verified ? new Date() : null,
  });
  return { id, domain, token };
}
