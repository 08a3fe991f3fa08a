import { and, desc, eq, lte, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import type { Cursor } from '../pagination.ts';
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
 * Custom roles of an organization, newest first: at most `limit` rows after `after`. One backward
 * range scan of roles_tenant_created_idx; `created_at <= cursor` bounds it. The cursor's time is
 * bound as ISO text (postgres.js cannot bind a Date inside a raw fragment).
 */
export async function listRoles(db: DbOrTx, opts: { tenantId: string; after?: Cursor; limit: number }): Promise<RoleRow[]> {
  return db
    .select()
    .from(roles)
    .where(
      and(
        eq(roles.tenantId, opts.tenantId),
        opts.after ? lte(roles.createdAt, opts.after.createdAt) : undefined,
        opts.after
          ? sql`(${roles.createdAt}, ${roles.id}) < (${opts.after.createdAt.toISOString()}::timestamptz, ${opts.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(roles.createdAt), desc(roles.id))
    .limit(opts.limit);
}

/** Inserts a custom role; undefined when the organization already has the key (the unique index decides). */
export async function insertRole(
  db: DbOrTx,
  values: { id: string; tenantId: string; key: string; name: string; permissions: string[] },
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
  opts: { tenantId: string; id: string; name?: string; permissions?: string[] },
): Promise<RoleRow | undefined> {
  const [row] = await db
    .update(roles)
    .set({
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.permissions !== undefined ? { permissions: opts.permissions } : {}),
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
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
