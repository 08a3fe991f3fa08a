import { index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/** What a setup link lets its holder do (docs/enterprise.md "Setup links"). */
export type SetupLinkPurpose = 'sso' | 'directory' | 'domain';

/**
 * A setup link (docs/enterprise.md "Setup links"): an organization admin hands it to the
 * customer's IT admin, who opens a hosted page scoped to one organization and one purpose
 * without a console account. The link's token is stored only as SHA-256 and opens the page once:
 * that first open binds the link to the browser that opened it (`session_hash`, the SHA-256 of an
 * HttpOnly cookie scoped to the link's path) until `expires_at`.
 */
export const setupLinks = pgTable(
  'setup_links',
  {
    /** `setl_` prefixed id; also the link's path segment (`/setup/<id>`). */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    purpose: text('purpose', { enum: ['sso', 'directory', 'domain'] }).notNull(),
    /** What the admin calls it (who it is for), shown in the console. */
    label: text('label').notNull(),
    /** SHA-256 (hex) of the link's token; the token is in the URL shown once. */
    tokenHash: text('token_hash').notNull(),
    /** SHA-256 (hex) of the cookie the first open set; null until opened. */
    sessionHash: text('session_hash'),
    /**
     * The record the page made or works on (`ssoc_`, `dir_`, `dom_`), once there is one: the page
     * touches no other record of the organization.
     */
    targetId: text('target_id'),
    /** The person whose standing the link acts with: voided when they are no org admin any more. */
    createdByUserId: text('created_by_user_id').notNull(),
    /** The actor label of the creator (an email or an API key's name), for the console. */
    createdByLabel: text('created_by_label'),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
    openedAt: timestamp('opened_at', { withTimezone: true, mode: 'date', precision: 3 }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date', precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('setup_links_token_hash_key').on(t.tokenHash),
    index('setup_links_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
  ],
);
