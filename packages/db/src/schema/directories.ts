import { sql } from 'drizzle-orm';
import { bigint, boolean, index, jsonb, pgTable, primaryKey, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './identity.ts';
import { organizations } from './organizations.ts';

/**
 * An organization's SCIM 2.0 directory (docs/enterprise.md "Directory sync"): the identity
 * provider's provisioning client authenticates with the directory's bearer token, stored only as
 * SHA-256, and provisions people (memberships) and groups (roles) in this organization only.
 */
export const scimDirectories = pgTable(
  'scim_directories',
  {
    /** `dir_` prefixed id; also the last segment of the SCIM base URL. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** SHA-256 (hex) of the bearer token; the token itself is shown once. */
    tokenHash: text('token_hash').notNull(),
    /** The token's first characters, to tell tokens apart in the console. */
    tokenPrefix: text('token_prefix').notNull(),
    /** The role of a provisioned person in no mapped group. */
    defaultRoleKey: text('default_role_key').notNull().default('org_member'),
    /** Group displayName (matched case-insensitively) -> role key; first match wins. */
    groupRoles: jsonb('group_roles').$type<{ group: string; roleKey: string }[]>().notNull().default([]),
    /** Who created it: the roles it gives may not exceed what they could grant. */
    createdByUserId: text('created_by_user_id'),
    lastRequestAt: timestamp('last_request_at', { withTimezone: true, mode: 'date', precision: 3 }),
    tokenRotatedAt: timestamp('token_rotated_at', { withTimezone: true, mode: 'date', precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('scim_directories_token_hash_key').on(t.tokenHash),
    index('scim_directories_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
  ],
);

/**
 * A SCIM User resource of a directory: the person (users) it provisions and what the identity
 * provider sent. The membership of the directory's organization is the person's standing there;
 * `active` is what the provider last said. One person is provisioned by one directory per
 * organization at most.
 */
export const scimUsers = pgTable(
  'scim_users',
  {
    /** `dsu_` prefixed id: the SCIM resource id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    directoryId: text('directory_id')
      .notNull()
      .references(() => scimDirectories.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** As sent; matched case-insensitively (RFC 7643 section 4.1.1: userName is not caseExact). */
    userName: text('user_name').notNull(),
    /** The provider's own id for the person; case-exact. */
    externalId: text('external_id'),
    displayName: text('display_name'),
    givenName: text('given_name'),
    familyName: text('family_name'),
    /** Lower-cased: the email the person was matched or created by. */
    email: text('email').notNull(),
    active: boolean('active').notNull().default(true),
    /** Bumped on every change: the resource's ETag version. */
    version: bigint('version', { mode: 'number' }).notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    // The `userName eq` filter every provider sends before a create: one index probe.
    uniqueIndex('scim_users_directory_user_name_key').on(t.directoryId, sql`lower(${t.userName})`),
    uniqueIndex('scim_users_directory_external_id_key').on(t.directoryId, t.externalId).where(sql`${t.externalId} is not null`),
    uniqueIndex('scim_users_tenant_user_key').on(t.tenantId, t.userId),
    index('scim_users_directory_created_idx').on(t.directoryId, t.createdAt, t.id),
    index('scim_users_directory_email_idx').on(t.directoryId, t.email),
    index('scim_users_user_idx').on(t.userId),
  ],
);

/** A SCIM Group resource of a directory: its members get the role the directory maps it to. */
export const scimGroups = pgTable(
  'scim_groups',
  {
    /** `dsg_` prefixed id: the SCIM resource id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    directoryId: text('directory_id')
      .notNull()
      .references(() => scimDirectories.id, { onDelete: 'cascade' }),
    displayName: text('display_name').notNull(),
    externalId: text('external_id'),
    version: bigint('version', { mode: 'number' }).notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('scim_groups_directory_display_name_idx').on(t.directoryId, sql`lower(${t.displayName})`),
    uniqueIndex('scim_groups_directory_external_id_key').on(t.directoryId, t.externalId).where(sql`${t.externalId} is not null`),
    index('scim_groups_directory_created_idx').on(t.directoryId, t.createdAt, t.id),
  ],
);

/** A member of a SCIM group: a SCIM user of the same directory. */
export const scimGroupMembers = pgTable(
  'scim_group_members',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    groupId: text('group_id')
      .notNull()
      .references(() => scimGroups.id, { onDelete: 'cascade' }),
    scimUserId: text('scim_user_id')
      .notNull()
      .references(() => scimUsers.id, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.scimUserId] }), index('scim_group_members_user_idx').on(t.scimUserId)],
);

/**
 * The last SCIM requests a directory received (the console's request log): method, path without
 * the query string, status. No header, body or token is kept.
 */
export const scimRequestLog = pgTable(
  'scim_request_log',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    directoryId: text('directory_id')
      .notNull()
      .references(() => scimDirectories.id, { onDelete: 'cascade' }),
    method: text('method').notNull(),
    path: text('path').notNull(),
    status: smallint('status').notNull(),
    at: timestamp('at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('scim_request_log_directory_idx').on(t.directoryId, t.id.desc())],
);
