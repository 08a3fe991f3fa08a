import type { SsoConnectionRow } from '@svc/db/queries/sso';
import type { SecretBox } from '@svc/db/secret-box';
import { type OidcError, RelyingParty } from '../auth/oidc-client.ts';
import { SsoError } from './saml.ts';
import { oidcSecretContext } from './secret-context.ts';
import type { SsoProfile } from './sign-in.ts';

/**
 * svc as the OIDC relying party of an organization's IdP (docs/enterprise.md "SSO connections"):
 * the same client as the engine's (auth/oidc-client.ts: discovery with the issuer checked, code
 * flow with PKCE, nonce, the ID token verified per OIDC Core 3.1.3.7). One per connection and
 * settings, kept while the row is unchanged.
 */
const parties = new Map<string, { updatedAt: number; rp: RelyingParty }>();

export function oidcCallbackUrl(publicUrl: string, connectionId: string): string {
  return `${publicUrl}/sso/oidc/${connectionId}/callback`;
}

export function relyingPartyOf(
  deps: { publicUrl: string; secretBox: SecretBox; fetch: typeof fetch },
  connection: SsoConnectionRow,
): RelyingParty {
  const cached = parties.get(connection.id);
  if (cached && cached.updatedAt === connection.updatedAt.getTime()) {
    return cached.rp;
  }
  if (!connection.oidcIssuer || !connection.oidcClientId || !connection.oidcClientSecretSealed) {
    throw new SsoError('sso_connection_not_found', 'the OIDC connection is incomplete');
  }
  const rp = new RelyingParty(
    {
      issuer: connection.oidcIssuer,
      clientId: connection.oidcClientId,
      clientSecret: deps.secretBox.open(connection.oidcClientSecretSealed, oidcSecretContext(connection.id)),
      redirectUri: oidcCallbackUrl(deps.publicUrl, connection.id),
      scopes: ['openid', 'email', 'profile'],
      groupsClaim: connection.attributeMapping.groups,
    },
    deps.fetch,
  );
  if (parties.size > 1000) {
    parties.clear();
  }
  parties.set(connection.id, { updatedAt: connection.updatedAt.getTime(), rp });
  return rp;
}

/** Why the IdP's answer was refused, as svc's code. */
export function classifyOidcError(error: OidcError): SsoError {
  const message = error.message;
  if (/issuer|"iss"/i.test(message)) {
    return new SsoError('sso_issuer_mismatch', 'the ID token or discovery document names another issuer');
  }
  if (/signature|JWS|JWKS|no applicable key/i.test(message)) {
    return new SsoError('sso_signature_invalid', 'the ID token signature does not verify with the IdP’s keys');
  }
  if (/nonce/i.test(message)) {
    return new SsoError('sso_in_response_to_mismatch', 'the ID token answers another sign-in');
  }
  if (/"exp"|expired/i.test(message)) {
    return new SsoError('sso_assertion_expired', 'the ID token has expired');
  }
  return new SsoError('sso_idp_error', 'the identity provider’s answer could not be used');
}

/** The profile of a verified ID token. */
export function oidcProfile(identity: {
  subject: string;
  email: string;
  emailVerified: boolean;
  name: string;
  groups: string[];
}): SsoProfile {
  return {
    subject: identity.subject,
    email: identity.email,
    emailVerified: identity.emailVerified,
    name: identity.name,
    groups: identity.groups,
  };
}
