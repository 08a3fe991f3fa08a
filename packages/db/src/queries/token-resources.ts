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

/** A permission as a consent page words it: its name and the description the platform gave it. */
export type DescribedPermission = { name: string; description: string };

/** The permissions of the API resource `identifier`, with their descriptions, sorted by name. */
export async function findResourcePermissions(
  db: DbOrTx,
  identifier: string,
): Promise<{ name: string; permissions: DescribedPermission[] } | undefined> {
  const rows = (await db.execute(sql`
    select r.name as resource_name, p.name, p.description
      from api_resources r
      left join api_permissions p on p.resource_id = r.id
     where r.identifier = ${identifier}
     order by p.name`)) as unknown as { resource_name: string; name: string | null; description: string | null }[];
  const [first] = rows;
  if (!first) {
    return undefined;
  }
  return {
    name: first.resource_name,
    permissions: rows.flatMap((r) => (r.name ? [{ name: r.name, description: r.description ?? '' }] : [])),
  };
}
