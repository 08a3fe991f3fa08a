import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/**
 * Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third
 * parties an organization allows"). No row: the default (`any`, each person still consents).
 */
export const thirdPartyAccess = pgTable('third_party_access', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  mode: text('mode', { enum: ['off', 'any', 'listed'] }).notNull(),
  /** Client ids (metadata document URLs) or https URL prefixes ending in `*`; used when `mode` is listed. */
  clients: text('clients').array().notNull().default([]),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});
