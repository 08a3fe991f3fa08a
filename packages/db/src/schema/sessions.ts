import { sql } from 'drizzle-orm';
import { boolean, index, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { applications } from './applications.ts';
import { users } from './identity.ts';
import { organizations } from './organizations.ts';

/**
 * Hosted sessions (the Lucia guide's design): the cookie holds a random token, this table holds
 * only its SHA-256. Validation is one indexed read; expiry slides at most once an hour.
 */
export const sessions = pgTable(
  'sessions',
  {
    /** `ses_` prefixed id: what admins see and revoke; never the token. */
    id: text('id').primaryKey(),
    /** Hex SHA-256 of the cookie token. */
    tokenHash: text('token_hash').notNull().unique(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The workspace the session opened (a tenant, or the platform workspace). */
    activeTenantId: text('active_tenant_id').references(() => organizations.id, { onDelete: 'set null' }),
    /** The engine said the user is in PLATFORM_ADMIN_GROUP at sign-in. */
    isPlatformAdmin: boolean('is_platform_admin').notNull().default(false),
    /** Idle expiry: moved forward (at most hourly) while the session is used. */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** Absolute expiry: never moves. */
    absoluteExpiresAt: timestamp('absolute_expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** Last time the expiry was refreshed: "last seen" to within an hour. */
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    /**
     * The engine's ID token from the sign-in that opened this session, sealed with the secret box
     * (context `engineIdTokenContext(id)`, so it opens for this row only): sent as `id_token_hint`
     * when the session ends, so the engine ends its own session too (docs/engines.md). Null for
     * sessions opened before svc kept it, and once the session is revoked. Read only by
     * `findEngineIdToken`: never selected with the rest of a session, never sent to a browser.
     */
    engineIdToken: text('engine_id_token'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('sessions_user_idx').on(t.userId),
    index('sessions_tenant_created_idx').on(t.activeTenantId, t.createdAt),
    index('sessions_expires_idx').on(t.expiresAt).where(sql`${t.revokedAt} is null`),
  ],
);

/** The secret-box context of a session's sealed engine ID token: bound to that session. */
export function engineIdTokenContext(sessionId: string): string {
  return `sessions.engine_id_token:${sessionId}`;
}

/**
 * Which applications each svc session signed in to (svc's OpenID Provider granted an
 * authorization): one row per session and application, written when the grant is made. What the
 * Sessions page lists, and whom a session's end is announced to by OIDC Back-Channel Logout.
 * A sign-in again after the row ended (the application was disabled, the membership ended)
 * starts it anew.
 */
export const sessionApplications = pgTable(
  'session_applications',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    applicationId: text('application_id')
      .notNull()
      .references(() => applications.id, { onDelete: 'cascade' }),
    /** The organization the grant speaks for (scope `organization`); null without that scope. */
    organizationId: text('organization_id').references(() => organizations.id, { onDelete: 'cascade' }),
    firstSignedInAt: timestamp('first_signed_in_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    lastSignedInAt: timestamp('last_signed_in_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    /** When the application's sign-in ended (the session, its membership or the application did); null while it stands. */
    endedAt: timestamp('ended_at', { withTimezone: true, mode: 'date', precision: 3 }),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.applicationId] }),
    index('session_applications_application_idx').on(t.applicationId).where(sql`${t.endedAt} is null`),
    index('session_applications_organization_idx').on(t.organizationId).where(sql`${t.endedAt} is null`),
  ],
);
