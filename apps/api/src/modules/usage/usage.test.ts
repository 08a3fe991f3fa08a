import { newId } from '@svc/contracts/ids';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX } from './usage.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describeAuthMatrix('usage', () => server, MATRIX);

type Json = Record<string, any>;

async function call(method: string, path: string, opts: { cookie?: string; bearer?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as Json, text };
}

const HOUR = 3_600_000;

/** An organization with an application, an org admin and a set of events at known times (hours before the last whole hour). */
async function seeded(events: { key: string; type: string; quantity?: number; hoursAgo: number; minute?: number }[]) {
  const app = await seedApplication(server.services.db);
  const admin = await seedSignedIn(server.services.db, { organization: app.organization, roleKey: 'org_admin' });
  const base = Math.floor(Date.now() / HOUR) * HOUR;
  const body = {
    events: events.map((e) => ({
      idempotencyKey: e.key,
      eventType: e.type,
      quantity: e.quantity ?? 1,
      occurredAt: new Date(base - e.hoursAgo * HOUR + (e.minute ?? 0) * 60_000).toISOString(),
    })),
  };
  const res = await call('POST', '/v1/usage/events', { bearer: app.secretKey, body });
  expect(res.status, res.text).toBe(200);
  return { app, admin, base, org: app.organization };
}

describe('GET /v1/tenants/{id}/usage/events', () => {
  it('lists newest occurredAt first with keyset pages, filters by type, range and key', async () => {
    const events = Array.from({ length: 25 }, (_, i) => ({ key: `e-${i}`, type: i % 2 ? 'odd' : 'even', hoursAgo: 25 - i, quantity: i }));
    const { admin, org, base } = await seeded(events);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await call('GET', `/v1/tenants/${org.id}/usage/events?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
        cookie: admin.cookie,
      });
      expect(page.status, page.text).toBe(200);
      expect(page.json.data.length).toBeLessThanOrEqual(7);
      seen.push(...page.json.data.map((e: Json) => e.idempotencyKey));
      cursor = page.json.nextCursor;
    } while (cursor);
    expect(seen).toEqual(events.map((e) => e.key).reverse());

    const odd = await call('GET', `/v1/tenants/${org.id}/usage/events?event_type=odd&limit=200`, { cookie: admin.cookie });
    expect(odd.json.data.map((e: Json) => e.idempotencyKey)).toEqual(
      events
        .filter((e) => e.type === 'odd')
        .map((e) => e.key)
        .reverse(),
    );
    expect(odd.json.data[0]).toMatchObject({ eventType: 'odd', channel: 'usage', quantity: 23 });

    // from inclusive, to exclusive, on occurredAt.
    const from = new Date(base - 10 * HOUR).toISOString();
    const to = new Date(base - 5 * HOUR).toISOString();
    const range = await call('GET', `/v1/tenants/${org.id}/usage/events?from=${from}&to=${to}`, { cookie: admin.cookie });
    expect(range.json.data.map((e: Json) => e.idempotencyKey)).toEqual(['e-19', 'e-18', 'e-17', 'e-16', 'e-15']);
    const typedRange = await call('GET', `/v1/tenants/${org.id}/usage/events?event_type=even&from=${from}&to=${to}`, {
      cookie: admin.cookie,
    });
    expect(typedRange.json.data.map((e: Json) => e.idempotencyKey)).toEqual(['e-18', 'e-16']);

    const one = await call('GET', `/v1/tenants/${org.id}/usage/events?idempotency_key=e-3`, { cookie: admin.cookie });
    expect(one.json.data.map((e: Json) => e.idempotencyKey)).toEqual(['e-3']);
    expect((await call('GET', `/v1/tenants/${org.id}/usage/events?idempotency_key=nope`, { cookie: admin.cookie })).json.data).toEqual([]);

    // A cursor only continues its own list.
    const first = await call('GET', `/v1/tenants/${org.id}/usage/events?limit=2`, { cookie: admin.cookie });
    const misused = await call(
      'GET',
      `/v1/tenants/${org.id}/usage/events?limit=2&event_type=odd&cursor=${encodeURIComponent(first.json.nextCursor)}`,
      {
        cookie: admin.cookie,
      },
    );
    expect([misused.status, misused.json.error.code]).toEqual([400, 'validation_failed']);
    const bad = await call('GET', `/v1/tenants/${org.id}/usage/events?from=${to}&to=${from}`, { cookie: admin.cookie });
    expect(bad.status).toBe(400);
  });

  it("never shows another organization's events, even to a key that names them", async () => {
    const a = await seeded([{ key: 'mine', type: 'x', hoursAgo: 1 }]);
    const b = await seeded([{ key: 'theirs', type: 'x', hoursAgo: 1 }]);
    const key = await seedApiKey(server.services.db, { tenantId: a.org.id, scopes: ['usage.read'] });
    const own = await call('GET', `/v1/tenants/${a.org.id}/usage/events`, { bearer: key.secretKey });
    expect(own.json.data.map((e: Json) => e.idempotencyKey)).toEqual(['mine']);
    const other = await call('GET', `/v1/tenants/${b.org.id}/usage/events`, { bearer: key.secretKey });
    expect([other.status, other.json.error.code]).toEqual([404, 'not_found']);
    expect(other.text).not.toContain('theirs');
  });
});

describe('GET /v1/tenants/{id}/usage/summary', () => {
  it('totals per type over [from, to) in hour and day buckets, from the hourly totals', async () => {
    const { admin, org, base } = await seeded([
      { key: 'a', type: 'calls', quantity: 2, hoursAgo: 30, minute: 5 },
      { key: 'b', type: 'calls', quantity: 3, hoursAgo: 30, minute: 50 },
      { key: 'c', type: 'calls', quantity: 4, hoursAgo: 2 },
      { key: 'd', type: 'tokens', quantity: 100, hoursAgo: 2, minute: 30 },
      { key: 'e', type: 'tokens', quantity: 7, hoursAgo: 40 },
    ]);
    const from = new Date(base - 31 * HOUR).toISOString();
    const to = new Date(base).toISOString();
    const hourly = await call('GET', `/v1/tenants/${org.id}/usage/summary?bucket=hour&from=${from}&to=${to}`, { cookie: admin.cookie });
    expect(hourly.status, hourly.text).toBe(200);
    expect(hourly.json).toEqual({
      from,
      to,
      bucket: 'hour',
      data: [
        {
          eventType: 'calls',
          events: 3,
          quantity: 9,
          points: [
            { start: new Date(base - 30 * HOUR).toISOString(), events: 2, quantity: 5 },
            { start: new Date(base - 2 * HOUR).toISOString(), events: 1, quantity: 4 },
          ],
        },
        {
          eventType: 'tokens',
          events: 1,
          quantity: 100,
          points: [{ start: new Date(base - 2 * HOUR).toISOString(), events: 1, quantity: 100 }],
        },
      ],
    });
    const daily = await call(
      'GET',
      `/v1/tenants/${org.id}/usage/summary?bucket=day&event_type=tokens&from=${new Date(base - 48 * HOUR).toISOString()}&to=${to}`,
      {
        cookie: admin.cookie,
      },
    );
    expect(daily.json.data).toHaveLength(1);
    expect(daily.json.data[0]).toMatchObject({ eventType: 'tokens', events: 2, quantity: 107 });
    const dayStarts = daily.json.data[0].points.map((p: Json) => p.start);
    expect(dayStarts.every((s: string) => s.endsWith('T00:00:00.000Z'))).toBe(true);

    // The default range is this calendar month (UTC).
    const month = await call('GET', `/v1/tenants/${org.id}/usage/summary`, { cookie: admin.cookie });
    const now = new Date();
    expect(month.json.from).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(month.json.to).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
  });

  it('refuses ranges that are not whole hours, reversed, or too long for the bucket', async () => {
    const { admin, org } = await seeded([{ key: 'a', type: 'x', hoursAgo: 1 }]);
    const q = (s: string) => call('GET', `/v1/tenants/${org.id}/usage/summary?${s}`, { cookie: admin.cookie });
    expect((await q('from=2026-01-01T00:30:00Z&to=2026-01-02T00:00:00Z')).status).toBe(400);
    expect((await q('from=2026-01-03T00:00:00Z&to=2026-01-02T00:00:00Z')).status).toBe(400);
    const long = await q('bucket=hour&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z');
    expect([long.status, long.json.error.code]).toEqual([400, 'validation_failed']);
    expect((await q('bucket=day&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z')).status).toBe(200);
    expect((await q('bucket=week')).status).toBe(400);
  });
});

describe('GET /v1/usage', () => {
  it("this month's counters against the plan's limits, and seats", async () => {
    const { admin, org } = await seeded([
      { key: 'a', type: 'api_call', quantity: 4, hoursAgo: 0 },
      { key: 'b', type: 'storage', quantity: 9, hoursAgo: 0 },
    ]);
    const planId = newId('subscriptionPlan');
    await server.services.db.execute(
      sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits) values (${planId}, ${planId.toLowerCase()}, 'Pro', 5, '{"api_call": 10, "exports": 3}'::jsonb)`,
    );
    await server.services.db.execute(sql`update subscriptions set plan_id = ${planId} where tenant_id = ${org.id}`);
    // A member's read (usage.read is in org_member).
    const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
    const res = await call('GET', `/v1/usage?organization_slug=${org.slug}`, { cookie: member.cookie });
    expect(res.status, res.text).toBe(200);
    const now = new Date();
    expect(res.json).toEqual({
      organization: { id: org.id, slug: org.slug, name: org.name },
      period: {
        start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
        end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      },
      plan: { key: planId.toLowerCase(), name: 'Pro' },
      status: 'active',
      usage: [
        {
          eventType: 'api_call',
          events: 1,
          quantity: 4,
          limit: 10,
          remaining: 6,
          reached: false,
          // The plan's default thresholds, none reached yet (the 4 were recorded before this plan).
          thresholds: [
            { threshold: 50, quantity: 5, reachedAt: null },
            { threshold: 80, quantity: 8, reachedAt: null },
            { threshold: 100, quantity: 10, reachedAt: null },
          ],
        },
        {
          eventType: 'exports',
          events: 0,
          quantity: 0,
          limit: 3,
          remaining: 3,
          reached: false,
          thresholds: [
            { threshold: 50, quantity: 2, reachedAt: null },
            { threshold: 80, quantity: 3, reachedAt: null },
            { threshold: 100, quantity: 3, reachedAt: null },
          ],
        },
        { eventType: 'storage', events: 1, quantity: 9, limit: null, remaining: null, reached: false, thresholds: [] },
      ],
      seats: { used: 2, limit: 5 },
    });
    // Without organization_slug: the session's active workspace.
    const own = await call('GET', '/v1/usage', { cookie: admin.cookie });
    expect(own.json.organization.id).toBe(org.id);
    // Metering to the limit: reached, nothing remaining.
    const app = await seedApplication(server.services.db, { org: org.slug });
    expect(
      (
        await call('POST', '/v1/usage-events', {
          bearer: app.secretKey,
          body: { idempotencyKey: 'fill', eventType: 'api_call', quantity: 6 },
        })
      ).status,
    ).toBe(201);
    const full = await call('GET', `/v1/usage?organization_slug=${org.slug}`, { cookie: admin.cookie });
    // One request took api_call from 4 to 10: every threshold reached at once, each with its time.
    const [first] = full.json.usage;
    expect(first).toMatchObject({ eventType: 'api_call', events: 2, quantity: 10, limit: 10, remaining: 0, reached: true });
    expect(first.thresholds.map((t: Json) => [t.threshold, t.quantity])).toEqual([
      [50, 5],
      [80, 8],
      [100, 10],
    ]);
    for (const t of first.thresholds) {
      expect(Math.abs(Date.parse(t.reachedAt) - Date.now())).toBeLessThan(60_000);
    }
    expect(full.json.usage[1].thresholds.every((t: Json) => t.reachedAt === null)).toBe(true);
  });

  it('an organization of someone else is 404', async () => {
    const stranger = await seedSignedIn(server.services.db);
    const org = await seedOrganization(server.services.db);
    const res = await call('GET', `/v1/usage?organization_slug=${org.slug}`, { cookie: stranger.cookie });
    expect(res.status).toBe(404);
  });
});

describe('over /trpc', () => {
  it('usage.events.create records and replays over /trpc as over /v1 (one procedure, two transports)', async () => {
    const app = await seedApplication(server.services.db);
    const res = await fetch(`${server.url}/trpc/usage.events.create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${app.secretKey}` },
      body: JSON.stringify({ idempotencyKey: 'via-trpc', eventType: 'x', quantity: 2 }),
    });
    const body = (await res.json()) as Json;
    expect(res.status).toBe(200);
    expect(body.result.data).toMatchObject({ duplicate: false, event: { idempotencyKey: 'via-trpc', quantity: 2, channel: 'usage' } });
    const rest = await call('POST', '/v1/usage/events', {
      bearer: app.secretKey,
      body: { idempotencyKey: 'via-trpc', eventType: 'x', quantity: 2 },
    });
    expect(rest.status).toBe(200);
    expect(rest.json).toEqual({ event: body.result.data.event, duplicate: true });
  });
});
