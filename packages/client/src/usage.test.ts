import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../test/support/factories.ts';
import { startTestServer } from '../../../test/support/server.ts';
import { seedApiKey } from '../../../test/support/tenancy.ts';
import { createSvcClient, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
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
    expect(counters.usage).toEqual([{ eventType: 'api_call', events: 1, quantity: 1, limit: null, remaining: null, reached: false }]);
    const readOnly = createSvcClient({
      baseUrl: server.url,
      secretKey: (await seedApiKey(server.services.db, { tenantId: app.organization.id, scopes: ['usage.read'] })).secretKey,
    });
    expect(
      svcErrorCode(await readOnly.usage.events.create.mutate({ idempotencyKey: 'key-2', eventType: 'x' }).catch((e: unknown) => e)),
    ).toBe('forbidden');
  });
});
