import type { IncomingMessage } from 'node:http';
import type { Db, Sql } from '@svc/db/client';
import { findUserById } from '@svc/db/queries/identity';
import { findSessionStanding, type SessionWithUser } from '@svc/db/queries/sessions';
import type { Account, KoaContextWithOIDC } from 'oidc-provider';
import { grantsOfRole } from '../access/role-grants.ts';

/**
 * Scopes svc's OpenID Provider knows; `organization` adds the organization claims, `entitlements`
 * the organization's plan and features to access tokens (docs/authorization.md).
 */
export const OIDC_SCOPES = ['openid', 'email', 'profile', 'offline_access', 'organization', 'entitlements'] as const;

/** The organization an authorization speaks for, chosen at sign-in and kept in its Grant. */
export type GrantOrganization = { id: string; slug: string };

/**
 * Claims of the `organization` scope: the membership as it is when the token is issued, with the
 * person's product permissions there (docs/authorization.md). svc's control-plane permissions are
 * checked by svc's API alone and are never in a token.
 */
export type OrganizationClaims = { org_id: string; org_slug: string; org_role: string; permissions: string[] };

/** What the provider needs from svc: the hosted session behind a browser request. */
export type SvcSessionOf = (req: IncomingMessage) => Promise<SessionWithUser | null>;

/** The organizations a person may sign in to an application for: active memberships of tenants. */
export function selectableOrganizations(current: SessionWithUser): GrantOrganization[] {
  return current.memberships
    .filter((m) => m.organization.kind === 'tenant')
    .map((m) => ({ id: m.organization.id, slug: m.organization.slug }));
}

/** The organization stored in a Grant (never anything the client sent later). */
export function organizationOfGrant(grant: unknown): GrantOrganization | undefined {
  const org = (grant as { organization?: GrantOrganization } | undefined)?.organization;
  return org && typeof org.id === 'string' && typeof org.slug === 'string' ? org : undefined;
}

/**
 * Whether a grant still stands: the svc session it was issued under is live (not revoked, not
 * expired, the user active) and, for an organization, the person is still an active member.
 * Returns the organization claims as they are now, or null when the grant no longer stands.
 */
export async function standingOf(
  db: Db,
  sql: Sql,
  input: { sessionId: string | undefined; userId: string; organization: GrantOrganization | undefined },
): Promise<{ organization: OrganizationClaims | undefined } | null> {
  if (!input.sessionId) {
    return null;
  }
  const standing = await findSessionStanding(sql, {
    sessionId: input.sessionId,
    userId: input.userId,
    tenantId: input.organization?.id ?? null,
  });
  if (!standing.live) {
    return null;
  }
  if (!input.organization) {
    return { organization: undefined };
  }
  if (!standing.roleKey) {
    return null;
  }
  const grants = await grantsOfRole(db, input.organization.id, standing.roleKey);
  return {
    organization: {
      org_id: input.organization.id,
      org_slug: input.organization.slug,
      org_role: standing.roleKey,
      permissions: [...(grants?.product ?? [])],
    },
  };
}

/** The standard claims of a svc user. */
export function userClaims(user: { id: string; email: string; emailVerified: boolean; name: string }): {
  sub: string;
  email: string;
  email_verified: boolean;
  name: string;
} {
  return { sub: user.id, email: user.email, email_verified: user.emailVerified, name: user.name };
}

/**
 * oidc-provider's findAccount: the account is the svc user (accountId = usr_ id). Where a code or
 * refresh token is redeemed, the svc session it was issued under (its sid) must still be live and
 * the organization membership active; otherwise no account, which oidc-provider answers with
 * invalid_grant.
 */
export function accountFinder(db: Db, sql: Sql) {
  return async (ctx: KoaContextWithOIDC, accountId: string, token?: unknown): Promise<Account | undefined> => {
    const user = await findUserById(db, accountId);
    if (user?.status !== 'active') {
      return undefined;
    }
    let organization: OrganizationClaims | undefined;
    const kind = (token as { kind?: string } | undefined)?.kind;
    if (kind === 'AuthorizationCode' || kind === 'RefreshToken') {
      const standing = await standingOf(db, sql, {
        sessionId: (token as { sid?: string }).sid,
        userId: user.id,
        organization: organizationOfGrant(ctx.oidc.entities.Grant),
      });
      if (!standing) {
        return undefined;
      }
      organization = standing.organization;
    }
    return {
      accountId,
      claims: async (_use, scope) => ({
        ...userClaims(user),
        ...(organization && scope.split(' ').includes('organization') ? organization : {}),
      }),
    };
  };
}
