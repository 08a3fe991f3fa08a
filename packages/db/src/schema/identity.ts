import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
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
