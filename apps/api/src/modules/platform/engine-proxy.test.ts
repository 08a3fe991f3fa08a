import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { type DevEngine, startDevEngine } from '@svc/dev-engine/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { freePort, startTestServer, TEST_ENV } from '../../../../../test/support/server.ts';
import { ConfigError, loadConfig } from '../../env.ts';
import { buildOpenApiDocument } from '../../http/openapi.ts';
import { createLogger } from '../../logging.ts';
import { startServer } from '../../server.ts';
import { ENGINE_PROXY_ALLOWLIST, openApiTemplate } from './engine-allowlist.ts';

type Server = Awaited<ReturnType<typeof startTestServer>>;
type Answer = { status: number; headers: http.IncomingHttpHeaders; text: string; json: any };

const PREFIX = '/v1/platform/engine/';
const FAKE_TOKEN = 'fake-engine-admin-token-0123456789';
const SIGNIN_ENV = { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' };

/** svc with the dev engine in process and the proxy on its defaults (the dev engine's admin API). */
let embedded: Server;
/** svc whose proxy points at `fake`, a stand-in engine admin API the tests steer. */
let viaFake: Server;
/** svc on an external engine without ENGINE_ADMIN_API_URL: the proxy is not configured. */
let unconfigured: Server;
let externalEngine: DevEngine;
let fake: FakeEngine;

/** Every answer any test got from svc, to check no engine token ever appears in one. */
const answers: Answer[] = [];
/** Everything `viaFake` logged (at info and above). */
const logLines: string[] = [];

/** startTestServer, with the log kept in `logLines` instead of silenced. */
async function startLoggedServer(env: Record<string, string>): Promise<Server> {
  const databaseUrl = await createTestDatabase();
  const config = loadConfig({ ...TEST_ENV, LOG_LEVEL: 'info', PORT: String(await freePort()), DATABASE_URL: databaseUrl, ...env });
  const logger = createLogger(config, { write: (line: string) => void logLines.push(line) });
  return { ...(await startServer(config, logger)), databaseUrl };
}

type FakeMode = 'json' | 'hang' | 'html' | 'redirect' | 'unauthorized' | 'server-error' | 'huge' | 'not-found';
type FakeEngine = { url: string; mode: FakeMode; seen: http.IncomingMessage[]; close: () => Promise<void> };

/** A stand-in engine admin API: answers according to `mode`, records what it was sent. */
async function startFakeEngine(): Promise<FakeEngine> {
  const state: FakeEngine = { url: '', mode: 'json', seen: [], close: async () => {} };
  const server = http.createServer((req, res) => {
    state.seen.push(req);
    switch (state.mode) {
      case 'json':
        res.writeHead(200, {
          'content-type': 'application/json',
          'set-cookie': 'authentik_session=engine-session; Path=/; HttpOnly',
          'keep-alive': 'timeout=5',
          'proxy-authenticate': 'Basic realm="engine"',
          'x-engine-internal': 'engine-internal-header',
        });
        res.end(JSON.stringify({ pagination: { count: 1 }, results: [{ pk: 1, email: 'someone@example.com' }], echoedUrl: req.url }));
        return;
      case 'hang':
        return;
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>engine login page</html>');
        return;
      case 'redirect':
        res.writeHead(302, { location: 'https://evil.example/steal' });
        res.end();
        return;
      case 'unauthorized':
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: 'You do not have permission to perform this action.' }));
        return;
      case 'server-error':
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: 'Traceback (most recent call last): engine-stack-trace' }));
        return;
      case 'not-found':
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: 'Not found.' }));
        return;
      case 'huge':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ results: ['x'.repeat(5 * 1024 * 1024)] }));
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return state;
}

/**
 * One request exactly as written: node:http sends the path untouched (fetch and URL would
 * resolve `..` and `%2e%2e` before sending, hiding the traversal from svc).
 */
function request(
  server: Server,
  path: string,
  opts: { jar?: CookieJar; method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const base = new URL(server.url);
  const headers: Record<string, string> = { ...opts.headers };
  const cookies = opts.jar ? Object.entries(opts.jar.cookiesFor(server.url)) : [];
  if (cookies.length) {
    headers.cookie = cookies.map(([k, v]) => `${k}=${v}`).join('; ');
  }
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, path, method: opts.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        const answer = { status: res.statusCode ?? 0, headers: res.headers, text, json };
        answers.push(answer);
        resolve(answer);
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** A real password sign-in through the engine, as auth-flow.test.ts plays it; the jar holds the session. */
async function signIn(server: Server, email: string, password: string): Promise<CookieJar> {
  const jar = new CookieJar();
  const atCallback = (location: string) => location.includes('/auth/callback');
  const started = await jar.fetch(`${server.url}/auth/login?login_hint=${encodeURIComponent(email)}`);
  expect(started.status).toBe(303);
  const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
  let callback = page.url;
  if (!atCallback(callback)) {
    const submitted = await jar.post(page.url, { email, password });
    callback = (await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback)).url;
  }
  const landed = await jar.fetch(callback);
  expect(landed.status).toBe(303);
  expect(jar.cookiesFor(server.url).svc_session).toMatch(/^[a-z2-7]{32}$/);
  return jar;
}

function adminApi(server: Server) {
  const admin = server.services.config.engine.admin;
  if (!admin) {
    throw new Error('no engine admin API configured');
  }
  return admin;
}

/** The engine's own answer, asked directly with the server-side token. */
async function direct(server: Server, path: string): Promise<{ status: number; json: any }> {
  const admin = adminApi(server);
  const res = await fetch(new URL(path, admin.url), { headers: { authorization: `Bearer ${admin.token}` } });
  return { status: res.status, json: await res.json() };
}

const withoutRequestId = (a: Answer) => ({ ...a.json, error: { ...a.json?.error, requestId: undefined } });

beforeAll(async () => {
  fake = await startFakeEngine();
  // The external engine must know svc's callback before svc starts: pick svc's port first.
  const unconfiguredPort = await freePort();
  externalEngine = await startDevEngine({
    port: 0,
    clients: [
      {
        client_id: 'svc',
        redirect_uris: [`http://127.0.0.1:${unconfiguredPort}/auth/callback`],
        post_logout_redirect_uris: [`http://127.0.0.1:${unconfiguredPort}/signin`],
      },
    ],
  });
  [embedded, viaFake, unconfigured] = await Promise.all([
    startTestServer({ env: SIGNIN_ENV }),
    startLoggedServer({
      ...SIGNIN_ENV,
      ENGINE_ADMIN_API_URL: `${fake.url}/api/v3`,
      ENGINE_ADMIN_TOKEN: FAKE_TOKEN,
      ENGINE_ADMIN_TIMEOUT_MS: '400',
    }),
    startTestServer({ env: { ...SIGNIN_ENV, PORT: String(unconfiguredPort), ENGINE_ISSUER: externalEngine.issuer } }),
  ]);
});

afterAll(async () => {
  await Promise.all([embedded?.close(), viaFake?.close(), unconfigured?.close()]);
  await externalEngine?.close();
  await fake?.close();
});

describe('who may use /v1/platform/engine/*', () => {
  let tenant: CookieJar;
  let admin: CookieJar;
  beforeAll(async () => {
    [tenant, admin] = await Promise.all([
      signIn(embedded, 'user@svc.local', 'user-password'),
      signIn(embedded, 'admin@svc.local', 'admin-password'),
    ]);
  });

  it('the embedded dev engine is the default, with its own random token', () => {
    const api = adminApi(embedded);
    expect(api.devEngine).toBe(true);
    expect(api.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v3\/$/);
    expect(api.url).not.toContain(':0/');
    expect(api.token).toMatch(/^dev-engine-[A-Za-z0-9_-]{32}$/);
  });

  it('anonymous: 401 unauthenticated, allowlisted or not', async () => {
    for (const path of ['core/users/', 'admin/system/', 'nope']) {
      const res = await request(embedded, `${PREFIX}${path}`);
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe('unauthenticated');
    }
  });

  it('a forged or stale session cookie is anonymous', async () => {
    const res = await request(embedded, `${PREFIX}core/users/`, { headers: { cookie: 'svc_session=abcdefghijklmnopqrstuvwxyz234567' } });
    expect(res.status).toBe(401);
  });

  it('a tenant-workspace user gets one and the same 403 for every path and method, and learns nothing', async () => {
    const probes: [string, string, Record<string, string>?, string?][] = [
      ['GET', 'core/users/'],
      ['GET', 'core/groups/'],
      ['GET', 'core/users/1/'],
      ['GET', 'core/users/?search=admin'],
      ['GET', 'admin/system/'],
      ['GET', 'core/tokens/'],
      ['GET', 'no/such/thing/'],
      ['GET', 'core/users/../../admin/system/'],
      ['GET', `core/users/?${'q'.repeat(5000)}`],
      ['GET', ''],
      ['HEAD', 'core/users/'],
      ['POST', 'core/users/', { 'content-type': 'application/json', origin: embedded.url }, '{"username":"x"}'],
      ['DELETE', 'core/users/1/', { 'content-type': 'application/json', origin: embedded.url }],
    ];
    const first = await request(embedded, `${PREFIX}core/users/`, { jar: tenant });
    expect(first.status).toBe(403);
    expect(first.json).toEqual({ error: { code: 'forbidden', message: 'Forbidden', requestId: expect.any(String) } });
    for (const [method, path, headers, body] of probes) {
      const res = await request(embedded, `${PREFIX}${path}`, {
        jar: tenant,
        method,
        ...(headers ? { headers } : {}),
        ...(body ? { body } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      if (method !== 'HEAD') {
        expect(withoutRequestId(res), `${method} ${path}`).toEqual(withoutRequestId(first));
        expect(res.headers['content-length']).toBe(first.headers['content-length']);
      }
      expect(res.headers.allow).toBeUndefined();
      expect(res.text).not.toMatch(/engine|pagination|results|admin@|api\/v3|not_found|service_unavailable|method_not_allowed/i);
    }
    // And the engine's users stayed as they were.
    expect((await direct(embedded, 'core/users/?username=x')).json.results).toEqual([]);
  });

  it('a platform admin gets the engine answer, exactly as the engine gives it', async () => {
    for (const path of ['core/users/', 'core/groups/', 'core/users/?email=user@svc.local', 'core/users/?page_size=1&page=2']) {
      const res = await request(embedded, `${PREFIX}${path}`, { jar: admin });
      const engine = await direct(embedded, path);
      expect(res.status, path).toBe(200);
      expect(res.json, path).toEqual(engine.json);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const users = (await request(embedded, `${PREFIX}core/users/`, { jar: admin })).json;
    expect(Object.keys(users)).toEqual(['pagination', 'results']);
    expect(users.results.map((u: { email: string }) => u.email)).toEqual(expect.arrayContaining(['admin@svc.local', 'user@svc.local']));
    const filtered = (await request(embedded, `${PREFIX}core/users/?email=user@svc.local`, { jar: admin })).json;
    expect(filtered.results).toHaveLength(1);

    const pk = users.results.find((u: { email: string }) => u.email === 'admin@svc.local').pk;
    const one = await request(embedded, `${PREFIX}core/users/${pk}/`, { jar: admin });
    expect(one.json).toEqual((await direct(embedded, `core/users/${pk}/`)).json);
    // Without the trailing slash too: forwarded as Authentik's canonical path.
    expect((await request(embedded, `${PREFIX}core/users/${pk}`, { jar: admin })).json).toEqual(one.json);

    const groups = (await request(embedded, `${PREFIX}core/groups/`, { jar: admin })).json;
    const platformAdmins = groups.results.find((g: { name: string }) => g.name === 'platform-admins');
    const group = await request(embedded, `${PREFIX}core/groups/${platformAdmins.pk}/`, { jar: admin });
    expect(group.status).toBe(200);
    expect(group.json).toEqual(platformAdmins);

    const head = await request(embedded, `${PREFIX}core/users/`, { jar: admin, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it("the engine's own 404 is relayed with our error body beside it", async () => {
    const res = await request(embedded, `${PREFIX}core/users/999999/`, { jar: admin });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      error: { code: 'not_found', message: 'the engine answered 404', requestId: expect.any(String) },
      engine: { detail: 'Not found.' },
    });
  });

  it('a platform admin gets 404 not_found for anything off the allowlist, without reaching the engine', async () => {
    for (const path of [
      'admin/system/',
      'core/tokens/',
      'core/tokens/svc/view_key/',
      'providers/oauth2/',
      'core/users/me/',
      'core/users/1/set_password/',
      'events/events/',
      'core/users/abc/',
      '',
      'Core/Users/',
    ]) {
      const res = await request(embedded, `${PREFIX}${path}`, { jar: admin });
      expect(res.status, path).toBe(404);
      expect(res.json.error.code, path).toBe('not_found');
      expect(res.json.engine, path).toBeUndefined();
    }
  });

  it.each([
    'core/users/../../admin/system/',
    'core/users/%2e%2e/%2e%2e/admin/system/',
    'core/users/%2E%2E/%2E%2E/admin/system/',
    'core/users/.%2e/.%2e/admin/system/',
    'core/users/..%2f..%2fadmin%2fsystem/',
    'core/users/%252e%252e/%252e%252e/admin/system/',
    'core/users/..\\..\\admin\\system\\',
    'core%5cusers%5c',
    'core\\users\\',
    'core//users/',
    'core/users//',
    '/core/users/',
    '//core/users/',
    'core/./users/',
    './core/users/',
    'core/users/.',
    'core%2fusers/',
    'core/users/%',
    'core/users/%c0%ae%c0%ae/admin/system/',
  ])('traversal %s is refused with 404 (admin) and the same 403 (tenant)', async (path) => {
    const res = await request(embedded, `${PREFIX}${path}`, { jar: admin });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('not_found');
    expect(res.text).not.toContain('pagination');
    const asTenant = await request(embedded, `${PREFIX}${path}`, { jar: tenant });
    expect(asTenant.status).toBe(403);
  });

  it('a NUL in the path is refused at the edge (400 validation_failed) for everyone, before the proxy', async () => {
    for (const jar of [admin, tenant]) {
      const res = await request(embedded, `${PREFIX}core/users/1%00/`, { jar });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_failed');
    }
  });

  it('traversal out of the mount itself never reaches another route with the proxy', async () => {
    const res = await request(embedded, '/v1/platform/engine/../../me', { jar: admin });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('not_found');
  });

  it('read-only: other methods answer 405 for a platform admin and change nothing; a cross-site one is stopped by the CSRF guard', async () => {
    const before = (await direct(embedded, 'core/users/')).json.pagination.count;
    const body = JSON.stringify({ username: 'via-proxy', email: 'via-proxy@example.com', name: 'Via Proxy', password: 'x' });
    const post = await request(embedded, `${PREFIX}core/users/`, {
      jar: admin,
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: embedded.url },
      body,
    });
    expect(post.status).toBe(405);
    expect(post.json.error.code).toBe('method_not_allowed');
    expect(post.headers.allow).toBe('GET, HEAD');
    const crossSite = await request(embedded, `${PREFIX}core/users/`, {
      jar: admin,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: 'username=x',
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.error.code).toBe('csrf_rejected');
    expect((await direct(embedded, 'core/users/')).json.pagination.count).toBe(before);
  });

  it('an overlong query string is refused before the engine is called', async () => {
    const res = await request(embedded, `${PREFIX}core/users/?search=${'a'.repeat(2100)}`, { jar: admin });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('validation_failed');
  });
});

describe('what reaches the engine and what comes back', () => {
  let admin: CookieJar;
  let tenant: CookieJar;
  beforeAll(async () => {
    [admin, tenant] = await Promise.all([
      signIn(viaFake, 'admin@svc.local', 'admin-password'),
      signIn(viaFake, 'user@svc.local', 'user-password'),
    ]);
  });

  const ask = (path = 'core/users/', headers: Record<string, string> = {}) => request(viaFake, `${PREFIX}${path}`, { jar: admin, headers });

  it("sends svc's token and the query, never the caller's cookies or Authorization", async () => {
    fake.mode = 'json';
    fake.seen.length = 0;
    const res = await ask('core/users/?search=a%20b&page=2&email=x%2By@example.com', {
      authorization: 'Bearer caller-supplied-token',
      'x-forwarded-for': '203.0.113.9',
    });
    expect(res.status).toBe(200);
    expect(fake.seen).toHaveLength(1);
    const sent = fake.seen[0] as http.IncomingMessage;
    expect(sent.method).toBe('GET');
    expect(sent.url).toBe('/api/v3/core/users/?search=a+b&page=2&email=x%2By%40example.com');
    expect(sent.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(sent.headers.cookie).toBeUndefined();
    expect(sent.headers['x-forwarded-for']).toBeUndefined();
    expect(JSON.stringify(sent.headers)).not.toContain('caller-supplied-token');
    expect(JSON.stringify(sent.headers)).not.toContain('svc_session');
    expect(res.json).toEqual({
      pagination: { count: 1 },
      results: [{ pk: 1, email: 'someone@example.com' }],
      echoedUrl: '/api/v3/core/users/?search=a+b&page=2&email=x%2By%40example.com',
    });
  });

  it('relays no engine header: no Set-Cookie, hop-by-hop or engine-internal header', async () => {
    fake.mode = 'json';
    const res = await ask();
    expect(res.status).toBe(200);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['proxy-authenticate']).toBeUndefined();
    expect(res.headers['x-engine-internal']).toBeUndefined();
    expect(res.headers['keep-alive']).toBeUndefined();
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('a tenant user, a path off the allowlist and a traversal are refused before anything is sent to the engine', async () => {
    fake.mode = 'json';
    fake.seen.length = 0;
    expect((await request(viaFake, `${PREFIX}core/users/`, { jar: tenant })).status).toBe(403);
    expect((await ask('admin/system/')).status).toBe(404);
    expect((await ask('core/users/%2e%2e/%2e%2e/admin/system/')).status).toBe(404);
    expect((await ask('core/users/../../admin/system/')).status).toBe(404);
    expect(fake.seen).toHaveLength(0);
  });

  it('an engine that does not answer in time: 504 engine_timeout', async () => {
    fake.mode = 'hang';
    const started = Date.now();
    const res = await ask();
    expect(res.status).toBe(504);
    expect(res.json.error.code).toBe('engine_timeout');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it.each<[FakeMode, string]>([
    ['html', 'without a JSON body'],
    ['redirect', 'answered 302'],
    ['unauthorized', 'ENGINE_ADMIN_TOKEN'],
    ['server-error', 'answered 500'],
    ['huge', 'exceeds'],
  ])('an engine answer svc cannot relay (%s): 502 engine_bad_response, nothing of it passed on', async (mode, message) => {
    fake.mode = mode;
    fake.seen.length = 0;
    const res = await ask();
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('engine_bad_response');
    expect(res.json.error.message).toContain(message);
    expect(res.json.engine).toBeUndefined();
    expect(res.text).not.toMatch(/engine login page|evil\.example|engine-stack-trace|permission to perform|xxxx/);
    // A redirect is not followed: the token goes nowhere else.
    expect(fake.seen).toHaveLength(1);
  });

  it("the engine's 404 stays a 404", async () => {
    fake.mode = 'not-found';
    const res = await ask('core/users/5/');
    expect(res.status).toBe(404);
    expect(res.json.engine).toEqual({ detail: 'Not found.' });
  });

  it('an engine that is down: 502 engine_unreachable', async () => {
    await fake.close();
    const res = await ask();
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('engine_unreachable');
    expect(res.json.error.message).toBe('the engine admin API is unreachable');
  });
});

describe('without ENGINE_ADMIN_API_URL', () => {
  it('platform admins get 503 naming the settings; tenants still the same 403; anonymous 401', async () => {
    expect(unconfigured.services.config.engine.embedded).toBe(false);
    expect(unconfigured.services.config.engine.admin).toBeNull();
    const admin = await signIn(unconfigured, 'admin@svc.local', 'admin-password');
    const res = await request(unconfigured, `${PREFIX}core/users/`, { jar: admin });
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('service_unavailable');
    expect(res.json.error.message).toContain('ENGINE_ADMIN_API_URL');
    expect(res.json.error.message).toContain('ENGINE_ADMIN_TOKEN');
    expect((await request(unconfigured, `${PREFIX}admin/system/`, { jar: admin })).status).toBe(404);

    const tenant = await signIn(unconfigured, 'user@svc.local', 'user-password');
    const refused = await request(unconfigured, `${PREFIX}core/users/`, { jar: tenant });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: 'forbidden', message: 'Forbidden' });
    expect((await request(unconfigured, `${PREFIX}core/users/`)).status).toBe(401);
  });
});

describe('the OpenAPI document', () => {
  it('lists each allowlisted path as a session-authenticated GET and stays valid', async () => {
    const doc = buildOpenApiDocument('http://127.0.0.1:3000') as any;
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    for (const route of ENGINE_PROXY_ALLOWLIST) {
      const op = doc.paths[`/platform/engine/${openApiTemplate(route).path}`]?.get;
      expect(op, route.template).toBeDefined();
      expect(op.security).toEqual([{ sessionCookie: [] }]);
      expect(op.summary).toBe(route.summary);
    }
    expect(doc.paths['/platform/engine/admin/system']).toBeUndefined();
    expect(Object.keys(doc.paths).filter((path) => path.endsWith('/'))).toEqual([]);
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
  });
});

describe('settings', () => {
  const EXTERNAL = { ENGINE_ISSUER: 'https://auth.example.com/application/o/svc/' };
  const configError = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
  };

  it('an engine admin API URL and token, the URL given a trailing slash', () => {
    const config = loadConfig({ ...EXTERNAL, ENGINE_ADMIN_API_URL: 'https://auth.example.com/api/v3', ENGINE_ADMIN_TOKEN: 'tok-123' });
    expect(config.engine.admin).toEqual({ url: 'https://auth.example.com/api/v3/', token: 'tok-123', timeoutMs: 10_000, devEngine: false });
    expect(
      loadConfig({
        ...EXTERNAL,
        ENGINE_ADMIN_API_URL: 'http://authentik-server:9000/api/v3/',
        ENGINE_ADMIN_TOKEN: 't',
        ENGINE_ADMIN_TIMEOUT_MS: '2500',
      }).engine.admin,
    ).toMatchObject({
      url: 'http://authentik-server:9000/api/v3/',
      timeoutMs: 2500,
    });
  });

  it('none on an external engine: not configured; with the dev engine in process: its admin API', () => {
    expect(loadConfig(EXTERNAL).engine.admin).toBeNull();
    const a = loadConfig({ DEV_ENGINE_PORT: '3999' }).engine.admin;
    const b = loadConfig({}).engine.admin;
    expect(a).toMatchObject({ url: 'http://127.0.0.1:3999/api/v3/', devEngine: true });
    expect(a?.token).toMatch(/^dev-engine-/);
    expect(a?.token).not.toBe(b?.token);
    expect(loadConfig({ ENGINE_ADMIN_TOKEN: 'chosen-token' }).engine.admin).toMatchObject({ token: 'chosen-token', devEngine: true });
  });

  it.each(['not a url', 'ftp://auth.example.com/api/v3/', 'javascript:alert(1)', '/api/v3/'])(
    'ENGINE_ADMIN_API_URL=%s is a one-line startup error naming the setting',
    (value) => {
      const message = configError({ ...EXTERNAL, ENGINE_ADMIN_API_URL: value, ENGINE_ADMIN_TOKEN: 't' });
      expect(message).toContain('ENGINE_ADMIN_API_URL');
      expect(message).not.toContain('\n');
    },
  );

  it('a URL with credentials, a query or a fragment is refused without echoing it', () => {
    for (const url of [
      'https://svc:hunter2@auth.example.com/api/v3/',
      'https://auth.example.com/api/v3/?token=hunter2',
      'https://auth.example.com/api/v3/#hunter2',
    ]) {
      const message = configError({ ...EXTERNAL, ENGINE_ADMIN_API_URL: url, ENGINE_ADMIN_TOKEN: 't' });
      expect(message).toContain('ENGINE_ADMIN_API_URL');
      expect(message).not.toContain('hunter2');
    }
  });

  it('each setting needs the other; a malformed token is refused without echoing it', () => {
    expect(configError({ ...EXTERNAL, ENGINE_ADMIN_API_URL: 'https://auth.example.com/api/v3/' })).toMatch(
      /^ENGINE_ADMIN_TOKEN is required/,
    );
    expect(configError({ ...EXTERNAL, ENGINE_ADMIN_TOKEN: 'tok' })).toMatch(/^ENGINE_ADMIN_API_URL is required/);
    for (const token of ['two words-secret', 'line\nbreak-secret', '']) {
      const message = configError({ ...EXTERNAL, ENGINE_ADMIN_API_URL: 'https://auth.example.com/api/v3/', ENGINE_ADMIN_TOKEN: token });
      expect(message).toContain('ENGINE_ADMIN_TOKEN');
      expect(message).not.toContain('secret');
    }
    expect(configError({ ENGINE_ADMIN_TIMEOUT_MS: '0' })).toContain('ENGINE_ADMIN_TIMEOUT_MS');
  });
});

describe('secrets', () => {
  it('the log has the engine failures, never the token', () => {
    const log = logLines.join('');
    expect(log).toContain('engine admin API call failed');
    expect(log).toContain('engine_timeout');
    expect(log).toContain('engine_unreachable');
    expect(log).not.toContain(FAKE_TOKEN);
  });

  it('no answer, header or body, ever carried an engine admin token', () => {
    const tokens = [adminApi(embedded).token, FAKE_TOKEN];
    expect(answers.length).toBeGreaterThan(50);
    for (const answer of answers) {
      const all = `${JSON.stringify(answer.headers)}\n${answer.text}`;
      for (const token of tokens) {
        expect(all).not.toContain(token);
      }
    }
  });
});
