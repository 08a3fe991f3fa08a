import { newId } from '@svc/contracts/ids';
import { summarizeUsage } from '@svc/jobs/tasks/usage-summary';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedWebhookEndpoint } from '../webhooks/webhooks.fixtures.ts';

/**
 * Issue 18 item 3: usage thresholds (50/80/100% of a plan's limits by default, configurable per
 * plan), each crossing recorded once per month under concurrent ingestion on either route, as a
 * usage.threshold_reached event and webhook; and hourly usage.summary events.
 */

let server: Awaited<ReturnType<typeof startTestServer>>;
let platform: SignedIn;

beforeAll(async () => {
  server = await startTestServer();
  platform = await seedSignedIn(server.services.db, { platformAdmin: true });
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;
type Answer = { status: number; json: Json; text: string };

async function call(
  method: string,
  path: string,
  opts: { cookie?: string; bearer?: string; authorization?: string; body?: unknown } = {},
): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie, origin: server.services.config.publicUrl } : {}),
      ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text };
}

async function rows<T = Json>(query: ReturnType<typeof sql>): Promise<T[]> {
  return (await server.services.db.execute(query)) as unknown as T[];
}

let n = 0;
const key = (label = 'k') => `${label}-${++n}-${Math.random().toString(36).slice(2, 10)}`;

/** Puts the organization on a new plan through the API (a platform admin); answers the plan. */
async function planFor(tenantId: string, body: { usageLimits: Record<string, number>; usageThresholds?: number[] }): Promise<Json> {
  const planKey = `t-${newId('subscriptionPlan').slice(4, 16).toLowerCase()}`;
  const created = await call('POST', '/v1/subscription-plans', {
    cookie: platform.cookie,
    body: { key: planKey, name: 'Thresholds', seatLimit: null, ...body },
  });
  expect(created.status, created.text).toBe(201);
  const [org] = await rows<{ slug: string }>(sql`select slug from organizations where id = ${tenantId}`);
  const moved = await call('PATCH', `/v1/subscription?organization_slug=${org?.slug}`, { cookie: platform.cookie, body: { planKey } });
  expect(moved.status, moved.text).toBe(200);
  return created.json;
}

/** The usage.threshold_reached events of an organization, oldest first. */
async function thresholdEvents(tenantId: string): Promise<{ id: string; data: Json }[]> {
  return rows(
    sql`select id, data from webhook_events where tenant_id = ${tenantId} and type = 'usage.threshold_reached' order by created_at, (data->>'threshold')::int`,
  );
}

const monthStart = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
const monthEnd = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1)).toISOString();

describe('plans: usageThresholds', () => {
  it('default to 50, 80 and 100; change as a whole list; refuse anything but whole percentages 1-100 in ascending order', async () => {
    const planKey = `thr-${Math.random().toString(36).slice(2, 10)}`;
    const created = await call('POST', '/v1/subscription-plans', {
      cookie: platform.cookie,
      body: { key: planKey, name: 'Defaults', seatLimit: 5, usageLimits: { api_call: 100 } },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json.usageThresholds).toEqual([50, 80, 100]);
    const id = created.json.id as string;

    const changed = await call('PATCH', `/v1/subscription-plans/${id}`, { cookie: platform.cookie, body: { usageThresholds: [25, 90] } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json.usageThresholds).toEqual([25, 90]);
    const off = await call('PATCH', `/v1/subscription-plans/${id}`, { cookie: platform.cookie, body: { usageThresholds: [] } });
    expect(off.json.usageThresholds).toEqual([]);

    for (const bad of [[0], [101], [80, 50], [50, 50], [12.5], [-10], Array.from({ length: 11 }, (_, i) => i + 1), ['fifty'], 50, null]) {
      const res = await call('PATCH', `/v1/subscription-plans/${id}`, { cookie: platform.cookie, body: { usageThresholds: bad } });
      expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).toBe(400);
      expect(res.json.error.code).toBe('validation_failed');
      expect(res.json.error.issues[0].path[0]).toBe('usageThresholds');
      const refused = await call('POST', '/v1/subscription-plans', {
        cookie: platform.cookie,
        body: { key: `${planKey}-x`, name: 'Bad', seatLimit: 5, usageThresholds: bad },
      });
      expect(refused.status, `${JSON.stringify(bad)}: ${refused.text}`).toBe(400);
    }
    const unordered = await call('PATCH', `/v1/subscription-plans/${id}`, { cookie: platform.cookie, body: { usageThresholds: [80, 50] } });
    expect(unordered.json.error.issues[0].message).toContain('ascending');
    // Nothing refused was stored, and no plan was created by a refused POST.
    const [stored] = await rows<{ t: number[] }>(sql`select usage_thresholds as t from subscription_plans where id = ${id}`);
    expect(stored?.t).toEqual([]);
    expect(await rows(sql`select 1 from subscription_plans where key = ${`${planKey}-x`}`)).toHaveLength(0);
    // A tenant admin cannot change them.
    const admin = await seedSignedIn(server.services.db, { roleKey: 'org_admin' });
    const denied = await call('PATCH', `/v1/subscription-plans/${id}`, { cookie: admin.cookie, body: { usageThresholds: [1] } });
    expect(denied.status).toBe(403);
  });
});

describe('usage.threshold_reached', () => {
  it('records each threshold once, when the month reaches it, as an event, a webhook delivery and a feed entry', {
    timeout: 90_000,
  }, async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    const plan = await planFor(tenantId, { usageLimits: { api_call: 10 } });
    const endpoint = await seedWebhookEndpoint(server.services.db, server.services.secretBox, {
      tenantId,
      eventTypes: ['usage.threshold_reached'],
    });
    const meter = (quantity: number, idempotencyKey = key()) =>
      call('POST', '/v1/usage-events', { bearer: app.secretKey, body: { idempotencyKey, eventType: 'api_call', quantity } });
    const first = key();
    expect((await meter(4, first)).status).toBe(201);
    expect(await thresholdEvents(tenantId)).toEqual([]);
    expect((await meter(1)).status).toBe(201); // 5 of 10: 50%
    expect((await meter(2)).status).toBe(201); // 7: nothing new
    expect((await meter(4, first)).status).toBe(200); // a replay adds nothing
    expect((await thresholdEvents(tenantId)).map((e) => e.data.threshold)).toEqual([50]);
    expect((await meter(1)).status).toBe(201); // 8: 80%
    expect((await meter(2)).status).toBe(201); // 10: 100% (reaching the limit is allowed)
    expect((await meter(1)).status).toBe(402); // over: refused, nothing more recorded
    // A storage event is unlimited: no threshold.
    expect(
      (
        await call('POST', '/v1/usage-events', {
          bearer: app.secretKey,
          body: { idempotencyKey: key(), eventType: 'storage', quantity: 99 },
        })
      ).status,
    ).toBe(201);

    const events = await thresholdEvents(tenantId);
    expect(events.map((e) => [e.data.threshold, e.data.used])).toEqual([
      [50, 5],
      [80, 8],
      [100, 10],
    ]);
    expect(events[1]?.data).toEqual({
      object: 'usage_threshold',
      organizationId: tenantId,
      eventType: 'api_call',
      threshold: 80,
      limit: 10,
      thresholdQuantity: 8,
      used: 8,
      periodStart: monthStart(),
      periodEnd: monthEnd(),
      plan: plan.key,
    });
    // One crossing row per threshold, naming the event it recorded.
    const crossings = await rows<{ threshold: number; event_id: string }>(
      sql`select threshold, event_id from usage_threshold_crossings where tenant_id = ${tenantId} order by threshold`,
    );
    expect(crossings).toEqual(events.map((e) => ({ threshold: e.data.threshold, event_id: e.id })));
    // One delivery per event to the subscribed endpoint.
    const deliveries = await rows<{ event_id: string }>(
      sql`select event_id from webhook_deliveries where endpoint_id = ${endpoint.id} order by created_at`,
    );
    expect(deliveries.map((d) => d.event_id).sort()).toEqual(events.map((e) => e.id).sort());
    // The events feed serves them with the same ids (webhooks.read, and usage.read for the type).
    const reader = await seedApiKey(server.services.db, { tenantId, scopes: ['webhooks.read', 'usage.read'] });
    // The feed serves only transactions finished before every open one on the PostgreSQL server,
    // so another test file's open transaction can hold these back for a while.
    const want = events.map((e) => e.id).sort();
    let feed = await call('GET', '/v1/events?types=usage.threshold_reached', { authorization: reader.authorization });
    for (const deadline = Date.now() + 60_000; feed.json.data?.length !== want.length && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      feed = await call('GET', '/v1/events?types=usage.threshold_reached', { authorization: reader.authorization });
    }
    expect(feed.status, feed.text).toBe(200);
    expect(feed.json.data.map((e: Json) => e.id).sort()).toEqual(want);
    expect(feed.json.data.find((e: Json) => e.id === events[1]?.id).data).toEqual(events[1]?.data);
    // GET /v1/usage shows when each was reached.
    const counters = await call('GET', '/v1/usage', { authorization: reader.authorization });
    const apiCall = counters.json.usage.find((u: Json) => u.eventType === 'api_call');
    expect(apiCall.thresholds.map((t: Json) => t.reachedAt !== null)).toEqual([true, true, true]);
  });

  it('holds under concurrency on the metering route: 60 parallel events against a limit of 25 record each of ten thresholds once', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    const thresholds = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    await planFor(tenantId, { usageLimits: { seat_minute: 25 }, usageThresholds: thresholds });
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        call('POST', '/v1/usage-events', { bearer: app.secretKey, body: { idempotencyKey: key(), eventType: 'seat_minute' } }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(25);
    const events = await thresholdEvents(tenantId);
    expect(events.map((e) => e.data.threshold).sort((a, b) => a - b)).toEqual(thresholds);
    for (const e of events) {
      // `used` is the month's total when it was recorded: at least the threshold's quantity, at most the limit.
      expect(e.data.used).toBeGreaterThanOrEqual(e.data.thresholdQuantity);
      expect(e.data.used).toBeLessThanOrEqual(25);
    }
  });

  it('holds under concurrency on POST /v1/usage/events, which passes the limit: 100% is recorded though every later write is refused', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    await planFor(tenantId, { usageLimits: { api_call: 40 } });
    const answers = await Promise.all(
      Array.from({ length: 80 }, () =>
        call('POST', '/v1/usage/events', { bearer: app.secretKey, body: { idempotencyKey: key(), eventType: 'api_call', quantity: 3 } }),
      ),
    );
    expect(answers.some((a) => a.status === 201)).toBe(true);
    const [recorded] = await rows<{ q: number }>(
      sql`select coalesce(sum(quantity), 0)::int as q from usage_events where tenant_id = ${tenantId} and event_type = 'api_call'`,
    );
    expect(recorded?.q).toBeGreaterThanOrEqual(40);
    const events = await thresholdEvents(tenantId);
    expect(events.map((e) => e.data.threshold).sort((a, b) => a - b)).toEqual([50, 80, 100]);
    expect(events.find((e) => e.data.threshold === 100)?.data.used).toBeGreaterThanOrEqual(40);
  });

  it('both routes at once on two limited types: every threshold once, and no deadlock between the limit check and the thresholds', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    // 120 requests of one event of 5: 300 of each type against 500, past 10% and 50%.
    await planFor(tenantId, { usageLimits: { calls: 500, tokens: 500 }, usageThresholds: [10, 50, 90] });
    const [before] = await rows<{ n: number }>(sql`select deadlocks::int as n from pg_stat_database where datname = current_database()`);
    // Metered calls with unmetered tokens, metered tokens with unmetered calls: a batch locks its
    // metered type's counter for the limit check and watches the other for thresholds, in the
    // opposite order of its neighbour unless it takes all its locks at once.
    const kinds = [
      ['/v1/usage-events', 'calls'],
      ['/v1/usage/events', 'tokens'],
      ['/v1/usage-events', 'tokens'],
      ['/v1/usage/events', 'calls'],
    ] as const;
    const answers = await Promise.all(
      Array.from({ length: 120 }, (_, i) => {
        const [route, eventType] = kinds[i % 4] as (typeof kinds)[number];
        return call('POST', route, { bearer: app.secretKey, body: { idempotencyKey: key(), eventType, quantity: 5 } });
      }),
    );
    expect(answers.map((a) => a.status).filter((s) => s !== 201)).toEqual([]);
    const events = await thresholdEvents(tenantId);
    expect(events.map((e) => `${e.data.eventType}:${e.data.threshold}`).sort()).toEqual(['calls:10', 'calls:50', 'tokens:10', 'tokens:50']);
    // PostgreSQL's statistics reach pg_stat_database within a second of the transactions ending.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const [after] = await rows<{ n: number }>(sql`select deadlocks::int as n from pg_stat_database where datname = current_database()`);
    expect(after?.n).toBe(before?.n);
  });

  it('a plan without thresholds records none; a change of limits, thresholds or plan records what this month already reached', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    const plan = await planFor(tenantId, { usageLimits: { api_call: 10 }, usageThresholds: [] });
    const meter = (quantity: number) =>
      call('POST', '/v1/usage-events', { bearer: app.secretKey, body: { idempotencyKey: key(), eventType: 'api_call', quantity } });
    const reached = async () => (await thresholdEvents(tenantId)).map((e) => [e.data.threshold, e.data.used, e.data.plan]);
    expect((await meter(9)).status).toBe(201);
    expect(await thresholdEvents(tenantId)).toEqual([]);
    // Alerts turned on at 9, the limit raised to 100: 5% is behind the month already, recorded by the change itself.
    const on = await call('PATCH', `/v1/subscription-plans/${plan.id}`, {
      cookie: platform.cookie,
      body: { usageLimits: { api_call: 100 }, usageThresholds: [5, 50] },
    });
    expect(on.status, on.text).toBe(200);
    expect(await reached()).toEqual([[5, 9, plan.key]]);
    expect((await meter(1)).status).toBe(201); // 10 of 100: nothing new
    expect(await reached()).toEqual([[5, 9, plan.key]]);
    // Lowered to 12: 50% (6) is behind; recorded at the change, once (the next events add nothing).
    await call('PATCH', `/v1/subscription-plans/${plan.id}`, { cookie: platform.cookie, body: { usageLimits: { api_call: 12 } } });
    expect((await meter(1)).status).toBe(201);
    expect((await meter(1)).status).toBe(201);
    expect(await reached()).toEqual([
      [5, 9, plan.key],
      [50, 10, plan.key],
    ]);
    // Renaming the plan changes no limit: nothing is checked or recorded.
    await call('PATCH', `/v1/subscription-plans/${plan.id}`, { cookie: platform.cookie, body: { name: 'Renamed' } });
    expect(await reached()).toHaveLength(2);
    // Moved to a plan that allows 15 with an alert at 80% (12): recorded by the move.
    const smaller = await planFor(tenantId, { usageLimits: { api_call: 15 }, usageThresholds: [80] });
    expect((await reached()).at(-1)).toEqual([80, 12, smaller.key]);
    // The 402 of the metering route is still what stops it at the limit.
    expect((await meter(4)).status).toBe(402);
  });
});

describe('usage.summary', () => {
  it('records, per organization and hour, the events recorded in it totalled per type; once per hour; never an unfinished hour', async () => {
    const db = server.services.db;
    const a = await seedApplication(db);
    const b = await seedApplication(db);
    const quiet = await seedApplication(db);
    const summaryOnly = await seedWebhookEndpoint(db, server.services.secretBox, {
      tenantId: a.organization.id,
      eventTypes: ['usage.summary'],
    });
    // An hour ten days back (no crontab tick of this test server reaches it), at a random hour of the day.
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - (240 + Math.floor(Math.random() * 24)) * 3_600_000);
    const at = (minutes: number) => new Date(hour.getTime() + minutes * 60_000).toISOString();
    const insert = async (tenantId: string, eventType: string, quantity: number, createdAt: string) => {
      await db.execute(sql`
        insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, channel, created_at)
        values (${newId('usageEvent')}, ${tenantId}, ${key()}, 'h', ${eventType}, ${quantity}, ${createdAt}::timestamptz, 'usage', ${createdAt}::timestamptz)`);
    };
    await insert(a.organization.id, 'api_call', 2, at(0));
    await insert(a.organization.id, 'api_call', 5, at(59.99));
    await insert(a.organization.id, 'storage', 7, at(30));
    await insert(b.organization.id, 'api_call', 1, at(10));
    // Outside the hour: the minute before, and its very end.
    await insert(a.organization.id, 'api_call', 100, at(-1));
    await insert(quiet.organization.id, 'api_call', 100, at(60));

    const logger = { debug: () => {}, info: () => {}, error: () => {} };
    const ctx = { db, logger } as unknown as Parameters<typeof summarizeUsage>[1];
    // Run as the crontab does: the tick five minutes after the hour that follows.
    await summarizeUsage({ _cron: { ts: new Date(hour.getTime() + 3_600_000 + 5 * 60_000).toISOString() } }, ctx);
    const summaries = await rows<{ id: string; tenant_id: string; data: Json }>(
      sql`select id, tenant_id, data from webhook_events where type = 'usage.summary' and data->>'periodStart' = ${hour.toISOString()}`,
    );
    const byTenant = new Map(summaries.map((s) => [s.tenant_id, s]));
    expect([...byTenant.keys()].sort()).toEqual([a.organization.id, b.organization.id].sort());
    expect(byTenant.get(a.organization.id)?.data).toEqual({
      object: 'usage_summary',
      organizationId: a.organization.id,
      periodStart: hour.toISOString(),
      periodEnd: new Date(hour.getTime() + 3_600_000).toISOString(),
      totals: [
        { eventType: 'api_call', events: 2, quantity: 7 },
        { eventType: 'storage', events: 1, quantity: 7 },
      ],
    });
    expect(byTenant.get(b.organization.id)?.data.totals).toEqual([{ eventType: 'api_call', events: 1, quantity: 1 }]);
    // The endpoint subscribed to usage.summary only gets its organization's summary.
    const deliveries = await rows<{ event_id: string }>(sql`select event_id from webhook_deliveries where endpoint_id = ${summaryOnly.id}`);
    expect(deliveries.map((d) => d.event_id)).toEqual([byTenant.get(a.organization.id)?.id]);

    // Again for the same hour (a second worker, a retry, by hand): nothing more.
    await summarizeUsage({ hour: at(20) }, ctx);
    const again = await rows(
      sql`select 1 from webhook_events where type = 'usage.summary' and data->>'periodStart' = ${hour.toISOString()}`,
    );
    expect(again).toHaveLength(2);
    // The hour in progress is refused and left unclaimed.
    await expect(summarizeUsage({ hour: new Date().toISOString() }, ctx)).rejects.toThrow(/has not ended/);
    const current = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    expect(await rows(sql`select 1 from usage_summary_hours where hour = ${current}::timestamptz`)).toHaveLength(0);
  });
});
