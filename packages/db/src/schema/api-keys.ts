import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './identity.ts';
import { organizations } from './organizations.ts';

/**
 * Tenant API keys: `Authorization: Bearer sk_live_...` on backend routes, limited to the
 * organization and to `scopes` (permission names). Only the SHA-256 of the secret is kept.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    /** `key_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Permission names, sorted, no repeats. */
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
    /** Hex SHA-256 of the current secret. */
    secretHash: text('secret_hash').notNull().unique(),
    /** `sk_live_` + 4 characters, to tell keys apart. */
    secretPrefix: text('secret_prefix').notNull(),
    createdByUserId: text('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    /** Written at most once a minute per key by a batched flush, never per request. */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
    rotatedAt: timestamp('rotated_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('api_keys_tenant_created_idx').on(t.tenantId, t.createdAt, t.id)],
);

/** What an audit entry says about who acted. */
export type AuditActorType = 'user' | 'api_key' | 'system' | 'setup_link';
