import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { subscriptionPlans, subscriptions } from '@svc/db/schema/subscriptions';
import { usageHourly } from '@svc/db/schema/usage';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { revokeSession } from '../session-store/service.ts';
import { MATRIX } from './subscriptions.matrix.ts';

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

async function call(method: string, path: string, opts: { cookie?: string; authorization?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Json };
}

let n = 0;
const uniqueKey = (prefix = 'plan') => `${prefix}-${++n}-${Math.random().toString(36).slice(2, 7)}`;

async function adminOfNewOrg() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function createPlan(body: Json) {
  const res = await call('POST', '/v1/subscription-plans', { cookie: platform.cookie, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

function thisHour(): Date {
  const d = new Date();
  d.setUTCMinutes(0, 0, 0);
  return d;
}

describeAuthMatrix('subscriptions', () => server, MATRIX);

describe('GET /v1/subscription-plans', () => {
  it('lists the seeded default plan free (10 seats, no usage limits) to any member and to an API key', async () => {
    const { org } = await adminOfNewOrg();
    const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
    const res = await call('GET', '/v1/subscription-plans?limit=200', { cookie: member.cookie });
    expect(res.status).toBe(200);
    const free = res.body.data.find((p: Json) => p.key === 'free');
    expect(free).toMatchObject({ name: 'Free', seatLimit: 10, usageLimits: {} });
    expect(free.id).toMatch(/^pln_[0-9A-Za-z]{20}$/);
    expect(res.body.data.filter((p: Json) => p.isDefault)).toHaveLength(1);
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: [] });
    expect((await call('GET', '/v1/subscription-plans', { authorization: key.authorization })).status).toBe(200);
    expect((await call('GET', '/v1/subscription-plans')).status).toBe(401);
  });

  it('pages newest first', async () => {
    const a = await createPlan({ key: uniqueKey(), name: 'Page A', seatLimit: 3, usageLimits: {} });
    const b = await createPlan({ key: uniqueKey(), name: 'Page B', seatLimit: 3, usageLimits: {} });
    const page1 = await call('GET', '/v1/subscription-plans?limit=1', { cookie: platform.cookie });
    expect(page1.body.data.map((p: Json) => p.id)).toEqual([b.id]);
    const page2 = await call('GET', `/v1/subscription-plans?limit=1&cursor=${page1.body.nextCursor}`, { cookie: platform.cookie });
    expect(page2.body.data.map((p: Json) => p.id)).toEqual([a.id]);
  });
});

describe('POST /v1/subscription-plans', () => {
  it('creates a plan, audits it (platform-level, no webhook event), and refuses a taken key with 409 plan_key_taken', async () => {
    const key = uniqueKey('team');
    const created = await createPlan({ key, name: 'Team', seatLimit: 25, usageLimits: { api_call: 100_000, 'sms.sent': 0 } });
    expect(created).toMatchObject({
      key,
      name: 'Team',
      seatLimit: 25,
      usageLimits: { api_call: 100_000, 'sms.sent': 0 },
      isDefault: false,
    });
    expect(created.id).toMatch(/^pln_[0-9A-Za-z]{20}$/);
    const [audit] = await server.services.db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.action, 'subscription_plan.created'), eq(auditLogs.targetId, created.id)));
    expect(audit).toMatchObject({ tenantId: null, actorId: platform.user.id, targetType: 'subscription_plan' });
    expect(audit?.summary).toMatchObject({ key, seatLimit: 25 });

    const again = await call('POST', '/v1/subscription-plans', {
      cookie: platform.cookie,
      body: { key, name: 'Other', seatLimit: null, usageLimits: {} },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('plan_key_taken');
    expect(again.body.error.message).toContain(key);
  });

  it('validates: usage limits are non-negative whole numbers keyed by valid event types; seats at least 1 or null; keys URL-safe', async () => {
    const bad = async (body: Json) => {
      const res = await call('POST', '/v1/subscription-plans', { cookie: platform.cookie, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      return res.body.error.issues as { path: (string | number)[]; message: string }[];
    };
    const base = { key: uniqueKey(), name: 'Bad', seatLimit: 5, usageLimits: {} };
    expect((await bad({ ...base, usageLimits: { api_call: -1 } }))[0]?.path).toEqual(['usageLimits', 'api_call']);
    expect((await bad({ ...base, usageLimits: { api_call: 1.5 } }))[0]?.path).toEqual(['usageLimits', 'api_call']);
    expect((await bad({ ...base, usageLimits: { api_call: '10' } }))[0]?.path).toEqual(['usageLimits', 'api_call']);
    const badType = await bad({ ...base, usageLimits: { 'Not A Type': 5 } });
    expect(badType[0]?.path).toEqual(['usageLimits', 'Not A Type']);
    expect(badType.map((i) => i.message).join(' ')).toMatch(/event type/);
    await bad({ ...base, seatLimit: 0 });
    await bad({ ...base, seatLimit: 2.5 });
    await bad({ ...base, key: 'Has Spaces' });
    await bad({ ...base, name: '' });
    await bad({ key: uniqueKey(), name: 'No seat field', usageLimits: {} });
    // Nothing of the refused requests exists.
    const rows = await server.services.db.select().from(subscriptionPlans).where(eq(subscriptionPlans.name, 'Bad'));
    expect(rows).toHaveLength(0);
  });

  it('isDefault: true replaces the previous default in one transaction; new organizations get the new default, active', async () => {
    const before = await call('GET', '/v1/subscription-plans?limit=200', { cookie: platform.cookie });
    const previous = before.body.data.find((p: Json) => p.isDefault);
    const plan = await createPlan({ key: uniqueKey('starter'), name: 'Starter', seatLimit: 3, usageLimits: {}, isDefault: true });
    expect(plan.isDefault).toBe(true);
    const after = await call('GET', '/v1/subscription-plans?limit=200', { cookie: platform.cookie });
    expect(after.body.data.filter((p: Json) => p.isDefault).map((p: Json) => p.id)).toEqual([plan.id]);
    expect(after.body.data.find((p: Json) => p.id === previous.id).isDefault).toBe(false);

    const { org, admin } = await adminOfNewOrg();
    const sub = await call('GET', `/v1/subscription?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(sub.status).toBe(200);
    expect(sub.body).toMatchObject({ plan: { id: plan.id, key: plan.key }, status: 'active', seats: { bought: null, limit: 3, used: 1 } });

    // Back to the previous default, so other tests see `free` again.
    const restored = await call('PATCH', `/v1/subscription-plans/${previous.id}`, { cookie: platform.cookie, body: { isDefault: true } });
    expect(restored.status).toBe(200);
    expect(restored.body.isDefault).toBe(true);
  });
});

describe('PATCH /v1/subscription-plans/{id}', () => {
  it('changes only the fields sent; a taken key is 409 plan_key_taken; unknown id 404 plan_not_found; nothing sent 400', async () => {
    const a = await createPlan({ key: uniqueKey(), name: 'A', seatLimit: 5, usageLimits: { api_call: 10 } });
    const b = await createPlan({ key: uniqueKey(), name: 'B', seatLimit: 5, usageLimits: {} });
    const renamed = await call('PATCH', `/v1/subscription-plans/${a.id}`, {
      cookie: platform.cookie,
      body: { name: 'A renamed', seatLimit: null, usageLimits: { api_call: 20, 'llm:tokens': 1000 } },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      id: a.id,
      key: a.key,
      name: 'A renamed',
      seatLimit: null,
      usageLimits: { api_call: 20, 'llm:tokens': 1000 },
    });
    const [audit] = await server.services.db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.action, 'subscription_plan.updated'), eq(auditLogs.targetId, a.id)));
    expect(audit?.summary).toMatchObject({ before: { name: 'A', seatLimit: 5 }, after: { name: 'A renamed', seatLimit: null } });

    const taken = await call('PATCH', `/v1/subscription-plans/${a.id}`, { cookie: platform.cookie, body: { key: b.key } });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('plan_key_taken');
    const rekeyed = await call('PATCH', `/v1/subscription-plans/${a.id}`, { cookie: platform.cookie, body: { key: `${a.key}-x` } });
    expect(rekeyed.status).toBe(200);
    expect(rekeyed.body.key).toBe(`${a.key}-x`);

    const unknown = await call('PATCH', '/v1/subscription-plans/pln_00000000000000000000', {
      cookie: platform.cookie,
      body: { name: 'x' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('plan_not_found');
    const empty = await call('PATCH', `/v1/subscription-plans/${a.id}`, { cookie: platform.cookie, body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toBe('validation_failed');
    const negative = await call('PATCH', `/v1/subscription-plans/${a.id}`, {
      cookie: platform.cookie,
      body: { usageLimits: { api_call: -5 } },
    });
    expect(negative.status).toBe(400);
  });

  it('the default plan cannot be un-defaulted (409 default_plan_required); racing defaults end with exactly one', async () => {
    const list = await call('GET', '/v1/subscription-plans?limit=200', { cookie: platform.cookie });
    const current = list.body.data.find((p: Json) => p.isDefault);
    const refused = await call('PATCH', `/v1/subscription-plans/${current.id}`, { cookie: platform.cookie, body: { isDefault: false } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('default_plan_required');

    const x = await createPlan({ key: uniqueKey('race'), name: 'Race X', seatLimit: 5, usageLimits: {} });
    const y = await createPlan({ key: uniqueKey('race'), name: 'Race Y', seatLimit: 5, usageLimits: {} });
    const results = await Promise.all(
      [x, y, x, y].map((p) => call('PATCH', `/v1/subscription-plans/${p.id}`, { cookie: platform.cookie, body: { isDefault: true } })),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const defaults = await server.services.db.select().from(subscriptionPlans).where(eq(subscriptionPlans.isDefault, 'yes'));
    expect(defaults).toHaveLength(1);
    expect([x.id, y.id]).toContain(defaults[0]?.id);
    // Restore.
    expect(
      (await call('PATCH', `/v1/subscription-plans/${current.id}`, { cookie: platform.cookie, body: { isDefault: true } })).status,
    ).toBe(200);
  });
});

describe('platform-only routes: every kind of caller', () => {
  type Caller = { name: string; headers: () => { cookie?: string; authorization?: string }; expected: number | 'ok' };
  let callers: Caller[];
  let orgSlug: string;
  let plan: Json;

  beforeAll(async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    orgSlug = org.slug;
    plan = await createPlan({ key: uniqueKey('matrix'), name: 'Matrix plan', seatLimit: 50, usageLimits: {} });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const outsider = await seedSignedIn(db, { organization: await seedOrganization(db), roleKey: 'org_admin' });
    const revoked = await seedSignedIn(db, { platformAdmin: true });
    await revokeSession(db, revoked.sessionId);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    const revokedKey = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS], revoked: true });
    callers = [
      { name: 'anonymous', headers: () => ({}), expected: 401 },
      { name: 'revoked session of a platform admin', headers: () => ({ cookie: revoked.cookie }), expected: 401 },
      { name: 'revoked API key', headers: () => ({ authorization: revokedKey.authorization }), expected: 401 },
      { name: 'org admin of the organization', headers: () => ({ cookie: admin.cookie }), expected: 403 },
      { name: 'org member', headers: () => ({ cookie: member.cookie }), expected: 403 },
      { name: 'admin of another organization', headers: () => ({ cookie: outsider.cookie }), expected: 403 },
      { name: 'API key with every scope', headers: () => ({ authorization: key.authorization }), expected: 403 },
      { name: 'platform admin', headers: () => ({ cookie: platform.cookie }), expected: 'ok' },
    ];
  });

  const routes = [
    {
      name: 'POST /v1/subscription-plans',
      path: () => '/v1/subscription-plans',
      body: () => ({ key: uniqueKey('m'), name: 'M', seatLimit: 5, usageLimits: {} }),
    },
    { name: 'PATCH /v1/subscription-plans/{id}', path: () => `/v1/subscription-plans/${plan.id}`, body: () => ({ name: `Matrix ${++n}` }) },
    {
      name: 'PATCH /v1/subscription',
      path: () => `/v1/subscription?organization_slug=${orgSlug}`,
      body: () => ({ seats: 40 + (++n % 5) }),
    },
  ];
  const names = [
    'anonymous',
    'revoked session of a platform admin',
    'revoked API key',
    'org admin of the organization',
    'org member',
    'admin of another organization',
    'API key with every scope',
    'platform admin',
  ];
  for (const route of routes) {
    it.each(names)(`${route.name} as %s`, async (name) => {
      const caller = callers.find((c) => c.name === name) as Caller;
      const res = await call(route.name.split(' ')[0] as string, route.path(), { ...caller.headers(), body: route.body() });
      if (caller.expected === 'ok') {
        expect(res.status >= 200 && res.status < 300, JSON.stringify(res.body)).toBe(true);
      } else {
        expect(res.status, JSON.stringify(res.body)).toBe(caller.expected);
      }
    });
  }
});

describe('GET /v1/subscription', () => {
  it('shows plan, status, seats bought and used, and an empty usage list on the free plan', async () => {
    const { db, org } = await adminOfNewOrg();
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const res = await call('GET', '/v1/subscription', { cookie: member.cookie });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      organization: { id: org.id, slug: org.slug, name: org.name },
      plan: { key: 'free', seatLimit: 10, isDefault: true },
      status: 'active',
      seats: { bought: null, limit: 10, used: 2, available: 8, overLimit: false },
      usage: { limits: [] },
      overLimit: false,
      blocked: null,
    });
    const now = new Date();
    expect(res.body.usage.periodStart).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(res.body.usage.periodEnd).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
  });

  it("counts this month's usage per limited type (not last month's, not unlimited types) and flags what is over", async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const plan = await createPlan({
      key: uniqueKey('metered'),
      name: 'Metered',
      seatLimit: null,
      usageLimits: { api_call: 5, 'sms.sent': 100 },
    });
    expect(
      (await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie, body: { planKey: plan.key } }))
        .status,
    ).toBe(200);
    const hour = thisHour();
    const lastMonth = new Date(Date.UTC(hour.getUTCFullYear(), hour.getUTCMonth() - 1, 15));
    await db.insert(usageHourly).values([
      { tenantId: org.id, eventType: 'api_call', hour, events: 3, quantity: 4 },
      {
        tenantId: org.id,
        eventType: 'api_call',
        hour: new Date(Date.UTC(hour.getUTCFullYear(), hour.getUTCMonth(), 1)),
        events: 1,
        quantity: 3,
      },
      { tenantId: org.id, eventType: 'api_call', hour: lastMonth, events: 1, quantity: 1000 },
      { tenantId: org.id, eventType: 'unlimited_thing', hour, events: 1, quantity: 1_000_000 },
    ]);
    const res = await call('GET', `/v1/subscription?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(res.body.usage.limits).toEqual([
      { eventType: 'api_call', limit: 5, used: 7, remaining: 0, overLimit: true },
      { eventType: 'sms.sent', limit: 100, used: 0, remaining: 100, overLimit: false },
    ]);
    expect(res.body.seats).toMatchObject({ bought: null, limit: null, available: null, overLimit: false });
    expect(res.body.overLimit).toBe(true);
    // The same numbers, as a 402 names a limit (seats are unlimited on this plan: no entry).
    const periodEnd = new Date(Date.UTC(hour.getUTCFullYear(), hour.getUTCMonth() + 1, 1)).toISOString();
    expect(res.body.usage.periodEnd).toBe(periodEnd);
    expect(res.body.limits).toEqual([
      { kind: 'usage', limit: 'api_call', max: 5, used: 7, periodEnd, plan: plan.key },
      { kind: 'usage', limit: 'sms.sent', max: 100, used: 0, periodEnd, plan: plan.key },
    ]);
    expect(res.body.blocked).toEqual({
      code: 'subscription_limit_exceeded',
      message: expect.stringContaining('used 7 api_call this month'),
      kind: 'usage',
      limit: 'api_call',
      max: 5,
      used: 7,
      requested: 0,
      periodEnd,
      plan: plan.key,
      upgradeUrl: null,
    });
    // What the view announces is what a mutating route answers.
    const refused = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Blocked' },
    });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject(res.body.blocked);
  });

  it('the platform workspace has no subscription (404); an unknown or foreign organization is 404', async () => {
    const own = await call('GET', '/v1/subscription', { cookie: platform.cookie });
    expect(own.status).toBe(404);
    expect(own.body.error.message).toMatch(/no subscription/);
    const { admin } = await adminOfNewOrg();
    const other = await seedOrganization(server.services.db);
    expect((await call('GET', `/v1/subscription?organization_slug=${other.slug}`, { cookie: admin.cookie })).status).toBe(404);
    expect((await call('GET', '/v1/subscription?organization_slug=no-such-org-x', { cookie: admin.cookie })).status).toBe(404);
  });
});

describe('PATCH /v1/subscription', () => {
  it('sets plan, seats and status; audits subscription.updated with what changed and emits the webhook event in the same transaction', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const plan = await createPlan({ key: uniqueKey('pro'), name: 'Pro', seatLimit: 50, usageLimits: { api_call: 1000 } });
    const res = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, {
      cookie: platform.cookie,
      body: { planKey: plan.key, seats: 12, status: 'trialing' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      plan: { id: plan.id, key: plan.key },
      status: 'trialing',
      seats: { bought: 12, limit: 12, used: 1, available: 11 },
      usage: { limits: [{ eventType: 'api_call', limit: 1000, used: 0, remaining: 1000, overLimit: false }] },
      blocked: null,
    });
    const audits = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'subscription.updated')));
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ actorType: 'user', actorId: platform.user.id, targetType: 'subscription', targetId: org.id });
    expect(audits[0]?.summary).toEqual({
      changes: {
        planKey: { before: 'free', after: plan.key },
        seats: { before: null, after: 12 },
        status: { before: 'active', after: 'trialing' },
      },
    });
    const events = await db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, org.id), eq(webhookEvents.type, 'subscription.updated')));
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ object: 'subscription', id: org.id, changes: { status: { after: 'trialing' } } });

    // The same values again change nothing and record nothing.
    const same = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, {
      cookie: platform.cookie,
      body: { planKey: plan.key, seats: 12, status: 'trialing' },
    });
    expect(same.status).toBe(200);
    expect(
      await db
        .select()
        .from(auditLogs)
        .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'subscription.updated'))),
    ).toHaveLength(1);

    // seats: null goes back to the plan's limit; the member can read the new state.
    const back = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie, body: { seats: null } });
    expect(back.body.seats).toMatchObject({ bought: null, limit: 50 });
    const read = await call('GET', '/v1/subscription', { cookie: admin.cookie });
    expect(read.body).toMatchObject({ status: 'trialing', plan: { key: plan.key }, seats: { limit: 50 } });
    const [row] = await db.select().from(subscriptions).where(eq(subscriptions.tenantId, org.id));
    expect(row).toMatchObject({ planId: plan.id, seats: null, status: 'trialing' });
  });

  it('refuses an unknown plan key (404 plan_not_found), nothing to change (400), the platform workspace (404), a bad status (400)', async () => {
    const { org } = await adminOfNewOrg();
    const unknown = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, {
      cookie: platform.cookie,
      body: { planKey: 'no-such-plan' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('plan_not_found');
    expect((await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie, body: {} })).status).toBe(400);
    const bad = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, {
      cookie: platform.cookie,
      body: { status: 'paused' },
    });
    expect(bad.status).toBe(400);
    const zero = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie, body: { seats: 0 } });
    expect(zero.status).toBe(400);
    const platformWorkspace = await call('PATCH', '/v1/subscription', { cookie: platform.cookie, body: { status: 'cancelled' } });
    expect(platformWorkspace.status).toBe(404);
    expect(
      (await call('PATCH', '/v1/subscription?organization_slug=no-such-org-y', { cookie: platform.cookie, body: { status: 'active' } }))
        .status,
    ).toBe(404);
    // Nothing changed.
    const [row] = await server.services.db.select().from(subscriptions).where(eq(subscriptions.tenantId, org.id));
    expect(row?.status).toBe('active');
  });

  it('over the seat limit after seats are lowered: the view says so and tells what to do', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    for (let i = 0; i < 2; i++) {
      const id = newId('user');
      await db.insert(users).values({ id, email: `${id}@example.com` });
      await db.insert(memberships).values({ tenantId: org.id, userId: id, roleKey: 'org_member' });
    }
    const res = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie, body: { seats: 2 } });
    expect(res.status).toBe(200);
    expect(res.body.seats).toEqual({ bought: 2, limit: 2, used: 3, available: 0, overLimit: true });
    expect(res.body.overLimit).toBe(true);
    expect(res.body.blocked.code).toBe('subscription_limit_exceeded');
    expect(res.body.blocked.message).toContain('3 members but 2 seats');
    expect(res.body.blocked.message).toContain('remove members');
    expect(res.body.blocked).toMatchObject({ kind: 'seats', limit: 'seats', max: 2, used: 3, requested: 0, periodEnd: null, plan: 'free' });
    expect(res.body.limits).toEqual([{ kind: 'seats', limit: 'seats', max: 2, used: 3, periodEnd: null, plan: 'free' }]);
    const read = await call('GET', '/v1/subscription', { cookie: admin.cookie });
    expect(read.body.blocked).toEqual(res.body.blocked);
    // Seats are the organization's: the plan stays as it was for everyone else.
    const [free] = await db.select().from(subscriptionPlans).where(eq(subscriptionPlans.key, 'free'));
    expect(free?.seatLimit).toBe(10);
  });
});
