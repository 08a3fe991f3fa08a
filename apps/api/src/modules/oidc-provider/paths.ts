/**
 * Where svc's OpenID Provider lives (docs/oidc.md): its paths under PUBLIC_URL and its cookies.
 * Kept apart from provider.ts so that the routers serving them need not load the provider.
 */
/** Where the provider's endpoints live; the issuer (PUBLIC_URL) has no path of its own. */
export const OIDC_PREFIX = '/oidc';
export const DISCOVERY_PATH = '/.well-known/openid-configuration';
/** RFC 8414 authorization server metadata: the same document as discovery, for OAuth clients and agents. */
export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const OIDC_ROUTES = {
  authorization: `${OIDC_PREFIX}/auth`,
  token: `${OIDC_PREFIX}/token`,
  jwks: `${OIDC_PREFIX}/jwks`,
  userinfo: `${OIDC_PREFIX}/me`,
  revocation: `${OIDC_PREFIX}/token/revocation`,
  introspection: `${OIDC_PREFIX}/token/introspection`,
  end_session: `${OIDC_PREFIX}/session/end`,
  pushed_authorization_request: `${OIDC_PREFIX}/request`,
  backchannel_authentication: `${OIDC_PREFIX}/backchannel`,
  code_verification: `${OIDC_PREFIX}/device`,
  device_authorization: `${OIDC_PREFIX}/device/auth`,
  /** Dynamic client registration (RFC 7591), served only with OIDC_DYNAMIC_REGISTRATION=on. */
  registration: `${OIDC_PREFIX}/reg`,
} as const;
/** The hosted interaction (sign-in, organization choice) of an authorization request. */
export const INTERACTION_PATH = `${OIDC_PREFIX}/interaction`;
/** Where the console's try sign-in starts (`/oidc/try/<application id>`) and comes back to (`/callback`). */
export const TRY_SIGN_IN_PATH = `${OIDC_PREFIX}/try`;
export const TRY_CALLBACK_PATH = `${TRY_SIGN_IN_PATH}/callback`;

/** Cookie names of the provider: never those of svc's own session or of the engine. */
export const COOKIE_NAMES = { session: 'svc_op_session', interaction: 'svc_op_interaction', resume: 'svc_op_resume' };
/** The provider's long-lived cookie (its session), as set and as cleared. */
export const LONG_COOKIE = { signed: true, httpOnly: true, sameSite: 'lax' } as const;
