import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { createDatabase, type Database } from '../client.ts';
import { claimDueDeliveries, claimStatement } from './webhook-dispatch.ts';

let database: Database;
let url: string;

const TENANT = 'ten_claimplan';
const ENDPOINT = 'wh_claimplan';
/** Enough rows that a scan of the table costs more than the index walk in PostgreSQL's own estimate. */
const DELIVERIES = 20_000;

beforeAll(async () => {
  url = await createTestDatabase();
  database = createDatabase({ url, max: 2 });
  // Seeded on a connection of its own that publishes its statistics before it closes, so no
  // late report of the seeding lands in the middle of a measurement below.
  const seeding = createDatabase({ url, max: 1 });
  const { db } = seeding;
  await db.execute(sql`insert into organizations (id, slug, name) values (${TENANT}, 'claim-plan', 'Claim plan')`);
  await db.execute(sql`
    insert into webhook_endpoints (id, tenant_id, url, event_types, secret_ciphertext)
    values (${ENDPOINT}, ${TENANT}, 'http://127.0.0.1:9/hook', '{user.created}', 'v1.x.y.z')`);
  await db.execute(sql`
    insert into webhook_events (id, tenant_id, type, data)
    select 'evt_plan' || g, ${TENANT}, 'user.created', jsonb_build_object('n', g)
    from generate_series(1, ${DELIVERIES}::int) g`);
  // Oldest due first: delivery g fell due g seconds after the first.
  await db.execute(sql`
    insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, status, next_attempt_at)
    select 'whd_plan' || g, ${TENANT}, ${ENDPOINT}, 'evt_plan' || g, 'user.created', 'pending',
           now() - interval '1 day' + g * interval '1 second'
    from generate_series(1, ${DELIVERIES}::int) g`);
  await db.execute(sql`analyze webhook_events`);
  await db.execute(sql`analyze webhook_deliveries`);
  await db.execute(sql`select pg_stat_force_next_flush()`);
  await seeding.close();
});

afterAll(async () => {
  await database?.close();
});

describe('claimDueDeliveries at scale', () => {
  const byDue = (ids: string[]) => ids.sort((a, b) => Number(a.slice('whd_plan'.length)) - Number(b.slice('whd_plan'.length)));

  /** Sequential scans of the two big tables so far, as PostgreSQL's statistics count them. */
  async function seqScans(): Promise<number> {
    const [row] = (await database.db.execute(sql`
      select coalesce(sum(seq_scan), 0)::int as n from pg_stat_user_tables
      where relname in ('webhook_deliveries', 'webhook_events')`)) as unknown as { n: number }[];
    return row?.n ?? Number.NaN;
  }

  it('claims by walking the due index: no sequential scan of the deliveries or the events, however large they are', async () => {
    // Run exactly as the dispatcher runs it (bind parameters and all), on a connection of its own
    // whose statistics are flushed as soon as it goes idle. A LIMIT sent as a bind parameter is
    // planned as a tenth of the table, and the claim then scans both tables in full.
    const own = createDatabase({ url, max: 1 });
    try {
      const before = await seqScans();
      const claimed = await claimDueDeliveries(own.db, { token: 'plan-check', limit: 64, lockMs: 30_000 });
      // The statement returns the claimed rows in no particular order.
      expect(byDue(claimed.map((c) => c.id))).toEqual(Array.from({ length: 64 }, (_, i) => `whd_plan${i + 1}`));
      // Published when this connection next goes idle, not a second later as usual.
      await own.db.execute(sql`select pg_stat_force_next_flush()`);
      expect((await seqScans()) - before).toBe(0);
    } finally {
      await own.close();
    }
  });

  it('claims the next oldest due, up to the limit, and refuses a limit that is not a positive integer', async () => {
    const next = await claimDueDeliveries(database.db, { token: 'second', limit: 3, lockMs: 30_000 });
    expect(byDue(next.map((c) => c.id))).toEqual(['whd_plan65', 'whd_plan66', 'whd_plan67']);
    expect(() => claimStatement({ token: 't', limit: 0, lockMs: 1 })).toThrow(/positive integer/);
    expect(() => claimStatement({ token: 't', limit: Number.NaN, lockMs: 1 })).toThrow(/positive integer/);
  });
});
