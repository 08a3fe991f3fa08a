import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../test/support/factories.ts';
import { startTestServer } from '../../../test/support/server.ts';
import { seedApiKey, seedSignedIn } from '../../../test/support/tenancy.ts';
import { createSvcClient, svcError, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { SUBSCRIPTION_UPGRADE_URL: 'https://billing.example.com/upgrade?org={organizationId}' } });
});
afterAll(async () => {
  await server?.close();
});

describe('usage through the typed client', () => {
  it('an application secret key records, replays and batches events; a reused key fails with its code', async () => {
    const app = await seedApplication(server.services.db);
    const svc = createSvcClient({ baseUrl: server.url, secretKey: app.secretKey });
    const first = await svc.usage.events.create.mutate({ idempotencyKey: 'client-1', eventType: 'api_call', quantity: 2 });
    expect('event' in first && first.duplicate).toBe(false);
    const again = await svc.usage.events.create.mutate({ idempotencyKey: 'client-1', eventType: 'api_call', quantity: 2 });
    expect(again).toEqual({ ...first, duplicate: true });
    const batch = await svc.usage.metering.create.mutate({
      events: [
        { idempotencyKey: 'client-1', eventType: 'api_call', quantity: 2 },
        { idempotencyKey: 'client-2', eventType: 'tokens', quantity: 500 },
      ],
    });
    expect('results' in batch && batch.results.map((r) => [r.event.idempotencyKey, r.duplicate, r.event.channel])).toEqual([
      ['client-1', true, 'usage'],
      ['client-2', false, 'metering'],
    ]);
    const reused = await svc.usage.events.create
      .mutate({ idempotencyKey: 'client-1', eventType: 'api_call', quantity: 3 })
      .catch((e: unknown) => e);
    expect(svcErrorCode(reused)).toBe('idempotency_key_reused');
  });

  it('a tenant API key records with usage.write and reads with usage.read', async () => {
    const app = await seedApplication(server.services.db);
    const key = await seedApiKey(server.services.db, { tenantId: app.organization.id, scopes: ['usage.write', 'usage.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });
    await svc.usage.events.create.mutate({ idempotencyKey: 'key-1', eventType: 'api_call' });
    const page = await svc.usage.events.list.query({ id: app.organization.id });
    expect(page.data.map((e) => [e.idempotencyKey, e.sourceId])).toEqual([['key-1', key.id]]);
    const counters = await svc.usage.counters.get.query({});
    expect(counters.usage).toEqual([
      { eventType: 'api_call', events: 1, quantity: 1, limit: null, remaining: null, reached: false, thresholds: [] },
    ]);
    const readOnly = createSvcClient({
      baseUrl: server.url,
      secretKey: (await seedApiKey(server.services.db, { tenantId: app.organization.id, scopes: ['usage.read'] })).secretKey,
    });
    expect(
      svcErrorCode(await readOnly.usage.events.create.mutate({ idempotencyKey: 'key-2', eventType: 'x' }).catch((e: unknown) => e)),
    ).toBe('forbidden');
  });

  it("a 402 over a plan's usage limit is typed: limit, max, used, requested, periodEnd, plan, upgradeUrl; the subscription shows the same limit", async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    // A platform admin puts the organization on a plan allowing 100 tokens a month.
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const planKey = `metered-${tenantId.slice(-8).toLowerCase()}`;
    const asPlatform = (method: string, path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { cookie: platform.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
        body: JSON.stringify(body),
      });
    expect(
      (await asPlatform('POST', '/v1/subscription-plans', { key: planKey, name: 'Metered', seatLimit: null, usageLimits: { tokens: 100 } }))
        .status,
    ).toBe(201);
    expect((await asPlatform('PATCH', `/v1/subscription?organization_slug=${app.organization.slug}`, { planKey })).status).toBe(200);
    const svc = createSvcClient({ baseUrl: server.url, secretKey: app.secretKey });
    await svc.usage.metering.create.mutate({ idempotencyKey: 'tokens-1', eventType: 'tokens', quantity: 60 });
    const refused = await svc.usage.metering.create
      .mutate({ events: [{ idempotencyKey: 'tokens-2', eventType: 'tokens', quantity: 50 }] })
      .catch((e: unknown) => e);
    const failure = svcError(refused);
    expect(failure?.httpStatus).toBe(402);
    const refusal = failure?.refusal;
    if (refusal?.code !== 'subscription_limit_exceeded') {
      throw new Error(`expected a typed subscription_limit_exceeded, got ${JSON.stringify(failure)}`);
    }
    const now = new Date();
    const periodEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    const limit = { kind: 'usage', limit: 'tokens', max: 100, used: 60, periodEnd, plan: planKey };
    expect(refusal).toMatchObject({
      ...limit,
      requested: 50,
      upgradeUrl: `https://billing.example.com/upgrade?org=${tenantId}`,
      requestId: failure?.requestId,
    });
    const key = await seedApiKey(server.services.db, { tenantId, scopes: ['subscription.read'] });
    const reader = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });
    expect((await reader.subscriptions.get.query({})).limits).toEqual([limit]);
  });
});
