import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { applications } from './applications.ts';
import { organizations } from './organizations.ts';

/**
 * A person known to svc. The identity engine owns credentials; svc keeps the engine subject it
 * signed in with, the email and whether the engine marked it verified.
 */
export const users = pgTable(
  'users',
  {
    /** `usr_` prefixed id. */
    id: text('id').primaryKey(),
    /** The engine's `sub`; null for a user pre-provisioned by an admin and not yet signed in. */
    engineSubject: text('engine_subject').unique(),
    /** Lower-cased. */
    email: text('email').notNull(),
    /** As the engine last asserted it; only a verified email may link a pre-provisioned user. */
    emailVerified: boolean('email_verified').notNull().default(false),
    name: text('name').notNull().default(''),
    /** A suspended user cannot sign in and their sessions end at once. */
    status: text('status', { enum: ['active', 'suspended'] })
      .notNull()
      .default('active'),
    lastSignInAt: timestamp('last_sign_in_at', { withTimezone: true, mode: 'date' }),
    /**
     * Bumped by triggers (migration 0007) whenever the user's memberships, or the name, slug or
     * kind of an organization they belong to, change. Session checks read it with the session and
     * reuse a process's cached memberships while it is unchanged.
     */
    membershipsVersion: bigint('memberships_version', { mode: 'number' }).notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('users_email_idx').on(t.email)],
);

/**
 * What a membership is: `invited` (an organization added the person, who has not accepted yet:
 * it grants nothing, and the organization sees only what it typed), `active`, or `suspended`
 * (by the organization, in this organization only: the person keeps every other one).
 */
export const MEMBERSHIP_STATUSES = ['invited', 'active', 'suspended'] as const;
export type MembershipStatus = (typeof MEMBERSHIP_STATUSES)[number];

/** A user's membership of an organization, with the role key it holds there. */
export const memberships = pgTable(
  'memberships',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** `org_admin`, `org_member` or a custom role's key. */
    roleKey: text('role_key').notNull(),
    /** Only an active membership lets its user act in the organization (see MEMBERSHIP_STATUSES). */
    status: text('status', { enum: MEMBERSHIP_STATUSES }).notNull().default('active'),
    /**
     * What the organization typed when it added the person (POST /v1/users): the email and the
     * name (empty when none). While the membership is `invited` the organization is shown these,
     * never the person's own name, email, or sign-in history. Null for memberships the person
     * entered themselves (sign-up, invitation link, creating an organization).
     */
    invitedEmail: text('invited_email'),
    invitedName: text('invited_name'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    check('memberships_status_check', sql`${t.status} in ('invited', 'active', 'suspended')`),
    uniqueIndex('memberships_tenant_user_key').on(t.tenantId, t.userId),
    index('memberships_user_idx').on(t.userId),
    // Members and users lists page newest first by (created_at, user_id) within an organization.
    index('memberships_tenant_created_idx').on(t.tenantId, t.createdAt, t.userId),
  ],
);

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
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('sessions_user_idx').on(t.userId),
    index('sessions_tenant_created_idx').on(t.activeTenantId, t.createdAt),
    index('sessions_expires_idx').on(t.expiresAt).where(sql`${t.revokedAt} is null`),
  ],
);

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
