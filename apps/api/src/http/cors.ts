import type { NextFunction, Request, Response } from 'express';

/** Public, credential-free routes that browsers on any origin may call. */
const PUBLIC_PATHS = new Set(['/v1/client/config', '/v1/config', '/v1/setup/agent-context', '/v1/openapi.json']);

/**
 * CORS for the public routes only. No credentials are allowed, so `*` is safe: these answers are
 * public by design and carry no cookie-authenticated data. Preflights answer 204.
 */
export function publicCors(req: Request, res: Response, next: NextFunction): void {
  if (!PUBLIC_PATHS.has(req.path)) {
    next();
    return;
  }
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
  res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, RateLimit, RateLimit-Policy, Retry-After');
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'GET, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'x-svc-publishable-key, content-type, x-request-id');
    res.setHeader('Access-Control-Max-Age', '600');
    res.status(204).end();
    return;
  }
  next();
}
