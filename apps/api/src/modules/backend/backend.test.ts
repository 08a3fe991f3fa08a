import { Writable } from 'node:stream';
import { ZBackendApplicationResponse } from '@svc/contracts/public-edge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { freePort, type startTestServer, TEST_ENV } from '../../../../../test/support/server.ts';
import { loadConfig } from '../../env.ts';
import { createLogger } from '../../logging.ts';
import { startServer } from '../../server.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let logs = '';

beforeAll(async () => {
  // A server whose logs we capture at the most verbose level, to prove no secret reaches them.
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs += chunk.toString();
      cb();
    },
  });
  const databaseUrl = await createTestDatabase();
  const port = await freePort();
  const config = loadConfig({ ...TEST_ENV, LOG_LEVEL: 'trace', PORT: String(port), DATABASE_URL: databaseUrl });
  const running = await startServer(config, createLogger(config, sink));
  server = { ...running, databaseUrl };
});
afterAll(async () => {
  await server?.close();
});

async function check(authorization?: string) {
  const res = await fetch(`${server.url}/v1/backend/application`, {
    headers: authorization === undefined ? {} : { authorization },
  });
  return { status: res.status, text: await res.text() };
}

describe('GET /v1/backend/application', () => {
  it('answers the application for its secret key, identified only by the prefix', async () => {
    const app = await seedApplication(server.services.db, { logoUrl: 'https://cdn.example.com/logo.png' });
    const { status, text } = await check(`Bearer ${app.secretKey}`);
    expect(status).toBe(200);
    const body = ZBackendApplicationResponse.parse(JSON.parse(text));
    expect(body.ok).toBe(true);
    expect(body.application).toEqual({
      id: app.application.id,
      slug: app.application.slug,
      name: app.application.name,
      logoUrl: 'https://cdn.example.com/logo.png',
      status: 'active',
      secretKeyPrefix: app.secretKey.slice(0, 12),
    });
    expect(body.organization).toEqual({ slug: app.organization.slug, name: app.organization.name });
    expect(Math.abs(Date.parse(body.checkedAt) - Date.now())).toBeLessThan(60_000);
    expect(text).not.toContain(app.secretKey);
    expect(text).not.toContain('publishableKey');
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['not bearer', 'Basic dXNlcjpwYXNz'],
    ['bearer without token', 'Bearer '],
    ['publishable key as bearer', `Bearer pk_live_${'A'.repeat(24)}`],
    ['wrong length', `Bearer sk_live_${'A'.repeat(39)}`],
    ['non-ASCII', `Bearer sk_live_${'é'.repeat(40)}`],
    ['unknown', `Bearer sk_live_${'A'.repeat(40)}`],
  ])('401 invalid_secret_key: %s', async (_name, authorization) => {
    const res = await fetch(`${server.url}/v1/backend/application`, {
      headers: authorization === undefined ? {} : { authorization: Buffer.from(authorization, 'utf8').toString('latin1') },
    });
    const body = (await res.json()) as { error: { code: string; requestId: string } };
    expect(res.status).toBe(401);
    expect(body.error.code).toBe('invalid_secret_key');
    expect(body.error.requestId).toMatch(/^req_/);
  });

  it('401 for a rotated-away secret, 200 for the new one', async () => {
    const { rotateApplicationSecret } = await import('../applications/service.ts');
    const app = await seedApplication(server.services.db);
    expect((await check(`Bearer ${app.secretKey}`)).status).toBe(200);
    const rotated = await rotateApplicationSecret(server.services.db, app);
    // The NOTIFY reaches this process's cache asynchronously; allow it a moment.
    await expect.poll(async () => (await check(`Bearer ${app.secretKey}`)).status, { timeout: 1000 }).toBe(401);
    expect((await check(`Bearer ${rotated.secretKey}`)).status).toBe(200);
  });

  it('409 application_disabled for a disabled application', async () => {
    const app = await seedApplication(server.services.db, { status: 'disabled' });
    const { status, text } = await check(`Bearer ${app.secretKey}`);
    expect(status).toBe(409);
    expect(JSON.parse(text).error.code).toBe('application_disabled');
  });

  it('never writes a secret key into the logs', async () => {
    const app = await seedApplication(server.services.db);
    await check(`Bearer ${app.secretKey}`);
    await check(`Bearer ${app.secretKey.slice(0, -1)}X`);
    await new Promise((r) => setTimeout(r, 50));
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toContain('/v1/backend/application');
    expect(logs).not.toContain(app.secretKey.slice(8));
    expect(logs).not.toContain('sk_live_');
  });
});
