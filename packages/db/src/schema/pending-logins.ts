import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * A sign-in between /auth/login and /auth/callback. The browser holds only a random handle in an
 * HttpOnly cookie; the row holds the OIDC secrets. The callback deletes the row as it reads it,
 * so a replayed or reordered callback finds nothing.
 */
export const pendingLogins = pgTable(
  'pending_logins',
  {
    /** Hex SHA-256 of the cookie handle. */
    handleHash: text('handle_hash').primaryKey(),
    state: text('state').notNull(),
    nonce: text('nonce').notNull(),
    codeVerifier: text('code_verifier').notNull(),
    /** Already sanitized (same-origin path or an exact allowlisted URL). */
    returnTo: text('return_to').notNull(),
    /** The application whose hosted page started it, if any. */
    applicationId: text('application_id'),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('pending_logins_expires_idx').on(t.expiresAt)],
);
