import { sql } from 'drizzle-orm';
import { boolean, check, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The product's own APIs (docs/authorization.md). Platform-wide: every organization's people and
 * machine clients get tokens for them. Their permissions are the product's catalog, separate from
 * svc's control-plane catalog (contracts' PERMISSIONS), whose names they may never take.
 */
export const apiResources = pgTable('api_resources', {
  /** `res_` prefixed id. */
  id: text('id').primaryKey(),
  /**
   * Absolute URI naming the API (`https://api.example.com`): the RFC 8707 `resource` parameter
   * and the `aud` of its access tokens. Unique; never changes once tokens name it.
   */
  identifier: text('identifier').notNull().unique(),
  name: text('name').notNull(),
  description: text('description').notNull().default(''),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});

/**
 * A permission of an API resource (`invoices.create`). Names are unique across the product, so a
 * role, a check or a token names a permission without its resource.
 */
export const apiPermissions = pgTable(
  'api_permissions',
  {
    /** `prm_` prefixed id. */
    id: text('id').primaryKey(),
    resourceId: text('resource_id')
      .notNull()
      .references(() => apiResources.id, { onDelete: 'cascade' }),
    /** `resource.action` in lower case; unique across all resources. */
    name: text('name').notNull().unique(),
    description: text('description').notNull().default(''),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('api_permissions_resource_idx').on(t.resourceId, t.name)],
);

/**
 * Roles the platform defines for every organization, holding product permissions only. The two
 * built-in keys (`org_admin`, `org_member`) have a row each (`builtin`), seeded by the migration,
 * which says which product permissions those built-in roles carry; they cannot be renamed or
 * deleted. A membership whose role key is a product role's holds its product permissions and, in
 * svc's control plane, what `org_member` holds.
 */
export const productRoles = pgTable(
  'product_roles',
  {
    /** `prl_` prefixed id; the built-in rows are `prl_org_admin` and `prl_org_member`. */
    id: text('id').primaryKey(),
    /** Unique; never an organization's custom role key (both sides refuse the other's). */
    key: text('key').notNull().unique(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    /** Product permission names (api_permissions.name), sorted, no repeats. */
    permissions: text('permissions').array().notNull().default(sql`'{}'::text[]`),
    builtin: boolean('builtin').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [check('product_roles_builtin_key_check', sql`not ${t.builtin} or ${t.key} in ('org_admin', 'org_member')`)],
);
