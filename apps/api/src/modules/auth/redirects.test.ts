import http from 'node:http';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';

/**
 * Open redirects, end to end: every route that redirects, fed hostile return addresses, driven
 * like a browser through the real hosted pages, the development engine's forms and svc's
 * callback. What is asserted is the Location header itself, resolved the way a browser resolves
 * it against svc's origin: every redirect svc answers stays on svc (or goes to the engine, for the
 * hand-offs), and the one at the end of sign-in, where return_to is consumed, lands on svc.
 */
let server: Awaited<ReturnType<typeof startTestServer>>;
let svc: string;
let engine: string;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '100000' } });
  svc = new URL(server.services.config.publicUrl).origin;
  engine = new URL(server.services.config.engine.issuer).origin;
});
afterAll(async () => {
  await server?.close();
});

/** Return addresses that must never take the browser off svc, as the value return_to carries. */
const HOSTILE: string[] = [
  '/.//evil.example/x',
  '/..//evil.example',
  '/./..//evil.example',
  '/%2e/%2fevil.example',
  '/%2e%2e//evil.example',
  '/.%2e//evil.example',
  '/./%2e%2e//evil.example',
  '/a/../..//evil.example',
  '/%2F%2Fevil.example',
  '/%2f%2fevil.example',
  '/%252F%252Fevil.example',
  '//evil.example',
  '///evil.example',
  '/\\evil.example',
  '\\\\evil.example',
  '/%5Cevil.example',
  '/%5cevil.example',
  'https:evil.example',
  'https:/evil.example',
  'http://evil.example',
  'https://evil.example/',
  'HTTPS://EVIL.EXAMPLE',
  '/\t/evil.example',
  '/%09/evil.example',
  '\t//evil.example',
  ' //evil.example',
  'https://svc@evil.example',
  'https://127.0.0.1@evil.example',
  'https://user:pass@evil.example/',
  '\uff0f\uff0fevil.example',
  '/\uff0f/evil.example',
  '\u2215\u2215evil.example',
  'javascript:alert(1)',
  'java\nscript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  '/\r\nLocation: https://evil.example',
  '/%0d%0aLocation:%20https://evil.example',
  `/${'a'.repeat(3000)}`,
  `//evil.example/${'a'.repeat(3000)}`,
];

/** Hostile addresses as they would be pasted into a link: the same characters, not encoded again. */
const HOSTILE_RAW: string[] = [
  '/.//evil.example/x',
  '/..//evil.example',
  '/%2e/%2fevil.example',
  '/%2F%2Fevil.example',
  '/%5Cevil.example',
  '/%09/evil.example',
];

const PASSWORD = 'user-password';
const EMAIL = 'user@svc.local';

function unescapeHtml(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attribute(html: string, pattern: RegExp): string | undefined {
  const m = pattern.exec(html);
  return m?.[1] === undefined ? undefined : unescapeHtml(m[1]);
}

let enrolled = 0;

/**
 * Plays the browser from `start` until svc's callback answers, and gives the callback's
 * Location. On the way: every svc redirect must resolve to svc or the engine (or `alsoAllowed`,
 * an allowlisted application asked for explicitly); svc's hosted pages
 * are submitted as their form (or social link) says; the engine's login, enrollment and
 * hand-off pages are filled in.
 */
async function browse(jar: CookieJar, start: string, opts: { social?: boolean; alsoAllowed?: string } = {}): Promise<string> {
  let url = start;
  for (let hop = 0; hop < 25; hop++) {
    const at = new URL(url);
    const res = await jar.fetch(url);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location !== null) {
      await res.body?.cancel();
      const next = new URL(location, url);
      if (at.origin === svc) {
        expect([svc, engine, opts.alsoAllowed], `${url} redirected to ${location}`).toContain(next.origin);
        if (at.pathname === '/auth/callback') {
          return location;
        }
      }
      url = next.href;
      continue;
    }
    const html = await res.text();
    expect(res.status, `${url}: ${html.slice(0, 300)}`).toBe(200);
    if (at.origin === svc) {
      if (opts.social) {
        url = new URL(attribute(html, /data-testid="continue-social" href="([^"]*)"/) ?? '', url).href;
        continue;
      }
      // The hosted sign-in form: GET /auth/login with its hidden fields and the typed email.
      const query = new URLSearchParams({ login_hint: EMAIL });
      for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
        query.append(m[1] as string, unescapeHtml(m[2] as string));
      }
      url = `${svc}/auth/login?${query}`;
      continue;
    }
    const action = new URL(attribute(html, /<form method="post" action="([^"]*)"/) ?? url, url).href;
    const fields: Record<string, string> = html.includes('name="name"')
      ? { email: `redirect-${++enrolled}-${Date.now()}@svc.local`, name: 'Redirect Test', password: 'a-long-enough-password' }
      : html.includes('name="password"')
        ? { email: EMAIL, password: PASSWORD }
        : {};
    const posted = await jar.post(action, fields);
    const after = posted.headers.get('location');
    expect(after, `${action} answered ${posted.status}`).not.toBeNull();
    await posted.body?.cancel();
    url = new URL(after as string, action).href;
  }
  throw new Error(`no callback reached from ${start}`);
}

/** The Location a browser would follow, resolved against svc's origin, must be on svc's origin. */
function expectOnSvc(location: string, input: string): void {
  expect(new URL(location, svc).origin, `return_to ${JSON.stringify(input.slice(0, 80))} ended at ${location}`).toBe(svc);
  // And not only against svc: resolved against any other page it is still a path, never a host.
  expect(new URL(location, 'https://elsewhere.invalid/a/b').origin, location).toBe('https://elsewhere.invalid');
}

/**
 * Every way a return address enters sign-in. `full`: the whole table (the routes with their own
 * code: the hosted form, /auth/login, a hand-off); the others share startHandOff with those and get
 * the forms that broke it.
 */
const ROUTES: [string, 'full' | 'sample', (query: string) => { start: string; social?: boolean }][] = [
  ['/signin form', 'full', (q) => ({ start: `/signin?${q}` })],
  ['/sign-in form', 'sample', (q) => ({ start: `/sign-in?${q}` })],
  ['/signin social link', 'sample', (q) => ({ start: `/signin?${q}`, social: true })],
  ['/signup form (engine enrollment)', 'sample', (q) => ({ start: `/signup?${q}` })],
  ['/sign-up form', 'sample', (q) => ({ start: `/sign-up?${q}` })],
  ['/auth/login', 'full', (q) => ({ start: `/auth/login?login_hint=${encodeURIComponent(EMAIL)}&${q}` })],
  [
    '/auth/login, repeated return_to',
    'sample',
    (q) => ({ start: `/auth/login?login_hint=${encodeURIComponent(EMAIL)}&return_to=%2Fuser&${q}` }),
  ],
  ['/auth/recovery', 'full', (q) => ({ start: `/auth/recovery?${q}` })],
  ['/auth/verify-email', 'sample', (q) => ({ start: `/auth/verify-email?${q}` })],
  ['/auth/mfa', 'sample', (q) => ({ start: `/auth/mfa?${q}` })],
  ['/auth/passkeys', 'sample', (q) => ({ start: `/auth/passkeys?${q}` })],
];

/** The forms that reached another host before (dot segments and encodings that parse to `//`). */
const SAMPLE = new Set([
  '/.//evil.example/x',
  '/..//evil.example',
  '/./%2e%2e//evil.example',
  '/%2e%2e//evil.example',
  '//evil.example',
  '/\\evil.example',
]);

describe('every redirecting route keeps the browser on svc, whatever return_to says', () => {
  it.each(ROUTES)('%s (%s table)', { timeout: 120_000 }, async (_name, size, route) => {
    const queries = [
      ...HOSTILE.filter((value) => size === 'full' || SAMPLE.has(value)).map((value) => ({
        value,
        query: `return_to=${encodeURIComponent(value)}`,
      })),
      ...HOSTILE_RAW.filter((value) => size === 'full' || SAMPLE.has(value)).map((value) => ({ value, query: `return_to=${value}` })),
    ];
    expect(queries.length).toBeGreaterThanOrEqual(size === 'full' ? HOSTILE.length : SAMPLE.size);
    for (const { value, query } of queries) {
      const { start, social } = route(query);
      const location = await browse(new CookieJar(), `${svc}${start}`, { social });
      expectOnSvc(location, value);
    }
  });

  it('a harmless return_to still comes back where it asked, on every route', { timeout: 60_000 }, async () => {
    for (const [name, , route] of ROUTES) {
      const { start, social } = route(`return_to=${encodeURIComponent('/user?tab=security#mfa')}`);
      const location = await browse(new CookieJar(), `${svc}${start}`, { social });
      expect(location, name).toBe(name.includes('repeated') ? '/auth/console' : '/user?tab=security#mfa');
    }
  });
});

/** A raw request line (fetch would normalize the dot segments away before sending). */
function rawGet(path: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const url = new URL(svc);
    const req = http.request({ host: url.hostname, port: url.port, path, method: 'GET', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('anonymous hosted pages send the browser to sign-in and back to svc', () => {
  it.each([
    '/auth/console/../..//evil.example',
    '/auth/console/./../..//evil.example/x',
    '/auth/console/%2e%2e/%2e%2e//evil.example',
    '/auth/console/..%2f..%2f%2fevil.example',
    '/auth/console/../../%5Cevil.example',
    '/auth/console/?next=//evil.example',
    '/user?x=/..//evil.example',
  ])('%s', { timeout: 60_000 }, async (path) => {
    const first = await rawGet(path);
    expect(first.status).toBe(303);
    expectOnSvc(first.location as string, path);
    const location = await browse(new CookieJar(), new URL(first.location as string, svc).href);
    expectOnSvc(location, path);
  });
});

describe('the callback checks the stored return address again', () => {
  it.each(['//evil.example', '/.//evil.example', 'https://evil.example/', '/\\evil.example'])(
    'a pending sign-in stored with %s (by an older svc) still lands on svc',
    { timeout: 60_000 },
    async (stored) => {
      const jar = new CookieJar();
      const started = await jar.fetch(`${svc}/auth/login?login_hint=${encodeURIComponent(EMAIL)}&return_to=%2Fuser`);
      expect(started.status).toBe(303);
      // What a row written before return_to was checked on its final form could hold.
      const sql = server.services.sql;
      const rows = await sql`update pending_logins set return_to = ${stored} where return_to = '/user' returning 1`;
      expect(rows.length).toBeGreaterThan(0);
      const location = await browse(jar, started.headers.get('location') as string);
      expectOnSvc(location, stored);
      expect(location).toBe('/auth/console');
    },
  );
});

describe("an application's redirect allowlist: exact matches only, judged again at the callback", () => {
  const ALLOWED = 'https://app.example.com/after';

  it('an allowlisted URL is where sign-in ends; near misses on the same host land on svc', { timeout: 60_000 }, async () => {
    const { seedApplication } = await import('../../../../../test/support/factories.ts');
    const app = await seedApplication(server.services.db, { redirectUrls: [ALLOWED] });
    const start = (returnTo: string) => `${svc}/signin?publishable_key=${app.publishableKey}&return_to=${encodeURIComponent(returnTo)}`;
    expect(await browse(new CookieJar(), start(ALLOWED), { alsoAllowed: 'https://app.example.com' })).toBe(ALLOWED);
    for (const near of [
      'https://app.example.com//evil.example',
      'https://app.example.com/after/..//evil.example',
      'https://app.example.com/after?next=x',
      'https://user@app.example.com/after',
      'https://app.example.com.evil.example/after',
      'http://app.example.com/after',
      '//app.example.com/after',
    ]) {
      expectOnSvc(await browse(new CookieJar(), start(near)), near);
    }
  });

  it("the sign-in page's form may end on an allowlisted return_to's origin, and on no other", async () => {
    const { seedApplication } = await import('../../../../../test/support/factories.ts');
    const app = await seedApplication(server.services.db, { redirectUrls: [ALLOWED] });
    const formAction = async (query: string) => {
      const res = await fetch(`${svc}/signin?${query}`);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const csp = res.headers.get('content-security-policy') ?? '';
      return (csp.split(';').find((d) => d.trim().startsWith('form-action')) ?? '').trim().split(/\s+/).slice(1);
    };
    const base = await formAction('');
    expect(base).toContain("'self'");
    const q = (returnTo: string, key = app.publishableKey) => `publishable_key=${key}&return_to=${encodeURIComponent(returnTo)}`;
    expect(await formAction(q(ALLOWED))).toEqual([...base, 'https://app.example.com']);
    // Not allowlisted for this application (or no application): the page allows nothing more.
    const other = await seedApplication(server.services.db, { redirectUrls: ['https://evil.example/after'] });
    for (const query of [
      q('https://evil.example/after'),
      q('https://app.example.com.evil.example/after'),
      q('https://app.example.com/after?next=x'),
      q(ALLOWED, other.publishableKey),
      `return_to=${encodeURIComponent(ALLOWED)}`,
      q('/user'),
    ]) {
      expect(await formAction(query), query).toEqual(base);
    }
  });

  it('a URL taken off the allowlist while someone signs in is not where they land', { timeout: 60_000 }, async () => {
    const { seedApplication } = await import('../../../../../test/support/factories.ts');
    const app = await seedApplication(server.services.db, { redirectUrls: [ALLOWED] });
    const jar = new CookieJar();
    const started = await jar.fetch(
      `${svc}/auth/login?login_hint=${encodeURIComponent(EMAIL)}&publishable_key=${app.publishableKey}&return_to=${encodeURIComponent(ALLOWED)}`,
    );
    expect(started.status).toBe(303);
    await server.services.sql`update applications set redirect_urls = '{}' where id = ${app.application.id}`;
    expect(await browse(jar, started.headers.get('location') as string)).toBe('/auth/console');
  });
});

describe('other redirects', () => {
  it('sign-out goes to the engine or to svc, never to a place the request names', async () => {
    const jar = new CookieJar();
    await browse(jar, `${svc}/auth/login?login_hint=${encodeURIComponent(EMAIL)}`);
    const out = await jar.fetch(
      `${svc}/auth/logout?return_to=${encodeURIComponent('//evil.example')}&post_logout_redirect_uri=https://evil.example`,
      {
        method: 'POST',
        headers: { origin: svc },
      },
    );
    expect(out.status).toBe(303);
    const target = new URL(out.headers.get('location') ?? '', svc);
    expect([svc, engine]).toContain(target.origin);
    expect(target.searchParams.get('post_logout_redirect_uri') ?? `${svc}/signin`).toBe(`${svc}/signin`);
  });
});
