import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { sendError } from './errors.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The request comes from one of our origins: its Origin header says so, or (browsers that send
 * none) Sec-Fetch-Site says same-origin. The one origin rule for every cookie-authenticated
 * state change, including the hosted logout form.
 */
export function fromAllowedOrigin(req: IncomingMessage, allowedOrigins: ReadonlySet<string>): boolean {
  // Under our Referrer-Policy (no-referrer) browsers send `Origin: null` even on same-origin form
  // POSTs. An opaque origin proves nothing either way, so Sec-Fetch-Site decides (a sandboxed or
  // cross-site page says cross-site).
  const origin = req.headers.origin === 'null' ? undefined : req.headers.origin;
  return origin ? allowedOrigins.has(origin) : req.headers['sec-fetch-site'] === 'same-origin';
}

/**
 * Stops cross-site request forgery on cookie-authenticated mutations: a browser sends our
 * session cookie with a form POST from any site, so a mutation that carries a cookie must be JSON
 * (a cross-site form cannot send application/json without a preflight) and come from an allowed
 * Origin (or, without Origin, Sec-Fetch-Site same-origin). Requests without a cookie (backend
 * keys) are not subject to CSRF and pass. Gives the refusal's message (403 csrf_rejected), or
 * undefined when the request may proceed.
 */
export function csrfRefusal(req: IncomingMessage, allowedOrigins: ReadonlySet<string>): string | undefined {
  if (SAFE_METHODS.has(req.method ?? 'GET') || !req.headers.cookie) {
    return undefined;
  }
  const contentType = req.headers['content-type'] ?? '';
  if (!contentType.toLowerCase().startsWith('application/json')) {
    return 'cookie-authenticated mutations must send content-type application/json';
  }
  if (!fromAllowedOrigin(req, allowedOrigins)) {
    return 'cross-site request refused';
  }
  return undefined;
}

/** csrfRefusal as Express middleware, for the routes Express serves. */
export function csrfGuard(allowedOrigins: ReadonlySet<string>) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const refusal = csrfRefusal(req, allowedOrigins);
    if (refusal) {
      sendError(req, res, 'csrf_rejected', refusal);
      return;
    }
    next();
  };
}
