import { boolean, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './identity.ts';
import { organizations } from './organizations.ts';

/**
 * Invitations to join an organization. The token is shown once (in the create answer and the
 * invite link); only its SHA-256 is kept. Status is derived: revoked, accepted, expired or pending.
 */
export const invitations = pgTable(
  'invitations',
  {
    /** `inv_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Lower-cased. */
    email: text('email').notNull(),
    /** The role the member gets on acceptance; checked to exist when the invitation is created. */
    roleKey: text('role_key').notNull(),
    /** Hex SHA-256 of the invitation token. */
    tokenHash: text('token_hash').notNull().unique(),
    /** When false the admin chose to let any signed-in user with the link accept it. */
    requireEmailMatch: boolean('require_email_match').notNull().default(true),
    invitedByUserId: text('invited_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    acceptedAt: timestamp('accepted_at', { withTimezone: true, mode: 'date' }),
    acceptedByUserId: text('accepted_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('invitations_tenant_created_idx').on(t.tenantId, t.createdAt, t.id)],
);
