import { randomBytes } from 'node:crypto';
import { isIdOf, newId } from '@svc/contracts/ids';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { sha256Hex } from '../applications/keys.ts';
import { isLoopbackRedirect } from './clients.ts';
import { errors } from './library.ts';

/**
 * Dynamic client registration (RFC 7591; docs/oidc.md "Dynamic client registration"), off unless
 * OIDC_DYNAMIC_REGISTRATION=on: oidc-provider's registration feature at /oidc/reg, anonymous (no
 * initial access token), with svc's rules for what such a client may say. A registered client is
 * always third-party (the consent page, each organization's third-party access policy), is kept
 * by oidc-provider's adapter as a `Client` row of oidc_payloads (adapter.ts; its secret as a
 * SHA-256 like every client secret of svc) and is deleted once no token was issued to it for
 * OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS (the worker's maintenance:prune_registered_clients).
 */

/** Whether a client id is one dynamic registration issued (`dcr_...`). */
export function isRegisteredClient(clientId: string): boolean {
  return isIdOf('registeredClient', clientId);
}

/** The largest registration request read: a client's metadata is a few hundred bytes. */
export const REGISTRATION_MAX_BYTES = 5 * 1024;

/** The most redirect URIs one registered client may list. */
const MAX_REDIRECT_URIS = 10;

/**
 * The client metadata a registration may carry (RFC 7591 section 2, for a client of the code flow).
 * Anything else oidc-provider knows (keys, back-channel logout, request objects, sector
 * identifiers, signing and encryption choices) and svc's own metadata (`svc_*`: browser origins,
 * an organization's members only) is refused: nothing a registration says makes a client more
 * than an anonymous third party.
 */
const ALLOWED_FIELDS = new Set([
  'redirect_uris',
  'token_endpoint_auth_method',
  'grant_types',
  'response_types',
  'client_name',
  'client_uri',
  'logo_uri',
  'scope',
  'contacts',
  'tos_uri',
  'policy_uri',
  'software_id',
  'software_version',
  'application_type',
]);

const AUTH_METHODS = new Set(['none', 'client_secret_basic', 'client_secret_post']);
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);

type Problem = { error: 'invalid_redirect_uri' | 'invalid_client_metadata'; description: string };

/**
 * What svc refuses in a registration request, beyond oidc-provider's own checks: fields outside
 * ALLOWED_FIELDS; an auth method other than `none` (public, PKCE) or a client secret (Basic or
 * post); grants other than authorization_code and refresh_token; response types other than
 * `code`; redirect URIs that are not https or http on a loopback address (RFC 8252), that carry a
 * fragment, a wildcard or credentials, or that land on svc itself.
 */
export function registrationProblem(body: unknown, svcOrigin: string): Problem | undefined {
  const metadata = (error: Problem['error'], description: string): Problem => ({ error, description });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return metadata('invalid_client_metadata', 'the registration request must be a JSON object');
  }
  const record = body as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !ALLOWED_FIELDS.has(key));
  if (unknown.length > 0) {
    return metadata(
      'invalid_client_metadata',
      `a registration may not set ${unknown.slice(0, 5).join(', ')}; it may carry only ${[...ALLOWED_FIELDS].join(', ')}`,
    );
  }
  const method = record.token_endpoint_auth_method ?? 'client_secret_basic';
  if (typeof method !== 'string' || !AUTH_METHODS.has(method)) {
    return metadata('invalid_client_metadata', 'token_endpoint_auth_method must be none, client_secret_basic or client_secret_post');
  }
  const grants = record.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || !grants.every((g) => typeof g === 'string' && GRANT_TYPES.has(g)))) {
    return metadata('invalid_client_metadata', 'grant_types may only be authorization_code and refresh_token');
  }
  const responses = record.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || !responses.every((r) => r === 'code'))) {
    return metadata('invalid_client_metadata', 'response_types may only be code');
  }
  const redirects = record.redirect_uris;
  if (!Array.isArray(redirects) || redirects.length === 0) {
    return metadata('invalid_redirect_uri', 'redirect_uris must list at least one URI');
  }
  if (redirects.length > MAX_REDIRECT_URIS) {
    return metadata('invalid_redirect_uri', `redirect_uris may list at most ${MAX_REDIRECT_URIS} URIs`);
  }
  for (const uri of redirects) {
    const problem = typeof uri === 'string' ? redirectUriProblem(uri, svcOrigin) : 'redirect_uris must be strings';
    if (problem) {
      return metadata('invalid_redirect_uri', problem);
    }
  }
  return undefined;
}

function redirectUriProblem(uri: string, svcOrigin: string): string | undefined {
  const url = URL.parse(uri);
  if (!url || !(url.protocol === 'https:' || isLoopbackRedirect(uri))) {
    return 'redirect_uris must each be https, or http on a loopback address (http://127.0.0.1:<port>/..., RFC 8252)';
  }
  if (uri.includes('#')) {
    return 'redirect_uris must not have a fragment';
  }
  if (uri.includes('*')) {
    return 'redirect_uris must be exact: no wildcards';
  }
  if (url.username !== '' || url.password !== '') {
    return 'redirect_uris must not carry credentials';
  }
  if (url.origin === svcOrigin) {
    return 'redirect_uris of a registered client cannot be on svc itself';
  }
  return undefined;
}

type RegistrationOptions = NonNullable<NonNullable<Configuration['features']>['registration']>;

/**
 * oidc-provider's registration feature for svc: anonymous, no registration access token (no
 * client management: a client that needs other metadata registers again), ids `dcr_...`, and a
 * client secret of 256 random bits shown once in the answer (the adapter stores its SHA-256).
 */
export function registrationFeature(enabled: boolean): RegistrationOptions {
  return {
    enabled,
    initialAccessToken: false,
    issueRegistrationAccessToken: false,
    idFactory: () => newId('registeredClient'),
    secretFactory: () => randomBytes(32).toString('base64url'),
  };
}

/**
 * The registration rules (registrationProblem) as oidc-provider's client metadata validator: it
 * runs for each of svc's extra client properties while a client is built, so it checks the
 * request's body once, on the first, and only for a registration (stored and configured clients
 * are svc's own). Throws the error oidc-provider answers with 400.
 *
 * A registration's `scope` keeps only OpenID scopes (`oidcScopes`), which it then limits the
 * client to: an MCP client registers with the permissions it will ask an API for (the MCP SDK
 * copies a server's scopes_supported), which are not scopes of the client but what a person
 * grants it on that API at consent (RFC 7591 section 2 lets the server register other values
 * than those asked, and the answer says which).
 */
export function registrationValidator(svcOrigin: string, firstProperty: string, oidcScopes: readonly string[]) {
  return (ctx: KoaContextWithOIDC | undefined, key: string, _value: unknown, metadata: Record<string, unknown>): void => {
    if (key !== firstProperty || ctx?.oidc?.route !== 'registration') {
      return;
    }
    const problem = registrationProblem(ctx.oidc.body, svcOrigin);
    if (problem) {
      // oidc-provider answers invalid_redirect_uri for a description about redirect_uris, else invalid_client_metadata.
      throw new errors.InvalidClientMetadata(problem.description);
    }
    if (typeof metadata.scope === 'string') {
      const kept = metadata.scope.split(' ').filter((scope) => oidcScopes.includes(scope));
      if (kept.length > 0) {
        metadata.scope = kept.join(' ');
      } else {
        delete metadata.scope;
      }
    } else if (metadata.scope !== undefined) {
      throw new errors.InvalidClientMetadata('scope must be a string of space-separated scopes');
    }
  };
}

/**
 * A registered client's metadata as stored: its secret (if any) as its SHA-256, as svc keeps every
 * client secret (compareClientSecret in internals.ts hashes what a client presents). Only a
 * registration stores a client (no registration management), so the secret here is always the
 * one secretFactory just made.
 */
export function storedRegistration(payload: Record<string, unknown>): Record<string, unknown> {
  const secret = payload.client_secret;
  return typeof secret === 'string' && secret.length > 0 ? { ...payload, client_secret: sha256Hex(secret) } : payload;
}
