import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_TRPC_BATCH } from '@svc/contracts/batching';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { AppServices } from '../context.ts';
import { observeRequest } from '../metrics.ts';
import { isLiveApiKey, readApiKeyForRequest } from '../modules/access/principal.ts';
import { parseBearer, sha256Hex } from '../modules/applications/keys.ts';
import { tagRequestSpan } from '../tracing.ts';
import { logRequest } from './access-log.ts';
import { applyPublicCors } from './cors.ts';
import { sendError } from './errors.ts';
import { applyRateLimit, type RateLimiter, type RateLimitSubject } from './rate-limit.ts';
import { assignRequestId } from './request-id.ts';
import { ROUTE_POLICY } from './route-policy.ts';
import { compileSecurityHeaders } from './security-headers.ts';

/**
 * A NUL in the request line, raw or percent-encoded: the decoded path parameter or query value
 * would carry the character PostgreSQL refuses in text (input-guard.ts). Refused here, once, for
 * every route (Express, the /v1 adapter, the OpenID Provider documents, plain routes such as export downloads and the engine proxy).
 */
function nulInUrl(url: string): boolean {
  return url.includes('%00') || url.includes('\u0000');
}

/** Request bodies above this are refused with 413 payload_too_large. */
export const MAX_BODY_BYTES = 1_000_000;

export { MAX_TRPC_BATCH };

/**
 * How many procedures tRPC runs for this request, read the way its adapter reads it: the last
 * path segment, percent-decoded once (`decodeURIComponent`), split on commas when the query has
 * `batch=1`. So `/trpc/a%2Cb%2Cc?batch=1` runs, and costs, three; `a%252Cb` is one (unknown)
 * name. A malformed escape or a batch over MAX_TRPC_BATCH is refused before anything runs: one.
 */
export function trpcProcedureCount(rawPath: string, url: string | undefined): number {
  const query = url?.indexOf('?') ?? -1;
  if (query < 0 || url === undefined || new URLSearchParams(url.slice(query + 1)).get('batch') !== '1') {
    return 1;
  }
  let names: string;
  try {
    names = decodeURIComponent(rawPath.slice(rawPath.lastIndexOf('/') + 1));
  } catch {
    return 1;
  }
  const count = names.split(',').length;
  return count > MAX_TRPC_BATCH ? 1 : count;
}

/** API routes a tenant API key may call: a live key spends its own budget on them. */
const API_PREFIXES = ['/v1/', '/trpc/'];
/**
 * The base path of the REST API (http/rest.ts serves its procedures under it): JSON, CSV and
 * redirects, never a page.
 */
export const REST_BASE = '/v1';
/**
 * Never limited: load balancers and Kubernetes probe them from one address, several times a
 * second per process, and a probe refused with 429 would take a healthy process out of rotation
 * (docs/operations.md "Probes").
 */
const RATE_LIMIT_EXEMPT = new Set(['/healthz', '/readyz']);

/**
 * The path as routing sees it: Express and the OpenAPI adapter match case-insensitively and
 * ignore one trailing slash, so classification (routing, CORS, rate-limit scope) must too, or
 * `/V1/Client/Config/` would dodge what `/v1/client/config` gets.
 */
export function normalizePath(rawPath: string): string {
  const lower = rawPath.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}

/**
 * What every request goes through before any route, in docs/architecture.md section 3's order:
 * request id, access log, security headers, CORS (public routes), NUL in the URL, body-size cap,
 * rate limit.
 * Plain functions over Node's req/res, so the Express app and the routes served before it run the
 * same code. `run` gives false when it has already answered (preflight, 413, 429); it answers
 * synchronously unless it must ask the database (a rate-limit lease, an unseen key).
 */
export type Edge = { run: (req: IncomingMessage, res: ServerResponse, path: string) => boolean | Promise<boolean> };

export function createEdge(services: AppServices, limiter: RateLimiter): Edge {
  const { config, logger } = services;
  const https = config.publicUrl.startsWith('https:');
  const setSecurityHeaders = compileSecurityHeaders({
    contentSecurityPolicy: {
      directives: {
        'script-src': ["'self'"],
        'img-src': ["'self'", 'data:'],
        'connect-src': ["'self'"],
        // Chrome applies form-action to the redirect after a submit: the hosted sign-in form
        // goes through /auth/login to the engine.
        'form-action': ["'self'", new URL(config.engine.issuer).origin],
        // Upgrading subresources breaks a plain-http local install; only on https.
        'upgrade-insecure-requests': https ? [] : null,
      },
    },
    strictTransportSecurity: https,
  });
  // Everything under /v1 is JSON, CSV or a redirect: no answer there is a document a browser
  // renders. It gets the API set (OWASP's REST Security Cheat Sheet): a policy under which
  // nothing loads and nobody frames it, no sniffing, no referrer, no cross-origin no-cors read.
  // The document-only headers (COOP, Origin-Agent-Cluster, DNS prefetch, download and
  // cross-domain policies, X-XSS-Protection) are left off: five fewer headers, and a policy a
  // few words long instead of the pages' several hundred characters, on every API answer.
  const setApiSecurityHeaders = compileSecurityHeaders({
    contentSecurityPolicy: { useDefaults: false, directives: { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] } },
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xFrameOptions: { action: 'deny' },
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    strictTransportSecurity: https,
  });
  const { clientIp } = services;
  const observe = config.metrics.enabled;
  const traced = config.tracing.endpoint !== null;

  /**
   * A well-formed secret key of an existing application spends that application's budget on
   * backend routes; a live tenant API key spends its own on any API route (docs/architecture.md section 7,
   * "per key on backend routes": a service calling the control plane with its key is a backend).
   * Anything else, including a made-up, revoked or expired key, spends the client IP's, so nobody
   * mints fresh budgets by inventing keys. A key is looked up first (applications: cached;
   * tenant keys: the request's one read, which authentication then reuses), unless the client's
   * IP budget is already spent: then a flood of invented keys costs no database reads.
   */
  function subjectOf(req: IncomingMessage, path: string, rawPath: string): RateLimitSubject | Promise<RateLimitSubject> {
    // A tRPC batch (`/trpc/a,b,c?batch=1`, commas possibly percent-encoded) runs one procedure
    // per name: it costs one token each, counted on the path as tRPC sees it (not normalized).
    const cost = path.startsWith('/trpc/') ? trpcProcedureCount(rawPath, req.url) : 1;
    const ip = clientIp(req);
    const ipSubject: RateLimitSubject = { scope: 'public', subject: ip, limit: config.rateLimit.publicPerMinute, cost };
    // Routes authenticated by a backend credential (`rateLimit: 'backend'` in their meta): a known key spends its own budget.
    const backend = ROUTE_POLICY.isBackend(path);
    if (!backend && !API_PREFIXES.some((p) => path.startsWith(p))) {
      return ipSubject;
    }
    const token = parseBearer(req.headers.authorization);
    if (!token || !SECRET_KEY_PATTERN.test(token)) {
      return ipSubject;
    }
    const ipSpent = limiter.isExhausted(`public:${ip}`);
    if (!backend) {
      return ipSpent ? ipSubject : byTenantKey(req, token, ipSubject);
    }
    const hash = sha256Hex(token);
    const known = services.applications.peekBySecretKeyHash(hash);
    if (known === undefined && !ipSpent) {
      return services.applications
        .bySecretKeyHash(hash)
        .then((found) => (found ? perKey(found.application.id, cost) : byTenantKey(req, token, ipSubject)));
    }
    return known ? perKey(known.application.id, cost) : known === null && !ipSpent ? byTenantKey(req, token, ipSubject) : ipSubject;
  }

  // Functions of the edge rather than closures named per request: tsx compiles with esbuild's
  // keepNames, which names every named closure with a defineProperty call each time it is made.

  /** True when the request may go on: the limit is not spent (else the 429 is written). */
  function proceedAfterLimit(req: IncomingMessage, res: ServerResponse, subject: RateLimitSubject): boolean | Promise<boolean> {
    const limited = applyRateLimit(limiter, req, res, subject);
    return limited instanceof Promise ? limited.then((l) => !l) : !limited;
  }

  function perKey(subject: string, cost: number): RateLimitSubject {
    return { scope: 'backend', subject, limit: config.rateLimit.backendPerMinute, cost };
  }

  /** A live tenant API key's own budget (the request's one read of the key), else the IP's. */
  function byTenantKey(req: IncomingMessage, token: string, ipSubject: RateLimitSubject): Promise<RateLimitSubject> {
    return readApiKeyForRequest(services, req, token).then(
      (key) => (key && isLiveApiKey(key) ? perKey(key.id, ipSubject.cost) : ipSubject),
      // Authentication reads again and answers the failure; the limiter stays per IP.
      () => ipSubject,
    );
  }

  return {
    run(req, res, rawPath) {
      const path = normalizePath(rawPath);
      assignRequestId(req, res);
      if (traced) {
        tagRequestSpan(req);
      }
      logRequest(logger, req, res);
      if (observe) {
        observeRequest(req, res, path);
      }
      if (path === REST_BASE || path.startsWith(`${REST_BASE}/`)) {
        setApiSecurityHeaders(res);
      } else {
        setSecurityHeaders(res);
      }
      if (applyPublicCors(req, res, path)) {
        return false;
      }
      if (nulInUrl(req.url ?? '')) {
        sendError(req, res, 'validation_failed', 'the request URL may not contain the NUL character (%00)');
        return false;
      }
      // Refuse declared oversize bodies before anything reads them; chunked bodies without a
      // length are capped by the adapters' maxBodySize with the same code.
      if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) {
        sendError(req, res, 'payload_too_large', `request body exceeds ${MAX_BODY_BYTES} bytes`);
        return false;
      }
      if (!config.rateLimit.enabled || RATE_LIMIT_EXEMPT.has(path) || req.method === 'OPTIONS') {
        return true;
      }
      const subject = subjectOf(req, path, rawPath);
      return subject instanceof Promise ? subject.then((s) => proceedAfterLimit(req, res, s)) : proceedAfterLimit(req, res, subject);
    },
  };
}
