import type { NextFunction, Request, Response } from 'express';
import { sendError } from './errors.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Stops cross-site request forgery on cookie-authenticated mutations: a browser sends our
 * session cookie with a form POST from any site, so a mutation that carries a cookie must be JSON
 * (a cross-site form cannot send application/json without a preflight) and come from an allowed
 * Origin (or, without Origin, Sec-Fetch-Site same-origin). Requests without a cookie (backend
 * keys) are not subject to CSRF and pass.
 */
export function csrfGuard(allowedOrigins: ReadonlySet<string>) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (SAFE_METHODS.has(req.method) || !req.headers.cookie) {
      next();
      return;
    }
    const contentType = req.headers['content-type'] ?? '';
    if (!contentType.toLowerCase().startsWith('application/json')) {
      sendError(req, res, 'csrf_rejected', 'cookie-authenticated mutations must send content-type application/json');
      return;
    }
    const origin = req.headers.origin;
    const fetchSite = req.headers['sec-fetch-site'];
    const allowed = origin ? allowedOrigins.has(origin) : fetchSite === 'same-origin';
    if (!allowed) {
      sendError(req, res, 'csrf_rejected', 'cross-site request refused');
      return;
    }
    next();
  };
}
