import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';

/** The last migration before usage events, webhook events and the audit log were partitioned. */
const BEFORE = '0027_third_party_access';

const TENANT = 'ten_aaaaaaaaaaaaaaaaaaaa';
const OTHER = 'ten_bbbbbbbbbbbbbbbbbbbb';
const ENDPOINT = 'wh_aaaaaaaaaaaaaaaaaaaa';

/**
 * Usage events, webhook events (with their deliveries and billing sync logs pointing at them) and
 * audit entries from before partitioning, over several months and two organizations, migrated:
 * every row survives unchanged in the partition of its month, each usage event's idempotency key
 * is still taken (a new event under it is not recorded, in whatever month it comes), and the
 * append-only rules still hold.
 */
describe('migrating to tables partitioned by month', () => {
  const { url, db } = databaseAtMigration('partition_by_time', BEFORE);

  it('keeps every row, in the partition of its month, with its uniqueness rules', async () => {
    await db`insert into organizations (id, slug, name, kind) values
      (${TENANT}, 'acme', 'Acme', 'tenant'), (${OTHER}, 'other', 'Other', 'tenant')`;
    // Events of three months, one of them a year back; the same key in two organizations.
    await db`insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, properties, source_id, channel, created_at)
      select 'uev_' || lpad(n::text, 20, '0'), case when n % 2 = 0 then ${TENANT} else ${OTHER} end, 'key-' || (n / 2), 'h' || n, 'api_call', n,
        timestamptz '2025-11-03T10:00:00Z' + n * interval '3 days', jsonb_build_object('n', n), 'key_x', 'usage',
        timestamptz '2025-11-03T10:00:00.123Z' + n * interval '3 days'
      from generate_series(1, 150) n`;
    await db`insert into webhook_events (id, tenant_id, type, data, created_at)
      select 'evt_' || lpad(n::text, 20, '0'), ${TENANT}, 'user.created', jsonb_build_object('n', n), timestamptz '2025-12-30T00:00:00Z' + n * interval '1 day'
      from generate_series(1, 60) n`;
    await db`insert into webhook_endpoints (id, tenant_id, url, event_types, secret_ciphertext)
      values (${ENDPOINT}, ${TENANT}, 'https://hooks.example.com/in', array['user.created'], 'v1.x.y.z')`;
    await db`insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, status)
      select 'whd_' || lpad(n::text, 20, '0'), ${TENANT}, ${ENDPOINT}, 'evt_' || lpad(n::text, 20, '0'), 'user.created', 'succeeded'
      from generate_series(1, 60) n`;
    await db`insert into billing_mappings (id, tenant_id, provider, event_type, provider_item_id)
      values ('bmp_aaaaaaaaaaaaaaaaaaaa', ${TENANT}, 'stripe', 'api_call', 'si_1')`;
    await db`insert into billing_sync_logs (id, tenant_id, provider, mapping_id, usage_event_id)
      values ('bsl_aaaaaaaaaaaaaaaaaaaa', ${TENANT}, 'stripe', 'bmp_aaaaaaaaaaaaaaaaaaaa', 'uev_00000000000000000002')`;
    await db`insert into audit_logs (id, tenant_id, actor_type, action, target_type, summary, created_at)
      select 'aud_' || lpad(n::text, 20, '0'), case when n % 3 = 0 then null else ${TENANT} end, 'system', 'member.added', 'member',
        jsonb_build_object('n', n), timestamptz '2025-10-31T23:59:59.999Z' + n * interval '5 days'
      from generate_series(1, 40) n`;
    const before = {
      usage: await db`select * from usage_events order by id`,
      events: await db`select *, xid::text as xid from webhook_events order by id`,
      deliveries: await db`select * from webhook_deliveries order by id`,
      audit: await db`select * from audit_logs order by id`,
      syncLogs: await db`select * from billing_sync_logs order by id`,
    };
    expect(before.usage).toHaveLength(150);

    await migrateDatabase(url);

    expect([...(await db`select * from usage_events order by id`)]).toEqual([...before.usage]);
    expect([...(await db`select *, xid::text as xid from webhook_events order by id`)]).toEqual([...before.events]);
    expect([...(await db`select * from webhook_deliveries order by id`)]).toEqual([...before.deliveries]);
    expect([...(await db`select * from audit_logs order by id`)]).toEqual([...before.audit]);
    expect([...(await db`select * from billing_sync_logs order by id`)]).toEqual([...before.syncLogs]);

    // Partitioned, each row in its own month's partition (none left in the default ones).
    const kinds =
      await db`select relname, relkind from pg_class where relname in ('usage_events', 'webhook_events', 'audit_logs') order by relname`;
    expect(kinds.map((k) => k.relkind)).toEqual(['p', 'p', 'p']);
    const misplaced = await db`
      select tableoid::regclass::text as part, created_at from usage_events
      where tableoid::regclass::text <> 'usage_events_p' || to_char(created_at at time zone 'UTC', 'YYYYMM')
      union all select tableoid::regclass::text, created_at from webhook_events
      where tableoid::regclass::text <> 'webhook_events_p' || to_char(created_at at time zone 'UTC', 'YYYYMM')
      union all select tableoid::regclass::text, created_at from audit_logs
      where tableoid::regclass::text <> 'audit_logs_p' || to_char(created_at at time zone 'UTC', 'YYYYMM')`;
    expect(misplaced).toEqual([]);
    // Months through three ahead of now exist for all three.
    const ahead = new Date();
    ahead.setUTCMonth(ahead.getUTCMonth() + 3, 1);
    const month = `${ahead.getUTCFullYear()}${String(ahead.getUTCMonth() + 1).padStart(2, '0')}`;
    for (const table of ['usage_events', 'webhook_events', 'audit_logs']) {
      expect((await db`select to_regclass(${`${table}_p${month}`}) is not null as present`)[0]?.present).toBe(true);
    }

    // Every idempotency key moved, pointing at its event and partition.
    const keys = await db`select k.tenant_id, k.idempotency_key, k.event_id, k.created_at from usage_event_keys k order by k.event_id`;
    expect(keys.map((k) => [k.tenant_id, k.idempotency_key, k.event_id, k.created_at])).toEqual(
      before.usage.map((e) => [e.tenant_id, e.idempotency_key, e.id, e.created_at]),
    );
    // A key taken before the migration stays taken, now (another month) as then.
    await expect(
      db`insert into usage_event_keys (tenant_id, idempotency_key, event_id) values (${TENANT}, 'key-1', 'uev_new')`,
    ).rejects.toThrow(/duplicate key/);
    // The primary key (id, created_at) holds (an id's uniqueness across months rests on its
    // randomness); the append-only rules hold on every partition.
    const [first] = await db`select id, created_at from webhook_events order by id limit 1`;
    await expect(
      db`insert into webhook_events (id, tenant_id, type, data, created_at) values (${first?.id}, ${TENANT}, 'user.created', '{}', ${first?.created_at})`,
    ).rejects.toThrow(/duplicate key/);
    await expect(db`delete from usage_events where tenant_id = ${TENANT}`).rejects.toThrow(/append-only/);
    await expect(db`update audit_logs set action = 'x'`).rejects.toThrow(/append-only/);
    await expect(db`truncate audit_logs`).rejects.toThrow(/append-only/);
    // A row from before any month made lands in the default partition rather than failing.
    await db`insert into audit_logs (id, tenant_id, actor_type, action, target_type, created_at)
      values ('aud_old', null, 'system', 'x.y', 'x', '2001-01-01T00:00:00Z')`;
    expect((await db`select tableoid::regclass::text as part from audit_logs where id = 'aud_old'`)[0]?.part).toBe('audit_logs_default');
    // An organization's deletion still takes its usage events, keys, events and deliveries.
    await db`delete from organizations where id = ${OTHER}`;
    expect(await db`select 1 from usage_events where tenant_id = ${OTHER}`).toHaveLength(0);
    expect(await db`select 1 from usage_event_keys where tenant_id = ${OTHER}`).toHaveLength(0);
  });
});
