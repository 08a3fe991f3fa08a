import { emailDomainOf } from '@svc/contracts/domains';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { findVerifiedDomain } from '@svc/db/queries/domains';
import { findUserById, insertUser, type UserRow } from '@svc/db/queries/identity';
import { findOrganizationById } from '@svc/db/queries/organizations';
import {
  findSsoIdentity,
  membershipOf,
  type SsoConnectionRow,
  setMembershipFromSso,
  touchSsoConnection,
  updateUserFromSso,
  upsertSsoIdentity,
} from '@svc/db/queries/sso';
import { addOrgMember, findUserIdsByEmail, lockEmail } from '@svc/db/queries/users';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { permissionsOfExistingRole } from '../domains/service.ts';
import { claimSeat } from '../subscriptions/enforce.ts';
import { SsoError } from './saml.ts';

/** What an IdP said about the person, after the connection's attribute mapping. */
export type SsoProfile = {
  /** The SAML NameID or the OIDC `sub`: the person at this connection. */
  subject: string;
  email: string;
  /** SAML: true (the organization's IdP vouches); OIDC: the ID token's `email_verified`. */
  emailVerified: boolean;
  name: string;
  groups: string[];
};

const first = (values: string[] | undefined): string => values?.find((v) => v.trim() !== '')?.trim() ?? '';

/** The profile a SAML assertion gives under the connection's mapping (the email defaults to the NameID). */
export function samlProfile(connection: SsoConnectionRow, facts: { nameId: string; attributes: Record<string, string[]> }): SsoProfile {
  const map = connection.attributeMapping;
  return {
    subject: facts.nameId,
    email: first(facts.attributes[map.email]) || facts.nameId,
    emailVerified: true,
    name: first(facts.attributes[map.name]),
    groups: (facts.attributes[map.groups] ?? []).filter((g) => g !== '').slice(0, 200),
  };
}

/** The role the profile's groups map to (first mapping that matches), else the connection's default. */
export function roleFor(connection: SsoConnectionRow, groups: string[]): string {
  const held = new Set(groups);
  return connection.groupRoles.find((m) => held.has(m.group))?.roleKey ?? connection.defaultRoleKey;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/**
 * The checks every SSO sign-in passes before anyone is made (docs/enterprise.md "Just-in-time
 * membership"): an email, verified by the IdP, at a domain that THIS connection's organization
 * has verified. An IdP can only vouch for its own organization's people.
 */
export async function checkSsoProfile(db: Db, connection: SsoConnectionRow, profile: SsoProfile): Promise<string> {
  const email = profile.email.trim().toLowerCase();
  if (!EMAIL.test(email)) {
    throw new SsoError('sso_email_missing', 'the identity provider sent no email address');
  }
  if (!profile.emailVerified) {
    throw new SsoError('sso_email_not_verified', 'the identity provider does not say the email address is verified');
  }
  const domain = emailDomainOf(email);
  const verified = domain ? await findVerifiedDomain(db, domain) : undefined;
  if (!verified || verified.tenantId !== connection.tenantId) {
    throw new SsoError('sso_domain_not_verified', 'the email’s domain is not one the organization has verified');
  }
  return email;
}

/**
 * Just-in-time membership (docs/enterprise.md): the person (found by this connection's subject,
 * else by email, else created) becomes or stays an active member with the mapped role; the name
 * and role follow the IdP at every sign-in. One transaction with its audit entries and events
 * (`member.added`, `sso.signed_in`). A suspended person or membership is refused.
 */
export async function signInWithSso(
  db: Db,
  connection: SsoConnectionRow,
  profile: SsoProfile,
  request: RequestMeta,
): Promise<{ user: UserRow; organizationId: string }> {
  const email = await checkSsoProfile(db, connection, profile);
  const tenantId = connection.tenantId;
  const now = new Date();
  return db.transaction(async (tx) => {
    const organization = await findOrganizationById(tx, tenantId);
    if (organization?.kind !== 'tenant') {
      throw new SsoError('sso_connection_not_found', 'the connection’s organization is gone');
    }
    await lockEmail(tx, email);
    let userId = await findSsoIdentity(tx, { connectionId: connection.id, subject: profile.subject });
    if (!userId) {
      userId = (await findUserIdsByEmail(tx, email))[0];
    }
    let user = userId ? await findUserById(tx, userId) : undefined;
    if (!user) {
      user = await insertUser(tx, {
        id: newId('user'),
        engineSubject: null,
        email,
        emailVerified: true,
        name: profile.name,
        lastSignInAt: now,
      });
    }
    if (user.status === 'suspended') {
      throw new SsoError('sso_user_suspended', 'this account is suspended');
    }
    user = (await updateUserFromSso(tx, { id: user.id, email, name: profile.name || user.name, at: now })) ?? user;
    let roleKey = roleFor(connection, profile.groups);
    if (!(await permissionsOfExistingRole(tx, tenantId, roleKey))) {
      roleKey = (await permissionsOfExistingRole(tx, tenantId, connection.defaultRoleKey)) ? connection.defaultRoleKey : 'org_member';
    }
    const membership = await membershipOf(tx, { tenantId, userId: user.id });
    const via = { via: 'sso', connectionId: connection.id };
    if (membership?.status === 'suspended') {
      throw new SsoError('sso_membership_suspended', 'your membership of the organization is suspended');
    }
    if (!membership || membership.status === 'invited') {
      try {
        await claimSeat(tx, tenantId);
      } catch (error) {
        if (error instanceof AppError) {
          throw new SsoError('sso_seat_unavailable', 'the organization has no seat left');
        }
        throw error;
      }
      if (membership) {
        await setMembershipFromSso(tx, { tenantId, userId: user.id, roleKey, activate: true });
      } else {
        await addOrgMember(tx, { tenantId, userId: user.id, roleKey });
      }
      await recordAudit(tx, null, request, {
        tenantId,
        action: 'member.added',
        target: { type: 'user', id: user.id },
        summary: { roleKey, ...via },
      });
    } else if (membership.roleKey !== roleKey) {
      await setMembershipFromSso(tx, { tenantId, userId: user.id, roleKey, activate: false });
      await recordAudit(tx, null, request, {
        tenantId,
        action: 'member.role_changed',
        target: { type: 'user', id: user.id },
        summary: { roleKey, previous: membership.roleKey, ...via },
      });
    }
    await upsertSsoIdentity(tx, {
      connectionId: connection.id,
      subject: profile.subject,
      userId: user.id,
      lastProfile: { email, name: profile.name, groups: profile.groups },
      at: now,
    });
    await touchSsoConnection(tx, { tenantId, id: connection.id, at: now });
    await recordAudit(tx, null, request, {
      tenantId,
      action: 'sso.signed_in',
      target: { type: 'user', id: user.id },
      summary: { connectionId: connection.id, protocol: connection.protocol, email, roleKey },
    });
    return { user, organizationId: tenantId };
  });
}
