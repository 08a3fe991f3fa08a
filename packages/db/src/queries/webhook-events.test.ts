import { newId } from '@svc/contracts/ids';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { createDatabase, type Database } from '../client.ts';
import { recordEvent, recordEvents } from './webhook-events.ts';

let database: Database;

beforeAll(async () => {
  database = createDatabase({ url: await createTestDatabase(), max: 2 });
});
afterAll(async () => {
  await database?.close();
});

type Row = Record<string, any>;
const rows = async (query: ReturnType<typeof sql>) => (await database.db.execute(query)) as unknown as Row[];

async function organization(): Promise<string> {
  const id = newId('organization');
  await database.db.execute(sql`insert into organizations (id, slug, name) values (${id}, ${id.toLowerCase().replace('_', '-')}, 'Org')`);
  return id;
}

async function endpoint(tenantId: string, eventTypes: string[], enabled = true): Promise<string> {
  const id = newId('webhookEndpoint');
  await database.db.execute(sql`
    insert into webhook_endpoints (id, tenant_id, url, event_types, enabled, secret_ciphertext)
    values (${id}, ${tenantId}, 'http://127.0.0.1:9/hook', ${`{${eventTypes.join(',')}}`}::text[], ${enabled}, 'v1.x.y.z')`);
  return id;
}

/** What one event left behind: its row and the endpoints of its pending deliveries. */
async function footprint(eventId: string) {
  const [event] = await rows(sql`select tenant_id, type, data from webhook_events where id = ${eventId}`);
  const deliveries = await rows(
    sql`select endpoint_id, tenant_id, event_type, status from webhook_deliveries where event_id = ${eventId} order by endpoint_id`,
  );
  return { event, deliveries };
}

describe('recordEvents', () => {
  it('records per event exactly what recordEvent records, across organizations and types', async () => {
    const a = await organization();
    const b = await organization();
    const aBoth = await endpoint(a, ['usage_event.created', 'user.created']);
    await endpoint(a, ['usage_event.created'], false);
    const aUsers = await endpoint(a, ['user.created']);
    const bUsage = await endpoint(b, ['usage_event.created']);
    const inputs = [
      { tenantId: a, type: 'usage_event.created', data: { n: 1, nested: { q: 'x"y' } } },
      { tenantId: b, type: 'usage_event.created', data: { n: 2 } },
      { tenantId: a, type: 'user.created', data: { n: 3 } },
      { tenantId: b, type: 'user.created', data: { n: 4 } },
    ];
    await database.db.execute(sql`select graphile_worker.remove_job('webhooks:dispatch')`);
    const batched = await database.db.transaction((tx) => recordEvents(tx, inputs));
    const single = [];
    for (const input of inputs) {
      single.push(await database.db.transaction((tx) => recordEvent(tx, input)));
    }
    expect(batched.map((r) => r.deliveryIds.length)).toEqual(single.map((r) => r.deliveryIds.length));
    for (const [i, input] of inputs.entries()) {
      const mine = await footprint(batched[i]?.id as string);
      const theirs = await footprint(single[i]?.id as string);
      expect(mine).toEqual(theirs);
      expect(mine.event).toEqual({ tenant_id: input.tenantId, type: input.type, data: input.data });
      expect(new Set(mine.deliveries.map((d) => d.endpoint_id))).toEqual(
        new Set(
          {
            0: [aBoth],
            1: [bUsage],
            2: [aBoth, aUsers],
            3: [],
          }[i],
        ),
      );
      expect(mine.deliveries.every((d) => d.status === 'pending' && d.event_type === input.type && d.tenant_id === input.tenantId)).toBe(
        true,
      );
    }
    expect(batched[0]?.deliveryIds.every((id) => /^whd_[0-9A-Za-z]{20}$/.test(id))).toBe(true);
    // One keyed dispatch job, whatever the number of events.
    const [jobs] = await rows(sql`select count(*)::int as n from graphile_worker.jobs where key = 'webhooks:dispatch'`);
    expect(jobs?.n).toBe(1);
  });

  it('adds no job when nothing is subscribed, and nothing at all for no events', async () => {
    const c = await organization();
    await database.db.execute(sql`select graphile_worker.remove_job('webhooks:dispatch')`);
    expect(await database.db.transaction((tx) => recordEvents(tx, []))).toEqual([]);
    const out = await database.db.transaction((tx) => recordEvents(tx, [{ tenantId: c, type: 'usage_event.created', data: {} }]));
    expect(out[0]?.deliveryIds).toEqual([]);
    expect((await footprint(out[0]?.id as string)).event).toMatchObject({ tenant_id: c });
    const [jobs] = await rows(sql`select count(*)::int as n from graphile_worker.jobs where key = 'webhooks:dispatch'`);
    expect(jobs?.n).toBe(0);
  });
});
