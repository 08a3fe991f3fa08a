import type { IncomingMessage } from 'node:http';
import { AppError, statusOf } from '@svc/contracts/errors';
import type { Response } from 'express';
import { allowHttpsImages } from '../../modules/shared/csp.ts';
import { fromAllowedOrigin } from '../csrf.ts';
import type { ApplicationBrand } from './sign-in-pages.ts';

/**
 * The hosted pages' kit (docs/architecture.md section 3, "Hosted pages"): how the sign-in, claim,
 * invitation and provider pages are answered. The HTML itself is modules/shared/hosted-page.ts
 * (hostedPage, messagePage, escapeHtml), the one shell the pages oidc-provider renders through its
 * configuration use too.
 */

/**
 * Answers a hosted page with `status`. `noStore`: Cache-Control no-store, for a page that carries
 * a person's own data, a one-time secret or a refusal tied to their session (claim, invitation).
 */
export function sendHostedPage(res: Response, status: number, html: string, opts: { noStore?: boolean } = {}): void {
  if (opts.noStore) {
    res.setHeader('Cache-Control', 'no-store');
  }
  res.status(status).type('html').send(html);
}

/**
 * Answers a refused action as its page: an AppError's status, and `page` given its code and
 * message (every refusal page shows the stable code); never stored. Anything but an AppError is
 * a bug and is thrown on (a 500).
 */
export function sendRefusalPage(res: Response, error: unknown, page: (code: string, message: string) => string): void {
  if (!(error instanceof AppError)) {
    throw error;
  }
  sendHostedPage(res, statusOf(error.code), page(error.code, error.message), { noStore: true });
}

/**
 * 303 to `path`, never stored: where a link's secret (an invite or claim token) was just moved
 * into a cookie, so the token leaves the address bar and history.
 */
export function seeOtherNoStore(res: Response, path: string): void {
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(303, path);
}

/**
 * The origin check of a hosted form that changes state: a form POST from any site would carry
 * svc's cookies, so only svc's own pages (PUBLIC_URL's origin, csrf.ts fromAllowedOrigin) may
 * post it. The caller answers a refusal with its own page (403).
 */
export function ownOriginCheck(publicUrl: string): (req: IncomingMessage) => boolean {
  const ownOrigin: ReadonlySet<string> = new Set([new URL(publicUrl).origin]);
  return (req) => fromAllowedOrigin(req, ownOrigin);
}

/**
 * Answers a hosted page branded for `application`. Only a page that shows the application's
 * logo (an https URL: checkLogoUrl) lets its CSP load https images; scripts and everything else
 * stay as http/edge.ts set them.
 */
export function sendBrandedPage(res: Response, application: ApplicationBrand | undefined, html: string): void {
  if (application?.logoUrl) {
    allowHttpsImages(res);
  }
  res.type('html').send(html);
}
