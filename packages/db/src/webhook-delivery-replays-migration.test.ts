import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';

/** The last migration before a delivery could be a replay. */
const BEFORE = '0018_session_applications';

const TENANT = 'ten_aaaaaaaaaaaaaaaaaaaa';
const ENDPOINT = 'wh_aaaaaaaaaaaaaaaaaaaa';
const EVENT = 'evt_aaaaaaaaaaaaaaaaaaaa';

/**
 * A database as it stood before replays, holding a live delivery with its attempt, migrated to
 * the current schema: the delivery is still there, unchanged and live (`replay` false), the live
 * guard still refuses a second live delivery of the event to the endpoint, and a replay may now
 * be written beside it.
 */
describe('migrating webhook deliveries to live and replayed', () => {
  const { url, db } = databaseAtMigration('webhook_replays', BEFORE);

  it('keeps every delivery and attempt as a live one; one live delivery per event and endpoint, replays beside it', async () => {
    const [column] = await db`select 1 from information_schema.columns where table_name = 'webhook_deliveries' and column_name = 'replay'`;
    expect(column).toBeUndefined();
    await db`insert into organizations (id, slug, name, kind) values (${TENANT}, 'acme', 'Acme', 'tenant')`;
    await db`insert into webhook_endpoints (id, tenant_id, url, event_types, secret_ciphertext)
      values (${ENDPOINT}, ${TENANT}, 'https://hooks.example.com/in', array['user.created'], 'v1.x.y.z')`;
    await db`insert into webhook_events (id, tenant_id, type, data, created_at)
      values (${EVENT}, ${TENANT}, 'user.created', '{"id":"usr_1"}'::jsonb, '2026-01-01T00:00:00.001Z')`;
    await db`insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, status, attempt_count,
        last_status_code, last_outcome, succeeded_at, created_at, updated_at)
      values ('whd_aaaaaaaaaaaaaaaaaaaa', ${TENANT}, ${ENDPOINT}, ${EVENT}, 'user.created', 'succeeded', 1,
        204, 'succeeded', '2026-01-01T00:00:01.001Z', '2026-01-01T00:00:00.002Z', '2026-01-01T00:00:01.001Z')`;
    await db`insert into webhook_delivery_attempts (tenant_id, delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
      values (${TENANT}, 'whd_aaaaaaaaaaaaaaaaaaaa', 1, '2026-01-01T00:00:01.000Z', 12, 204, 'succeeded')`;
    const before = await db`select * from webhook_deliveries order by id`;
    const attempts = await db`select * from webhook_delivery_attempts order by id`;
    expect(before).toHaveLength(1);

    await migrateDatabase(url);

    expect(await db`select * from webhook_deliveries order by id`).toEqual(before.map((d) => ({ ...d, replay: false })));
    expect(await db`select * from webhook_delivery_attempts order by id`).toEqual(attempts);
    // The live guard holds: a second live delivery of the event to the endpoint is refused.
    await expect(
      db`insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type)
        values ('whd_bbbbbbbbbbbbbbbbbbbb', ${TENANT}, ${ENDPOINT}, ${EVENT}, 'user.created')`,
    ).rejects.toMatchObject({ code: '23505' });
    // Replays of it are not counted: two of them beside the live one.
    await db`insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, replay) values
      ('whd_cccccccccccccccccccc', ${TENANT}, ${ENDPOINT}, ${EVENT}, 'user.created', true),
      ('whd_dddddddddddddddddddd', ${TENANT}, ${ENDPOINT}, ${EVENT}, 'user.created', true)`;
    expect(await db`select id, replay from webhook_deliveries order by id`).toEqual([
      { id: 'whd_aaaaaaaaaaaaaaaaaaaa', replay: false },
      { id: 'whd_cccccccccccccccccccc', replay: true },
      { id: 'whd_dddddddddddddddddddd', replay: true },
    ]);
  });
});
