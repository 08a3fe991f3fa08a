import type { Request, Response } from 'express';
import { escapeHtml, hostedPage } from '../modules/shared/hosted-page.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { sendError } from './errors.ts';

/** The APIs: their 404 is the JSON error body whatever Accept says (docs/architecture.md section 4). */
const API_PREFIXES = ['/v1', '/trpc'];

/**
 * The last route: no route took the request. A browser asking for a page (GET or HEAD, Accept
 * preferring text/html, outside the APIs) gets a page that says so and where to go; everyone
 * else, and every API path, the JSON 404 (docs/architecture.md section 3).
 */
export function sendNotFound(req: Request, res: Response): void {
  if (!wantsPage(req)) {
    sendError(req, res, 'not_found', `no route ${req.method} ${req.path}`);
    return;
  }
  res.status(404).setHeader('Cache-Control', 'no-store');
  res.type('html').send(
    hostedPage(
      'Page not found',
      `<h1 data-testid="hosted-heading">Page not found</h1>
<p>svc has no page at <code data-testid="not-found-path">${escapeHtml(req.path)}</code>.</p>
<p><a class="button" href="/auth/console/" data-testid="not-found-console">Open the console</a> <a href="/docs">API docs</a></p>
<p class="muted">Request id ${escapeHtml(requestIdOf(req))}</p>`,
    ),
  );
}

function wantsPage(req: Request): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return false;
  }
  if (API_PREFIXES.some((prefix) => req.path === prefix || req.path.startsWith(`${prefix}/`))) {
    return false;
  }
  // Browsers list text/html first; curl's */* and a client without Accept get JSON (listed first here).
  return req.accepts(['json', 'html']) === 'html';
}
