import type { ServerResponse } from 'node:http';

/**
 * Widens the form-action of the Content-Security-Policy already set on `res` (see http/edge.ts) to
 * one more origin, for one page. Chrome applies form-action to every redirect after a form submit,
 * so a form whose answer ends on another site (an application's post_logout_redirect_uri) needs
 * that site's origin there. `destination` must be an address the page may send the browser to.
 */
export function allowFormRedirectTo(res: ServerResponse, destination: string): void {
  const csp = res.getHeader('Content-Security-Policy');
  const origin = URL.parse(destination)?.origin;
  if (typeof csp !== 'string' || !origin || origin === 'null' || /[\s;,']/.test(origin)) {
    return;
  }
  res.setHeader(
    'Content-Security-Policy',
    csp.replace(/(^|;)\s*form-action([^;]*)/, (directive) => `${directive} ${origin}`),
  );
}

/**
 * Widens the img-src of the Content-Security-Policy already set on `res` (see http/edge.ts) to
 * https images, for one hosted page that shows an application's logo (an https URL wherever it is
 * hosted). Nothing else changes: scripts stay same-origin, and every other response keeps
 * img-src 'self' data:.
 */
export function allowHttpsImages(res: ServerResponse): void {
  const csp = res.getHeader('Content-Security-Policy');
  if (typeof csp !== 'string') {
    return;
  }
  res.setHeader(
    'Content-Security-Policy',
    csp.replace(/(^|;)\s*img-src([^;]*)/, (directive) => (/\shttps:(\s|$)/.test(directive) ? directive : `${directive} https:`)),
  );
}
