type StoredCookie = { name: string; value: string; host: string; path: string; expires: number | undefined };

/**
 * A tiny browser stand-in for tests: fetch with `redirect: 'manual'`, a cookie jar keyed by host
 * (browsers share cookies across ports of one host, so the port is ignored) and RFC 6265 path
 * matching. No Domain or Secure handling: tests run on loopback over http.
 */
export class CookieJar {
  #cookies: StoredCookie[] = [];

  /** Cookies that would be sent to `url`. */
  cookiesFor(url: string): Record<string, string> {
    const u = new URL(url);
    const now = Date.now();
    this.#cookies = this.#cookies.filter((c) => c.expires === undefined || c.expires > now);
    const out: Record<string, string> = {};
    for (const c of this.#cookies) {
      if (c.host === u.hostname && pathMatches(u.pathname, c.path)) {
        out[c.name] = c.value;
      }
    }
    return out;
  }

  store(url: string, setCookies: string[]): void {
    const u = new URL(url);
    for (const header of setCookies) {
      const [pair = '', ...attrs] = header.split(';');
      const eq = pair.indexOf('=');
      if (eq < 1) {
        continue;
      }
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let path = defaultPath(u.pathname);
      let expires: number | undefined;
      for (const attr of attrs) {
        const [k = '', v = ''] = attr.split('=').map((s) => s.trim());
        const key = k.toLowerCase();
        if (key === 'path' && v.startsWith('/')) {
          path = v;
        } else if (key === 'max-age') {
          expires = Date.now() + Number(v) * 1000;
        } else if (key === 'expires' && expires === undefined) {
          expires = Date.parse(v);
        }
      }
      this.#cookies = this.#cookies.filter((c) => !(c.name === name && c.host === u.hostname && c.path === path));
      if (expires === undefined || expires > Date.now()) {
        this.#cookies.push({ name, value, host: u.hostname, path, expires });
      }
    }
  }

  /** fetch with this jar's cookies and `redirect: 'manual'`. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookies = Object.entries(this.cookiesFor(url));
    if (cookies.length) {
      headers.set('cookie', cookies.map(([k, v]) => `${k}=${v}`).join('; '));
    }
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.store(url, res.headers.getSetCookie());
    return res;
  }

  /** Submits an HTML form the way a browser would (application/x-www-form-urlencoded POST). */
  post(url: string, fields: Record<string, string>): Promise<Response> {
    return this.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /**
   * Follows redirects from `url` (GET), stopping at a non-redirect answer or before fetching a
   * location for which `stop` returns true. Returns the last response and the URL it stopped at.
   */
  async follow(url: string, stop: (location: string) => boolean = () => false, maxHops = 10): Promise<{ res: Response; url: string }> {
    let current = url;
    for (let hop = 0; hop < maxHops; hop++) {
      const res = await this.fetch(current);
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) {
        return { res, url: current };
      }
      await res.body?.cancel();
      current = new URL(location, current).href;
      if (stop(current)) {
        return { res, url: current };
      }
    }
    throw new Error(`too many redirects from ${url}`);
  }
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) {
    return true;
  }
  return requestPath.startsWith(cookiePath) && (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/');
}

function defaultPath(pathname: string): string {
  const i = pathname.lastIndexOf('/');
  return i <= 0 ? '/' : pathname.slice(0, i);
}
