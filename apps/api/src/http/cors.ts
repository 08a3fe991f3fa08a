import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROUTE_POLICY } from './route-policy.ts';

/**
 * Public, credential-free routes that browsers on any origin may call: the procedures that
 * declare `publicCors` (http/route-policy.ts), and these documents served outside the procedures.
 */
const PUBLIC_PATHS = new Set([
  ...ROUTE_POLICY.publicPaths,
  '/v1/openapi.json',
  '/llms.txt',
  // svc's OpenID Provider metadata and keys: single-page applications read them from the browser.
  '/.well-known/openid-configuration',
  '/.well-known/oauth-authorization-server',
  '/oidc/jwks',
]);

/**
 * CORS for the public routes only. No credentials are allowed, so `*` is safe: these answers are
 * public by design and carry no cookie-authenticated data. Returns true when it answered a
 * preflight (204) itself. `path` is normalized (see edge.ts).
 */
export function applyPublicCors(req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (!PUBLIC_PATHS.has(path)) {
    return false;
  }
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
  res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, RateLimit, RateLimit-Policy, Retry-After, ETag');
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'GET, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'x-svc-publishable-key, content-type, x-request-id');
    res.setHeader('Access-Control-Max-Age', '600');
    res.statusCode = 204;
    res.end();
    return true;
  }
  return false;
}
