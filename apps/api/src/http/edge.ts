import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { AppServices } from '../context.ts';
import { parseBearer, sha256Hex } from '../modules/applications/keys.ts';
import { logRequest } from './access-log.ts';
import { applyPublicCors } from './cors.ts';
import { sendError } from './errors.ts';
import { applyRateLimit, type RateLimiter, type RateLimitSubject } from './rate-limit.ts';
import { assignRequestId } from './request-id.ts';
import { compileSecurityHeaders } from './security-headers.ts';

/** Request bodies above this are refused with 413 payload_too_large. */
export const MAX_BODY_BYTES = 1_000_000;

/** Routes authenticated by a backend credential: a known key spends its own budget. */
const BACKEND_PREFIXES = ['/v1/backend/', '/v1/usage/events', '/v1/usage-events', '/trpc/backend.'];
/** Never limited: load balancers probe it. */
const RATE_LIMIT_EXEMPT = new Set(['/healthz']);

/**
 * The path as routing sees it: Express and the OpenAPI adapter match case-insensitively and
 * ignore one trailing slash, so classification (fast lane, CORS, rate-limit scope) must too, or
 * `/V1/Client/Config/` would dodge what `/v1/client/config` gets.
 */
export function normalizePath(rawPath: string): string {
  const lower = rawPath.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}

/**
 * What every request goes through before any route, in ARCHITECTURE.md section 3's order:
 * request id, access log, security headers, CORS (public routes), body-size cap, rate limit.
 * Plain functions over Node's req/res, so the Express app and the hot-route fast lane run the
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
  const { clientIp } = services;

  /**
   * A well-formed secret key of an existing application spends that application's budget;
   * anything else, including a made-up key, spends the client IP's, so nobody mints fresh budgets
   * by inventing keys. A key this process has not seen lately is looked up (and cached) first,
   * unless the client's IP budget is already spent: then a flood of invented keys costs no
   * database reads.
   */
  function subjectOf(req: IncomingMessage, path: string): RateLimitSubject | Promise<RateLimitSubject> {
    // A tRPC batch (`/trpc/a,b,c`) runs one procedure per name: it costs one token each.
    const cost = path.startsWith('/trpc/') ? path.split(',').length : 1;
    const ip = clientIp(req);
    const ipSubject: RateLimitSubject = { scope: 'public', subject: ip, limit: config.rateLimit.publicPerMinute, cost };
    if (!BACKEND_PREFIXES.some((p) => path.startsWith(p))) {
      return ipSubject;
    }
    const token = parseBearer(req.headers.authorization);
    if (!token || !SECRET_KEY_PATTERN.test(token)) {
      return ipSubject;
    }
    const hash = sha256Hex(token);
    const bySubject = (known: ApplicationWithOrganization | null | undefined): RateLimitSubject =>
      known ? { scope: 'backend', subject: known.application.id, limit: config.rateLimit.backendPerMinute, cost } : ipSubject;
    const known = services.applications.peekBySecretKeyHash(hash);
    if (known === undefined && !limiter.isExhausted(`public:${ip}`)) {
      return services.applications.bySecretKeyHash(hash).then(bySubject);
    }
    return bySubject(known);
  }

  return {
    run(req, res, rawPath) {
      const path = normalizePath(rawPath);
      assignRequestId(req, res);
      logRequest(logger, req, res);
      setSecurityHeaders(res);
      if (applyPublicCors(req, res, path)) {
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
      const subject = subjectOf(req, path);
      const limited =
        subject instanceof Promise ? subject.then((s) => applyRateLimit(limiter, req, res, s)) : applyRateLimit(limiter, req, res, subject);
      return limited instanceof Promise ? limited.then((l) => !l) : !limited;
    },
  };
}
