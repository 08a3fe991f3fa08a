import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { isSystemRole } from '@svc/contracts/permissions';
import type {
  TCreateUserRequest,
  TGetUserRequest,
  TListUsersRequest,
  TRemoveUserRequest,
  TRemoveUserResponse,
  TUpdateUserRequest,
  TUser,
  TUserPage,
} from '@svc/contracts/users';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { findUnlinkedUserByEmail, findUserBySubject, insertUser, type UserRow } from '@svc/db/queries/identity';
import {
  addOrgMember,
  countOtherActiveOrgAdmins,
  declineInvitedMembership,
  findOnlyVerifiedUserByEmail,
  findOrgUser,
  isOrgMemberEmail,
  isPlatformAdminMember,
  linkUserToSubject,
  listOrgUsers,
  lockEmail,
  lockOrgAdmins,
  moveSessionsOfMemberOut,
  type OrgUserRow,
  removeOrgMember,
  setOrgMemberStatus,
  updateOrgMemberRole,
  updateOrgUserProfile,
} from '@svc/db/queries/users';
import type { EngineAdminApi } from '../../env.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable, assertMembershipsManaged, isPlatformAdmin, permissionsOfRole } from '../access/authorize.ts';
import { grantsOfRole } from '../access/role-grants.ts';
import { revokeKeysOfCreator } from '../api-keys/service.ts';
import { endSessions } from '../session-store/end.ts';
import { claimSeat } from '../subscriptions/enforce.ts';
import { type ProvisionedIdentity, provisionEngineUser } from './engine-users.ts';

/** What creating a user needs besides the database: the engine admin API, when configured. */
export type UsersDeps = { db: Db; engineAdmin: EngineAdminApi | null };

/**
 * A member as the organization sees them. Until the person accepts an `invited` membership, the
 * organization is shown only what it typed (email, name, role) and when it added them: never the
 * person's own name, email, verification, sign-in history or account age.
 */
export function toUser(row: OrgUserRow): TUser {
  if (row.status === 'invited') {
    return {
      id: row.id,
      email: row.invitedEmail ?? row.email,
      name: row.invitedName ?? '',
      emailVerified: false,
      status: row.status,
      roleKey: row.roleKey,
      lastSignInAt: null,
      createdAt: row.createdAt.toISOString(),
      joinedAt: row.createdAt.toISOString(),
    };
  }
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    emailVerified: row.emailVerified,
    status: row.status,
    roleKey: row.roleKey,
    lastSignInAt: row.lastSignInAt?.toISOString() ?? null,
    createdAt: row.userCreatedAt.toISOString(),
    joinedAt: row.createdAt.toISOString(),
  };
}

/** The email an audit entry names for a member: the one the organization was shown. */
function shownEmail(row: OrgUserRow): string {
  return row.status === 'invited' ? (row.invitedEmail ?? row.email) : row.email;
}

/** A role key is a system role, a product role or a custom role of the organization; anything else is a 400. */
async function assertRoleExists(db: DbOrTx, tenantId: string, roleKey: string): Promise<void> {
  if (isSystemRole(roleKey) || (await grantsOfRole(db, tenantId, roleKey))) {
    return;
  }
  throw new AppError('unknown_role', `no role ${roleKey} in this organization (system roles: org_admin, org_member)`);
}

const USER_NOT_FOUND = 'user not found';

/** GET /v1/users: the organization's members as users, newest member first. */
export async function listUsers(db: Db, { organization }: Access, input: TListUsersRequest): Promise<TUserPage> {
  const scope = JSON.stringify(['users', organization.id, input.status ?? null, input.email ?? null]);
  const after = decodeCursor(scope, input.cursor);
  const rows = await listOrgUsers(db, {
    tenantId: organization.id,
    ...(input.status !== undefined ? { status: input.status } : {}),
    ...(input.email !== undefined ? { emailPrefix: input.email } : {}),
    ...(after ? { after } : {}),
    limit: input.limit + 1,
  });
  return toPage(scope, rows, input.limit, toUser);
}

/**
 * GET /v1/users/{id}: one member of the organization (users.read), as the list shows them. A
 * person who is not a member of it is 404 like an id that does not exist, whatever other
 * organization they are in.
 */
export async function getUser(db: Db, { organization }: Access, input: TGetUserRequest): Promise<TUser> {
  const untrustedUserId = input.id;
  const row = await findOrgUser(db, { tenantId: organization.id, userId: untrustedUserId });
  if (!row) {
    throw new AppError('not_found', 'no such user in this organization');
  }
  return toUser(row);
}

/**
 * POST /v1/users: adds a person to the organization as an `invited` membership. Whatever the
 * email (a person who signed in before, a platform admin, or an email svc has never seen), the
 * membership grants nothing until the person, signed in with it, accepts it
 * (POST /v1/me/memberships/{organizationId}/accept); until then the organization sees only what
 * it typed. Invited memberships hold a seat from the moment they are created (the seat rule of
 * this route is unchanged); declining or removing one frees it.
 *
 * Order, so that a failure never leaves half a user: the engine first (when its admin API is
 * configured), then svc in one transaction (user row, membership, audit entry). An engine failure
 * writes nothing in svc. A failure after the engine call leaves only an engine account that
 * belongs to no organization, and a retry reuses it (the engine is asked by email first).
 *
 * Which svc user gets the membership (under a per-email lock, so concurrent creates and sign-ins
 * of one email cannot split it):
 * - an engine account svc may trust (see provisionEngineUser): the user linked to it, else the
 *   pre-provisioned user of this email (now linked to it), else a new user linked to it;
 * - an engine account svc may not trust: the user svc linked to it when pre-provisioning, as long
 *   as nobody has signed in with it (whoever signs in with an unverified email proves nothing);
 * - otherwise: the pre-provisioned user of this email, else the one user who signed in with this
 *   email verified by the engine, else a new pre-provisioned user (no subject). Sign-in links it
 *   later by subject or by an engine-verified email only (modules/identity).
 */
export async function createUser(deps: UsersDeps, access: Access, request: RequestMeta, input: TCreateUserRequest): Promise<TUser> {
  const { db } = deps;
  const { organization, principal } = access;
  assertMembershipsManaged(organization);
  const tenantId = organization.id;
  const roleKey = input.roleKey ?? 'org_member';
  const name = input.name ?? '';
  await assertRoleExists(db, tenantId, roleKey);
  // A tenant API key with users.manage cannot create a member above its own scopes.
  assertGrantable(access, await permissionsOfRole(db, tenantId, roleKey));
  const alreadyMember = () =>
    new AppError('already_member', `a user with the email ${input.email} is already a member of this organization`);
  if (await isOrgMemberEmail(db, { tenantId, email: input.email })) {
    throw alreadyMember();
  }
  const engine: ProvisionedIdentity | null = deps.engineAdmin
    ? await provisionEngineUser(deps.engineAdmin, { email: input.email, name })
    : null;

  return db.transaction(async (tx) => {
    await lockEmail(tx, input.email);
    if (await isOrgMemberEmail(tx, { tenantId, email: input.email })) {
      throw alreadyMember();
    }
    const user = await userForEmail(tx, { email: input.email, name, engine });
    // The route's gate checked seats before this transaction; this check holds the seat lock
    // until the member is committed, so concurrent adds cannot exceed the limit. An invited
    // membership holds its seat from now on (accepting it adds none).
    await claimSeat(tx, tenantId);
    const added = await addOrgMember(tx, {
      tenantId,
      userId: user.id,
      roleKey,
      status: 'invited',
      invitedEmail: input.email,
      invitedName: name,
    });
    if (!added) {
      throw alreadyMember();
    }
    // Only what the organization typed: whether svc or the engine knew the email says something
    // about the person, who has not accepted anything yet.
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'user.created',
      target: { type: 'user', id: user.id },
      summary: { email: input.email, roleKey, status: 'invited', ...(input.name !== undefined ? { name: input.name } : {}) },
    });
    const row = await findOrgUser(tx, { tenantId, userId: user.id });
    if (!row) {
      throw new Error('membership vanished inside its transaction');
    }
    return toUser(row);
  });
}

async function userForEmail(tx: DbOrTx, opts: { email: string; name: string; engine: ProvisionedIdentity | null }): Promise<UserRow> {
  const { email, name, engine } = opts;
  const subject = engine?.trusted ? engine.subject : null;
  if (engine) {
    const linked = await findUserBySubject(tx, engine.subject);
    if (linked && (engine.trusted || linked.lastSignInAt === null)) {
      return linked;
    }
  }
  const placeholder = await findUnlinkedUserByEmail(tx, email);
  if (placeholder) {
    if (subject !== null && (await linkUserToSubject(tx, { id: placeholder.id, engineSubject: subject }))) {
      return { ...placeholder, engineSubject: subject };
    }
    return placeholder;
  }
  if (subject === null) {
    const verified = await findOnlyVerifiedUserByEmail(tx, email);
    if (verified) {
      return verified;
    }
  }
  return insertUser(tx, { id: newId('user'), engineSubject: subject, email, name, emailVerified: false });
}

/**
 * PATCH /v1/users/{id}: what an organization changes is the membership.
 *
 * - `roleKey` and `status` (suspend or reactivate) act on the membership of this organization
 *   only. A suspended membership leaves the user's session memberships at once on every API
 *   process (the row's update bumps users.memberships_version), and the user's sessions that have
 *   this organization open move to another of their organizations in the same transaction: they
 *   keep every other organization and their sign-in. The tenant API keys they created in this
 *   organization are revoked in the same transaction (a reactivation does not revive them). An
 *   `invited` membership is the person's to accept: its status cannot be set (409
 *   membership_pending); its role can.
 * - `name` and `accountStatus` are the person's own (one name everywhere; a suspended account
 *   cannot sign in anywhere): platform admins only, anyone else gets 403 user_profile_forbidden.
 *   Suspending an account ends all of the person's sessions and revokes the API keys they
 *   created in every organization, in the same transaction.
 * - Nobody but a platform admin changes the role or status of a platform admin who accepted the
 *   membership (403 platform_admin_protected), and the platform workspace's members follow the
 *   engine's platform admin group (409 platform_workspace_managed). An `invited` membership is
 *   treated alike whoever the person is (anyone's email can be added: a difference would tell
 *   the organization who the platform admins are); it grants nothing until accepted.
 * - An organization keeps at least one active org_admin: demoting or suspending the last one is a
 *   409 last_org_admin (checked under a per-organization lock, so two admins demoting each other
 *   at once cannot both succeed).
 */
export async function updateUser(db: Db, access: Access, request: RequestMeta, input: TUpdateUserRequest): Promise<TUser> {
  const { principal } = access;
  const platformAdmin = isPlatformAdmin(principal);
  if ((input.name !== undefined || input.accountStatus !== undefined) && !platformAdmin) {
    throw new AppError(
      'user_profile_forbidden',
      "a person's name and account status are their own: only they (through the identity engine) or a platform admin change them; change their role or membership status here instead",
    );
  }
  const membershipChange = input.roleKey !== undefined || input.status !== undefined;
  if (membershipChange) {
    assertMembershipsManaged(access.organization);
  }
  const tenantId = access.organization.id;
  const userId = input.id;
  return db.transaction(async (tx) => {
    await lockOrgAdmins(tx, tenantId);
    const current = await findOrgUser(tx, { tenantId, userId });
    if (!current) {
      throw new AppError('not_found', USER_NOT_FOUND);
    }
    if (membershipChange && !platformAdmin && (await isPlatformAdminMember(tx, { tenantId, userId }))) {
      throw new AppError(
        'platform_admin_protected',
        'this member is a platform admin: nobody in an organization may suspend, demote or remove them',
      );
    }
    // A tenant API key acts only on members at or below its scopes, and assigns no role above
    // them: a users.manage key can neither promote someone to org_admin nor suspend an admin.
    assertGrantable(access, await permissionsOfRole(tx, tenantId, current.roleKey));
    if (input.roleKey !== undefined) {
      assertGrantable(access, await permissionsOfRole(tx, tenantId, input.roleKey));
    }
    if (input.status !== undefined && current.status === 'invited') {
      throw new AppError('membership_pending', 'this person has not accepted the membership yet: only they can; remove it to withdraw it');
    }
    const next = {
      name: input.name ?? current.name,
      roleKey: input.roleKey ?? current.roleKey,
      status: input.status ?? current.status,
      accountStatus: input.accountStatus ?? current.accountStatus,
    };
    const changes: Record<string, { from: string; to: string }> = {};
    for (const key of ['name', 'roleKey', 'status', 'accountStatus'] as const) {
      if (next[key] !== current[key]) {
        changes[key] = { from: current[key], to: next[key] };
      }
    }
    if (changes.roleKey) {
      await assertRoleExists(tx, tenantId, next.roleKey);
    }
    const adminNow = current.roleKey === 'org_admin' && current.status === 'active';
    const adminAfter = next.roleKey === 'org_admin' && next.status === 'active';
    if (adminNow && !adminAfter && (await countOtherActiveOrgAdmins(tx, { tenantId, exceptUserId: userId })) === 0) {
      throw new AppError('last_org_admin', 'this is the last active org admin of the organization: make someone else org_admin first');
    }
    if (changes.roleKey) {
      await updateOrgMemberRole(tx, { tenantId, userId, roleKey: next.roleKey });
    }
    let sessionsMoved = 0;
    if (changes.status && next.status !== 'invited') {
      await setOrgMemberStatus(tx, { tenantId, userId, status: next.status });
      if (next.status === 'suspended') {
        sessionsMoved = await moveSessionsOfMemberOut(tx, { tenantId, userId });
        // The sign-ins to applications made for this organization end with the membership.
        await endSessions(tx, { kind: 'membership_ended', tenantId, userId });
        // And the keys they created here, for good: a reactivation must not revive them.
        await revokeKeysOfCreator(tx, principal, request, { userId, scope: { tenantId }, reason: 'membership_suspended' });
      }
    }
    if (changes.name || changes.accountStatus) {
      await updateOrgUserProfile(tx, {
        tenantId,
        userId,
        ...(changes.name ? { name: next.name } : {}),
        ...(changes.accountStatus ? { status: next.accountStatus } : {}),
      });
    }
    let sessionsEnded = 0;
    if (changes.accountStatus?.to === 'suspended') {
      sessionsEnded = (await endSessions(tx, { kind: 'account_suspended', tenantId, userId })).sessionIds.length;
      // A suspended account stands nowhere: its keys go in every organization, for good.
      await revokeKeysOfCreator(tx, principal, request, { userId, scope: 'all_organizations', reason: 'account_suspended' });
    }
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'user.updated',
      target: { type: 'user', id: userId },
      summary: {
        changes,
        ...(changes.status?.to === 'suspended' ? { sessionsMoved } : {}),
        ...(changes.accountStatus?.to === 'suspended' ? { sessionsEnded } : {}),
      },
    });
    const row = await findOrgUser(tx, { tenantId, userId });
    if (!row) {
      throw new Error('membership vanished inside its transaction');
    }
    return toUser(row);
  });
}

/**
 * DELETE /v1/users/{id}: removes the member from this organization (docs/api.md "Users", org-admin
 * mutation). The person, their sign-in and their other memberships stay.
 *
 * - The last active org_admin cannot be removed (409 last_org_admin, under the same lock as
 *   demotions), and a tenant API key removes nobody above its own scopes.
 * - The platform workspace's members follow the engine's platform admin group: 409
 *   platform_workspace_managed; a platform admin who accepted a membership is removed by nobody
 *   in a tenant (403 platform_admin_protected).
 * - Removing an `invited` membership withdraws the invitation (audited as membership.withdrawn,
 *   not member.removed: the person never was a member) and does nothing else, for anyone, so the
 *   answer says nothing of who the person is.
 * - Otherwise, sessions that had this organization open move to another of the user's organizations in the
 *   same transaction, so their next request no longer sees this one, and the tenant API keys the
 *   person created here are revoked (being invited again does not revive them).
 */
export async function removeUser(db: Db, access: Access, request: RequestMeta, input: TRemoveUserRequest): Promise<TRemoveUserResponse> {
  const { organization, principal } = access;
  assertMembershipsManaged(organization);
  const tenantId = organization.id;
  const userId = input.id;
  const platformAdmin = isPlatformAdmin(principal);
  return db.transaction(async (tx) => {
    await lockOrgAdmins(tx, tenantId);
    const current = await findOrgUser(tx, { tenantId, userId });
    if (!current) {
      throw new AppError('not_found', USER_NOT_FOUND);
    }
    if (!platformAdmin && (await isPlatformAdminMember(tx, { tenantId, userId }))) {
      throw new AppError(
        'platform_admin_protected',
        'this member is a platform admin: nobody in an organization may suspend, demote or remove them',
      );
    }
    assertGrantable(access, await permissionsOfRole(tx, tenantId, current.roleKey));
    if (current.status === 'invited') {
      // Withdrawing an invitation (the same deletion as the person's decline): they never were a
      // member, so nothing else of theirs is the organization's to touch. A platform admin may
      // have the organization open, or keys in it, as a platform admin: moving those sessions or
      // revoking those keys would act on them, and answer differently for them than for anyone.
      if (!(await declineInvitedMembership(tx, { tenantId, userId }))) {
        throw new AppError('not_found', USER_NOT_FOUND);
      }
      await recordAudit(tx, principal, request, {
        tenantId,
        action: 'membership.withdrawn',
        target: { type: 'user', id: userId },
        summary: { email: shownEmail(current), roleKey: current.roleKey, status: current.status },
      });
      return { id: userId, removed: true, sessionsMoved: 0 };
    }
    const isActiveAdmin = current.roleKey === 'org_admin' && current.status === 'active';
    if (isActiveAdmin && (await countOtherActiveOrgAdmins(tx, { tenantId, exceptUserId: userId })) === 0) {
      throw new AppError('last_org_admin', 'this is the last active org admin of the organization: make someone else org_admin first');
    }
    const { removed, sessionsMoved } = await removeOrgMember(tx, { tenantId, userId });
    if (!removed) {
      throw new AppError('not_found', USER_NOT_FOUND);
    }
    // The sign-ins to applications made for this organization end with the membership, and the
    // keys they created here go for good: being invited again must not revive them.
    await endSessions(tx, { kind: 'membership_ended', tenantId, userId });
    await revokeKeysOfCreator(tx, principal, request, { userId, scope: { tenantId }, reason: 'membership_removed' });
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'member.removed',
      target: { type: 'user', id: userId },
      summary: { email: shownEmail(current), roleKey: current.roleKey, status: current.status },
    });
    return { id: userId, removed: true, sessionsMoved };
  });
}
