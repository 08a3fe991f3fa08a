import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { isSystemRole } from '@svc/contracts/permissions';
import type {
  TCreateUserRequest,
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
import { findRoleByKey } from '@svc/db/queries/roles';
import {
  addOrgMember,
  countOtherActiveOrgAdmins,
  findOnlyVerifiedUserByEmail,
  findOrgUser,
  isOrgMemberEmail,
  linkUserToSubject,
  listOrgUsers,
  lockEmail,
  lockOrgAdmins,
  type OrgUserRow,
  removeOrgMember,
  revokeSessionsOfOrgUser,
  sharesAnotherOrganization,
  updateOrgMemberRole,
  updateOrgUserProfile,
} from '@svc/db/queries/users';
import type { EngineAdminApi } from '../../env.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { assertGrantable, authorize, permissionsOfRole, type UntrustedOrganizationRef } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';
import { claimSeat } from '../subscriptions/enforce.ts';
import { type ProvisionedIdentity, provisionEngineUser } from './engine-users.ts';

/** What creating a user needs besides the database: the engine admin API, when configured. */
export type UsersDeps = { db: Db; engineAdmin: EngineAdminApi | null };

export function organizationRef(slug: string | undefined): UntrustedOrganizationRef {
  return slug === undefined ? {} : { slug };
}

export function toUser(row: OrgUserRow): TUser {
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

/** A role key is a system role or a custom role of the organization; anything else is a 400. */
async function assertRoleExists(db: DbOrTx, tenantId: string, roleKey: string): Promise<void> {
  if (isSystemRole(roleKey) || (await findRoleByKey(db, { tenantId, key: roleKey }))) {
    return;
  }
  throw new AppError('unknown_role', `no role ${roleKey} in this organization (system roles: org_admin, org_member)`);
}

const USER_NOT_FOUND = 'user not found';

/** GET /v1/users: the organization's members as users, newest member first. */
export async function listUsers(db: Db, principal: Principal, input: TListUsersRequest): Promise<TUserPage> {
  const { organization } = await authorize(db, principal, {
    organization: organizationRef(input.organization_slug),
    permission: 'users.read',
  });
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
 * POST /v1/users: pre-provisions a user in the organization.
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
export async function createUser(deps: UsersDeps, principal: Principal, request: RequestMeta, input: TCreateUserRequest): Promise<TUser> {
  const { db } = deps;
  const access = await authorize(db, principal, {
    organization: organizationRef(input.organization_slug),
    permission: 'users.manage',
    adminOnly: true,
  });
  const { organization } = access;
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
    // until the member is committed, so concurrent adds cannot exceed the limit.
    await claimSeat(tx, tenantId);
    if (!(await addOrgMember(tx, { tenantId, userId: user.id, roleKey }))) {
      throw alreadyMember();
    }
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'user.created',
      target: { type: 'user', id: user.id },
      summary: {
        email: input.email,
        roleKey,
        ...(input.name !== undefined ? { name: input.name } : {}),
        engineAccount: engine === null ? 'not configured' : engine.created ? 'created' : 'existing',
        linkedToEngine: user.engineSubject !== null,
      },
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
 * PATCH /v1/users/{id}: the member's role here, or the person's name or status.
 *
 * - An organization keeps at least one active org_admin: demoting or suspending the last one is a
 *   409 last_org_admin (checked under a per-organization lock, so two admins demoting each other
 *   at once cannot both succeed).
 * - Name and status belong to the person, not the membership (a suspended user cannot sign in
 *   anywhere). An org admin changes them only for a user who belongs to no other organization
 *   with other members (a workspace of their own does not count); otherwise 409 user_shared:
 *   one organization must not lock a person out of another. Platform admins may.
 * - Suspending ends all of the user's sessions in the same transaction: their next request, on
 *   any API process, is a 401.
 */
export async function updateUser(db: Db, principal: Principal, request: RequestMeta, input: TUpdateUserRequest): Promise<TUser> {
  const access = await authorize(db, principal, {
    organization: organizationRef(input.organization_slug),
    permission: 'users.manage',
    adminOnly: true,
  });
  const tenantId = access.organization.id;
  const userId = input.id;
  return db.transaction(async (tx) => {
    await lockOrgAdmins(tx, tenantId);
    const current = await findOrgUser(tx, { tenantId, userId });
    if (!current) {
      throw new AppError('not_found', USER_NOT_FOUND);
    }
    // A tenant API key acts only on members at or below its scopes, and assigns no role above
    // them: a users.manage key can neither promote someone to org_admin nor suspend an admin.
    assertGrantable(access, await permissionsOfRole(tx, tenantId, current.roleKey));
    if (input.roleKey !== undefined) {
      assertGrantable(access, await permissionsOfRole(tx, tenantId, input.roleKey));
    }
    const next = {
      name: input.name ?? current.name,
      roleKey: input.roleKey ?? current.roleKey,
      status: input.status ?? current.status,
    };
    const changes: Record<string, { from: string; to: string }> = {};
    for (const key of ['name', 'roleKey', 'status'] as const) {
      if (next[key] !== current[key]) {
        changes[key] = { from: current[key], to: next[key] };
      }
    }
    if (changes.roleKey) {
      await assertRoleExists(tx, tenantId, next.roleKey);
    }
    const platformAdmin = principal.kind === 'user' && principal.session.isPlatformAdmin;
    if ((changes.name || changes.status) && !platformAdmin && (await sharesAnotherOrganization(tx, { tenantId, userId }))) {
      throw new AppError(
        'user_shared',
        'this user also belongs to another organization: their name and status are theirs everywhere, so only a platform admin may change them (change their role here instead)',
      );
    }
    const adminNow = current.roleKey === 'org_admin' && current.status === 'active';
    const adminAfter = next.roleKey === 'org_admin' && next.status === 'active';
    if (adminNow && !adminAfter && (await countOtherActiveOrgAdmins(tx, { tenantId, exceptUserId: userId })) === 0) {
      throw new AppError('last_org_admin', 'this is the last active org admin of the organization: make someone else org_admin first');
    }
    if (changes.roleKey) {
      await updateOrgMemberRole(tx, { tenantId, userId, roleKey: next.roleKey });
    }
    if (changes.name || changes.status) {
      await updateOrgUserProfile(tx, {
        tenantId,
        userId,
        ...(changes.name ? { name: next.name } : {}),
        ...(changes.status ? { status: next.status } : {}),
      });
    }
    const sessionsEnded = changes.status?.to === 'suspended' ? await revokeSessionsOfOrgUser(tx, { tenantId, userId, at: new Date() }) : 0;
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'user.updated',
      target: { type: 'user', id: userId },
      summary: { changes, ...(changes.status?.to === 'suspended' ? { sessionsEnded } : {}) },
    });
    const row = await findOrgUser(tx, { tenantId, userId });
    if (!row) {
      throw new Error('membership vanished inside its transaction');
    }
    return toUser(row);
  });
}

/**
 * DELETE /v1/users/{id}: removes the member from this organization (SPEC.md 4.4 org-admin
 * mutation). The person, their sign-in and their other memberships stay.
 *
 * - The last active org_admin cannot be removed (409 last_org_admin, under the same lock as
 *   demotions), and a tenant API key removes nobody above its own scopes.
 * - The platform workspace's members follow the engine's platform admin group: 409 conflict.
 * - Sessions that had this organization open move to another of the user's organizations in the
 *   same transaction, so their next request no longer sees this one.
 */
export async function removeUser(
  db: Db,
  principal: Principal,
  request: RequestMeta,
  input: TRemoveUserRequest,
): Promise<TRemoveUserResponse> {
  const access = await authorize(db, principal, {
    organization: organizationRef(input.organization_slug),
    permission: 'users.manage',
    adminOnly: true,
  });
  const { organization } = access;
  if (organization.kind === 'platform') {
    throw new AppError(
      'conflict',
      "the platform workspace's members are the engine's platform admin group: change the group in the engine",
    );
  }
  const tenantId = organization.id;
  const userId = input.id;
  return db.transaction(async (tx) => {
    await lockOrgAdmins(tx, tenantId);
    const current = await findOrgUser(tx, { tenantId, userId });
    if (!current) {
      throw new AppError('not_found', USER_NOT_FOUND);
    }
    assertGrantable(access, await permissionsOfRole(tx, tenantId, current.roleKey));
    const isActiveAdmin = current.roleKey === 'org_admin' && current.status === 'active';
    if (isActiveAdmin && (await countOtherActiveOrgAdmins(tx, { tenantId, exceptUserId: userId })) === 0) {
      throw new AppError('last_org_admin', 'this is the last active org admin of the organization: make someone else org_admin first');
    }
    const { removed, sessionsMoved } = await removeOrgMember(tx, { tenantId, userId });
    if (!removed) {
      throw new AppError('not_found', USER_NOT_FOUND);
    }
    await recordAudit(tx, principal, request, {
      tenantId,
      action: 'member.removed',
      target: { type: 'user', id: userId },
      summary: { email: current.email, roleKey: current.roleKey },
    });
    return { id: userId, removed: true, sessionsMoved };
  });
}
