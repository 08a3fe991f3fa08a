/** Lifetimes (seconds) of what svc's OpenID Provider issues. */
export const OIDC_TTL = {
  // Short: applications verify access tokens offline with the JWKS, so the end of a svc session
  // reaches them when the tokens expire (refresh, userinfo and introspection refuse at once).
  AccessToken: 10 * 60,
  IdToken: 60 * 60,
  AuthorizationCode: 60,
  Interaction: 60 * 60,
  Session: 14 * 24 * 60 * 60,
  Grant: 14 * 24 * 60 * 60,
  RefreshToken: 14 * 24 * 60 * 60,
  BackchannelAuthenticationRequest: 10 * 60,
  ClientCredentials: 10 * 60,
} as const;

/** The longest-lived token signed with the provider's keys (refresh tokens are opaque, stored). */
export const MAX_SIGNED_TOKEN_TTL_SECONDS = Math.max(OIDC_TTL.AccessToken, OIDC_TTL.IdToken);
