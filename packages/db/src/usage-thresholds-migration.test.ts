import { describe, expect, it } from 'vitest';
import { databaseAtMigration } from '../../../test/support/db.ts';
import { migrateDatabase } from './migrate.ts';

/** The last migration before plans had usage thresholds. */
const BEFORE = '0020_events_feed';

/**
 * Plans from before usage thresholds, migrated: each keeps its key, name, limits and default mark,
 * and alerts at the default 50, 80 and 100%; subscriptions on them are untouched; no threshold
 * counts as reached (the next event or change of terms records what the month reached).
 */
describe('migrating plans to usage thresholds', () => {
  const { url, db } = databaseAtMigration('usage_thresholds', BEFORE);

  it('keeps every plan and subscription as it was, each plan alerting at 50, 80 and 100%', async () => {
    await db`delete from subscription_plans where is_default = 'yes' and not exists (select 1 from subscriptions s where s.plan_id = subscription_plans.id)`;
    await db`insert into subscription_plans (id, key, name, seat_limit, usage_limits, is_default) values
      ('pln_aaaaaaaaaaaaaaaaaaaa', 'starter', 'Starter', 5, '{"api_call": 1000}'::jsonb, 'yes'),
      ('pln_bbbbbbbbbbbbbbbbbbbb', 'scale', 'Scale', null, '{}'::jsonb, null)`;
    await db`insert into organizations (id, slug, name, kind) values ('ten_aaaaaaaaaaaaaaaaaaaa', 'acme', 'Acme', 'tenant')`;
    // The organization got its subscription on the default plan when it was made; a platform admin changed it.
    await db`update subscriptions set status = 'trialing', seats = 7 where tenant_id = 'ten_aaaaaaaaaaaaaaaaaaaa'`;
    const plansBefore =
      await db`select id, key, name, seat_limit, usage_limits, is_default, created_at from subscription_plans order by id`;
    const subscriptionsBefore = await db`select * from subscriptions order by tenant_id`;

    await migrateDatabase(url);

    const plansAfter =
      await db`select id, key, name, seat_limit, usage_limits, is_default, created_at, usage_thresholds from subscription_plans order by id`;
    expect(plansAfter.map(({ usage_thresholds: _t, ...rest }) => rest)).toEqual([...plansBefore]);
    expect(plansAfter.map((p) => p.usage_thresholds)).toEqual(plansBefore.map(() => [50, 80, 100]));
    expect([...(await db`select * from subscriptions order by tenant_id`)]).toEqual([...subscriptionsBefore]);
    expect(await db`select * from usage_threshold_crossings`).toHaveLength(0);
    expect(await db`select * from usage_summary_hours`).toHaveLength(0);
    // A plan made afterwards gets the default too; a crossing is one row per organization, type, month and threshold.
    await db`insert into subscription_plans (id, key, name) values ('pln_cccccccccccccccccccc', 'later', 'Later')`;
    expect((await db`select usage_thresholds from subscription_plans where id = 'pln_cccccccccccccccccccc'`)[0]?.usage_thresholds).toEqual([
      50, 80, 100,
    ]);
    await db`insert into usage_threshold_crossings (tenant_id, event_type, period_start, threshold, usage_limit, used, plan, event_id)
      values ('ten_aaaaaaaaaaaaaaaaaaaa', 'api_call', '2026-11-01T00:00:00Z', 80, 1000, 800, 'starter', 'evt_aaaaaaaaaaaaaaaaaaaa')`;
    await expect(
      db`insert into usage_threshold_crossings (tenant_id, event_type, period_start, threshold, usage_limit, used, plan, event_id)
        values ('ten_aaaaaaaaaaaaaaaaaaaa', 'api_call', '2026-11-01T00:00:00Z', 80, 1000, 900, 'starter', 'evt_bbbbbbbbbbbbbbbbbbbb')`,
    ).rejects.toThrow(/duplicate key/);
  });
});
