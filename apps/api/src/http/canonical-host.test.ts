import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../test/support/server.ts';
import { canonicalUrl, createCanonicalHost, isBrowserPage } from './canonical-host.ts';
import { proxyTrustOf } from './client-ip.ts';

type Answer = { status: number; location: string | undefined; body: string; setCookie: string[] };

/** A raw request to 127.0.0.1:port with any Host header and request target (fetch sets both itself). */
function request(port: number, target: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, location: res.headers.location, body, setCookie: res.headers['set-cookie'] ?? [] }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('canonicalUrl: the same path on PUBLIC_URL, never anywhere else', () => {
  const origin = 'http://127.0.0.1:7150';
  it.each([
    ['/signin?return_to=%2Fauth%2Fconsole%2Fapps', 'http://127.0.0.1:7150/signin?return_to=%2Fauth%2Fconsole%2Fapps'],
    ['/auth/console/', 'http://127.0.0.1:7150/auth/console/'],
    ['//evil.example/x', 'http://127.0.0.1:7150/evil.example/x'],
    ['///evil.example', 'http://127.0.0.1:7150/evil.example'],
    ['/\\evil.example', 'http://127.0.0.1:7150/evil.example'],
    ['/\\/evil.example/', 'http://127.0.0.1:7150/evil.example/'],
    ['/.//evil.example', 'http://127.0.0.1:7150/evil.example'],
    ['/%2F%2Fevil.example', 'http://127.0.0.1:7150/%2F%2Fevil.example'],
    ['/a/../..//evil.example', 'http://127.0.0.1:7150/evil.example'],
    ['/@evil.example', 'http://127.0.0.1:7150/@evil.example'],
    ['http://evil.example/signin', 'http://127.0.0.1:7150/'],
    ['*', 'http://127.0.0.1:7150/'],
    ['/signin?x=//evil.example', 'http://127.0.0.1:7150/signin?x=//evil.example'],
  ])('%s -> %s', (target, expected) => {
    const url = canonicalUrl(origin, target);
    expect(url).toBe(expected);
    expect(new URL(url).origin).toBe(origin);
  });
});

describe('isBrowserPage: pages and sign-in routes, not the API or server-to-server endpoints', () => {
  it.each([
    ['GET', '/', true],
    ['GET', '/signin', true],
    ['HEAD', '/sign-up', true],
    ['GET', '/auth/login', true],
    ['GET', '/auth/console/apps', true],
    ['GET', '/user', true],
    ['GET', '/keyless/claim', true],
    ['GET', '/oidc/auth', true],
    ['GET', '/OIDC/Auth/', true],
    ['GET', '/oidc/interaction/abc', true],
    ['GET', '/oidc/session/end', true],
    ['GET', '/oidc/try/app_1', true],
    ['POST', '/auth/logout', false],
    ['GET', '/oidc/token', false],
    ['GET', '/oidc/jwks', false],
    ['GET', '/oidc/me', false],
    ['GET', '/oidc/authx', false],
    ['GET', '/.well-known/openid-configuration', false],
    ['GET', '/v1/client/config', false],
    ['GET', '/V1', false],
    ['GET', '/trpc/me.get', false],
    ['GET', '/healthz', false],
    ['GET', '/llms.txt', false],
  ])('%s %s: %s', (method, path, expected) => {
    expect(isBrowserPage(method, path)).toBe(expected);
  });
});

describe('the host rule on a bare server', () => {
  async function serve(opts: Parameters<typeof createCanonicalHost>[0]) {
    const rule = createCanonicalHost(opts);
    const server = http.createServer((req, res) => {
      if (!rule(req, res, (req.url ?? '/').split('?')[0] as string)) {
        res.end('served');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as AddressInfo).port };
  }

  it('production: another host gets a page naming PUBLIC_URL (421), never a redirect; its own host and the API are served', async () => {
    const { server, port } = await serve({ publicUrl: 'https://auth.example.com', production: true, trust: undefined });
    try {
      const other = await request(port, '/signin?return_to=%2Fuser', { host: 'evil.example' });
      expect(other.status).toBe(421);
      expect(other.location).toBeUndefined();
      expect(other.body).toContain('https://auth.example.com');
      expect(other.body).toContain('href="https://auth.example.com/signin?return_to=%2Fuser"');
      expect(other.body).not.toContain('evil.example');
      for (const host of ['auth.example.com', 'AUTH.example.com', 'auth.example.com:443']) {
        expect((await request(port, '/signin', { host })).body).toBe('served');
      }
      expect((await request(port, '/signin', { host: 'auth.example.com:8443' })).status).toBe(421);
      expect((await request(port, '/signin', { host: 'x@auth.example.com' })).status).toBe(421);
      expect((await request(port, '/v1/backend/application', { host: 'svc.internal' })).body).toBe('served');
      expect((await request(port, '/oidc/token', { host: 'svc.internal' }, 'POST')).body).toBe('served');
      // X-Forwarded-Host counts only from a trusted proxy (none here).
      expect((await request(port, '/signin', { host: 'evil.example', 'x-forwarded-host': 'auth.example.com' })).status).toBe(421);
    } finally {
      server.close();
    }
  });

  it("behind a trusted proxy, X-Forwarded-Host is the browser's host", async () => {
    const { server, port } = await serve({ publicUrl: 'https://auth.example.com', production: true, trust: proxyTrustOf('loopback') });
    try {
      expect((await request(port, '/signin', { host: '127.0.0.1:7150', 'x-forwarded-host': 'auth.example.com' })).body).toBe('served');
      expect((await request(port, '/signin', { host: 'auth.example.com', 'x-forwarded-host': 'evil.example' })).status).toBe(421);
    } finally {
      server.close();
    }
  });
});

describe('svc opened on another host name than PUBLIC_URL (development)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let port: number;
  beforeAll(async () => {
    server = await startTestServer();
    port = Number(new URL(server.url).port);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a page or sign-in route on localhost redirects to the same path and query on PUBLIC_URL before any cookie is set', async () => {
    for (const target of [
      '/auth/console/apps?page=2',
      '/signin?return_to=%2Fuser',
      '/auth/login?return_to=%2Fuser',
      '/user',
      '/oidc/auth?client_id=app_1&response_type=code',
      '/oidc/session/end?client_id=app_1',
    ]) {
      const res = await request(port, target, { host: `localhost:${port}` });
      expect(res.status, target).toBe(307);
      expect(res.location, target).toBe(`${server.url}${target}`);
      expect(res.setCookie, target).toEqual([]);
    }
  });

  it('Host header injection and absolute-URL paths stay on PUBLIC_URL', async () => {
    for (const [target, host] of [
      ['//evil.example/', 'evil.example'],
      ['/\\evil.example', `localhost:${port}`],
      ['/.//evil.example/signin', 'evil.example'],
      ['http://evil.example/signin', 'evil.example'],
    ] as const) {
      const res = await request(port, target, { host });
      expect(res.status, target).toBe(307);
      expect(new URL(res.location as string).origin, target).toBe(server.url);
      expect(res.location as string, target).not.toMatch(/^https?:\/\/[^/]*evil/);
    }
  });

  it('PUBLIC_URL itself, the API and the OpenID Provider endpoints answer on any host', async () => {
    expect((await request(port, '/signin', { host: `127.0.0.1:${port}` })).status).toBe(200);
    expect((await request(port, '/v1/client/config?keyless=1', { host: `localhost:${port}` })).status).toBe(200);
    expect((await request(port, '/.well-known/openid-configuration', { host: `localhost:${port}` })).status).toBe(200);
    expect((await request(port, '/oidc/jwks', { host: `localhost:${port}` })).status).toBe(200);
    expect((await request(port, '/healthz', { host: `localhost:${port}` })).status).toBe(200);
  });
});
