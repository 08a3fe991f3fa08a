import net from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../test/support/factories.ts';
import { cspSources, expectHostedPage } from '../../../../test/support/hosted-page.ts';
import { startTestServer } from '../../../../test/support/server.ts';
import { roomInWindow } from '../../../../test/support/window.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** Raw HTTP/1.1 exchange, for requests fetch refuses to send (oversized headers). */
function rawRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let data = '';
    socket.on('data', (d) => {
      data += d;
    });
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('error model', () => {
  it.each([
    ['GET', '/v1/does-not-exist'],
    ['GET', '/nope'],
    ['POST', '/v1/does-not-exist'],
    ['GET', '/trpc/nothing.here'],
  ])('%s %s answers 404 not_found with a request id', async (method, path) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: method === 'POST' ? '{}' : undefined,
    });
    expect(res.status).toBe(404);
    const body = (await res.json()) as any;
    const error = body.error?.json ?? body.error;
    const code = error.code === 'not_found' ? error.code : error.data?.code;
    expect(code).toBe('not_found');
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('echoes a safe caller request id and replaces an unsafe one', async () => {
    const ok = await fetch(`${server.url}/v1/nope`, { headers: { 'x-request-id': 'trace-123' } });
    expect(ok.headers.get('x-request-id')).toBe('trace-123');
    expect(((await ok.json()) as any).error.requestId).toBe('trace-123');
    const bad = await fetch(`${server.url}/v1/nope`, { headers: { 'x-request-id': 'x'.repeat(200) } });
    expect(bad.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('a wrong method on a known route is not a success', async () => {
    const res = await fetch(`${server.url}/v1/client/config`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(((await res.json()) as any).error.code).toMatch(/^[a-z_]+$/);
  });

  it('oversized headers get 431 with our error body', async () => {
    const { port } = new URL(server.url);
    const answer = await rawRequest(
      Number(port),
      `GET /v1/config HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer.startsWith('HTTP/1.1 431')).toBe(true);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body.error.code).toBe('header_too_large');
  });

  it('an oversized publishable key header is refused cleanly', async () => {
    const res = await fetch(`${server.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': `pk_live_${'A'.repeat(8000)}` } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe('invalid_publishable_key');
  });

  it('a request body above the limit gets 413 payload_too_large', async () => {
    for (const path of ['/trpc/service.config', '/v1/client/config', '/v1/unknown']) {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ pad: 'x'.repeat(1_100_000) }),
      });
      expect(res.status, path).toBe(413);
      expect(((await res.json()) as any).error.code).toBe('payload_too_large');
    }
  });
});

describe('security rules', () => {
  it('CSRF: a cross-site form POST carrying a cookie is refused before any handler', async () => {
    const res = await fetch(`${server.url}/v1/anything`, {
      method: 'POST',
      headers: { cookie: 'svc_session=abc', 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: 'a=1',
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe('csrf_rejected');
  });

  it('CSRF: JSON from a foreign origin with a cookie is refused', async () => {
    const res = await fetch(`${server.url}/trpc/anything`, {
      method: 'POST',
      headers: { cookie: 'svc_session=abc', 'content-type': 'application/json', origin: 'https://evil.example' },
      body: '{}',
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe('csrf_rejected');
  });

  it('CSRF: JSON from our own origin with a cookie passes the guard', async () => {
    const res = await fetch(`${server.url}/v1/anything`, {
      method: 'POST',
      headers: { cookie: 'svc_session=abc', 'content-type': 'application/json', origin: new URL(server.services.config.publicUrl).origin },
      body: '{}',
    });
    expect(res.status).toBe(404);
  });

  it('CSRF: without Origin, only Sec-Fetch-Site same-origin passes', async () => {
    const cross = await fetch(`${server.url}/v1/anything`, {
      method: 'POST',
      headers: { cookie: 'svc_session=abc', 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
      body: '{}',
    });
    expect(cross.status).toBe(403);
    const same = await fetch(`${server.url}/v1/anything`, {
      method: 'POST',
      headers: { cookie: 'svc_session=abc', 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
      body: '{}',
    });
    expect(same.status).toBe(404);
  });

  it('sets security headers on every answer', async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  it('answers under /v1 carry the API set: nothing loads, frames or sniffs them, and no page-only header is sent', async () => {
    const page = await fetch(`${server.url}/`);
    expect(page.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(page.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    const answers = [
      await fetch(`${server.url}/v1/client/config?keyless=1`),
      await fetch(`${server.url}/v1/openapi.json`),
      // An error, a path that is no route, and the same path spelled in capitals with a slash.
      await fetch(`${server.url}/v1/tenants/ten_missing`),
      await fetch(`${server.url}/v1/no-such-route`),
      await fetch(`${server.url}/V1/Client/Config/?keyless=1`),
    ];
    expect(answers.map((res) => res.status)).toEqual([200, 200, 401, 404, 200]);
    for (const res of answers) {
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      for (const pageOnly of [
        'cross-origin-opener-policy',
        'origin-agent-cluster',
        'x-dns-prefetch-control',
        'x-download-options',
        'x-permitted-cross-domain-policies',
        'x-xss-protection',
      ]) {
        expect(res.headers.get(pageOnly)).toBeNull();
      }
    }
    // Control-plane answers are same-origin resources; public config, which CORS opens to every
    // origin, stays readable cross-origin (cors.ts).
    expect(answers[2]?.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    expect(answers[0]?.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    // A path that only starts like the API is a page's: it keeps the page policy.
    const lookalike = await fetch(`${server.url}/v1x`);
    expect(lookalike.headers.get('content-security-policy')).toContain("script-src 'self'");
  });
});

describe('OpenAPI document and docs', () => {
  it('is a valid OpenAPI 3.1 document with our security schemes and a summary on every operation', async () => {
    const res = await fetch(`${server.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toMatch(/^3\.1\./);
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.components.securitySchemes.publishableKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-SVC-Publishable-Key' });
    expect(doc.components.securitySchemes.secretKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie' });
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        expect(op.summary, `${method} ${path}`).toBeTruthy();
      }
    }
    expect(doc.paths['/client/config'].get.security).toEqual([{ publishableKey: [] }]);
    expect(doc.paths['/backend/application'].get.security).toEqual([{ secretKey: [] }]);
    expect(doc.paths['/config'].get.security).toEqual([]);
    expect(doc.paths['/setup/agent-context'].get).toBeDefined();
    // Plain Express routes are documented too.
    expect(doc.paths['/openapi.json'].get).toBeDefined();
  });

  it('/docs serves an offline API reference (no external scripts)', async () => {
    const res = await fetch(`${server.url}/docs`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const scripts = [...html.matchAll(/src="([^"]+)"/g)].map((m) => m[1] as string);
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      expect(src.startsWith('/')).toBe(true);
      expect((await fetch(`${server.url}${src}`)).status).toBe(200);
    }
    expect(html).toContain('swagger-ui');
  });

  it('every page points at the icon svc serves, and /favicon.ico answers it too (no 404 per page view)', async () => {
    for (const path of ['/', '/signin', '/docs/', '/auth/logout']) {
      const page = await (await fetch(`${server.url}${path}`)).text();
      expect(page, path).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
    }
    for (const path of ['/favicon.svg', '/favicon.ico']) {
      const icon = await fetch(`${server.url}${path}`);
      expect(icon.status, path).toBe(200);
      expect(icon.headers.get('content-type'), path).toMatch(/^image\/svg\+xml/);
      expect(await icon.text(), path).toMatch(/^<svg /);
    }
  });

  it('landing page and health check answer', async () => {
    const landing = await fetch(`${server.url}/`);
    expect(landing.status).toBe(200);
    expect(await landing.text()).toContain('<h1>svc</h1>');
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
  });
});

describe('hosted pages', () => {
  it("share the console's look: one card and one <h1>, lang, favicon, tokens with a dark scheme, a focus ring, labelled inputs", async () => {
    const pages: [string, number, string][] = [
      ['/', 200, 'svc'],
      ['/signin', 200, 'Sign in to svc'],
      ['/sign-in', 200, 'Sign in to svc'],
      ['/signup', 200, 'Sign up for svc'],
      ['/auth/logout', 200, 'Sign out?'],
      ['/oidc/interaction/unknown', 400, 'This sign-in request has expired'],
      ['/invitations/accept', 400, 'No invitation here'],
    ];
    for (const [path, status, heading] of pages) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(status);
      expect(expectHostedPage(await res.text(), path), path).toContain(heading);
      // Nothing from elsewhere on pages that show no application's logo; never a script from elsewhere.
      expect(cspSources(res, 'img-src'), path).toEqual(["'self'", 'data:']);
      expect(cspSources(res, 'script-src'), path).toEqual(["'self'"]);
    }
  });

  it('/signin with a publishable key names the application and shows its logo, escaped; only that page lets https images load', async () => {
    const name = '<script>alert("x")</script> & Co';
    const branded = await seedApplication(server.services.db, { name, logoUrl: 'https://cdn.example.com/logo.svg?v=1&size=48' });
    for (const intent of ['signin', 'signup'] as const) {
      const res = await fetch(`${server.url}/${intent}?publishable_key=${branded.publishableKey}`);
      expect(res.status).toBe(200);
      const html = await res.text();
      const heading = expectHostedPage(html, intent);
      const escaped = '&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; Co';
      expect(heading).toBe(intent === 'signin' ? `Sign in to ${escaped}` : `Sign up for ${escaped}`);
      expect(html).not.toContain('<script');
      expect(html).toContain(
        `<img class="brand__logo" src="https://cdn.example.com/logo.svg?v=1&#38;size=48" alt="${escaped} logo" width="48" height="48" referrerpolicy="no-referrer" data-testid="application-logo">`,
      );
      expect(cspSources(res, 'img-src')).toEqual(["'self'", 'data:', 'https:']);
      expect(cspSources(res, 'script-src')).toEqual(["'self'"]);
    }
    // An application without a logo: its name and initial, and the page loads nothing from elsewhere.
    const plain = await seedApplication(server.services.db, { name: 'plain app' });
    const res = await fetch(`${server.url}/signin?publishable_key=${plain.publishableKey}`);
    const html = await res.text();
    expect(expectHostedPage(html, 'no logo')).toBe('Sign in to plain app');
    expect(html).toContain('<span class="brand__initial" aria-hidden="true">P</span>');
    expect(html).not.toContain('data-testid="application-logo"');
    expect(cspSources(res, 'img-src')).toEqual(["'self'", 'data:']);
    // The console and the API keep their own policies: the pages' img-src, and nothing at all.
    expect(cspSources(await fetch(`${server.url}/auth/console/`), 'img-src')).toEqual(["'self'", 'data:']);
    const api = await fetch(`${server.url}/v1/config`);
    expect(cspSources(api, 'img-src')).toEqual([]);
    expect(cspSources(api, 'default-src')).toEqual(["'none'"]);
  });
});

describe('the /v1 adapter', () => {
  it('serves every operation the document lists from a procedure (none is left to the 404)', async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => ['get', 'post', 'patch', 'put', 'delete'].includes(m))
        .map((method) => ({ method: method.toUpperCase(), path: `/v1${path.replace(/\{[^}]+\}/g, 'x')}` })),
    );
    expect(operations.length).toBeGreaterThan(70);
    for (const { method, path } of operations) {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
      });
      const body = res.status === 200 ? {} : ((await res.json().catch(() => ({}))) as any);
      expect(body.error?.message ?? '', `${method} ${path}`).not.toMatch(/^no route/);
      expect(res.status, `${method} ${path}`).not.toBe(500);
    }
  });

  it('matches a templated path in any case and with a trailing slash, keeping the parameter as sent', async () => {
    const { seedApiKey, seedOrganization } = await import('../../../../test/support/tenancy.ts');
    const org = await seedOrganization(server.services.db);
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['tenant.read'] });
    for (const path of [`/v1/tenants/${org.id}`, `/V1/Tenants/${org.id}/`]) {
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: key.authorization } });
      expect(res.status, path).toBe(200);
      expect(((await res.json()) as any).id).toBe(org.id);
    }
    // The id is passed as sent: in capitals it is no organization id (ids are lower case).
    const other = await fetch(`${server.url}/v1/tenants/${org.id.toUpperCase()}`, { headers: { authorization: key.authorization } });
    expect(other.status).toBe(400);
    expect(((await other.json()) as any).error.issues[0].path).toEqual(['id']);
  });

  it('a cookie-carrying DELETE must be JSON from our origin too (CSRF), before any handler', async () => {
    const res = await fetch(`${server.url}/v1/webhook-endpoints/whe_x`, { method: 'DELETE', headers: { cookie: 'svc_session=abc' } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe('csrf_rejected');
  });

  it('a JSON body that is not an object answers 400 validation_failed, never 500', async () => {
    const { seedApplication } = await import('../../../../test/support/factories.ts');
    const app = await seedApplication(server.services.db);
    for (const body of ['[1,2]', '"text"', '42', 'null', 'true']) {
      const res = await fetch(`${server.url}/v1/usage/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${app.secretKey}` },
        body,
      });
      expect(res.status, body).toBe(400);
      expect(((await res.json()) as any).error.code, body).toBe('validation_failed');
    }
  });

  it('answers a body route without a JSON content type 415, and a JSON body that does not parse 400 malformed_request', async () => {
    const form = await fetch(`${server.url}/v1/usage/events`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(form.status).toBe(415);
    expect(((await form.json()) as any).error.code).toBe('unsupported_media_type');
    const broken = await fetch(`${server.url}/v1/usage/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"idempotencyKey":',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).error.code).toBe('malformed_request');
  });
});

describe('/v1 and /trpc answer the same procedure alike', () => {
  const pk = `pk_live_${'P'.repeat(24)}`;
  const cases: { name: string; query: string; headers?: Record<string, string> }[] = [
    { name: 'keyless', query: 'keyless=1' },
    { name: 'missing key', query: '' },
    { name: 'malformed key', query: 'publishable_key=pk_live_x' },
    { name: 'unknown key', query: `publishable_key=${pk}` },
    { name: 'repeated key', query: `publishable_key=${pk}&publishable_key=${pk}` },
    { name: 'repeated keyless', query: 'keyless=1&keyless=1' },
    { name: 'bad keyless value with key', query: `keyless=maybe&publishable_key=${pk}` },
    { name: 'disagreeing header', query: `publishable_key=${pk}`, headers: { 'x-svc-publishable-key': `pk_live_${'Q'.repeat(24)}` } },
  ];

  function strip(body: any): unknown {
    // Only the request id may differ.
    const { requestId: _r, ...error } = body.error ?? {};
    return body.error ? { error } : body;
  }

  it.each(cases)('client config: $name', async ({ query, headers }) => {
    const hot = await fetch(`${server.url}/v1/client/config?${query}`, { headers });
    const input = Object.fromEntries(
      [...new URLSearchParams(query).entries()].reduce(
        (m, [k, v]) => m.set(k, m.has(k) ? [m.get(k), v].flat() : v),
        new Map<string, unknown>(),
      ),
    );
    const viaTrpc = await fetch(`${server.url}/trpc/clientConfig.get?input=${encodeURIComponent(JSON.stringify(input))}`, { headers });
    const hotBody = (await hot.json()) as any;
    const trpcBody = (await viaTrpc.json()) as any;
    expect(hot.status).toBe(viaTrpc.status);
    if (hot.ok) {
      expect(hotBody).toEqual(trpcBody.result.data);
    } else {
      expect(hotBody.error.code).toBe(trpcBody.error.data.code);
      expect(hotBody.error.message).toBe(trpcBody.error.message);
      expect(strip(hotBody)).toEqual({
        error: {
          code: trpcBody.error.data.code,
          message: trpcBody.error.message,
          ...(hotBody.error.issues ? { issues: hotBody.error.issues } : {}),
        },
      });
    }
  });

  it.each([
    ['missing', undefined],
    ['malformed', 'Bearer nope'],
    ['unknown', `Bearer sk_live_${'U'.repeat(40)}`],
  ])('backend application: %s', async (_name, authorization) => {
    const headers: Record<string, string> = authorization ? { authorization } : {};
    const hot = await fetch(`${server.url}/v1/backend/application`, { headers });
    const viaTrpc = await fetch(`${server.url}/trpc/backend.application`, { headers });
    expect(hot.status).toBe(viaTrpc.status);
    expect(((await hot.json()) as any).error.code).toBe(((await viaTrpc.json()) as any).error.data.code);
  });

  it('me: anonymous, a malformed, an unknown and a live session cookie', async () => {
    const { signInFromEngine } = await import('../modules/identity/service.ts');
    const { createSession } = await import('../modules/session-store/service.ts');
    const { user, workspace, isPlatformAdmin } = await signInFromEngine(
      server.services.db,
      { subject: `me-${Date.now()}`, email: `me-${Date.now()}@example.com`, emailVerified: true, name: 'Me', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    const { token } = await createSession(server.services.db, server.services.config.session, {
      userId: user.id,
      activeTenantId: workspace.id,
      isPlatformAdmin,
    });
    for (const cookie of [undefined, 'svc_session=nope', `svc_session=${'a'.repeat(32)}`, `svc_session=${token}`]) {
      const headers: Record<string, string> = cookie ? { cookie } : {};
      const hot = await fetch(`${server.url}/v1/me`, { headers });
      const viaTrpc = await fetch(`${server.url}/trpc/me.get`, { headers });
      expect(hot.status, cookie).toBe(viaTrpc.status);
      const hotBody = (await hot.json()) as any;
      const trpcBody = (await viaTrpc.json()) as any;
      if (cookie?.endsWith(token)) {
        expect(hot.status).toBe(200);
        expect(hotBody).toEqual(trpcBody.result.data);
        expect(hotBody.activeWorkspace).toMatchObject({ id: workspace.id, kind: 'tenant' });
      } else {
        expect(hot.status).toBe(401);
        expect(strip(hotBody)).toEqual({ error: { code: trpcBody.error.data.code, message: trpcBody.error.message } });
      }
    }
  });
});

describe('path variants, HEAD and batches get the same treatment', () => {
  it.each(['/v1/client/config/', '/V1/Client/Config', '/V1/CLIENT/CONFIG/'])('%s is the client config route, with CORS', async (path) => {
    const res = await fetch(`${server.url}${path}?keyless=1`, { headers: { origin: 'https://app.example.com' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(((await res.json()) as any).keyless).toBe(true);
  });

  it('HEAD checks credentials like GET and sends no body', async () => {
    const anonymous = await fetch(`${server.url}/v1/backend/application`, { method: 'HEAD' });
    expect(anonymous.status).toBe(401);
    const keyless = await fetch(`${server.url}/v1/client/config?keyless=1`, { method: 'HEAD' });
    expect(keyless.status).toBe(200);
    expect(await keyless.text()).toBe('');
    // Routes behind the OpenAPI adapter too (it would answer 204 without running anything).
    const config = await fetch(`${server.url}/v1/setup/agent-context?framework=rest`, { method: 'HEAD' });
    expect(config.status).toBe(400);
  });

  it('a bearer scheme in any case authenticates', async () => {
    const { seedApplication } = await import('../../../../test/support/factories.ts');
    const app = await seedApplication(server.services.db);
    const res = await fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `bearer ${app.secretKey}` } });
    expect(res.status).toBe(200);
  });
});

describe('rate-limit scopes', () => {
  let limited: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    limited = await startTestServer({ env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '4', RATE_LIMIT_BACKEND_PER_MINUTE: '50' } });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it('a known key spends its own backend budget, also through /trpc', async () => {
    await roomInWindow(10);
    const { seedApplication } = await import('../../../../test/support/factories.ts');
    const app = await seedApplication(limited.services.db);
    const headers = { authorization: `Bearer ${app.secretKey}` };
    // Not yet cached in this process: looked up first, then charged to the key, not the IP.
    const rest = await fetch(`${limited.url}/v1/backend/application`, { headers });
    expect(rest.status).toBe(200);
    expect(rest.headers.get('ratelimit-policy')).toBe('"backend";q=50;w=60');
    const viaTrpc = await fetch(`${limited.url}/trpc/backend.application`, { headers });
    expect(viaTrpc.status).toBe(200);
    expect(viaTrpc.headers.get('ratelimit-policy')).toBe('"backend";q=50;w=60');
  });

  it('invented well-formed secret keys spend the client IP budget, not fresh ones', async () => {
    await roomInWindow(10);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const fake = `sk_live_${String(i).padStart(40, 'F')}`;
      const res = await fetch(`${limited.url}/v1/backend/application`, {
        headers: { authorization: `Bearer ${fake}`, 'x-forwarded-for': `10.0.0.${i}` },
      });
      statuses.push(res.status);
      expect(res.headers.get('ratelimit-policy')).toContain('"public"');
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
  });

  it('once the IP budget is spent, an unseen key is not even looked up', async () => {
    const { seedApplication } = await import('../../../../test/support/factories.ts');
    const app = await seedApplication(limited.services.db);
    const res = await fetch(`${limited.url}/v1/backend/application`, { headers: { authorization: `Bearer ${app.secretKey}` } });
    expect(res.status).toBe(429);
    expect(
      limited.services.applications.peekBySecretKeyHash((await import('../modules/applications/keys.ts')).sha256Hex(app.secretKey)),
    ).toBeUndefined();
  });
});
