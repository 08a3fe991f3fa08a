import { createDatabase, type Database } from '@svc/db/client';
import { listPartitions } from '@svc/db/queries/partitions';
import { findUsageEventsByKeys, insertUsageEvents, type NewUsageEvent } from '@svc/db/queries/usage';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { maintainPartitionsAt } from './tasks/maintain-partitions.ts';

const TENANT = 'ten_aaaaaaaaaaaaaaaaaaaa';
const OTHER = 'ten_bbbbbbbbbbbbbbbbbbbb';
const logger = { debug: () => {}, info: () => {}, error: () => {} };

/** `YYYYMM` of the UTC month `offset` months from `now`. */
function monthOf(now: Date, offset: number): string {
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  return `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

function usageEvent(id: string, tenantId: string, key: string): NewUsageEvent {
  return {
    id,
    tenantId,
    idempotencyKey: key,
    requestHash: `hash-${id}`,
    eventType: 'api_call',
    quantity: 1,
    occurredAt: Date.now(),
    propertiesJson: '{}',
    sourceId: null,
    channel: 'usage',
  };
}

/**
 * The partitioned tables at work (docs/operations.md "Partitioned tables"): an idempotency key
 * holds across months, concurrent duplicates make one event, the maintenance task makes the
 * months ahead and drops whole months past retention with what points at their rows, and leaves
 * every other row.
 */
describe('partitioned tables', () => {
  let database: Database;
  const now = new Date();
  const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15));
  const twoMonthsBack = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 15));

  beforeAll(async () => {
    database = createDatabase({ url: await createTestDatabase(), max: 4 });
    await database.sql`insert into organizations (id, slug, name, kind) values
      (${TENANT}, 'acme', 'Acme', 'tenant'), (${OTHER}, 'other', 'Other', 'tenant')`;
    // The two months before this one get their partitions (as they would have, back then).
    await database.sql`select svc_create_monthly_partitions(t, ${twoMonthsBack.toISOString()}::timestamptz, now())
      from unnest(array['usage_events', 'webhook_events', 'audit_logs']) t`;
  });

  afterAll(async () => {
    await database?.close();
  });

  it('a key recorded last month is not recorded again this month; the same key of another organization is', async () => {
    // Recorded last month (its partition), as the ingesting statement would have then.
    await database.sql`insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, channel, created_at)
      values ('uev_lastmonth', ${TENANT}, 'k-boundary', 'hash-old', 'api_call', 1, ${lastMonth.toISOString()}, 'usage', ${lastMonth.toISOString()})`;
    await database.sql`insert into usage_event_keys (tenant_id, idempotency_key, event_id, created_at)
      values (${TENANT}, 'k-boundary', 'uev_lastmonth', ${lastMonth.toISOString()})`;
    expect((await database.sql`select tableoid::regclass::text as part from usage_events where id = 'uev_lastmonth'`)[0]?.part).toBe(
      `usage_events_p${monthOf(now, -1)}`,
    );

    const created = await database.db.transaction((tx) =>
      insertUsageEvents(tx, [
        usageEvent('uev_again', TENANT, 'k-boundary'),
        usageEvent('uev_fresh', TENANT, 'k-fresh'),
        usageEvent('uev_other', OTHER, 'k-boundary'),
      ]),
    );
    expect(created.map((c) => c.id).sort()).toEqual(['uev_fresh', 'uev_other']);
    expect(await database.sql`select id from usage_events where id = 'uev_again'`).toHaveLength(0);
    const found = await findUsageEventsByKeys(database.db, [{ tenantId: TENANT, idempotencyKey: 'k-boundary' }]);
    expect(found.map((e) => [e.id, e.requestHash])).toEqual([['uev_lastmonth', 'hash-old']]);
    expect((await database.sql`select tableoid::regclass::text as part from usage_events where id = 'uev_fresh'`)[0]?.part).toBe(
      `usage_events_p${monthOf(now, 0)}`,
    );
  });

  it('two transactions submitting the same key at once record one event', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = database.db.transaction(async (tx) => {
      const rows = await insertUsageEvents(tx, [usageEvent('uev_race_a', TENANT, 'k-race')]);
      await held;
      return rows;
    });
    // The second waits on the first's key until the first commits, then skips it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = database.db.transaction((tx) => insertUsageEvents(tx, [usageEvent('uev_race_b', TENANT, 'k-race')]));
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect((await first).map((r) => r.id)).toEqual(['uev_race_a']);
    expect(await second).toEqual([]);
    expect(await database.sql`select id from usage_events where idempotency_key = 'k-race'`).toHaveLength(1);
  });

  it('makes the months ahead, and drops whole months past retention with their deliveries and keys', async () => {
    // Rows two months back: an event with a delivery, a usage event with its key, an audit entry.
    await database.sql`insert into webhook_events (id, tenant_id, type, data, created_at)
      values ('evt_old', ${TENANT}, 'user.created', '{}', ${twoMonthsBack.toISOString()}), ('evt_recent', ${TENANT}, 'user.created', '{}', ${lastMonth.toISOString()})`;
    await database.sql`insert into webhook_endpoints (id, tenant_id, url, event_types, secret_ciphertext)
      values ('wh_aaaaaaaaaaaaaaaaaaaa', ${TENANT}, 'https://hooks.example.com/in', array['user.created'], 'v1.x.y.z')`;
    await database.sql`insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type) values
      ('whd_old', ${TENANT}, 'wh_aaaaaaaaaaaaaaaaaaaa', 'evt_old', 'user.created'),
      ('whd_recent', ${TENANT}, 'wh_aaaaaaaaaaaaaaaaaaaa', 'evt_recent', 'user.created')`;
    await database.sql`insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, channel, created_at)
      values ('uev_old', ${TENANT}, 'k-old', 'h', 'api_call', 1, ${twoMonthsBack.toISOString()}, 'usage', ${twoMonthsBack.toISOString()})`;
    await database.sql`insert into usage_event_keys (tenant_id, idempotency_key, event_id, created_at)
      values (${TENANT}, 'k-old', 'uev_old', ${twoMonthsBack.toISOString()})`;
    await database.sql`insert into audit_logs (id, tenant_id, actor_type, action, target_type, created_at)
      values ('aud_old', ${TENANT}, 'system', 'x.y', 'x', ${twoMonthsBack.toISOString()})`;

    // Retention of 40 days, run on the 28th of this month: 40 days back falls in last month, so the
    // month two back has ended before it and last month has not.
    const later = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 28));
    const ctx = { db: database.db, logger, retention: { eventsDays: 40, usageDays: 40, auditDays: null } };
    await maintainPartitionsAt({ monthsAhead: 5 }, ctx, later);

    const events = await listPartitions(database.db, 'webhook_events');
    expect(events).not.toContain(`webhook_events_p${monthOf(now, -2)}`);
    expect(events).toContain(`webhook_events_p${monthOf(now, -1)}`);
    expect(events).toContain(`webhook_events_p${monthOf(now, 5)}`);
    expect(events).toContain('webhook_events_default');
    expect(await listPartitions(database.db, 'usage_events')).not.toContain(`usage_events_p${monthOf(now, -2)}`);
    // The audit log has no retention set: its month stays.
    expect(await listPartitions(database.db, 'audit_logs')).toContain(`audit_logs_p${monthOf(now, -2)}`);
    expect((await database.sql`select id from webhook_events where id like 'evt_%' order by id`).map((r) => r.id)).toEqual(['evt_recent']);
    expect((await database.sql`select id from webhook_deliveries order by id`).map((r) => r.id)).toEqual(['whd_recent']);
    expect(await database.sql`select 1 from usage_event_keys where idempotency_key = 'k-old'`).toHaveLength(0);
    expect(await database.sql`select 1 from usage_event_keys where idempotency_key = 'k-boundary'`).toHaveLength(2);
    expect(await database.sql`select 1 from audit_logs where id = 'aud_old'`).toHaveLength(1);
    // Idempotent: a second run makes and drops nothing more.
    const before = await database.db.execute(sql`select count(*)::int as n from pg_inherits`);
    await maintainPartitionsAt({ monthsAhead: 5 }, ctx, later);
    expect(await database.db.execute(sql`select count(*)::int as n from pg_inherits`)).toEqual(before);
    // Row deletes are still refused: retention only ever drops whole months.
    await expect(database.sql`delete from usage_events where id = 'uev_fresh'`).rejects.toThrow(/append-only/);
  });
});
