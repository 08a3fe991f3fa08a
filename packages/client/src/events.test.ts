import { newId } from '@svc/contracts/ids';
import { recordEvents } from '@svc/db/queries/webhook-events';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../test/support/server.ts';
import { seedApiKey, seedOrganization } from '../../../test/support/tenancy.ts';
import { createSvcClient, svcErrorCode } from './index.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** The typed client's events feed over /trpc: iterate follows nextCursor, resumes from a kept cursor. */
describe('createSvcClient: events', () => {
  it('iterates every event of the requested types across pages, and resumes after a kept cursor', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read', 'users.read', 'api_keys.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });
    const users: string[] = [];
    for (let i = 0; i < 7; i++) {
      const recorded = await db.transaction((tx) =>
        recordEvents(tx, [
          { tenantId: org.id, type: 'user.created', data: { i } },
          { tenantId: org.id, type: 'api_key.created', data: { i } },
        ]),
      );
      users.push(recorded[0]?.id as string);
    }
    // Until every event is below the oldest running transaction of the cluster.
    let seen: string[] = [];
    const cursors: string[] = [];
    for (let tries = 0; seen.length < users.length && tries < 200; tries++) {
      seen = [];
      for await (const event of svc.events.iterate({ types: ['user.created'], pageSize: 3, onCursor: (c) => void cursors.push(c) })) {
        expect(event.type).toBe('user.created');
        seen.push(event.id);
      }
    }
    expect(seen).toEqual(users);
    expect(cursors.length).toBeGreaterThanOrEqual(3);

    const more = (await db.transaction((tx) => recordEvents(tx, [{ tenantId: org.id, type: 'user.created', data: { i: 7 } }])))[0]?.id;
    let resumed: string[] = [];
    for (let tries = 0; resumed.length === 0 && tries < 200; tries++) {
      resumed = [];
      for await (const event of svc.events.iterate({ types: ['user.created'], cursor: cursors[cursors.length - 1] })) {
        resumed.push(event.id);
      }
    }
    expect(resumed).toEqual([more]);
    // The plain call is there too.
    const page = await svc.events.list.query({ types: 'user.created', limit: 2 });
    expect(page.data.map((e) => e.id)).toEqual(users.slice(0, 2));
  });

  it('follow waits for new events until aborted; refusals carry their codes', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read', 'users.read'] });
    const svc = createSvcClient({ baseUrl: server.url, secretKey: key.secretKey });
    const controller = new AbortController();
    const got: string[] = [];
    const following = (async () => {
      for await (const event of svc.events.iterate({ follow: { intervalMs: 20, signal: controller.signal } })) {
        got.push(event.id);
        if (got.length === 2) {
          controller.abort();
        }
      }
    })();
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
      ids.push(
        (await db.transaction((tx) => recordEvents(tx, [{ tenantId: org.id, type: 'user.updated', data: { i } }])))[0]?.id as string,
      );
    }
    await following;
    expect(got).toEqual(ids);

    const forbidden = await (async () => {
      for await (const _ of svc.events.iterate({ types: ['api_key.created'] })) {
        // never reached
      }
    })().catch((e: unknown) => e);
    expect(svcErrorCode(forbidden)).toBe('forbidden');
    const other = await seedOrganization(db);
    const otherKey = await seedApiKey(db, { tenantId: other.id, scopes: ['webhooks.read', 'users.read'] });
    await db.insert(webhookEvents).values({ id: newId('event'), tenantId: other.id, type: 'user.created', data: {} });
    const otherSvc = createSvcClient({ baseUrl: server.url, secretKey: otherKey.secretKey });
    let otherCursor: string | null = null;
    for (let tries = 0; !otherCursor && tries < 200; tries++) {
      otherCursor = (await otherSvc.events.list.query({})).nextCursor;
    }
    const invalid = await svc.events.list.query({ cursor: otherCursor as string }).catch((e: unknown) => e);
    expect(svcErrorCode(invalid)).toBe('invalid_cursor');
  });
});
