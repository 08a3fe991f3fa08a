import { z } from 'zod';
import { ZEmail, ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';
import { ZRoleKey } from './permissions.ts';

/** `usr_` + 20 base62: a user id. Anything else is a 400, never a lookup. */
export const ZUserId = z.string().regex(/^usr_[0-9A-Za-z]{20}$/, 'expected a user id (usr_...)');

/**
 * A membership's status: `invited` (the organization added the person, who has not accepted yet:
 * it grants nothing, and the organization sees only the email, name and role it typed),
 * `active`, or `suspended` (by this organization: the person loses access to it at once and
 * keeps every other organization and their sign-in).
 */
export const ZMembershipStatus = z.enum(['invited', 'active', 'suspended']).meta({ id: 'MembershipStatus' });
export type TMembershipStatus = z.infer<typeof ZMembershipStatus>;

/** What an organization may set a membership to: suspend it, or reactivate it. */
export const ZMembershipStatusChange = z.enum(['active', 'suspended']).meta({ id: 'MembershipStatusChange' });

/** A person's own account (users.status): a suspended account cannot sign in anywhere. Platform admins only. */
export const ZAccountStatus = z.enum(['active', 'suspended']).meta({ id: 'AccountStatus' });
export type TAccountStatus = z.infer<typeof ZAccountStatus>;

/**
 * A member of an organization, as its admins see them (GET /v1/users). While the membership is
 * `invited`, `email` and `name` are what the organization typed, `emailVerified` is false,
 * `lastSignInAt` is null and `createdAt` is when the membership was created: nothing of the
 * person is shown before they accept.
 */
export const ZUser = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    /** The identity engine said this email is verified (at the user's last sign-in). */
    emailVerified: z.boolean(),
    /** The membership's status in this organization. */
    status: ZMembershipStatus,
    /** The role the user holds in this organization. */
    roleKey: z.string(),
    /** Null until the first sign-in (a pre-provisioned user), and while invited. */
    lastSignInAt: z.string().nullable(),
    createdAt: z.string(),
    /** When the user became a member of this organization (the list's order, newest first). */
    joinedAt: z.string(),
  })
  .meta({ id: 'User' });
export type TUser = z.infer<typeof ZUser>;

export const ZUserPage = ZPage(ZUser).meta({ id: 'UserPage' });
export type TUserPage = z.infer<typeof ZUserPage>;

/** GET /v1/users?organization_slug=&status=&email=&limit=&cursor= */
export const ZListUsersRequest = ZListQuery.extend({
  /** The organization; without it, the session's active workspace (or the API key's organization). */
  organization_slug: ZSlug.optional(),
  /** Members whose membership has this status. */
  status: ZMembershipStatus.optional(),
  /** Users whose email starts with this (case-insensitive). */
  email: z.string().trim().toLowerCase().min(1).max(254).optional(),
});
export type TListUsersRequest = z.infer<typeof ZListUsersRequest>;

/**
 * POST /v1/users: adds a person to the organization by email, as an `invited` membership the
 * person accepts (or declines) when signed in (POST /v1/me/memberships/{organizationId}/accept).
 * `roleKey` defaults to org_member and must be a system role or one of the organization's custom
 * roles.
 */
export const ZCreateUserRequest = z.object({
  organization_slug: ZSlug.optional(),
  email: ZEmail,
  name: ZName.optional(),
  roleKey: ZRoleKey.optional(),
});
export type TCreateUserRequest = z.infer<typeof ZCreateUserRequest>;

/**
 * PATCH /v1/users/{id}: the membership's role or status in this organization (`status` suspends
 * or reactivates the membership here only). `name` and `accountStatus` change the person
 * everywhere: platform admins only (403 user_profile_forbidden otherwise).
 */
export const ZUpdateUserRequest = z
  .object({
    id: ZUserId,
    organization_slug: ZSlug.optional(),
    name: ZName.optional(),
    roleKey: ZRoleKey.optional(),
    status: ZMembershipStatusChange.optional(),
    accountStatus: ZAccountStatus.optional(),
  })
  .refine((v) => v.name !== undefined || v.roleKey !== undefined || v.status !== undefined || v.accountStatus !== undefined, {
    message: 'send name, roleKey, status or accountStatus',
  });
export type TUpdateUserRequest = z.infer<typeof ZUpdateUserRequest>;

/**
 * DELETE /v1/users/{id}?organization_slug=: removes the user from the organization (the person
 * and their other memberships stay). Their sessions that had this organization open move to
 * another of their organizations.
 */
/** GET /v1/users/{id}: one member of the organization (default: the active workspace, or the API key's). */
export const ZGetUserRequest = z.object({
  id: ZUserId,
  organization_slug: ZSlug.optional(),
});
export type TGetUserRequest = z.infer<typeof ZGetUserRequest>;

export const ZRemoveUserRequest = z.object({
  id: ZUserId,
  organization_slug: ZSlug.optional(),
});
export type TRemoveUserRequest = z.infer<typeof ZRemoveUserRequest>;

export const ZRemoveUserResponse = z
  .object({
    id: z.string(),
    removed: z.literal(true),
    /** Sessions whose active workspace was this organization and moved elsewhere. */
    sessionsMoved: z.number().int(),
  })
  .meta({ id: 'RemoveUserResponse' });
export type TRemoveUserResponse = z.infer<typeof ZRemoveUserResponse>;
