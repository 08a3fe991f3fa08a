import { readdirSync } from 'node:fs';
import path from 'node:path';
import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { ZSubscriptionRefusal } from '@svc/contracts/subscriptions';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { applications } from '@svc/db/schema/applications';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { usageHourly } from '@svc/db/schema/usage';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MatrixFixture, MatrixRoute } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { buildOpenApiDocument } from '../../http/openapi.ts';
import type { Meta } from '../../trpc/init.ts';
import { appRouter } from '../../trpc/router.ts';

/**
 * The subscription rule (docs/api.md "The 402 rule") walked over EVERY mutating route of the four families
 * it covers: project (application), user, webhook and usage routes. The routes come from the
 * served OpenAPI document (by path and by tag), so a new mutating route in those families is
 * walked as soon as it exists: without the rule it answers 2xx where 402 is expected, and the
 * test fails. Each route is called the way its authorization-matrix entry calls it (as the org
 * admin of a fresh organization) in every subscription state, and every read of the families
 * must still answer 200 while mutations are refused.
 */

const FAMILY_PATH = /^\/v1\/(applications|users|webhook-endpoints|webhook-deliveries|usage|usage-events)(\/|$)/;
const FAMILY_TAGS = new Set(['applications', 'users', 'webhooks', 'usage']);

type Operation = { method: MatrixRoute['method']; template: string; documents402: boolean };

function familyOperations(): Operation[] {
  const doc = buildOpenApiDocument('http://svc.test') as {
    paths: Record<string, Record<string, { tags?: string[]; responses?: Record<string, unknown> }>>;
  };
  const out: Operation[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const template = `/v1${p}`;
      if (FAMILY_PATH.test(template) || operation.tags?.some((t) => FAMILY_TAGS.has(t))) {
        out.push({ method: method.toUpperCase() as Operation['method'], template, documents402: '402' in (operation.responses ?? {}) });
      }
    }
  }
  return out;
}

const key = (o: Operation) => `${o.method} ${o.template}`;

const MODULES = path.resolve(import.meta.dirname, '..');

async function matrixRoutes(): Promise<Map<string, MatrixRoute>> {
  const routes = new Map<string, MatrixRoute>();
  for (const domain of readdirSync(MODULES)) {
    for (const file of readdirSync(path.join(MODULES, domain)).filter((f) => f.endsWith('.matrix.ts'))) {
      const module = (await import(path.join(MODULES, domain, file))) as { MATRIX?: MatrixRoute[] };
      for (const route of module.MATRIX ?? []) {
        routes.set(`${route.method} ${route.template}`, route);
      }
    }
  }
  return routes;
}

let u = 0;
const unique = (label: string) => `${label}-${++u}-${Math.random().toString(36).slice(2, 8)}`;

type Prepare = MatrixRoute['prepare'];

/** How to call a family route that has no authorization-matrix entry (not organization-scoped, or not in one yet). */
const FALLBACK: Record<string, { prepare: Prepare; okStatus?: number }> = {
  'GET /v1/webhook-event-types': { prepare: async () => ({ path: '/v1/webhook-event-types' }) },
  'POST /v1/usage/events': {
    prepare: async ({ org }) => ({
      path: '/v1/usage/events',
      body: { organization_slug: org.slug, idempotencyKey: unique('walk'), eventType: 'walk_event' },
    }),
    okStatus: 201,
  },
  'POST /v1/usage-events': {
    prepare: async ({ org }) => ({
      path: '/v1/usage-events',
      body: { organization_slug: org.slug, idempotencyKey: unique('walk'), eventType: 'walk_event' },
    }),
    okStatus: 201,
  },
  'GET /v1/tenants/{id}/usage/events': { prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/usage/events` }) },
  'GET /v1/tenants/{id}/usage/summary': { prepare: async ({ org }) => ({ path: `/v1/tenants/${org.id}/usage/summary` }) },
  'GET /v1/usage': { prepare: async ({ org }) => ({ path: `/v1/usage?organization_slug=${org.slug}` }) },
};

/** The routes the walk must find, at least (a sanity check of the derivation itself). */
const KNOWN_MUTATING = [
  'POST /v1/applications',
  'PATCH /v1/applications/{id}',
  'POST /v1/applications/{id}/status',
  'POST /v1/applications/{id}/rotate-secret',
  'POST /v1/users',
  'PATCH /v1/users/{id}',
  'DELETE /v1/users/{id}',
  'POST /v1/webhook-endpoints',
  'PATCH /v1/webhook-endpoints/{id}',
  'DELETE /v1/webhook-endpoints/{id}',
  'POST /v1/webhook-endpoints/{id}/rotate-secret',
  'POST /v1/webhook-endpoints/{id}/test',
  'POST /v1/webhook-deliveries/{id}/retry',
  'POST /v1/usage/events',
  'POST /v1/usage-events',
];

/** Removing a member is how an organization gets back under its seat limit: allowed while that is the only problem. */
const RELIEVES_SEATS = new Set(['DELETE /v1/users/{id}']);

const operations = familyOperations();
const mutating = operations.filter((o) => o.method !== 'GET');
const reads = operations.filter((o) => o.method === 'GET');
const matrix = await matrixRoutes();

function howToCall(o: Operation): { prepare: Prepare; okStatus?: number } | undefined {
  return matrix.get(key(o)) ?? FALLBACK[key(o)];
}

let server: Awaited<ReturnType<typeof startTestServer>>;
let platform: SignedIn;

beforeAll(async () => {
  // Webhook endpoints of the matrix point at loopback.
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', SUBSCRIPTION_UPGRADE_URL: UPGRADE_URL } });
  platform = await seedSignedIn(server.services.db, { platformAdmin: true });
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;

async function send(method: string, p: string, opts: { cookie?: string; authorization?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${p}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
    },
    body: method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(opts.body ?? {}),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as Json };
}

async function patchSubscription(org: OrganizationRow, body: Json): Promise<Json> {
  const res = await send('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie, body });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function addMembers(org: OrganizationRow, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const id = newId('user');
    await server.services.db.insert(users).values({ id, email: `${id.toLowerCase()}@example.com` });
    await server.services.db.insert(memberships).values({ tenantId: org.id, userId: id, roleKey: 'org_member' });
  }
}

const UPGRADE_URL = 'https://billing.example.com/orgs/{organizationId}/plan';
const upgradeUrlOf = (org: OrganizationRow) => `https://billing.example.com/orgs/${org.id}/plan`;
/** Where monthly counts start again: the first instant of the next calendar month, UTC. */
const nextMonthStart = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1)).toISOString();

/**
 * What a 402 must say, and the machine-readable fields beside its message (ZSubscriptionRefusal):
 * the limit it hit with max, used and requested, or the status, with plan and upgradeUrl.
 */
type Expectation =
  | { ok: true }
  | { code: 'subscription_inactive' | 'subscription_limit_exceeded'; message: RegExp; fields: (org: OrganizationRow) => Promise<Json> };

/** Members of the organization in the database now (invited ones included: they hold a seat). */
async function memberCount(org: OrganizationRow): Promise<number> {
  return (await server.services.db.select().from(memberships).where(eq(memberships.tenantId, org.id))).length;
}

/**
 * A 402's body is the contract's, its fields those `expected` names, and GET /v1/subscription
 * shows the same numbers: its `limits` entry of the limit hit and, unless only adding a member is
 * refused (`addsOnly`: every seat taken, none too many), its `blocked` the same refusal.
 */
async function expectRefusal(
  res: { status: number; text: string; body: Json },
  expected: Json,
  org: OrganizationRow,
  cookie: string,
  opts: { addsOnly?: boolean } = {},
) {
  expect(res.status, res.text).toBe(402);
  const parsed = ZSubscriptionRefusal.safeParse(res.body);
  expect(parsed.success, `${res.text} ${parsed.error?.message}`).toBe(true);
  expect(res.body.error).toMatchObject(expected);
  const sub = await send('GET', `/v1/subscription?organization_slug=${org.slug}`, { cookie });
  expect(sub.status, sub.text).toBe(200);
  const { code, message, requestId, requested, ...fields } = res.body.error;
  if (code === 'subscription_limit_exceeded') {
    const { upgradeUrl, ...limit } = fields;
    expect(sub.body.limits).toContainEqual(limit);
    expect(upgradeUrl).toBe(upgradeUrlOf(org));
  }
  if (opts.addsOnly) {
    expect(sub.body.blocked).toBeNull();
  } else {
    expect(sub.body.blocked).toMatchObject(fields);
  }
}

type State = {
  name: string;
  /** Puts a fresh organization in this state. */
  enter: (org: OrganizationRow) => Promise<void>;
  expect: (route: string) => Expectation;
  /** Mutations are refused in this state: reads are checked too. */
  blocked: boolean;
};

const walkPlanKey = unique('walk-metered');

const STATES: State[] = [
  { name: 'active', enter: async () => {}, expect: () => ({ ok: true }), blocked: false },
  {
    name: 'trialing',
    enter: async (org) => {
      await patchSubscription(org, { status: 'trialing' });
    },
    expect: () => ({ ok: true }),
    blocked: false,
  },
  ...(['inactive', 'cancelled', 'expired'] as const).map(
    (status): State => ({
      name: status,
      enter: async (org) => {
        await patchSubscription(org, { status });
      },
      expect: () => ({
        code: 'subscription_inactive',
        message: new RegExp(`subscription (is ${status}|has ${status}).*platform admin can (reactivate|renew) it`),
        fields: async (org) => ({ status, plan: 'free', upgradeUrl: upgradeUrlOf(org) }),
      }),
      blocked: true,
    }),
  ),
  {
    name: 'over its seat limit',
    enter: async (org) => {
      await addMembers(org, 2);
      await patchSubscription(org, { seats: 2 });
    },
    expect: (route) =>
      RELIEVES_SEATS.has(route)
        ? { ok: true }
        : {
            code: 'subscription_limit_exceeded',
            message: /members but 2 seats.*remove members/,
            // The admin, the two added and whatever the route's preparation added. Only POST
            // /v1/users would add one.
            fields: async (org) => ({
              kind: 'seats',
              limit: 'seats',
              max: 2,
              used: await memberCount(org),
              requested: route === 'POST /v1/users' ? 1 : 0,
              periodEnd: null,
              plan: 'free',
              upgradeUrl: upgradeUrlOf(org),
            }),
          },
    blocked: true,
  },
  {
    name: 'over a usage limit this month',
    enter: async (org) => {
      const plan = await send('POST', '/v1/subscription-plans', {
        cookie: platform.cookie,
        body: { key: walkPlanKey, name: 'Walk metered', seatLimit: null, usageLimits: { walk_metric: 1 } },
      });
      expect(plan.status, plan.text).toBe(201);
      await patchSubscription(org, { planKey: plan.body.key });
      const hour = new Date();
      hour.setUTCMinutes(0, 0, 0);
      await server.services.db.insert(usageHourly).values({ tenantId: org.id, eventType: 'walk_metric', hour, events: 2, quantity: 5 });
    },
    // The walk's usage routes record walk_event, so they would add nothing to walk_metric.
    expect: () => ({
      code: 'subscription_limit_exceeded',
      message: /used 5 walk_metric this month, over its limit of 1/,
      fields: async (org) => ({
        kind: 'usage',
        limit: 'walk_metric',
        max: 1,
        used: 5,
        requested: 0,
        periodEnd: nextMonthStart(),
        plan: walkPlanKey,
        upgradeUrl: upgradeUrlOf(org),
      }),
    }),
    blocked: true,
  },
];

describe('the routes the subscription rule covers', () => {
  it('are derived from the OpenAPI document and include every known mutating route of the four families', () => {
    expect(mutating.map(key)).toEqual(expect.arrayContaining(KNOWN_MUTATING));
    expect(reads.length).toBeGreaterThanOrEqual(6);
  });

  it('each mutating one documents its 402 in the OpenAPI document; no read does', () => {
    expect(mutating.filter((o) => !o.documents402).map(key)).toEqual([]);
    expect(reads.filter((o) => o.documents402).map(key)).toEqual([]);
  });

  it('the served document declares every 402 with the SubscriptionRefusal schema, the seat-taking routes included', async () => {
    const res = await fetch(`${server.url}/v1/openapi.json`);
    const doc = (await res.json()) as {
      paths: Record<string, Record<string, { responses?: Record<string, Json> }>>;
      components: { schemas: Record<string, Json> };
    };
    const declared: string[] = [];
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const r402 = operation.responses?.['402'];
        if (r402) {
          expect(r402.content['application/json'].schema, `${method} ${p}`).toEqual({ $ref: '#/components/schemas/SubscriptionRefusal' });
          declared.push(`${method.toUpperCase()} /v1${p}`);
        }
      }
    }
    expect(declared).toEqual(expect.arrayContaining([...KNOWN_MUTATING, 'POST /v1/invitations/accept']));
    const variants = doc.components.schemas.SubscriptionRefusal?.properties.error.oneOf as Json[];
    const byCode = Object.fromEntries(variants.map((v) => [v.properties.code.const, v]));
    expect(byCode.subscription_limit_exceeded.required).toEqual(
      expect.arrayContaining(['code', 'message', 'requestId', 'limit', 'max', 'used', 'requested', 'periodEnd', 'plan', 'upgradeUrl']),
    );
    expect(byCode.subscription_inactive.required).toEqual(
      expect.arrayContaining(['code', 'message', 'requestId', 'status', 'plan', 'upgradeUrl']),
    );
    const subscription = doc.components.schemas.Subscription as Json;
    expect(subscription.required).toEqual(expect.arrayContaining(['limits', 'blocked']));
  });

  it('each has a way to be called here (its authorization-matrix entry)', () => {
    expect(operations.filter((o) => !howToCall(o)).map(key)).toEqual([]);
  });

  it('each mutating procedure of the families declares the rule in its meta', () => {
    const undeclared: string[] = [];
    for (const [name, procedure] of Object.entries(appRouter._def.procedures)) {
      const def = (procedure as unknown as { _def: { meta?: Meta; type: string } })._def;
      const openapi = def.meta?.openapi;
      if (!openapi || def.type !== 'mutation') {
        continue;
      }
      const template = `/v1${openapi.path}`;
      if ((FAMILY_PATH.test(template) || openapi.tags?.some((t) => FAMILY_TAGS.has(t))) && def.meta?.subscription === undefined) {
        undeclared.push(`${name} (${openapi.method} ${template})`);
      }
    }
    expect(undeclared).toEqual([]);
  });
});

for (const state of STATES) {
  describe(`organization ${state.name}`, () => {
    let fixture: MatrixFixture;
    let ready: Promise<void> | undefined;

    async function setUp(): Promise<void> {
      const db = server.services.db;
      const org = await seedOrganization(db);
      const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
      fixture = { org, admin, server };
      await state.enter(org);
    }

    it.each(mutating.map(key))('%s', async (route) => {
      ready ??= setUp();
      await ready;
      const how = howToCall(mutating.find((o) => key(o) === route) as Operation);
      if (!how) {
        throw new Error(`no way to call ${route}: add it to its domain's authorization matrix`);
      }
      const req = await how.prepare(fixture);
      const res = await send(route.split(' ')[0] as string, req.path, { cookie: fixture.admin.cookie, body: req.body });
      const expected = state.expect(route);
      if ('ok' in expected) {
        if (how.okStatus !== undefined) {
          expect(res.status, res.text).toBe(how.okStatus);
        } else {
          expect(res.status >= 200 && res.status < 300, `${res.status} ${res.text}`).toBe(true);
        }
      } else {
        expect(res.status, res.text).toBe(402);
        expect(res.body.error.code).toBe(expected.code);
        expect(res.body.error.message).toMatch(expected.message);
        expect(typeof res.body.error.requestId).toBe('string');
        await expectRefusal(res, await expected.fields(fixture.org), fixture.org, fixture.admin.cookie);
      }
    });

    if (state.blocked) {
      it.each(reads.map(key))('%s still answers 200', async (route) => {
        ready ??= setUp();
        await ready;
        const how = howToCall(reads.find((o) => key(o) === route) as Operation);
        if (!how) {
          throw new Error(`no way to call ${route}: add it to its domain's authorization matrix`);
        }
        const req = await how.prepare(fixture);
        const res = await send('GET', req.path, { cookie: fixture.admin.cookie });
        expect(res.status, res.text).toBe(200);
      });
    }
  });
}

describe('who is refused, and who is not', () => {
  async function cancelledOrg() {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await patchSubscription(org, { status: 'cancelled' });
    return { db, org, admin };
  }

  it('a refused mutation changes nothing: no application, no audit entry', async () => {
    const { db, org, admin } = await cancelledOrg();
    const res = await send('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Never' } });
    expect(res.status).toBe(402);
    expect(await db.select().from(applications).where(eq(applications.tenantId, org.id))).toEqual([]);
    expect(
      await db
        .select()
        .from(auditLogs)
        .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'application.created'))),
    ).toEqual([]);
  });

  it('a tenant API key (its own organization, no organization_slug) and the console over /trpc are refused alike', async () => {
    const { db, org, admin } = await cancelledOrg();
    const apiKey = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    const byKey = await send('POST', '/v1/applications', { authorization: apiKey.authorization, body: { name: 'By key' } });
    expect(byKey.status).toBe(402);
    expect(byKey.body.error.code).toBe('subscription_inactive');

    const trpc = await fetch(`${server.url}/trpc/webhooks.endpoint.create`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
      body: JSON.stringify({ organization_slug: org.slug, url: 'http://127.0.0.1:9/x', eventTypes: ['user.created'] }),
    });
    expect(trpc.status).toBe(402);
    const body = (await trpc.json()) as Json;
    expect(body.error.data).toMatchObject({ code: 'subscription_inactive', httpStatus: 402 });
    expect(body.error.message).toMatch(/cancelled: a platform admin can reactivate it/);
    // /trpc carries the /v1 error object in its shape, fields and all.
    expect(ZSubscriptionRefusal.parse({ error: body.error.error }).error).toMatchObject({
      code: 'subscription_inactive',
      status: 'cancelled',
      plan: 'free',
      upgradeUrl: upgradeUrlOf(org),
    });
    expect(byKey.body.error).toMatchObject({ status: 'cancelled', plan: 'free', upgradeUrl: upgradeUrlOf(org) });
  });

  it("an application's secret key writing usage is refused", async () => {
    const { db, org } = await cancelledOrg();
    const app = await seedApplication(db, { org: org.slug });
    for (const p of ['/v1/usage/events', '/v1/usage-events']) {
      const res = await send('POST', p, {
        authorization: `Bearer ${app.secretKey}`,
        body: { idempotencyKey: unique('sk'), eventType: 'api_call' },
      });
      expect(res.status, res.text).toBe(402);
      expect(res.body.error.code).toBe('subscription_inactive');
    }
  });

  it('an outsider learns nothing: 404 whatever the subscription, never 402', async () => {
    const { db, org } = await cancelledOrg();
    const outsider = await seedSignedIn(db, { organization: await seedOrganization(db), roleKey: 'org_admin' });
    const app = await seedApplication(db, { org: org.slug });
    const bySlug = await send('POST', '/v1/applications', { cookie: outsider.cookie, body: { organization_slug: org.slug, name: 'x' } });
    expect(bySlug.status).toBe(404);
    const byId = await send('PATCH', `/v1/applications/${app.application.id}`, { cookie: outsider.cookie, body: { name: 'x' } });
    expect(byId.status).toBe(404);
    const otherKey = await seedApiKey(db, { tenantId: outsider.organization.id, scopes: [...PERMISSIONS] });
    const keyed = await send('POST', '/v1/webhook-endpoints', {
      authorization: otherKey.authorization,
      body: { organization_slug: org.slug, url: 'http://127.0.0.1:9/x', eventTypes: ['user.created'] },
    });
    expect(keyed.status).toBe(404);
    for (const res of [bySlug, byId, keyed]) {
      expect(res.text).not.toContain('subscription');
    }
  });

  it('the platform workspace is never refused (it has no subscription)', async () => {
    const res = await send('POST', '/v1/applications', { cookie: platform.cookie, body: { name: unique('Platform app') } });
    expect(res.status, res.text).toBe(201);
  });

  it('reactivating lets mutations through again at once', async () => {
    const { org, admin } = await cancelledOrg();
    expect(
      (await send('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Before' } })).status,
    ).toBe(402);
    await patchSubscription(org, { status: 'active' });
    expect(
      (await send('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'After' } })).status,
    ).toBe(201);
  });
});

describe('the organization judged is the one the route acts on', () => {
  /**
   * An org admin of a cancelled organization and of an active one, whose session sits in the
   * cancelled one: every gated route is judged on the organization its authorization resolves,
   * whatever organization_slug or record id the request carries.
   */
  async function twoOrganizations() {
    const db = server.services.db;
    const cancelled = await seedOrganization(db);
    const active = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: cancelled, roleKey: 'org_admin' });
    await db.insert(memberships).values({ tenantId: active.id, userId: admin.user.id, roleKey: 'org_admin' });
    await patchSubscription(cancelled, { status: 'cancelled' });
    return { db, cancelled, active, admin };
  }

  const namesOf = async (db: typeof server.services.db, tenantId: string) =>
    (await db.select({ name: applications.name }).from(applications).where(eq(applications.tenantId, tenantId))).map((r) => r.name).sort();

  it('organization_slug picks the organization, for the route and the rule alike', async () => {
    const { db, cancelled, active, admin } = await twoOrganizations();
    const inActive = await send('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: active.slug, name: 'Named' },
    });
    expect(inActive.status, inActive.text).toBe(201);
    const inCancelled = await send('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: cancelled.slug, name: 'No' },
    });
    expect(inCancelled.status, inCancelled.text).toBe(402);
    // No slug: the session's workspace, the cancelled one, for both.
    const unnamed = await send('POST', '/v1/applications', { cookie: admin.cookie, body: { name: 'Unnamed' } });
    expect(unnamed.status, unnamed.text).toBe(402);
    expect(await namesOf(db, active.id)).toEqual(['Named']);
    expect(await namesOf(db, cancelled.id)).toEqual([]);
    // Over /trpc, the same input answers the same.
    const trpc = await fetch(`${server.url}/trpc/applications.create`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
      body: JSON.stringify({ organization_slug: active.slug, name: 'Over trpc' }),
    });
    expect(trpc.status).toBe(200);
  });

  it("a record's route is judged on the record's organization, and a slug naming another one cannot move it", async () => {
    const { db, cancelled, active, admin } = await twoOrganizations();
    const blockedApp = await seedApplication(db, { org: cancelled.slug, name: 'Blocked' });
    const activeApp = await seedApplication(db, { org: active.slug, name: 'Open' });
    const patch = (id: string, body: Json) => send('PATCH', `/v1/applications/${id}`, { cookie: admin.cookie, body });

    // The record's own organization, although the session sits in the other one.
    expect((await patch(blockedApp.application.id, { name: 'Renamed' })).status).toBe(402);
    expect((await patch(activeApp.application.id, { name: 'Open 2' })).status).toBe(200);
    // Naming the active organization does not let a change through to the cancelled one's record:
    // the route acts on the named organization, where the record is not (404), and nothing changes.
    const moved = await patch(blockedApp.application.id, { organization_slug: active.slug, name: 'Renamed' });
    expect(moved.status, moved.text).toBe(404);
    // Naming the cancelled organization for the active one's record: judged there (402).
    const named = await patch(activeApp.application.id, { organization_slug: cancelled.slug, name: 'Open 3' });
    expect(named.status, named.text).toBe(402);
    expect(await namesOf(db, cancelled.id)).toEqual(['Blocked']);
    expect(await namesOf(db, active.id)).toEqual(['Open 2']);
  });

  it('a tenant API key is judged on its own organization, whatever organization_slug it sends', async () => {
    const { db, cancelled, active } = await twoOrganizations();
    const key = await seedApiKey(db, { tenantId: active.id, scopes: [...PERMISSIONS] });
    const own = await send('POST', '/v1/applications', { authorization: key.authorization, body: { name: 'By key' } });
    expect(own.status, own.text).toBe(201);
    // Another organization's slug is another organization's 404, never its 402.
    const other = await send('POST', '/v1/applications', {
      authorization: key.authorization,
      body: { organization_slug: cancelled.slug, name: 'Elsewhere' },
    });
    expect(other.status, other.text).toBe(404);
    expect(other.text).not.toContain('subscription');
  });
});

describe('seats', () => {
  it('with every seat taken, adding a user is refused (402) while other changes work; removing one frees a seat', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await addMembers(org, 1);
    await patchSubscription(org, { seats: 2 });
    const full = await send('POST', '/v1/users', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: `${unique('new')}@example.com` },
    });
    expect(full.status, full.text).toBe(402);
    expect(full.body.error.code).toBe('subscription_limit_exceeded');
    expect(full.body.error.message).toMatch(/all 2 seats of the organization are taken.*remove a member, or ask a platform admin/);
    await expectRefusal(
      full,
      { kind: 'seats', limit: 'seats', max: 2, used: 2, requested: 1, periodEnd: null, plan: 'free', upgradeUrl: upgradeUrlOf(org) },
      org,
      admin.cookie,
      { addsOnly: true },
    );
    const app = await send('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Still fine' } });
    expect(app.status).toBe(201);

    const list = await send('GET', `/v1/users?organization_slug=${org.slug}`, { cookie: admin.cookie });
    const other = list.body.data.find((row: Json) => row.id !== admin.user.id);
    expect((await send('DELETE', `/v1/users/${other.id}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(200);
    const added = await send('POST', '/v1/users', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: `${unique('new')}@example.com` },
    });
    expect(added.status, added.text).toBe(201);
  });

  it('over the seat limit, removing members brings the organization back under, and mutations work again', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await addMembers(org, 2);
    await patchSubscription(org, { seats: 1 });
    const refused = await send('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'x' } });
    expect(refused.status).toBe(402);
    const list = await send('GET', `/v1/users?organization_slug=${org.slug}`, { cookie: admin.cookie });
    for (const row of list.body.data.filter((r: Json) => r.id !== admin.user.id)) {
      expect((await send('DELETE', `/v1/users/${row.id}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(200);
    }
    const sub = await send('GET', `/v1/subscription?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(sub.body).toMatchObject({ seats: { used: 1, limit: 1, overLimit: false }, blocked: null });
    expect(
      (await send('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'y' } })).status,
    ).toBe(201);
  });

  it('accepting an invitation takes a seat: refused (402) with every seat taken, and in a cancelled organization; accepted once a seat is free', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await patchSubscription(org, { seats: 1 });
    const email = `${unique('invitee')}@example.com`;
    const invited = await send('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email } });
    expect(invited.status, invited.text).toBe(201);
    const invitee = await seedSignedIn(db, { email });
    const full = await send('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: invited.body.invitationToken } });
    expect(full.status, full.text).toBe(402);
    expect(full.body.error.code).toBe('subscription_limit_exceeded');
    expect(full.body.error.message).toMatch(
      /^the organization's only seat is taken \(plan Free\): remove a member, or ask a platform admin/,
    );
    await expectRefusal(
      full,
      { kind: 'seats', limit: 'seats', max: 1, used: 1, requested: 1, periodEnd: null, plan: 'free', upgradeUrl: upgradeUrlOf(org) },
      org,
      admin.cookie,
      { addsOnly: true },
    );
    const members = await db.select().from(memberships).where(eq(memberships.tenantId, org.id));
    expect(members).toHaveLength(1);

    await patchSubscription(org, { seats: 2, status: 'cancelled' });
    const cancelled = await send('POST', '/v1/invitations/accept', {
      cookie: invitee.cookie,
      body: { token: invited.body.invitationToken },
    });
    expect(cancelled.status).toBe(402);
    expect(cancelled.body.error.code).toBe('subscription_inactive');
    await expectRefusal(cancelled, { status: 'cancelled', plan: 'free', upgradeUrl: upgradeUrlOf(org) }, org, admin.cookie);

    await patchSubscription(org, { status: 'active' });
    const accepted = await send('POST', '/v1/invitations/accept', {
      cookie: invitee.cookie,
      body: { token: invited.body.invitationToken },
    });
    expect(accepted.status, accepted.text).toBe(200);
    expect(await db.select().from(memberships).where(eq(memberships.tenantId, org.id))).toHaveLength(2);
  });

  // Seats are taken under a per-organization lock (claimSeat): without it, adds that race for the
  // last free seats all count the members before any of them commits, and all get in.
  it('N+5 concurrent POST /v1/users to an organization with N seats: exactly the free seats are filled, the rest are 402', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const seats = 3;
    await patchSubscription(org, { seats });
    const results = await Promise.all(
      Array.from({ length: seats + 5 }, () =>
        send('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email: `${unique('race')}@example.com` } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    // The admin holds one seat: two are free.
    expect(statuses, results.map((r) => r.text).join('\n')).toEqual([201, 201, ...Array(seats + 3).fill(402)]);
    for (const refused of results.filter((r) => r.status === 402)) {
      expect(refused.body.error).toMatchObject({
        code: 'subscription_limit_exceeded',
        limit: 'seats',
        max: seats,
        used: seats,
        requested: 1,
      });
    }
    expect(await db.select().from(memberships).where(eq(memberships.tenantId, org.id))).toHaveLength(seats);
  });

  it('N+5 concurrent invitation accepts to an organization with N seats: exactly the free seats are taken, the rest are 402', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const seats = 2;
    await patchSubscription(org, { seats });
    const invitees: { cookie: string; token: string }[] = [];
    for (let i = 0; i < seats + 5; i++) {
      const email = `${unique('racer')}@example.com`;
      const invited = await send('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email } });
      expect(invited.status, invited.text).toBe(201);
      const invitee = await seedSignedIn(db, { email });
      invitees.push({ cookie: invitee.cookie, token: invited.body.invitationToken });
    }
    const results = await Promise.all(
      invitees.map((invitee) => send('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: invitee.token } })),
    );
    const statuses = results.map((r) => r.status).sort();
    // The admin holds one seat: one is free.
    expect(statuses, results.map((r) => r.text).join('\n')).toEqual([200, ...Array(seats + 4).fill(402)]);
    for (const refused of results.filter((r) => r.status === 402)) {
      expect(refused.body.error).toMatchObject({
        code: 'subscription_limit_exceeded',
        limit: 'seats',
        max: seats,
        used: seats,
        requested: 1,
      });
    }
    expect(await db.select().from(memberships).where(eq(memberships.tenantId, org.id))).toHaveLength(seats);
  });

  it('a cancelled organization cannot remove members either (only the seat problem has that way out)', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await addMembers(org, 1);
    await patchSubscription(org, { status: 'cancelled' });
    const list = await send('GET', `/v1/users?organization_slug=${org.slug}`, { cookie: admin.cookie });
    const other = list.body.data.find((row: Json) => row.id !== admin.user.id);
    const res = await send('DELETE', `/v1/users/${other.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('subscription_inactive');
  });
});
