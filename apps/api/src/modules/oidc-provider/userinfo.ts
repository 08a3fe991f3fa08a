import type { Db, Sql } from '@svc/db/client';
import { findUserById } from '@svc/db/queries/identity';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, type JWTPayload, jwtVerify } from 'jose';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { organizationOfGrant, standingOf, userClaims } from './accounts.ts';

/** What userinfo answers for an access token: the claims, or why the token is refused (401 invalid_token). */
export type UserinfoAnswer = { claims: Record<string, unknown> } | { refused: string };

/**
 * What userinfo needs of the process's services (AppServices has them all; named here so that
 * this module, which the provider itself uses, does not depend on the services container).
 */
export type UserinfoServices = {
  db: Db;
  sql: Sql;
  config: { publicUrl: string };
  oidc: { jwks: { json: string }; provider: Pick<KoaContextWithOIDC['oidc']['provider'], 'Grant'> };
};

/** What checking one of svc's access tokens needs: the database, the issuer, the public keys and the provider. */
type TokenCheckDeps = {
  db: Db;
  sql: Sql;
  issuer: string;
  jwks: JSONWebKeySet;
  provider: Pick<KoaContextWithOIDC['oidc']['provider'], 'Grant'>;
};

/** Whether a token is a JWT (what oidc-provider calls a structured token) rather than an opaque one. */
export function isStructuredToken(token: string): boolean {
  try {
    return Boolean(decodeProtectedHeader(token));
  } catch {
    return false;
  }
}

/** The verified payload of one of svc's access tokens (signature, issuer, typ at+jwt, expiry), or null. */
async function verifiedAccessToken(deps: TokenCheckDeps, token: string): Promise<JWTPayload | null> {
  try {
    const { payload } = await jwtVerify(token, createLocalJWKSet(deps.jwks), { issuer: deps.issuer, typ: 'at+jwt' });
    return payload;
  } catch {
    return null;
  }
}

/**
 * Whether the grant an access token was issued under still stands. oidc-provider revokes a
 * grant when its code is replayed or a refresh token of it is reused, and the JWT access tokens
 * it already issued are not stored: their `grant_id` claim is how svc knows. A token without one
 * is not svc's to honour.
 */
async function grantStands(deps: TokenCheckDeps, payload: JWTPayload): Promise<boolean> {
  const grantId = payload.grant_id;
  if (typeof grantId !== 'string') {
    return false;
  }
  const grant = await deps.provider.Grant.find(grantId);
  return Boolean(grant && grant.clientId === payload.client_id && grant.accountId === payload.sub);
}

/** Where the organization claims of a token came from, as its grant recorded them. */
function organizationOf(payload: JWTPayload) {
  return typeof payload.org_id === 'string' && typeof payload.org_slug === 'string'
    ? organizationOfGrant({ organization: { id: payload.org_id, slug: payload.org_slug } })
    : undefined;
}

/**
 * Userinfo of an access token: the access tokens are JWTs, which oidc-provider's own userinfo
 * does not take; svc verifies them with its keys and answers the claims of the token's scopes as
 * they are now, while the token's grant and the svc session it was issued under stand. Only a
 * token for the client itself (aud = client id, scope openid): a token for one of the product's
 * APIs is that API's, not a key to the person's profile. The userinfo endpoint (http/oidc/routes.ts) and
 * the try sign-in page both answer with this.
 */
export async function userinfoOf(services: UserinfoServices, token: string): Promise<UserinfoAnswer> {
  const deps: TokenCheckDeps = {
    db: services.db,
    sql: services.sql,
    issuer: services.config.publicUrl,
    jwks: JSON.parse(services.oidc.jwks.json),
    provider: services.oidc.provider,
  };
  const payload = await verifiedAccessToken(deps, token);
  if (!payload || payload.aud !== payload.client_id) {
    return { refused: 'invalid access token' };
  }
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
  const sub = typeof payload.sub === 'string' ? payload.sub : '';
  const user = scopes.includes('openid') ? await findUserById(services.db, sub) : undefined;
  if (user?.status !== 'active') {
    return { refused: 'invalid access token' };
  }
  if (!(await grantStands(deps, payload))) {
    return { refused: 'the grant of this access token was revoked' };
  }
  const standing = await standingOf(services.db, services.sql, {
    sessionId: typeof payload.sid === 'string' ? payload.sid : undefined,
    userId: user.id,
    organization: scopes.includes('organization') ? organizationOf(payload) : undefined,
  });
  if (!standing) {
    return { refused: 'the session of this access token has ended' };
  }
  const all = userClaims(user);
  return {
    claims: {
      sub: all.sub,
      ...(scopes.includes('email') ? { email: all.email, email_verified: all.email_verified } : {}),
      ...(scopes.includes('profile') ? { name: all.name } : {}),
      ...standing.organization,
    },
  };
}

/**
 * RFC 7662 introspection of one of svc's access tokens, for the client it was issued to
 * (`clientId`, authenticated by oidc-provider): active while it verifies, has not expired, its
 * grant stands and, for a person's token, the svc session and organization membership it was
 * issued under stand. Anything else, including another client's token, is `{ active: false }`
 * and nothing more.
 */
export async function introspectAccessToken(deps: TokenCheckDeps, token: string, clientId: string): Promise<Record<string, unknown>> {
  const inactive = { active: false };
  const payload = await verifiedAccessToken(deps, token);
  if (!payload || payload.client_id !== clientId) {
    return inactive;
  }
  const sub = typeof payload.sub === 'string' ? payload.sub : undefined;
  if (sub !== clientId) {
    // A person's token.
    if (!(await grantStands(deps, payload))) {
      return inactive;
    }
    const user = sub ? await findUserById(deps.db, sub) : undefined;
    if (user?.status !== 'active') {
      return inactive;
    }
    const standing = await standingOf(deps.db, deps.sql, {
      sessionId: typeof payload.sid === 'string' ? payload.sid : undefined,
      userId: user.id,
      organization: organizationOf(payload),
    });
    if (!standing) {
      return inactive;
    }
  }
  const { grant_id: _grantId, ...claims } = payload;
  return { ...claims, active: true, token_type: 'Bearer' };
}
