/** Lifetimes (seconds) of what svc's OpenID Provider issues. */
export const OIDC_TTL = {
  AccessToken: 60 * 60,
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
