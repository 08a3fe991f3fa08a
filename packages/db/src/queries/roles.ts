import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import type { Cursor } from '../pagination.ts';
import { productRoles } from '../schema/authorization.ts';
import { memberships } from '../schema/identity.ts';
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

/** A custom role of the organization by id; another organization's role is not found. */
export async function findRoleById(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<RoleRow | undefined> {
  const [row] = await db
    .select()
    .from(roles)
    .where(and(eq(roles.tenantId, opts.tenantId), eq(roles.id, opts.id)))
    .limit(1);
  return row;
}

/**
 * What GET /v1/roles pages through after the system roles: the organization's custom roles and
 * the platform's product roles (every organization has them; not the built-in rows), one list
 * newest first.
 */
export type ListedRoleRow =
  | ({ kind: 'custom' } & RoleRow)
  | { kind: 'product'; id: string; key: string; name: string; productPermissions: string[]; createdAt: Date; updatedAt: Date };

type ListedDbRow = {
  kind: 'custom' | 'product';
  id: string;
  tenant_id: string | null;
  key: string;
  name: string;
  permissions: string[];
  product_permissions: string[];
  created_at: string | Date;
  updated_at: string | Date;
};

/**
 * Custom roles of an organization and the product roles, newest first: at most `limit` rows
 * after `after`. Each branch is a backward range scan bounded by the cursor (custom roles by
 * roles_tenant_created_idx, with the tenant predicate; product roles are few and platform-wide),
 * merged by (created_at, id). The cursor's time is bound as ISO text (postgres.js cannot bind a
 * Date inside a raw fragment).
 */
export async function listRoles(db: DbOrTx, opts: { tenantId: string; after?: Cursor; limit: number }): Promise<ListedRoleRow[]> {
  const after = opts.after ? sql`(${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})` : undefined;
  const rows = (await db.execute<ListedDbRow>(sql`
    (select 'custom' as kind, r.id, r.tenant_id, r.key, r.name, r.permissions, r.product_permissions, r.created_at, r.updated_at
       from ${roles} r
      where r.tenant_id = ${opts.tenantId}${after ? sql` and (r.created_at, r.id) < ${after}` : sql``}
      order by r.created_at desc, r.id desc limit ${opts.limit})
    union all
    (select 'product' as kind, p.id, null, p.key, p.name, '{}'::text[], p.permissions, p.created_at, p.updated_at
       from ${productRoles} p
      where not p.builtin${after ? sql` and (p.created_at, p.id) < ${after}` : sql``}
      order by p.created_at desc, p.id desc limit ${opts.limit})
    order by created_at desc, id desc
    limit ${opts.limit}`)) as unknown as ListedDbRow[];
  return rows.map((r) => {
    const createdAt = new Date(r.created_at);
    const updatedAt = new Date(r.updated_at);
    return r.kind === 'custom'
      ? {
          kind: 'custom',
          id: r.id,
          tenantId: r.tenant_id as string,
          key: r.key,
          name: r.name,
          permissions: r.permissions,
          productPermissions: r.product_permissions,
          createdAt,
          updatedAt,
        }
      : { kind: 'product', id: r.id, key: r.key, name: r.name, productPermissions: r.product_permissions, createdAt, updatedAt };
  });
}

/** Inserts a custom role; undefined when the organization already has the key (the unique index decides). */
export async function insertRole(
  db: DbOrTx,
  values: { id: string; tenantId: string; key: string; name: string; permissions: string[]; productPermissions?: string[] },
): Promise<RoleRow | undefined> {
  const [row] = await db
    .insert(roles)
    .values(values)
    .onConflictDoNothing({ target: [roles.tenantId, roles.key] })
    .returning();
  return row;
}

/** Renames a custom role or replaces its permissions; undefined when it is not the organization's. */
export async function updateRole(
  db: DbOrTx,
  opts: { tenantId: string; id: string; name?: string; permissions?: string[]; productPermissions?: string[] },
): Promise<RoleRow | undefined> {
  const [row] = await db
    .update(roles)
    .set({
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.permissions !== undefined ? { permissions: opts.permissions } : {}),
      ...(opts.productPermissions !== undefined ? { productPermissions: opts.productPermissions } : {}),
      updatedAt: sql`now()`,
    })
    .where(and(eq(roles.tenantId, opts.tenantId), eq(roles.id, opts.id)))
    .returning();
  return row;
}

/**
 * How many memberships of the organization, whatever their status, hold the role `roleKey`.
 * `tenantId: null` counts them in every organization: for a product role, which every
 * organization shares (the one count without a tenant predicate, by design).
 */
export async function countMembershipsWithRole(db: DbOrTx, opts: { tenantId: string | null; roleKey: string }): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(memberships)
    .where(and(opts.tenantId !== null ? eq(memberships.tenantId, opts.tenantId) : undefined, eq(memberships.roleKey, opts.roleKey)));
  return row?.n ?? 0;
}

/** Deletes a custom role; undefined when it is not the organization's. */
export async function deleteRole(db: DbOrTx, opts: { tenantId: string; id: string }): Promise<RoleRow | undefined> {
  const [row] = await db
    .delete(roles)
    .where(and(eq(roles.tenantId, opts.tenantId), eq(roles.id, opts.id)))
    .returning();
  return row;
}

/** In an export (queries/exports.ts): the organization's roles. */
export const rolesExportSection: ExportSection = {
  key: 'roles',
  resource: 'role',
  shape: 'many',
  source: 'snapshot',
  from: 'roles t',
  tenantColumn: 't.tenant_id',
  orderBy: 't.created_at, t.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('key', 't.key'),
    exportField.text('name', 't.name'),
    exportField.json('permissions', 't.permissions'),
    exportField.json('productPermissions', 't.product_permissions'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
