import type { Db } from '@svc/db/client';
import type { Adapter, Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { consoleApplicationPath } from '../applications/console-link.ts';
import { isControlPlaneTokenResource } from '../mcp/resource.ts';
import { accountFinder, OIDC_SCOPES } from './accounts.ts';
import { createAdapterFactory } from './adapter.ts';
import { type ClaimDeps, clientResource, isApiResourceToken, scopeOf, scopeOfPermissions, tokenClaims } from './claims.ts';
import { type applicationClients, CORS_METADATA, corsAllowed, MEMBERS_OF_METADATA, PRIVATE_KEY_JWT_ALGS } from './clients.ts';
import { oidcErrorPage, type RegisterHint, type UnregisteredUrl } from './error-page.ts';
import { type GrantDeps, grantFor, svcInteractionPolicy } from './grants.ts';
import type { SigningAlg, SigningJwk } from './keys.ts';
import { errors } from './library.ts';
import { renderLogout, type SvcLogoutDeps, signedOutPage } from './logout.ts';
import { isThirdPartyClient, METADATA_DOCUMENT_MAX_BYTES, metadataDocumentFeature } from './metadata-documents.ts';
import { COOKIE_NAMES, INTERACTION_PATH, LONG_COOKIE, OIDC_ROUTES } from './paths.ts';
import { registrationFeature, registrationValidator } from './registration.ts';
import { OIDC_TTL } from './ttl.ts';

/** What the provider's configuration is made of (provider.ts builds one per set of signing keys). */
export type ConfigurationDeps = {
  db: Db;
  clients: ReturnType<typeof applicationClients>;
  storage: ((model: string) => Adapter) | undefined;
  /** Derived from SVC_ENCRYPTION_KEY: the same in every process. */
  cookieKeys: string[];
  tryCallbackUrl: string;
  /** Not production: error pages say where to register an unregistered URL. */
  development: boolean | undefined;
  claims: ClaimDeps;
  grants: GrantDeps;
  logout: SvcLogoutDeps;
  /** `PUBLIC_URL`'s origin: no third-party client may redirect to svc itself. */
  origin: string;
  /**
   * Every document the provider fetches (client metadata documents, JWKS URIs), under the
   * webhook sender's address rules (@svc/jobs/webhooks/guarded-fetch).
   */
  fetch: NonNullable<Configuration['fetch']>;
  /** OIDC_DYNAMIC_REGISTRATION=on: anonymous dynamic client registration at /oidc/reg (registration.ts). */
  dynamicRegistration: boolean;
};

/**
 * svc's configuration of oidc-provider (docs/oidc.md says what each part means for an
 * application): clients from the applications, PostgreSQL storage, the grants and claims of
 * grants.ts and claims.ts, svc's hosted pages for logout and errors.
 */
export function providerConfiguration(deps: ConfigurationDeps, keys: SigningJwk[], alg: SigningAlg): Configuration {
  return {
    adapter: createAdapterFactory(deps.db, deps.clients, deps.storage),
    jwks: { keys },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: alg,
    },
    responseTypes: ['code'],
    // Public applications: none (PKCE). Confidential ones: their secret key, in the
    // Authorization header or the body. Nothing that would use the stored hash as a key
    // (client_secret_jwt, HS* algorithms, symmetric encryption) is enabled.
    // Machine clients may instead sign a JWT with a key they registered (private_key_jwt, RFC
    // 7523; asymmetric algorithms only, below).
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    enabledJWA: {
      clientAuthSigningAlgValues: ASYMMETRIC_ALGS,
      requestObjectSigningAlgValues: ASYMMETRIC_ALGS,
      introspectionSigningAlgValues: ASYMMETRIC_ALGS,
      authorizationSigningAlgValues: ASYMMETRIC_ALGS,
    },
    extraClientMetadata: {
      properties: [CORS_METADATA.origins, CORS_METADATA.loopback, MEMBERS_OF_METADATA],
      // A registration's metadata is checked against svc's rules (registration.ts) before the
      // library's own: none of these svc_* properties, nothing beyond a code-flow client.
      validator: registrationValidator(deps.origin, CORS_METADATA.origins, OIDC_SCOPES),
    },
    cookies: {
      keys: deps.cookieKeys,
      names: COOKIE_NAMES,
      long: LONG_COOKIE,
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    scopes: [...OIDC_SCOPES],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      organization: ['org_id', 'org_slug', 'org_role', 'permissions'],
    },
    // The ID token carries the claims of the granted scopes, as userinfo does.
    conformIdTokenClaims: false,
    // organization=<slug>: sign in for that organization (the person must be an active member).
    extraParams: ['organization'],
    features: {
      devInteractions: { enabled: false },
      // Machine clients (clientType machine): RFC 6749 section 4.4, for the product's APIs.
      clientCredentials: { enabled: true },
      encryption: { enabled: false },
      revocation: {
        enabled: true,
        // RFC 7009: a client revokes only its own tokens. Another confidential client is told
        // no; a public one gets the usual 200 and nothing happens (no oracle for token validity).
        allowedPolicy: async (_ctx, client, token) => {
          if (token.clientId === client.clientId) {
            return true;
          }
          if (client.clientAuthMethod === 'none') {
            return false;
          }
          throw new errors.InvalidRequest('client is not authorized to revoke the presented token');
        },
      },
      introspection: {
        enabled: true,
        // Confidential clients only, and only their own tokens.
        allowedPolicy: async (ctx, client, token) => client.clientAuthMethod !== 'none' && token.clientId === ctx.oidc.client?.clientId,
      },
      rpInitiatedLogout: {
        enabled: true,
        // svc's hosted pages (no inline scripts): see renderLogout and logoutMiddleware.
        logoutSource: (ctx) => renderLogout(deps.logout, ctx),
        postLogoutSuccessSource: (ctx) => {
          ctx.type = 'html';
          ctx.body = signedOutPage(ctx.oidc.client?.clientName);
        },
      },
      backchannelLogout: { enabled: true },
      jwtResponseModes: { enabled: false },
      // `request` and external `request_uri` objects are refused (request_not_supported,
      // request_uri_not_supported); pushed authorization requests are the supported way.
      requestObjects: { enabled: false },
      // RFC 7591, anonymous, only with OIDC_DYNAMIC_REGISTRATION=on (registration.ts).
      registration: registrationFeature(deps.dynamicRegistration),
      // An https client_id is a Client ID Metadata Document: a third-party client (metadata-documents.ts).
      clientIdMetadataDocument: metadataDocumentFeature(deps.origin),
      // Access tokens are RFC 9068 JWTs (typ at+jwt). Without a `resource` parameter their
      // audience is the client itself; with `resource=<identifier>` of one of the product's
      // API resources (RFC 8707), that API, and they carry the person's (or the machine
      // client's) permissions on it (tokenClaims). Any other resource: invalid_target.
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, client) => clientResource(client.clientId),
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resourceIndicator, client) => {
          if (resourceIndicator === clientResource(client.clientId)) {
            if (ctx.oidc.params?.grant_type === 'client_credentials') {
              throw new errors.InvalidTarget('a machine client names the API it calls: resource=<API identifier>');
            }
            return {
              audience: client.clientId,
              accessTokenFormat: 'jwt',
              accessTokenTTL: OIDC_TTL.AccessToken,
              scope: OIDC_SCOPES.join(' '),
            };
          }
          const resource = await deps.claims.resources.byIdentifier(resourceIndicator);
          if (!resource) {
            throw new errors.InvalidTarget('no API of this product has that identifier (resource)');
          }
          // svc's own MCP server acts on the control plane: only with a person's consent, which
          // only third-party clients ask for (an application's sign-in has no consent screen).
          if (isControlPlaneTokenResource(resource) && !isThirdPartyClient(client.clientId)) {
            throw new errors.InvalidTarget("svc's MCP server accepts only clients the person consents to (third-party clients)");
          }
          return {
            audience: resource.identifier,
            accessTokenFormat: 'jwt',
            accessTokenTTL: OIDC_TTL.AccessToken,
            // Its permissions are its scopes: a client may ask for fewer (scope=invoices.read).
            scope: scopeOf(resource),
          };
        },
      },
    },
    fetch: deps.fetch,
    fetchResponseBodyLimits: { 'client_id metadata document': METADATA_DOCUMENT_MAX_BYTES },
    pkce: {
      // S256 only (oidc-provider supports no other method); required from public clients.
      required: (_ctx, client) => client.clientAuthMethod === 'none',
    },
    rotateRefreshToken: true,
    routes: OIDC_ROUTES,
    ttl: OIDC_TTL,
    interactions: {
      policy: svcInteractionPolicy(deps.grants.sessionOf),
      url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
    },
    loadExistingGrant: (ctx) => grantFor(deps.grants, ctx),
    // An unknown client, an unregistered redirect_uri or post_logout_redirect_uri, a bad
    // id_token_hint: nothing to redirect to safely, an error page on svc.
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      const what = ctx.oidc?.route?.startsWith('end_session') ? 'sign-out' : 'sign-in';
      ctx.body = oidcErrorPage(out, what, unregisteredUrlOf(deps, ctx, out));
    },
    findAccount: accountFinder(deps.db, deps.claims.sql),
    extraTokenClaims: (ctx, token) => tokenClaims(deps.claims, ctx, token),
    formats: {
      customizers: {
        // An API's access token carries its permissions as its `scope` (RFC 9068 section
        // 2.2.3.1), exactly what tokenClaims decided, which every resource-server library
        // checks; not a second time as a `permissions` array, which would double the token
        // (100 permissions: 3.2 kB with scope alone, 5.7 kB with both).
        jwt: (_ctx, token, jwt) => {
          const permissions = jwt.payload.permissions;
          if (isApiResourceToken(token) && Array.isArray(permissions)) {
            jwt.payload.scope = permissions.length > 0 ? scopeOfPermissions(permissions) : undefined;
            delete jwt.payload.permissions;
          }
        },
      },
    },
    // RFC 8414 and discovery say the same: RFC 8707 resource indicators are taken.
    discovery: { claim_types_supported: ['normal'], resource_indicators_supported: true },
    // The token, revocation and introspection endpoints answer a browser only from the
    // client's own allowedOrigins (the keyless application: loopback origins).
    clientBasedCORS: (_ctx, origin, client) => corsAllowed(client.metadata(), origin),
  };
}

/**
 * The URL an error page names when the error is an unregistered redirect_uri or
 * post_logout_redirect_uri of a known client, and (in development only) where to register it:
 * the application's console page with what it has registered, or the keyless application's
 * rule. In production the page names the URL alone.
 */
function unregisteredUrlOf(
  deps: ConfigurationDeps,
  ctx: KoaContextWithOIDC,
  out: { error: string; error_description?: string | undefined },
): { sent: UnregisteredUrl; hint: RegisterHint } | undefined {
  const params = ctx.oidc?.params;
  const client = ctx.oidc?.client;
  let sent: UnregisteredUrl | undefined;
  if (out.error === 'invalid_redirect_uri' && typeof params?.redirect_uri === 'string') {
    sent = { kind: 'redirect', url: params.redirect_uri };
  } else if (
    out.error === 'invalid_request' &&
    out.error_description === 'post_logout_redirect_uri not registered' &&
    typeof params?.post_logout_redirect_uri === 'string'
  ) {
    sent = { kind: 'post_logout', url: params.post_logout_redirect_uri };
  }
  if (!sent || !client) {
    return undefined;
  }
  if (!deps.development) {
    return { sent, hint: { kind: 'none' } };
  }
  if (deps.clients.isKeyless(client.clientId)) {
    return { sent, hint: { kind: 'keyless' } };
  }
  const registered =
    sent.kind === 'redirect'
      ? (client.redirectUris ?? []).filter((uri) => uri !== deps.tryCallbackUrl)
      : (client.postLogoutRedirectUris ?? []);
  return { sent, hint: { kind: 'application', consolePath: consoleApplicationPath(client.clientId), registered } };
}

/**
 * Signing algorithms a client may use for what it signs (client assertions of private_key_jwt
 * machine clients among them): never HS*, whose key would be the stored secret hash. The list the
 * applications API checks a machine client's keys against when they are saved.
 */
const ASYMMETRIC_ALGS = [...PRIVATE_KEY_JWT_ALGS];
