import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppServices } from '../context.ts';
import { logRequest } from './access-log.ts';
import { clientIpResolver } from './client-ip.ts';
import { applyPublicCors } from './cors.ts';
import { sendError } from './errors.ts';
import { applyRateLimit, RateLimiter } from './rate-limit.ts';
import { assignRequestId } from './request-id.ts';
import { compileSecurityHeaders } from './security-headers.ts';

/** Request bodies above this are refused with 413 payload_too_large. */
export const MAX_BODY_BYTES = 1_000_000;

/**
 * What every request goes through before any route, in ARCHITECTURE.md section 3's order:
 * request id, access log, security headers, CORS (public routes), body-size cap, rate limit.
 * Plain functions over Node's req/res, so the Express app and the hot-route fast lane run the
 * same code. `run` resolves false when it has already answered (preflight, 413, 429).
 */
export type Edge = { run: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean> };

export function createEdge(services: AppServices): Edge {
  const { config, logger } = services;
  const https = config.publicUrl.startsWith('https:');
  const setSecurityHeaders = compileSecurityHeaders({
    contentSecurityPolicy: {
      directives: {
        'script-src': ["'self'"],
        'img-src': ["'self'", 'data:'],
        'connect-src': ["'self'"],
        // Upgrading subresources breaks a plain-http local install; only on https.
        'upgrade-insecure-requests': https ? [] : null,
      },
    },
    strictTransportSecurity: https,
  });
  const clientIp = clientIpResolver(config.trustProxy);
  const limiter = new RateLimiter(services.db, logger);

  return {
    async run(req, res, path) {
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
      return !(await applyRateLimit(limiter, config.rateLimit, req, res, path, clientIp(req)));
    },
  };
}
