import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey, errors as joseErrors, jwtVerify } from 'jose';

/**
 * An API (or MCP server) of the product, protected by svc as its authorization server
 * (docs/resource-server.md): it publishes its Protected Resource Metadata (RFC 9728), accepts
 * only svc's access tokens issued for it (RFC 9068 JWTs whose audience is its identifier, RFC
 * 8707), and answers a missing or bad token with the 401 and `WWW-Authenticate` challenge that
 * OAuth clients and MCP clients follow to svc.
 */

export type ResourceServerOptions = {
  /** svc's issuer: its PUBLIC_URL (`https://auth.acme.example`). */
  issuer: string;
  /**
   * This API's identifier as registered in svc (an API resource): its canonical https URI, for an
   * MCP server the URL clients connect to (`https://mcp.acme.example/mcp`). Tokens must name it
   * as their audience.
   */
  resource: string;
  /** Shown to people by clients that display the metadata. */
  resourceName?: string;
  /** The permissions (scopes) this API knows, advertised in its metadata. */
  scopesSupported?: readonly string[];
  /** Signing algorithms accepted (svc signs with RS256 unless OIDC_SIGNING_ALG=ES256). */
  algorithms?: readonly string[];
  /** Leeway on `exp` and `nbf`, in seconds (default 5). */
  clockToleranceSeconds?: number;
  /**
   * svc's signing keys in hand, for a resource served by svc itself (its own MCP server): no
   * discovery and no JWKS request. Default: svc's JWKS, found through its metadata and cached.
   */
  keys?: JWTVerifyGetKey;
};

/** Who called, as the token says. */
export type Caller = {
  /** The person (`usr_...`) or, for a machine client, the client itself. */
  subject: string;
  /** The application that got the token. */
  clientId: string;
  /** The organization the token acts for (`org_id`), when it names one. */
  organizationId: string | undefined;
  organizationSlug: string | undefined;
  /** The permissions the token carries on this API (its `scope`). */
  permissions: string[];
  /** The verified payload, for anything else. */
  claims: JWTPayload;
};

/** A refusal: its HTTP status, OAuth error code and the `WWW-Authenticate` header to send. */
export class ResourceAuthError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 503,
    readonly code: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | 'temporarily_unavailable',
    message: string,
    readonly wwwAuthenticate: string | undefined,
  ) {
    super(message);
    this.name = 'ResourceAuthError';
  }

  /** The JSON body svc's resource servers answer with (RFC 6750 names). */
  get body(): { error: string; error_description: string } {
    return { error: this.code, error_description: this.message };
  }
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * Where an RFC 9728 client looks for a resource's metadata: the well-known path inserted between
 * the host and the resource's path (section 3.1), `https://mcp.example/.well-known/oauth-protected-resource/mcp`.
 */
export function protectedResourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}${WELL_KNOWN}${path}`;
}

/** A quoted-string of an auth-param (RFC 9110 section 11.2): quotes and backslashes escaped, controls dropped. */
function quoted(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: controls are what is removed.
  return `"${value.replace(/[\u0000-\u001f\u007f]/g, ' ').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export type ResourceServer = {
  readonly resource: string;
  readonly issuer: string;
  /** The absolute URL of this API's Protected Resource Metadata document. */
  readonly metadataUrl: string;
  /** The path of that URL on this API's own origin (mount the metadata handler there). */
  readonly metadataPath: string;
  /** The Protected Resource Metadata document (RFC 9728 section 2). */
  metadata(): Record<string, unknown>;
  /**
   * Verifies the `Authorization` header's bearer token and that it carries every permission in
   * `required`; resolves with the caller, rejects with a ResourceAuthError.
   */
  verify(authorization: string | undefined, required?: readonly string[]): Promise<Caller>;
};

/** svc's authorization server metadata, read once (and again after a failure). */
type Discovered = { jwks: JWTVerifyGetKey };

/** How long a signing key found in svc's JWKS is used without asking the key set again. */
const KEY_TTL_MS = 60_000;

/**
 * The key set's keys by `kid`, handed to jwtVerify without a promise once known (most of a
 * verification's overhead over a key in hand): an unknown kid, or one kept longer than KEY_TTL_MS,
 * goes to the remote set (jose's cache and cooldown), so a key svc drops stops being accepted
 * within a minute of the set's own refresh.
 */
function keysByKid(remote: JWTVerifyGetKey): JWTVerifyGetKey {
  type Key = Awaited<ReturnType<JWTVerifyGetKey>>;
  const known = new Map<string, { key: Key; until: number }>();
  return (header, token) => {
    // The key the remote set chose for this kid and algorithm (it matches both).
    const id = header.kid === undefined ? undefined : `${header.kid}\u0000${header.alg}`;
    const hit = id === undefined ? undefined : known.get(id);
    if (hit && hit.until > Date.now()) {
      return hit.key;
    }
    return Promise.resolve(remote(header, token)).then((key) => {
      if (id !== undefined) {
        if (known.size >= 16) {
          known.clear();
        }
        known.set(id, { key, until: Date.now() + KEY_TTL_MS });
      }
      return key;
    });
  };
}

export function createResourceServer(options: ResourceServerOptions): ResourceServer {
  // Exactly as registered in svc: the audience is compared as a string.
  const resource = options.resource;
  if (new URL(resource).hash !== '') {
    throw new Error('a resource identifier has no fragment (RFC 8707 section 2)');
  }
  const issuer = options.issuer.replace(/\/+$/, '');
  const metadataUrl = protectedResourceMetadataUrl(resource);
  const metadataPath = new URL(metadataUrl).pathname;
  const algorithms = [...(options.algorithms ?? ['RS256', 'ES256'])];
  const clockTolerance = options.clockToleranceSeconds ?? 5;
  const document = {
    resource,
    authorization_servers: [issuer],
    bearer_methods_supported: ['header'],
    resource_signing_alg_values_supported: algorithms,
    ...(options.scopesSupported ? { scopes_supported: [...options.scopesSupported] } : {}),
    ...(options.resourceName ? { resource_name: options.resourceName } : {}),
  };

  const challenge = (error?: { code: string; description: string; scope?: string }) => {
    const params = [`resource_metadata=${quoted(metadataUrl)}`];
    if (error) {
      params.unshift(`error=${quoted(error.code)}`, `error_description=${quoted(error.description)}`);
      if (error.scope) {
        params.push(`scope=${quoted(error.scope)}`);
      }
    }
    return `Bearer ${params.join(', ')}`;
  };
  const refuse = (description: string) =>
    new ResourceAuthError(401, 'invalid_token', description, challenge({ code: 'invalid_token', description }));

  let discovered: Promise<Discovered> | undefined;
  /** The discovery once it has succeeded: later verifications wait for nothing. */
  let ready: Discovered | undefined = options.keys ? { jwks: options.keys } : undefined;
  const discover = (): Promise<Discovered> => {
    discovered ??= (async () => {
      // RFC 8414: svc serves its metadata at the issuer's well-known path, and it names the issuer exactly.
      const res = await fetch(`${issuer}/.well-known/oauth-authorization-server`, { headers: { accept: 'application/json' } });
      if (!res.ok) {
        throw new Error(`svc's authorization server metadata answered ${res.status}`);
      }
      const meta = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
      if (meta.issuer !== issuer || typeof meta.jwks_uri !== 'string') {
        throw new Error(`svc's authorization server metadata names issuer ${String(meta.issuer)}, not ${issuer}`);
      }
      return { jwks: keysByKid(createRemoteJWKSet(new URL(meta.jwks_uri))) };
    })();
    discovered.then(
      (value) => {
        ready = value;
      },
      () => {
        discovered = undefined;
      },
    );
    return discovered;
  };

  return {
    resource,
    issuer,
    metadataUrl,
    metadataPath,
    metadata: () => structuredClone(document),
    async verify(authorization, required = []) {
      if (authorization === undefined || authorization === '') {
        // No credentials: the challenge alone, no error (RFC 6750 section 3.1).
        throw new ResourceAuthError(401, 'invalid_token', 'a bearer token is required', challenge());
      }
      const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
      if (!match) {
        const description = 'the Authorization header is not a bearer token';
        throw new ResourceAuthError(400, 'invalid_request', description, challenge({ code: 'invalid_request', description }));
      }
      let jwks: JWTVerifyGetKey;
      try {
        ({ jwks } = ready ?? (await discover()));
      } catch (error) {
        throw new ResourceAuthError(503, 'temporarily_unavailable', `svc cannot be reached: ${(error as Error).message}`, undefined);
      }
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jwtVerify(match[1] as string, jwks, {
          issuer,
          audience: resource,
          typ: 'at+jwt',
          algorithms,
          clockTolerance,
          requiredClaims: ['exp', 'iat', 'sub', 'client_id'],
        }));
      } catch (error) {
        if (error instanceof joseErrors.JWKSTimeout || (error instanceof Error && /fetch failed/.test(error.message))) {
          throw new ResourceAuthError(503, 'temporarily_unavailable', 'svc’s keys cannot be fetched', undefined);
        }
        throw refuse(describeJoseError(error));
      }
      const permissions = typeof claims.scope === 'string' && claims.scope !== '' ? claims.scope.split(' ') : [];
      const missing = required.filter((p) => !permissions.includes(p));
      if (missing.length > 0) {
        const description = `this token lacks ${missing.join(', ')}`;
        throw new ResourceAuthError(
          403,
          'insufficient_scope',
          description,
          challenge({ code: 'insufficient_scope', description, scope: required.join(' ') }),
        );
      }
      return {
        subject: String(claims.sub),
        clientId: String(claims.client_id),
        organizationId: typeof claims.org_id === 'string' ? claims.org_id : undefined,
        organizationSlug: typeof claims.org_slug === 'string' ? claims.org_slug : undefined,
        permissions,
        claims,
      };
    },
  };
}

/** What a refused token is told (never the token itself). */
function describeJoseError(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) {
    return 'the token has expired';
  }
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') {
      return 'the token is for another API (audience)';
    }
    if (error.claim === 'typ') {
      return 'not an access token (typ must be at+jwt)';
    }
    return `the token's ${error.claim} claim is not accepted`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed || error instanceof joseErrors.JWKSNoMatchingKey) {
    return 'the token is not signed by svc';
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed) {
    return 'the token is signed with an algorithm this API does not accept';
  }
  return 'the token is not valid';
}

type Next = (error?: unknown) => void;
type Request = IncomingMessage & { svc?: Caller };

/** Sends a refusal as svc's resource servers do: its status, challenge and JSON body. */
export function sendRefusal(res: ServerResponse, error: ResourceAuthError): void {
  if (error.wwwAuthenticate) {
    res.setHeader('WWW-Authenticate', error.wwwAuthenticate);
  }
  res.statusCode = error.status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('cache-control', 'no-store');
  res.end(JSON.stringify(error.body));
}

/**
 * Express (or Connect) middleware: a request without a valid token for this API, or without every
 * permission in `permissions`, is answered here; otherwise `req.svc` is the caller.
 */
export function requireToken(server: ResourceServer, opts: { permissions?: readonly string[] } = {}) {
  return (req: Request, res: ServerResponse, next: Next): void => {
    server.verify(req.headers.authorization, opts.permissions).then(
      (caller) => {
        req.svc = caller;
        next();
      },
      (error: unknown) => (error instanceof ResourceAuthError ? sendRefusal(res, error) : next(error)),
    );
  };
}

/** Express (or Connect) handler of the metadata document: mount it at `server.metadataPath`. */
export function protectedResourceMetadata(server: ResourceServer) {
  const body = JSON.stringify(server.metadata());
  return (_req: IncomingMessage, res: ServerResponse): void => {
    res.statusCode = 200;
    res.setHeader('content-type', 'application/json');
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('cache-control', 'public, max-age=3600');
    res.end(body);
  };
}
