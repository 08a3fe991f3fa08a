import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapeHtml, hostedPage } from '../modules/shared/hosted-page.ts';
import type { ProxyTrust } from './client-ip.ts';
import { normalizePath } from './edge.ts';

/**
 * Paths a browser never opens as a page: the API, the OpenID Provider's documents and its
 * endpoints called server to server (token, JWKS, userinfo, introspection, revocation, ...).
 * They answer on any host: a back end or a container may reach svc by another name.
 */
const MACHINE_PATHS = new Set(['/v1', '/healthz', '/readyz', '/metrics', '/llms.txt']);
const MACHINE_PREFIXES = ['/v1/', '/trpc/', '/.well-known/', '/oidc/'];
/** Under /oidc/, what a browser opens: authorization, the hosted interaction, end session, try sign-in. */
const BROWSER_OIDC = ['/oidc/auth', '/oidc/interaction/', '/oidc/session/end', '/oidc/try/'];

/** A Host header as the URL parser reads it (lower case, default port dropped), or undefined when it is no host name. */
function hostOf(value: string, protocol: string): string | undefined {
  // Only what a host name and port are made of: no userinfo (`evil@svc`), path or spaces.
  if (!/^[a-z0-9.\-:[\]]{1,300}$/i.test(value)) {
    return undefined;
  }
  try {
    return new URL(`${protocol}//${value}`).host;
  } catch {
    return undefined;
  }
}

/** Whether the rule applies: a page or sign-in route of svc opened by a browser. */
export function isBrowserPage(method: string | undefined, rawPath: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') {
    return false;
  }
  const path = normalizePath(rawPath);
  if (MACHINE_PATHS.has(path)) {
    return false;
  }
  if (path.startsWith('/oidc/')) {
    return BROWSER_OIDC.some((p) => path === p || (p.endsWith('/') ? path.startsWith(p) : path.startsWith(`${p}/`)));
  }
  return !MACHINE_PREFIXES.some((p) => path.startsWith(p));
}

/**
 * The same path and query on PUBLIC_URL's origin. Only the path and query of the request line are
 * kept, and the origin is PUBLIC_URL's, never anything the request says: `//evil.example`,
 * `/\evil.example`, `/.//evil.example` or an absolute-form request line stay paths on svc.
 */
export function canonicalUrl(publicOrigin: string, requestUrl: string): string {
  let path = '/';
  let search = '';
  if (requestUrl.startsWith('/')) {
    try {
      // Parsed as a path of svc (a leading `//` would make it an authority): the URL parser
      // resolves dot segments and reads backslashes as the browser will.
      const parsed = new URL(`${publicOrigin}/${requestUrl.replace(/^[/\\]+/, '')}`);
      path = parsed.pathname.replace(/^\/+/, '/');
      search = parsed.search;
    } catch {
      path = '/';
    }
  }
  const target = new URL(`${publicOrigin}${path}${search}`);
  // Belt and braces: whatever the path held, the answer stays on PUBLIC_URL's origin.
  return target.origin === publicOrigin ? target.href : `${publicOrigin}/`;
}

export type CanonicalHostOptions = {
  /** PUBLIC_URL: where browsers reach svc, and where its cookies and sign-in callback live. */
  publicUrl: string;
  /** Production answers an error page naming PUBLIC_URL; elsewhere, a redirect to it. */
  production: boolean;
  /** TRUST_PROXY: X-Forwarded-Host counts only from a proxy it trusts (else Host). */
  trust: ProxyTrust | undefined;
};

/**
 * svc's pages and sign-in routes on PUBLIC_URL's host only (README, "Sign-in"; docs/api.md,
 * "Host names"). svc's cookies (session, pending sign-in) belong to the host a browser used,
 * while the engine always returns to PUBLIC_URL's /auth/callback: a sign-in started on
 * `localhost` when PUBLIC_URL says `127.0.0.1` could never complete. So a GET or HEAD of a page
 * on another host answers, before anything is set, with a 307 to the same path and query on
 * PUBLIC_URL (in development), or with a page naming PUBLIC_URL (in production, where another
 * host reaching svc is a misconfigured proxy or DNS name to fix, not something to paper over).
 * The API and the OpenID Provider's server-to-server endpoints answer on any host. Gives true
 * when it answered.
 */
export function createCanonicalHost(opts: CanonicalHostOptions): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  const publicUrl = new URL(opts.publicUrl);
  const origin = publicUrl.origin;
  const host = publicUrl.host;
  return (req, res, path) => {
    if (!isBrowserPage(req.method, path)) {
      return false;
    }
    const forwarded = req.headers['x-forwarded-host'];
    const viaProxy =
      typeof forwarded === 'string' && opts.trust !== undefined && opts.trust(req.socket.remoteAddress ?? '', 0)
        ? forwarded.split(',')[0]?.trim()
        : undefined;
    const asked = viaProxy ?? req.headers.host;
    // HTTP/1.0 without a Host header names no host: nothing to compare.
    if (asked === undefined || hostOf(asked, publicUrl.protocol) === host) {
      return false;
    }
    const target = canonicalUrl(origin, req.url ?? '/');
    res.setHeader('Cache-Control', 'no-store');
    if (!opts.production) {
      res.statusCode = 307;
      res.setHeader('Location', target);
      res.end();
      return true;
    }
    res.statusCode = 421;
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(
      hostedPage(
        'Open svc at its own address',
        `<h1 data-testid="hosted-heading">Open svc at ${escapeHtml(origin)}</h1>
<p>svc answers its pages at <a href="${escapeHtml(target)}" data-testid="canonical-url">${escapeHtml(origin)}</a> only: signing in works there, where its cookies live.</p>
<p class="muted">If that is where you meant to go, the proxy or DNS name in front of svc sends another host name: it must pass the browser's Host on.</p>`,
      ),
    );
    return true;
  };
}
