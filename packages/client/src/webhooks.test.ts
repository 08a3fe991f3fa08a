import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../test/support/server.ts';
import { seedApiKey, seedOrganization } from '../../../test/support/tenancy.ts';
import { createSvcClient, type SvcOutputs, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await server?.close();
});

/** The typed client with a tenant API key: webhook endpoints and deliveries (over /trpc). */
describe('createSvcClient: webhooks', () => {
  it('a key with webhooks.manage creates (secret once), tests and reads back; deliveries are listed and read', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    // users.read: a key subscribes only to events about what it may read (user.* here).
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read', 'webhooks.manage', 'users.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });

    const catalog = await svc.webhooks.eventTypes.query();
    expect(catalog.data.map((t) => t.type)).toContain('user.created');

    const created = await svc.webhooks.endpoint.create.mutate({ url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created'] });
    expect(created.secret).toMatch(/^whsec_/);
    const endpoint: SvcOutputs['webhooks']['endpoint']['get'] = await svc.webhooks.endpoint.get.query({ id: created.endpoint.id });
    expect(endpoint).toMatchObject({ id: created.endpoint.id, eventTypes: ['user.created'], enabled: true });
    expect(JSON.stringify(endpoint)).not.toContain('whsec_');

    const updated = await svc.webhooks.endpoint.update.mutate({ id: endpoint.id, eventTypes: ['user.created', 'user.updated'] });
    expect(updated.eventTypes).toEqual(['user.created', 'user.updated']);

    const { delivery } = await svc.webhooks.endpoint.test.mutate({ id: endpoint.id });
    expect(delivery).toMatchObject({ endpointId: endpoint.id, eventType: 'webhook.test', status: 'pending' });
    const page = await svc.webhooks.delivery.list.query({ endpoint_id: endpoint.id });
    expect(page.data.map((d) => d.id)).toEqual([delivery.id]);
    const detail = await svc.webhooks.delivery.get.query({ id: delivery.id });
    expect(detail.event.type).toBe('webhook.test');

    const retry = await svc.webhooks.delivery.retry.mutate({ id: delivery.id }).catch((e: unknown) => e);
    expect(svcErrorCode(retry)).toBe('webhook_delivery_not_retryable');

    const rotated = await svc.webhooks.endpoint.rotateSecret.mutate({ id: endpoint.id });
    expect(rotated.secret).not.toBe(created.secret);
    expect(await svc.webhooks.endpoint.delete.mutate({ id: endpoint.id })).toEqual({ id: endpoint.id, deleted: true });
  });

  it('a key with webhooks.read only may read but not create (forbidden); bad input carries its code', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const reader = createSvcClient({
      baseUrl: server.url,
      secretKey: (await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read'] })).secretKey,
    });
    expect((await reader.webhooks.endpoint.list.query({})).data).toEqual([]);
    const refused = await reader.webhooks.endpoint.create
      .mutate({ url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created'] })
      .catch((e: unknown) => e);
    expect(svcErrorCode(refused)).toBe('forbidden');

    const manager = createSvcClient({
      baseUrl: server.url,
      secretKey: (await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.manage', 'users.read'] })).secretKey,
    });
    const unknown = await manager.webhooks.endpoint.create
      .mutate({ url: 'http://127.0.0.1:9/hook', eventTypes: ['user.exploded'] })
      .catch((e: unknown) => e);
    expect(svcErrorCode(unknown)).toBe('unknown_event_type');
    const badUrl = await manager.webhooks.endpoint.create
      .mutate({ url: 'ftp://127.0.0.1/hook', eventTypes: ['user.created'] })
      .catch((e: unknown) => e);
    expect(svcErrorCode(badUrl)).toBe('webhook_url_invalid');
  });
});
