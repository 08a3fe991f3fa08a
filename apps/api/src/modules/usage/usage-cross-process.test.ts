import { newId } from '@svc/contracts/ids';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { runCli, type SpawnedServer, spawnServer } from '../../../../../test/support/spawn.ts';

/**
 * docs/architecture.md section 1: a cross-request rule must hold with two API processes on one database. Two
 * real `svc serve` processes, each with its own group-commit batcher, receive the same events
 * at the same time.
 */
describe('usage ingestion across two API processes', () => {
  let databaseUrl: string;
  let servers: SpawnedServer[] = [];
  let sql: postgres.Sql;
  let secretKey: string;
  let tenantId: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const created = await runCli(['apps', 'create', '--org', 'cross-usage', '--name', 'Cross usage', '--json'], {
      DATABASE_URL: databaseUrl,
    });
    expect(created.code, created.stderr).toBe(0);
    secretKey = (JSON.parse(created.stdout) as { secretKey: string }).secretKey;
    sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
    const [org] = await sql<{ id: string }[]>`select id from organizations where slug = 'cross-usage'`;
    tenantId = org?.id as string;
    servers = await Promise.all([spawnServer({ DATABASE_URL: databaseUrl }), spawnServer({ DATABASE_URL: databaseUrl })]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await sql?.end({ timeout: 2 });
  });

  const post = async (server: SpawnedServer, path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secretKey}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, any> };
  };

  it('the same events sent to both processes at once are recorded once', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => `both-${i}`);
    const answers = await Promise.all(
      keys.flatMap((key) =>
        servers.flatMap((server) =>
          [1, 2, 3].map(() => post(server, '/v1/usage/events', { idempotencyKey: key, eventType: 'cross', quantity: 2 })),
        ),
      ),
    );
    expect(answers.every((a) => a.status === 200 || a.status === 201)).toBe(true);
    for (const key of keys) {
      const mine = answers.filter((a) => a.json.event.idempotencyKey === key);
      expect(mine.filter((a) => a.status === 201)).toHaveLength(1);
      expect(new Set(mine.map((a) => a.json.event.id)).size).toBe(1);
    }
    const [count] = await sql<{ events: number; hourly: number }[]>`
      select (select count(*) from usage_events where tenant_id = ${tenantId} and event_type = 'cross')::int as events,
             (select sum(events) from usage_hourly where tenant_id = ${tenantId} and event_type = 'cross')::int as hourly`;
    expect(count).toEqual({ events: 20, hourly: 20 });
    const [webhooks] = await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_events where tenant_id = ${tenantId} and type = 'usage_event.created' and data->>'eventType' = 'cross'`;
    expect(webhooks?.n).toBe(20);
  });

  it('a usage limit holds when both processes meter at once', async () => {
    const planId = newId('subscriptionPlan');
    await sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits) values (${planId}, ${planId.toLowerCase()}, 'Cross', 10, '{"metered": 30}'::jsonb)`;
    await sql`update subscriptions set plan_id = ${planId} where tenant_id = ${tenantId}`;
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        post(servers[i % 2] as SpawnedServer, '/v1/usage-events', { idempotencyKey: `metered-${i}`, eventType: 'metered' }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(30);
    expect(answers.filter((a) => a.status === 402).every((a) => a.json.error.code === 'subscription_limit_exceeded')).toBe(true);
    expect(answers.filter((a) => a.status === 402)).toHaveLength(50);
    const [row] = await sql<
      { q: number }[]
    >`select coalesce(sum(quantity), 0)::int as q from usage_events where tenant_id = ${tenantId} and event_type = 'metered'`;
    expect(row?.q).toBe(30);
    // The plan's default thresholds (50, 80, 100% of 30), each recorded once by one of the two processes.
    const reached = await sql<{ threshold: number; used: number }[]>`
      select (data->>'threshold')::int as threshold, (data->>'used')::int as used from webhook_events
      where tenant_id = ${tenantId} and type = 'usage.threshold_reached' and data->>'eventType' = 'metered' order by 1`;
    expect(reached.map((r) => r.threshold)).toEqual([50, 80, 100]);
    expect(reached.every((r) => r.used >= Math.ceil((r.threshold * 30) / 100))).toBe(true);
  });
});
