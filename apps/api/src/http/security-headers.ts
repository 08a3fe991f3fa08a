import type { ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * helmet's headers, computed once at startup; setting them is then one loop per request. The
 * header set does not depend on the request, and running helmet's dozen middlewares on every
 * request measurably cost the hot public routes.
 */
export function compileSecurityHeaders(options: HelmetOptions): (res: ServerResponse) => void {
  const headers: [string, string][] = [];
  const probe = {
    setHeader: (name: string, value: string) => {
      headers.push([name, value]);
    },
    // helmet removes X-Powered-By; the app disables it at the source instead.
    removeHeader: () => {},
  };
  // biome-ignore lint/suspicious/noExplicitAny: a probe standing in for req/res; helmet only calls setHeader/removeHeader.
  helmet(options)(probe as any, probe as any, () => {});
  return (res) => {
    for (const [name, value] of headers) {
      res.setHeader(name, value);
    }
  };
}

/**
 * Widens the form-action of the Content-Security-Policy already set on `res` (see edge.ts) to one
 * more origin, for one page. Chrome applies form-action to every redirect after a form submit, so
 * a form whose answer ends on another site (an application's post_logout_redirect_uri) needs that
 * site's origin there. `destination` must be an address the page may send the browser to.
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
 * Widens the img-src of the Content-Security-Policy already set on `res` (see edge.ts) to https
 * images, for one hosted page that shows an application's logo (an https URL wherever it is
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
