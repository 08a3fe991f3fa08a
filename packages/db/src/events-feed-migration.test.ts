import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';

/** The last migration before event rows carried their transaction id. */
const BEFORE = '0019_webhook_delivery_replays';

const TENANT = 'ten_aaaaaaaaaaaaaaaaaaaa';

/**
 * A database with events from before the feed, migrated: every event survives unchanged, each
 * gets a distinct xid below the migration's own transaction in created_at order (so the feed
 * serves them first, in the order they happened, even where ids sort otherwise), and events
 * written afterwards get their transaction's id from the column default.
 */
describe('migrating webhook events to carry their transaction id', () => {
  const { url, db } = databaseAtMigration('events_feed', BEFORE);

  it('keeps every event; old ones ordered by created_at below the migration, new ones by their transaction', async () => {
    await db`insert into organizations (id, slug, name, kind) values (${TENANT}, 'acme', 'Acme', 'tenant')`;
    // Ids in the opposite order of their times.
    await db`insert into webhook_events (id, tenant_id, type, data, created_at) values
      ('evt_zzzzzzzzzzzzzzzzzzzz', ${TENANT}, 'user.created', '{"n":1}'::jsonb, '2026-01-01T00:00:00.001Z'),
      ('evt_mmmmmmmmmmmmmmmmmmmm', ${TENANT}, 'user.updated', '{"n":2}'::jsonb, '2026-01-01T00:00:00.002Z'),
      ('evt_aaaaaaaaaaaaaaaaaaaa', ${TENANT}, 'user.created', '{"n":3}'::jsonb, '2026-01-01T00:00:00.003Z')`;
    const before = await db`select * from webhook_events order by id`;

    await migrateDatabase(url);

    const after = await db`select id, tenant_id, type, data, created_at from webhook_events order by id`;
    expect(after).toEqual(before);
    const ordered = await db`select id, xid::text as xid from webhook_events order by xid, id`;
    expect(ordered.map((r) => r.id)).toEqual(['evt_zzzzzzzzzzzzzzzzzzzz', 'evt_mmmmmmmmmmmmmmmmmmmm', 'evt_aaaaaaaaaaaaaaaaaaaa']);
    expect(new Set(ordered.map((r) => r.xid)).size).toBe(3);
    const [next] = await db.begin(async (tx) => {
      await tx`insert into webhook_events (id, tenant_id, type, data) values ('evt_bbbbbbbbbbbbbbbbbbbb', ${TENANT}, 'user.created', '{}')`;
      return tx`select xid::text as xid, pg_current_xact_id()::text as own from webhook_events where id = 'evt_bbbbbbbbbbbbbbbbbbbb'`;
    });
    expect(next?.xid).toBe(next?.own);
    expect(BigInt(next?.xid as string)).toBeGreaterThan(BigInt(ordered[2]?.xid as string));
    // The old rows are final once the transactions running at the migration have ended (the
    // cluster is shared with other work: poll).
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [pending] = await db`select count(*)::int as n from webhook_events
        where id <> 'evt_bbbbbbbbbbbbbbbbbbbb' and xid >= pg_snapshot_xmin(pg_current_snapshot())`;
      if (pending?.n === 0) {
        break;
      }
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
