import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';

/** A permission of the product's catalog with the API resource that declares it. */
export type CatalogPermission = { name: string; resourceName: string; resourceIdentifier: string };

/**
 * The first permissions of the product's catalog: resources by name (then identifier), each
 * resource's permissions by name, resources without permissions skipped. The setup context names
 * the first one as the permission a generated app checks. Only names and identifiers are read;
 * the catalog holds nothing secret. Platform-wide (the catalog belongs to no tenant).
 */
export async function listFirstCatalogPermissions(db: DbOrTx, opts: { limit: number }): Promise<CatalogPermission[]> {
  const rows = (await db.execute(sql`
    select p.name, r.name as resource_name, r.identifier as resource_identifier
      from api_resources r
      join api_permissions p on p.resource_id = r.id
     order by r.name, r.identifier, p.name
     limit ${opts.limit}`)) as unknown as { name: string; resource_name: string; resource_identifier: string }[];
  return rows.map((r) => ({ name: r.name, resourceName: r.resource_name, resourceIdentifier: r.resource_identifier }));
}
