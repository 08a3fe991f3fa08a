import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** An organization is a tenant: the unit that owns applications, members and everything else. */
export const organizations = pgTable('organizations', {
  /** `ten_` prefixed id. */
  id: text('id').primaryKey(),
  /** URL-safe, globally unique; selects the organization in `organization_slug`. */
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  /** `tenant` for customer workspaces, `keyless` for the shared keyless-development workspace. */
  kind: text('kind', { enum: ['tenant', 'platform', 'keyless'] })
    .notNull()
    .default('tenant'),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
