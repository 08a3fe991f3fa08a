import { asc, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { apiPermissions, apiResources } from '../schema/authorization.ts';

// The product's permission catalog as machine clients need it. The catalog is platform-wide (no
// tenant owns an API resource), so these reads carry no tenant predicate.

/** Which of `names` the product declares (on any API resource); the others are unknown. */
export async function findDeclaredPermissionNames(db: DbOrTx, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) {
    return new Set();
  }
  const rows = await db
    .select({ name: apiPermissions.name })
    .from(apiPermissions)
    .where(inArray(apiPermissions.name, [...names]));
  return new Set(rows.map((r) => r.name));
}

export type ProductPermissionOptionRow = {
  name: string;
  description: string;
  resourceIdentifier: string;
  resourceName: string;
};

/** Every product permission with its API resource, by resource identifier then name. */
export async function listProductPermissionOptions(db: DbOrTx): Promise<ProductPermissionOptionRow[]> {
  return db
    .select({
      name: apiPermissions.name,
      description: apiPermissions.description,
      resourceIdentifier: apiResources.identifier,
      resourceName: apiResources.name,
    })
    .from(apiPermissions)
    .innerJoin(apiResources, eq(apiResources.id, apiPermissions.resourceId))
    .orderBy(asc(apiResources.identifier), asc(apiPermissions.name));
}
