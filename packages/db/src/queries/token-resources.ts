import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';

/** An API resource as the OpenID Provider needs it: its identifier (the audience) and its permission names. */
export type TokenResource = { id: string; identifier: string; name: string; permissions: string[] };

/** The API resource whose identifier is `identifier` (its unique index), with its permission names sorted. */
export async function findTokenResource(db: DbOrTx, identifier: string): Promise<TokenResource | undefined> {
  const rows = (await db.execute(sql`
    select r.id, r.identifier, r.name,
           coalesce(array(select p.name from api_permissions p where p.resource_id = r.id order by p.name), '{}') as permissions
      from api_resources r
     where r.identifier = ${identifier}
     limit 1`)) as unknown as TokenResource[];
  return rows[0];
}
