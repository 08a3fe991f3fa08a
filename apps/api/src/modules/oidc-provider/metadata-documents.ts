import type { Configuration } from 'oidc-provider';
import { isLoopbackRedirect } from './clients.ts';
import { errors } from './library.ts';
import { isRegisteredClient } from './registration.ts';

/**
 * Client ID Metadata Documents (docs/oidc.md, "Client ID Metadata Documents"): an authorization request
 * whose `client_id` is an https URL names a client that describes itself in the JSON document at
 * that URL. oidc-provider fetches, parses and caches it (its clientIdMetadataDocument feature:
 * the document's `client_id` must equal the URL exactly, no shared-secret authentication, its
 * web URIs https); svc adds what it requires of such a client here and fetches through the
 * webhook sender's address rules (configuration.ts).
 */

/** The largest document read: past it the fetch is cut and the client refused. */
export const METADATA_DOCUMENT_MAX_BYTES = 5 * 1024;

/**
 * How long a document is kept in each process: its Cache-Control max-age (or Expires) within
 * these bounds, in seconds; without either, the lower bound. oidc-provider's own deadline bounds
 * each fetch (2.5 s).
 */
export const METADATA_DOCUMENT_CACHE_SECONDS = { min: 60, max: 86_400 } as const;

/**
 * Whether a client is third-party: one identified by its metadata document's URL (an https
 * client_id; an application's id never is one), or one that registered itself (`dcr_...`,
 * registration.ts). Third-party clients get the consent page; applications are first-party and
 * never do.
 */
export function isThirdPartyClient(clientId: string): boolean {
  return /^https:\/\//i.test(clientId) || isRegisteredClient(clientId);
}

/**
 * What the hosted pages name a third-party client by, beside the name it gives itself: its
 * metadata document's host, the one thing about it svc can vouch for; for a registered client,
 * which nobody vouches for, the host its codes are sent to (the request's redirect_uri, checked
 * against its registration).
 */
export function thirdPartyHostOf(clientId: string, redirectUri: unknown): string | undefined {
  if (isRegisteredClient(clientId)) {
    return typeof redirectUri === 'string' ? (URL.parse(redirectUri)?.host ?? undefined) : undefined;
  }
  return isThirdPartyClient(clientId) ? (URL.parse(clientId)?.host ?? undefined) : undefined;
}

type FeatureOptions = NonNullable<NonNullable<Configuration['features']>['clientIdMetadataDocument']>;

/**
 * What svc requires of a metadata document beyond oidc-provider's checks, so that the client is
 * a public client of the authorization code flow with PKCE whose redirects are exact:
 * `token_endpoint_auth_method` `none`; `redirect_uris` present, each https or an http loopback
 * URL (RFC 8252), never svc's own origin (its try sign-in callback or hosted pages); grant and
 * response types of the code flow only. Anything else: invalid_client, with the reason as its
 * description (the error page shows it), and no interaction is started.
 */
export function metadataDocumentProblem(metadata: Record<string, unknown>, svcOrigin: string): string | undefined {
  if (metadata.token_endpoint_auth_method !== 'none') {
    return 'the client metadata document must say token_endpoint_auth_method "none": such a client is public and uses PKCE';
  }
  const redirects = metadata.redirect_uris;
  if (!Array.isArray(redirects) || redirects.length === 0) {
    return 'the client metadata document lists no redirect_uris';
  }
  for (const uri of redirects) {
    const url = typeof uri === 'string' ? URL.parse(uri) : null;
    if (!url || !(url.protocol === 'https:' || isLoopbackRedirect(uri))) {
      return 'every redirect_uri of a client metadata document must be https, or http on a loopback address';
    }
    if (url.origin === svcOrigin) {
      return "a client metadata document's redirect_uris cannot be on svc itself";
    }
  }
  const grants = metadata.grant_types;
  if (Array.isArray(grants) && !grants.every((g) => g === 'authorization_code' || g === 'refresh_token')) {
    return 'a client metadata document may only use the authorization_code and refresh_token grants';
  }
  return undefined;
}

/** The documents each request has fetched (a request is a Koa context; gone with it). */
const fetchedIn = new WeakMap<object, Set<string>>();

/** The configuration of oidc-provider's clientIdMetadataDocument feature for svc. */
export function metadataDocumentFeature(svcOrigin: string): FeatureOptions {
  return {
    enabled: true,
    // The draft oidc-provider 9.13 implements; a new one must be read before it is acknowledged.
    ack: 'draft-02',
    // The address rules are the fetch's own (configuration.ts): nothing to add before it.
    // One fetch per request: after a refusal oidc-provider's authorization error handler looks
    // the client up again, which would fetch (and wait for) a refused document twice. The
    // address rules are the fetch's own (configuration.ts).
    allowFetch: async (ctx, clientId) => {
      if (!ctx) {
        return true;
      }
      const tried = fetchedIn.get(ctx) ?? new Set<string>();
      fetchedIn.set(ctx, tried);
      if (tried.has(clientId)) {
        return false;
      }
      tried.add(clientId);
      return true;
    },
    allowClient: async (_ctx, client) => {
      const problem = metadataDocumentProblem(client.metadata(), svcOrigin);
      if (problem) {
        throw new errors.InvalidClient(problem);
      }
      return true;
    },
    cacheDuration: { ...METADATA_DOCUMENT_CACHE_SECONDS },
  } as FeatureOptions;
}
