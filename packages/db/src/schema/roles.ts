import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/**
 * Custom roles of an organization. The system roles (`org_admin`, `org_member`) are not rows:
 * they are defined in contracts and exist in every organization.
 */
export const roles = pgTable(
  'roles',
  {
    /** `rol_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Unique within the organization; never a system role's key. What memberships refer to. */
    key: text('key').notNull(),
    name: text('name').notNull(),
    /** svc control-plane permission names (contracts' catalog), sorted, no repeats. */
    permissions: text('permissions').array().notNull().default(sql`'{}'::text[]`),
    /**
     * The product's permission names (api_permissions.name), sorted, no repeats: what the role
     * carries in the product's tokens and checks. Never mixed with `permissions`.
     */
    productPermissions: text('product_permissions').array().notNull().default(sql`'{}'::text[]`),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('roles_tenant_key_key').on(t.tenantId, t.key), index('roles_tenant_created_idx').on(t.tenantId, t.createdAt, t.id)],
);
