import { ZClientConfigResponse } from '@svc/contracts/public-edge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';

type Server = Awaited<ReturnType<typeof startTestServer>>;
let server: Server;
let noKeyless: Server;

beforeAll(async () => {
  server = await startTestServer();
  noKeyless = await startTestServer({ env: { KEYLESS_ENABLED: 'false' }, databaseUrl: server.databaseUrl });
});
afterAll(async () => {
  await server?.close();
  await noKeyless?.close();
});

async function get(path: string, headers: Record<string, string> = {}, base = server.url) {
  const res = await fetch(`${base}${path}`, { headers });
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, body, headers: res.headers };
}

describe('GET /v1/client/config', () => {
  it('answers the public config by header, with exactly the SPEC 2.5 oauth block', async () => {
    const app = await seedApplication(server.services.db, {
      redirectUrls: ['https://app.example.com/after'],
      logoUrl: 'https://cdn.example.com/logo.svg',
    });
    const { status, body } = await get('/v1/client/config', { 'x-svc-publishable-key': app.publishableKey });
    expect(status).toBe(200);
    ZClientConfigResponse.parse(body);
    expect(body.application).toEqual({
      id: app.application.id,
      slug: app.application.slug,
      name: app.application.name,
      logoUrl: 'https://cdn.example.com/logo.svg',
      publishableKey: app.publishableKey,
      status: 'active',
    });
    expect(body.organization).toEqual({ slug: app.organization.slug, name: app.organization.name });
    expect(body.oauth).toEqual({
      sharedDevelopment: { mode: 'shared_development', provider: 'google', credentialsRequired: false },
      production: { mode: 'customer_owned', provider: 'google', credentialsRequired: true },
    });
    expect(body.auth.signInUrl).toBe(`${server.services.config.publicUrl}/signin?publishable_key=${app.publishableKey}`);
    expect(body.auth.afterSignInUrl).toBe('https://app.example.com/after');
    expect(body.oidc).toEqual({ issuer: server.services.config.publicUrl, clientId: app.application.id });
    expect(body.keyless).toBe(false);
  });

  it('never shows the secret or its prefix in the public view', async () => {
    const app = await seedApplication(server.services.db);
    const res = await fetch(`${server.url}/v1/client/config?publishable_key=${app.publishableKey}`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain(app.secretKey);
    expect(text).not.toContain('secretKeyPrefix');
    expect(text).not.toContain('sk_live_');
  });

  it('accepts the query parameter, and the header and query when they agree', async () => {
    const app = await seedApplication(server.services.db);
    expect((await get(`/v1/client/config?publishable_key=${app.publishableKey}`)).status).toBe(200);
    const both = await get(`/v1/client/config?publishable_key=${app.publishableKey}`, { 'x-svc-publishable-key': app.publishableKey });
    expect(both.status).toBe(200);
  });

  it.each([
    ['missing', ''],
    ['wrong prefix', '?publishable_key=sk_live_AAAAAAAAAAAAAAAAAAAAAAAA'],
    ['test prefix', '?publishable_key=pk_test_AAAAAAAAAAAAAAAAAAAAAAAA'],
    ['too short', '?publishable_key=pk_live_AAAA'],
    ['too long', `?publishable_key=pk_live_${'A'.repeat(25)}`],
    ['non-ASCII', `?publishable_key=pk_live_${encodeURIComponent('ÄAAAAAAAAAAAAAAAAAAAAAAA')}`],
    ['percent-encoded garbage', '?publishable_key=%ff%2F..%2Fetc'],
    ['invalid percent escapes', '?publishable_key=pk_live_%ZZ%ZZ'],
    ['repeated', '?publishable_key=pk_live_AAAAAAAAAAAAAAAAAAAAAAAA&publishable_key=pk_live_BBBBBBBBBBBBBBBBBBBBBBBB'],
    ['keyless and a key', '?keyless=1&publishable_key=pk_live_AAAAAAAAAAAAAAAAAAAAAAAA'],
  ])('400 invalid_publishable_key: %s', async (_name, query) => {
    const { status, body } = await get(`/v1/client/config${query}`);
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_publishable_key');
    expect(body.error.requestId).toMatch(/^req_/);
    expect(typeof body.error.message).toBe('string');
  });

  it('400 when the header and the query disagree', async () => {
    const a = await seedApplication(server.services.db);
    const b = await seedApplication(server.services.db);
    const { status, body } = await get(`/v1/client/config?publishable_key=${a.publishableKey}`, {
      'x-svc-publishable-key': b.publishableKey,
    });
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_publishable_key');
    expect(body.error.message).toMatch(/disagree/);
  });

  it('400 for a malformed header value', async () => {
    const { status, body } = await get('/v1/client/config', { 'x-svc-publishable-key': 'pk_live_short' });
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_publishable_key');
  });

  it('404 application_not_found for a well-formed unknown key', async () => {
    const { status, body } = await get(`/v1/client/config?publishable_key=pk_live_${'Z'.repeat(24)}`);
    expect(status).toBe(404);
    expect(body.error.code).toBe('application_not_found');
  });

  it('409 application_disabled for a disabled application', async () => {
    const app = await seedApplication(server.services.db, { status: 'disabled' });
    const { status, body } = await get('/v1/client/config', { 'x-svc-publishable-key': app.publishableKey });
    expect(status).toBe(409);
    expect(body.error.code).toBe('application_disabled');
  });

  it('keyless=1 creates one keyless development app with a real key, reused afterwards', async () => {
    const first = await get('/v1/client/config?keyless=1');
    expect(first.status).toBe(200);
    expect(first.body.keyless).toBe(true);
    expect(first.body.application.publishableKey).toMatch(/^pk_live_[0-9A-Za-z]{24}$/);
    const again = await get('/v1/client/config?keyless=true', {}, noKeyless.url.replace(noKeyless.url, server.url));
    expect(again.body.application.id).toBe(first.body.application.id);
    // Its key works like any other key.
    const byKey = await get('/v1/client/config', { 'x-svc-publishable-key': first.body.application.publishableKey });
    expect(byKey.status).toBe(200);
    expect(byKey.body.keyless).toBe(true);
  });

  it('concurrent first keyless uses converge on one application', async () => {
    const fresh = await startTestServer();
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, () => get('/v1/client/config?keyless=1', {}, fresh.url)));
      const ids = new Set(answers.map((a) => a.body.application?.id));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(ids.size).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it('403 keyless_disabled when keyless development is off', async () => {
    const { status, body } = await get('/v1/client/config?keyless=1', {}, noKeyless.url);
    expect(status).toBe(403);
    expect(body.error.code).toBe('keyless_disabled');
  });

  it('400 validation_failed for an unknown keyless value', async () => {
    const { status, body } = await get('/v1/client/config?keyless=maybe');
    expect(status).toBe(400);
    expect(['validation_failed', 'invalid_publishable_key']).toContain(body.error.code);
  });
});

describe('CORS preflight', () => {
  it.each(['/v1/client/config', '/v1/config'])('OPTIONS %s answers 204 allowing x-svc-publishable-key', async (path) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-svc-publishable-key',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-svc-publishable-key');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('a cross-origin GET of client config is readable by the browser', async () => {
    const app = await seedApplication(server.services.db);
    const res = await fetch(`${server.url}/v1/client/config`, {
      headers: { origin: 'https://app.example.com', 'x-svc-publishable-key': app.publishableKey },
    });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('GET /v1/config', () => {
  it('answers public service configuration', async () => {
    const { status, body } = await get('/v1/config');
    expect(status).toBe(200);
    expect(body.service).toBe('svc');
    expect(body.apiVersion).toBe('v1');
    expect(body.clientConfigUrl).toBe(`${server.services.config.publicUrl}/v1/client/config`);
    expect(body.keyless.enabled).toBe(true);
    // svc's own development engine runs (ENGINE_ISSUER unset): named so, not after the preset it speaks.
    expect(body.engine).toMatchObject({ kind: 'authentik', name: 'development engine' });
  });
});
