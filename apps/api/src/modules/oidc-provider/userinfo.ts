import { findUserById } from '@svc/db/queries/identity';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { AppServices } from '../../context.ts';
import { organizationOfGrant, standingOf, userClaims } from './accounts.ts';

/** What userinfo answers for an access token: the claims, or why the token is refused (401 invalid_token). */
export type UserinfoAnswer = { claims: Record<string, unknown> } | { refused: string };

/**
 * Userinfo of an access token: the access tokens are JWTs for the client itself (aud = client
 * id), which oidc-provider's own userinfo does not take; svc verifies them with its keys and
 * answers the claims of the token's scopes as they are now, while the svc session it was issued
 * under lives. The userinfo endpoint (routes.ts) and the try sign-in page both answer with this.
 */
export async function userinfoOf(services: AppServices, token: string): Promise<UserinfoAnswer> {
  let payload: Record<string, unknown>;
  try {
    const jwks = createLocalJWKSet(JSON.parse(services.oidc.jwks.json));
    ({ payload } = await jwtVerify(token, jwks, { issuer: services.config.publicUrl, typ: 'at+jwt' }));
  } catch {
    return { refused: 'invalid access token' };
  }
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
  const sub = typeof payload.sub === 'string' ? payload.sub : '';
  const user = scopes.includes('openid') ? await findUserById(services.db, sub) : undefined;
  if (user?.status !== 'active') {
    return { refused: 'invalid access token' };
  }
  const organization =
    typeof payload.org_id === 'string' && typeof payload.org_slug === 'string' && scopes.includes('organization')
      ? organizationOfGrant({ organization: { id: payload.org_id, slug: payload.org_slug } })
      : undefined;
  const standing = await standingOf(services.db, services.sql, {
    sessionId: typeof payload.sid === 'string' ? payload.sid : undefined,
    userId: user.id,
    organization,
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
