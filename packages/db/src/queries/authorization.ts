import { and, asc, desc, eq, inArray, lte, not, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import type { Cursor } from '../pagination.ts';
import { applications } from '../schema/applications.ts';
import { apiPermissions, apiResources, productRoles } from '../schema/authorization.ts';
import { organizations } from '../schema/organizations.ts';
import { roles } from '../schema/roles.ts';

/**
 * The product's API resources, their permissions and the platform's product roles
 * (docs/authorization.md). These tables are platform-wide: no statement on them has a tenant
 * predicate. The few statements here on tenant tables (roles, applications) are the platform's
 * catalog cleanups and key checks, which by design span every organization; each says so.
 */

export type ApiResourceRow = typeof apiResources.$inferSelect;
export type ApiPermissionRow = typeof apiPermissions.$inferSelect;
export type ProductRoleRow = typeof productRoles.$inferSelect;
export type ApiResourceWithPermissions = ApiResourceRow & { permissions: Pick<ApiPermissionRow, 'name' | 'description' | 'createdAt'>[] };

type PermissionJson = { name: string; description: string; created_at: string };

/** The resource's permissions as one JSON array, sorted by name (one index range of api_permissions_resource_idx). */
// Written out rather than with column references: inside a selected fragment Drizzle may print a
// column without its table, and a bare "id" would then be the permission's own.
const permissionsOf = sql<PermissionJson[]>`coalesce((
  select json_agg(json_build_object('name', p.name, 'description', p.description, 'created_at', p.created_at) order by p.name)
    from api_permissions p where p.resource_id = "api_resources"."id"), '[]'::json)`;

function withPermissions(row: ApiResourceRow & { permissions: PermissionJson[] }): ApiResourceWithPermissions {
  return {
    ...row,
    permissions: row.permissions.map((p) => ({ name: p.name, description: p.description, createdAt: new Date(p.created_at) })),
  };
}

const resourceColumns = {
  id: apiResources.id,
  identifier: apiResources.identifier,
  name: apiResources.name,
  description: apiResources.description,
  createdAt: apiResources.createdAt,
  updatedAt: apiResources.updatedAt,
  permissions: permissionsOf,
};

/** API resources, newest first, each with its permissions: at most `limit` rows after `after`. */
export async function listApiResources(db: DbOrTx, opts: { after?: Cursor; limit: number }): Promise<ApiResourceWithPermissions[]> {
  const rows = await db
    .select(resourceColumns)
    .from(apiResources)
    .where(
      and(
        opts.after ? lte(apiResources.createdAt, opts.after.createdAt) : undefined,
        opts.after
          ? sql`(${apiResources.createdAt}, ${apiResources.id}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(apiResources.createdAt), desc(apiResources.id))
    .limit(opts.limit);
  return rows.map(withPermissions);
}

/** One API resource with its permissions; `forUpdate` locks the resource row for the transaction. */
export async function findApiResourceById(
  db: DbOrTx,
  opts: { id: string; forUpdate?: boolean },
): Promise<ApiResourceWithPermissions | undefined> {
  const query = db.select(resourceColumns).from(apiResources).where(eq(apiResources.id, opts.id)).limit(1);
  const [row] = opts.forUpdate ? await query.for('update', { of: apiResources }) : await query;
  return row && withPermissions(row);
}

/**
 * Serializes the creation of resources whose identifiers mean the same audience (`canonical`:
 * the identifier with the trailing slash of an empty path, if any, taken off), so that two
 * requests racing with `https://api.example` and `https://api.example/` end with one resource.
 */
export async function lockResourceIdentifier(tx: DbOrTx, canonical: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc:api_resource_identifier:${canonical}`}))`);
}

/** Whether a resource has one of these identifiers. */
export async function apiResourceIdentifierTaken(db: DbOrTx, identifiers: string[]): Promise<boolean> {
  const [row] = await db.select({ id: apiResources.id }).from(apiResources).where(inArray(apiResources.identifier, identifiers)).limit(1);
  return row !== undefined;
}

/** Inserts a resource; undefined when its identifier is taken (the unique index decides). */
export async function insertApiResource(
  db: DbOrTx,
  values: { id: string; identifier: string; name: string; description: string },
): Promise<ApiResourceRow | undefined> {
  const [row] = await db.insert(apiResources).values(values).onConflictDoNothing({ target: apiResources.identifier }).returning();
  return row;
}

/**
 * Inserts permissions of a resource; returns the names inserted. A name any resource already has
 * is skipped (the unique index on name decides, so two requests racing for one name cannot both
 * get it): the caller compares and refuses.
 */
export async function insertApiPermissions(
  db: DbOrTx,
  values: { id: string; resourceId: string; name: string; description: string }[],
): Promise<string[]> {
  if (values.length === 0) {
    return [];
  }
  const rows = await db
    .insert(apiPermissions)
    .values(values)
    .onConflictDoNothing({ target: apiPermissions.name })
    .returning({ name: apiPermissions.name });
  return rows.map((r) => r.name);
}

/** Renames a resource or changes its description; undefined when there is no such resource. */
export async function updateApiResource(
  db: DbOrTx,
  opts: { id: string; name?: string; description?: string },
): Promise<ApiResourceRow | undefined> {
  const [row] = await db
    .update(apiResources)
    .set({
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.description !== undefined ? { description: opts.description } : {}),
      updatedAt: sql`now()`,
    })
    .where(eq(apiResources.id, opts.id))
    .returning();
  return row;
}

/** Marks a resource changed (its permissions were): its `updatedAt`. */
export async function touchApiResource(db: DbOrTx, id: string): Promise<void> {
  await db.update(apiResources).set({ updatedAt: sql`now()` }).where(eq(apiResources.id, id));
}

/**
 * Deletes a resource and its permissions; returns the resource and its permissions' names, or
 * undefined when there is no such resource. The permissions go first and explicitly (not by the
 * foreign key's cascade) so that the caller learns their names for the cleanup.
 */
export async function deleteApiResource(
  db: DbOrTx,
  id: string,
): Promise<{ resource: ApiResourceRow; permissionNames: string[] } | undefined> {
  const removed = await db.delete(apiPermissions).where(eq(apiPermissions.resourceId, id)).returning({ name: apiPermissions.name });
  const [resource] = await db.delete(apiResources).where(eq(apiResources.id, id)).returning();
  return resource && { resource, permissionNames: removed.map((r) => r.name).sort() };
}

/** Changes a permission's description; undefined when the resource has no permission of that name. */
export async function updateApiPermission(
  db: DbOrTx,
  opts: { resourceId: string; name: string; description: string },
): Promise<ApiPermissionRow | undefined> {
  const [row] = await db
    .update(apiPermissions)
    .set({ description: opts.description })
    .where(and(eq(apiPermissions.resourceId, opts.resourceId), eq(apiPermissions.name, opts.name)))
    .returning();
  return row;
}

/** Deletes a permission of a resource; undefined when the resource has no permission of that name. */
export async function deleteApiPermission(db: DbOrTx, opts: { resourceId: string; name: string }): Promise<ApiPermissionRow | undefined> {
  const [row] = await db
    .delete(apiPermissions)
    .where(and(eq(apiPermissions.resourceId, opts.resourceId), eq(apiPermissions.name, opts.name)))
    .returning();
  return row;
}

/**
 * Of `names`, those some resource declares, each row locked FOR KEY SHARE until the transaction
 * ends: a permission being deleted at the same time waits for this transaction (and its cleanup
 * then sees the role this one wrote), or, deleted first, is not returned here. So a role never
 * keeps a name that no longer exists.
 */
export async function lockExistingPermissions(tx: DbOrTx, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) {
    return new Set();
  }
  const rows = await tx
    .select({ name: apiPermissions.name })
    .from(apiPermissions)
    .where(inArray(apiPermissions.name, [...names]))
    .for('key share');
  return new Set(rows.map((r) => r.name));
}

/** How many holders lost a permission when it went: product roles, custom roles, machine clients. */
export type PermissionRemoval = { productRoles: number; customRoles: number; machineClients: number };

/**
 * Takes deleted permission names out of every product role, every organization's custom roles
 * and every machine client, in the caller's transaction. Deliberately across organizations (no
 * tenant predicate): the catalog is the platform's, and a name it no longer declares must grant
 * nothing anywhere. Lists stay sorted; rows without the names are not touched.
 */
export async function removePermissionsEverywhere(tx: DbOrTx, names: readonly string[]): Promise<PermissionRemoval> {
  if (names.length === 0) {
    return { productRoles: 0, customRoles: 0, machineClients: 0 };
  }
  const gone = sql`array[${sql.join(
    names.map((n) => sql`${n}`),
    sql`, `,
  )}]::text[]`;
  const without = (column: unknown) => sql`array(select p from unnest(${column}) as p where not p = any(${gone}) order by p)`;
  const fromProductRoles = await tx
    .update(productRoles)
    .set({ permissions: without(productRoles.permissions), updatedAt: sql`now()` })
    .where(sql`${productRoles.permissions} && ${gone}`)
    .returning({ id: productRoles.id });
  const fromCustomRoles = await tx
    .update(roles)
    .set({ productPermissions: without(roles.productPermissions), updatedAt: sql`now()` })
    .where(sql`${roles.productPermissions} && ${gone}`)
    .returning({ id: roles.id });
  const fromMachineClients = await tx
    .update(applications)
    .set({ machinePermissions: without(applications.machinePermissions), updatedAt: sql`now()` })
    .where(sql`${applications.machinePermissions} && ${gone}`)
    .returning({ id: applications.id });
  return { productRoles: fromProductRoles.length, customRoles: fromCustomRoles.length, machineClients: fromMachineClients.length };
}

// Product roles ------------------------------------------------------------------------------

/** The two built-in rows (org_admin, org_member), in that order. */
export async function listBuiltinProductRoles(db: DbOrTx): Promise<ProductRoleRow[]> {
  return db.select().from(productRoles).where(eq(productRoles.builtin, true)).orderBy(asc(productRoles.key));
}

/** The platform's own product roles (not the built-in rows), newest first: at most `limit` after `after`. */
export async function listProductRoles(db: DbOrTx, opts: { after?: Cursor; limit: number }): Promise<ProductRoleRow[]> {
  return db
    .select()
    .from(productRoles)
    .where(
      and(
        not(productRoles.builtin),
        opts.after ? lte(productRoles.createdAt, opts.after.createdAt) : undefined,
        opts.after
          ? sql`(${productRoles.createdAt}, ${productRoles.id}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(productRoles.createdAt), desc(productRoles.id))
    .limit(opts.limit);
}

export async function findProductRoleById(db: DbOrTx, opts: { id: string; forUpdate?: boolean }): Promise<ProductRoleRow | undefined> {
  const query = db.select().from(productRoles).where(eq(productRoles.id, opts.id)).limit(1);
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function findProductRoleByKey(db: DbOrTx, key: string): Promise<ProductRoleRow | undefined> {
  const [row] = await db.select().from(productRoles).where(eq(productRoles.key, key)).limit(1);
  return row;
}

/**
 * Serializes everything that claims a role key across the product's two key spaces: a product
 * role (platform-wide) and an organization's custom role. Both sides take this lock before
 * checking the other's table, so a product role and a custom role of one key cannot be created
 * at the same time.
 */
export async function lockRoleKey(tx: DbOrTx, key: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc:role_key:${key}`}))`);
}

/** Whether any organization has a custom role of this key (across organizations, by design). */
export async function customRoleKeyUsedAnywhere(db: DbOrTx, key: string): Promise<boolean> {
  const [row] = await db.select({ id: roles.id }).from(roles).where(eq(roles.key, key)).limit(1);
  return row !== undefined;
}

/** Inserts a product role; undefined when its key is taken (the unique index decides). */
export async function insertProductRole(
  db: DbOrTx,
  values: { id: string; key: string; name: string; description: string; permissions: string[] },
): Promise<ProductRoleRow | undefined> {
  const [row] = await db.insert(productRoles).values(values).onConflictDoNothing({ target: productRoles.key }).returning();
  return row;
}

export async function updateProductRole(
  db: DbOrTx,
  opts: { id: string; name?: string; description?: string; permissions?: string[] },
): Promise<ProductRoleRow | undefined> {
  const [row] = await db
    .update(productRoles)
    .set({
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.description !== undefined ? { description: opts.description } : {}),
      ...(opts.permissions !== undefined ? { permissions: opts.permissions } : {}),
      updatedAt: sql`now()`,
    })
    .where(eq(productRoles.id, opts.id))
    .returning();
  return row;
}

/** Deletes a product role that is not built in; undefined otherwise. */
export async function deleteProductRole(db: DbOrTx, id: string): Promise<ProductRoleRow | undefined> {
  const [row] = await db
    .delete(productRoles)
    .where(and(eq(productRoles.id, id), not(productRoles.builtin)))
    .returning();
  return row;
}

// Where platform-level changes are announced -------------------------------------------------

/**
 * The platform workspace's id (created when the first platform admin signs in), or undefined
 * before then: platform-level catalog changes are announced to its webhook endpoints.
 */
export async function findPlatformOrganizationId(db: DbOrTx): Promise<string | undefined> {
  const [row] = await db
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.kind, 'platform'))
    .orderBy(asc(organizations.createdAt))
    .limit(1);
  return row?.id;
}
