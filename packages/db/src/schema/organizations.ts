import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** An organization is a tenant: the unit that owns applications, members and everything else. */
export const organizations = pgTable(
  'organizations',
  {
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
  },
  (t) => [
    // A platform admin's organization list (every organization, searched or not) pages newest
    // first by (created_at, id): walked backwards in this order, a page stops after its rows
    // instead of sorting the whole table. Ascending, so that the list's plain `desc` (nulls
    // first) matches a backward scan; a `desc` index is `desc nulls last` and would not.
    index('organizations_created_idx').on(t.createdAt, t.id),
  ],
);
