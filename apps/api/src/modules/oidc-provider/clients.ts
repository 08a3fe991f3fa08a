import { isIdOf } from '@svc/contracts/ids';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { AdapterPayload } from 'oidc-provider';
import type { ApplicationCache } from '../applications/cache.ts';

/** How svc's applications become oidc-provider clients (adapter.ts reads them through it). */
export type ClientSource = { find: (clientId: string) => Promise<AdapterPayload | undefined> };

/** Loopback hosts a native client's redirect may use on any port (RFC 8252 section 7.3). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An absolute http(s) URL without a fragment: what a redirect_uri may be. Paths are not. */
function isRedirectUri(value: string): boolean {
  const url = URL.parse(value);
  return url !== null && (url.protocol === 'https:' || url.protocol === 'http:') && url.hash === '' && value.indexOf('#') === -1;
}

/**
 * `http://localhost:<any port>/<any path>` and the same on 127.0.0.1 and [::1]: the keyless
 * development application's redirect URIs (an app on a fresh machine registers nothing). No
 * credentials in the authority, no fragment.
 */
export function isLoopbackRedirect(value: string): boolean {
  const url = URL.parse(value);
  return (
    url !== null &&
    url.protocol === 'http:' &&
    LOOPBACK_HOSTS.has(url.hostname) &&
    url.username === '' &&
    url.password === '' &&
    value.indexOf('#') === -1
  );
}

/** Loopback origins (any port) the keyless development application's browser apps run on. */
export function isLoopbackOrigin(origin: string): boolean {
  const url = URL.parse(origin);
  return url !== null && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname) && url.origin === origin;
}

/**
 * The client metadata of an application: client_id = the application's id, redirect_uris = its
 * redirect URLs (exact; same-origin paths in that list are for svc's hosted pages and are not
 * redirect URIs), post_logout_redirect_uris and backchannel_logout_uri from its logout settings,
 * client_name and logo_uri from its name and logo.
 *
 * A confidential application authenticates with its `sk_live_` secret key (client_secret_basic,
 * or client_secret_post as the request chooses): svc stores only the key's SHA-256, which is the
 * `client_secret` here, and the provider's compareClientSecret (internals.ts) hashes what the
 * client presents before comparing. Symmetric uses of the secret (HS* signatures,
 * client_secret_jwt, secret-derived encryption) are off in the provider, since they would take
 * the hash itself as the key. A public application presents no secret (PKCE alone).
 *
 * `tryCallbackUrl` (svc's own try sign-in callback) is a redirect URI of every client through the
 * provider's redirectUriAllowed; it is listed here only for an application that has no redirect
 * URL of its own, since oidc-provider takes no client without one.
 *
 * A machine application is a client credentials client instead (machineClientMetadataOf).
 */
export function clientMetadataOf(found: ApplicationWithOrganization, opts: { tryCallbackUrl: string }): AdapterPayload {
  const { application } = found;
  if (application.isKeyless) {
    return {
      client_id: application.id,
      client_name: application.name,
      // Native: oidc-provider then accepts a registered loopback redirect on any port; svc's own
      // redirectUriAllowed (internals.ts) widens it to any loopback path for this client alone.
      application_type: 'native',
      redirect_uris: ['http://localhost/callback', 'http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      [CORS_METADATA.origins]: application.allowedOrigins,
      [CORS_METADATA.loopback]: true,
    };
  }
  if (application.clientType === 'machine') {
    return machineClientMetadataOf(found);
  }
  const confidential = application.clientType === 'confidential';
  const redirectUris = application.redirectUrls.filter(isRedirectUri);
  return {
    client_id: application.id,
    client_name: application.name,
    // Shown on the hosted sign-in of the client's authorization requests (http/oidc/routes.ts).
    ...(application.logoUrl ? { logo_uri: application.logoUrl } : {}),
    application_type: 'web',
    redirect_uris: redirectUris.length > 0 ? redirectUris : [opts.tryCallbackUrl],
    post_logout_redirect_uris: application.postLogoutRedirectUrls.filter(isRedirectUri),
    ...(application.backchannelLogoutUrl && isRedirectUri(application.backchannelLogoutUrl)
      ? { backchannel_logout_uri: application.backchannelLogoutUrl, backchannel_logout_session_required: true }
      : {}),
    ...(confidential
      ? { token_endpoint_auth_method: 'client_secret_basic', client_secret: application.secretKeyHash }
      : { token_endpoint_auth_method: 'none' }),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    [CORS_METADATA.origins]: application.allowedOrigins,
    [CORS_METADATA.loopback]: false,
    ...(application.signInAudience === 'members' ? { [MEMBERS_OF_METADATA]: application.tenantId } : {}),
  };
}

/**
 * A machine application (docs/api.md, "Machine clients") as a client: the client credentials
 * grant alone, so no response types and no redirect URIs (oidc-provider requires redirect URIs
 * only of clients with response types), and no CORS origin. It authenticates with its secret key
 * (`client_secret_basic`: client_secret is the key's SHA-256, compared as for confidential
 * clients) or, for `private_key_jwt` (RFC 7523), with an assertion signed by a key of its `jwks`
 * or `jwks_uri`; such a client has no client_secret here, so its secret key (which still serves
 * svc's backend routes) is not a way in at the token endpoint. Which algorithms an assertion may
 * use is the provider's asymmetric list (never HS*, which would need a shared secret); svc stored
 * only keys those algorithms verify with (PRIVATE_KEY_JWT_ALGS). The organization it acts for and
 * the permissions it holds are read from the application itself when a token is issued
 * (claims.ts machineTokenClaims), not copied here.
 */
function machineClientMetadataOf({ application }: ApplicationWithOrganization): AdapterPayload {
  const auth: AdapterPayload =
    application.tokenEndpointAuthMethod === 'private_key_jwt'
      ? {
          token_endpoint_auth_method: 'private_key_jwt',
          // Never both (oidc-provider refuses that). A row with neither (not something the API
          // stores) gets an empty key set: a client that no assertion authenticates.
          ...(application.jwksUri ? { jwks_uri: application.jwksUri } : { jwks: application.jwks ?? { keys: [] } }),
        }
      : { token_endpoint_auth_method: 'client_secret_basic', client_secret: application.secretKeyHash };
  return {
    client_id: application.id,
    client_name: application.name,
    ...(application.logoUrl ? { logo_uri: application.logoUrl } : {}),
    application_type: 'web',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    ...auth,
    [CORS_METADATA.origins]: [],
    [CORS_METADATA.loopback]: false,
  };
}

/**
 * The JWS algorithms a private_key_jwt machine client may sign its client assertion with: the
 * asymmetric ones (RS256 and PS256 for RSA keys, ES256 for P-256, ES384 for P-384, Ed25519 /
 * EdDSA for Ed25519). A machine client's JWK Set is checked against this list when it is saved,
 * so a key that names another `alg` is refused then rather than failing at the token endpoint.
 * The provider verifies client assertions with exactly these (configuration.ts).
 */
export const PRIVATE_KEY_JWT_ALGS = ['RS256', 'PS256', 'ES256', 'ES384', 'Ed25519', 'EdDSA'] as const;

/**
 * Client metadata svc adds to oidc-provider's (registered as extraClientMetadata in configuration.ts):
 * the browser origins allowed at the token, revocation and introspection endpoints (CORS), and
 * whether any loopback origin is (the keyless development application).
 */
export const CORS_METADATA = { origins: 'svc_allowed_origins', loopback: 'svc_loopback_origins' } as const;

/**
 * Client metadata svc adds for `signInAudience: members`: the id of the organization whose active
 * members alone may sign in to the application (absent for `anyone`). Registered beside
 * CORS_METADATA in configuration.ts and checked when the grant is made.
 */
export const MEMBERS_OF_METADATA = 'svc_members_of';

/** The organization a client admits only its members of, or undefined when it admits anyone. */
export function membersOnlyOrganization(metadata: Record<string, unknown>): string | undefined {
  const id = metadata[MEMBERS_OF_METADATA];
  return typeof id === 'string' ? id : undefined;
}

/** Whether a client (its metadata, as stored by clientMetadataOf) accepts CORS requests from `origin`. */
export function corsAllowed(metadata: Record<string, unknown>, origin: string): boolean {
  const origins = metadata[CORS_METADATA.origins];
  if (Array.isArray(origins) && origins.includes(origin)) {
    return true;
  }
  return metadata[CORS_METADATA.loopback] === true && isLoopbackOrigin(origin);
}

/**
 * Applications as oidc-provider clients, through the application cache (a change reaches every
 * process within a second by NOTIFY). A disabled application is no client; neither is the
 * keyless application where keyless development is off. Ids that are not application ids are
 * refused without a database read.
 */
export function applicationClients(
  applications: ApplicationCache,
  opts: { keylessEnabled: boolean; tryCallbackUrl: string },
): ClientSource & {
  isKeyless: (clientId: string) => boolean;
} {
  const keylessIds = new Set<string>();
  return {
    async find(clientId) {
      if (!isIdOf('application', clientId)) {
        return undefined;
      }
      const found = await applications.byId(clientId);
      if (found?.application.status !== 'active') {
        return undefined;
      }
      if (found.application.isKeyless) {
        if (!opts.keylessEnabled) {
          return undefined;
        }
        keylessIds.add(clientId);
      } else {
        // A claimed keyless application is an ordinary client from its next lookup on.
        keylessIds.delete(clientId);
      }
      return clientMetadataOf(found, opts);
    },
    isKeyless: (clientId) => keylessIds.has(clientId),
  };
}
