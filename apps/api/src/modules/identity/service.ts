import { AppError } from '@svc/contracts/errors';
import { newId, randomBase62 } from '@svc/contracts/ids';
import type { Db, DbOrTx } from '@svc/db/client';
import {
  findUnlinkedUserByEmail,
  findUserBySubject,
  insertMembership,
  insertUser,
  lockUserForTransaction,
  type MembershipView,
  membershipsOfUser,
  type UserRow,
  updateUserFromEngine,
} from '@svc/db/queries/identity';
import { ensureOrganization, insertOrganization, type OrganizationRow } from '@svc/db/queries/organizations';
import { adoptPreProvisionedUsers, lockEmail } from '@svc/db/queries/users';
import type { RequestMeta } from '../access/audit.ts';
import { revokeKeysOfCreator } from '../api-keys/service.ts';
import { slugify } from '../applications/service.ts';
import { autoJoinByEmailDomain } from '../domains/service.ts';
import { endSessions } from '../session-store/end.ts';

/** What svc takes from a verified ID token (jose checked signature, iss, aud, exp and nonce). */
export type EngineIdentity = { subject: string; email: string; emailVerified: boolean; name: string; groups: string[] };

export type Workspace = MembershipView['organization'];

export type SignInOutcome = { user: UserRow; workspace: Workspace; isPlatformAdmin: boolean };

export const PLATFORM_ORGANIZATION_SLUG = 'platform';

/** The request facts of a sign-in that did not come through an HTTP request (the operator's tools, tests). */
const ENGINE_SIGN_IN: RequestMeta = { ipAddress: null, userAgent: null, requestId: 'engine-sign-in' };

/**
 * docs/authentik.md, "the platform admin group": a member of the platform admin group opens the platform workspace; anyone else
 * gets a tenant workspace on first sign-in, with the org admin role, exactly once however many
 * callbacks race (a per-user advisory lock serialises them; the second finds the membership).
 * Only active memberships count as the user's workspace: an organization that added them
 * (POST /v1/users, an `invited` membership) is theirs only once they accept it, so a first
 * sign-in opens a workspace of their own even then.
 *
 * A user pre-provisioned by an admin (no engine subject yet) is linked by email only when the
 * engine says that email is verified: an unverified email would let anyone claim the account.
 * (A user created in the engine by POST /v1/users already carries its engine subject and is
 * found by it.) A person who already had a user of their own gets the pre-provisioned user's
 * memberships (still invited), again only once the engine says the email is verified.
 */
export async function signInFromEngine(
  db: Db,
  identity: EngineIdentity,
  opts: {
    platformAdminGroup: string;
    /** The sign-in request, for the audit entries svc writes on its own (keys revoked on leaving the group). */
    request?: RequestMeta;
  },
): Promise<SignInOutcome> {
  const email = identity.email.trim().toLowerCase();
  const now = new Date();
  return db.transaction(async (tx) => {
    if (identity.emailVerified) {
      // Placeholders of this email are linked or folded in below: not while an admin adds one.
      await lockEmail(tx, email);
    }
    let user = await findUserBySubject(tx, identity.subject);
    if (!user && identity.emailVerified) {
      user = await findUnlinkedUserByEmail(tx, email);
    }
    if (!user) {
      user = await insertUser(tx, {
        id: newId('user'),
        engineSubject: identity.subject,
        email,
        emailVerified: identity.emailVerified,
        name: identity.name,
        lastSignInAt: now,
      });
    }
    if (user.status === 'suspended') {
      throw new AppError('user_suspended', 'this account is suspended; ask an administrator of your organization');
    }
    user = await updateUserFromEngine(tx, {
      id: user.id,
      engineSubject: identity.subject,
      email,
      emailVerified: identity.emailVerified,
      name: identity.name || user.name,
      at: now,
    });
    if (identity.emailVerified) {
      // Pre-provisioned while this person already had a user (signed in with the email not yet
      // verified): now that the engine vouches for the email, their memberships come over.
      await adoptPreProvisionedUsers(tx, { userId: user.id, email });
    }

    await lockUserForTransaction(tx, user.id);
    const isPlatformAdmin = identity.groups.includes(opts.platformAdminGroup);
    if (isPlatformAdmin) {
      const platform = await ensureOrganization(tx, {
        id: newId('organization'),
        slug: PLATFORM_ORGANIZATION_SLUG,
        name: 'Platform',
        kind: 'platform',
      });
      await insertMembership(tx, { tenantId: platform.id, userId: user.id, roleKey: 'org_admin' });
      return { user, workspace: { id: platform.id, slug: platform.slug, name: platform.name, kind: 'platform' }, isPlatformAdmin };
    }
    // The group is the platform workspace's membership list: whoever left it leaves the workspace,
    // and the sessions they opened as a platform admin end. The API keys they created where only
    // that standing let them act (the platform workspace, organizations they are no active member
    // of) are revoked, so that being put back in the group does not revive them; where they are a
    // member, their keys stay, bounded by their role there.
    const ended = await endSessions(tx, { kind: 'platform_admin_left', userId: user.id }, now);
    if (ended.leftPlatformWorkspace) {
      await revokeKeysOfCreator(
        tx,
        null,
        opts.request ?? ENGINE_SIGN_IN,
        { userId: user.id, scope: 'organizations_not_active_in', reason: 'platform_admin_left' },
        now,
      );
    }
    // An organization that verified the email's domain with the auto_join policy takes the person
    // in (docs/enterprise.md "Domains"); a first sign-in then lands there, not in a new workspace.
    await autoJoinByEmailDomain(tx, {
      userId: user.id,
      email,
      emailVerified: identity.emailVerified,
      request: opts.request ?? ENGINE_SIGN_IN,
    });
    const existing = (await membershipsOfUser(tx, user.id)).find((m) => m.organization.kind === 'tenant');
    if (existing) {
      return { user, workspace: existing.organization, isPlatformAdmin };
    }
    const workspace = await createPersonalWorkspace(tx, email, identity.name);
    await insertMembership(tx, { tenantId: workspace.id, userId: user.id, roleKey: 'org_admin' });
    return { user, workspace: { id: workspace.id, slug: workspace.slug, name: workspace.name, kind: 'tenant' }, isPlatformAdmin };
  });
}

/**
 * A new tenant organization for a first sign-in. The slug gets a random suffix (slugs are global,
 * and guessing one must reveal nobody's workspace); a taken slug is retried, never reused: reusing
 * it would make the new user an admin of someone else's organization.
 */
async function createPersonalWorkspace(tx: DbOrTx, email: string, name: string): Promise<OrganizationRow> {
  const base = slugify(email.split('@')[0] ?? 'workspace').slice(0, 40);
  for (let attempt = 0; attempt < 5; attempt++) {
    const created = await insertOrganization(tx, {
      id: newId('organization'),
      slug: `${base}-${randomBase62(6).toLowerCase()}`,
      name: `${name || email}'s workspace`,
      kind: 'tenant',
    });
    if (created) {
      return created;
    }
  }
  throw new Error('could not find a free workspace slug');
}
