import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedWebhookEndpoint } from '../webhooks/webhooks.fixtures.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;
type Answer = { status: number; json: Json; text: string };

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text };
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
let n = 0;
const key = (label = 'k') => `${label}-${++n}-${Math.random().toString(36).slice(2, 10)}`;

async function rows<T = Json>(query: ReturnType<typeof sql>): Promise<T[]> {
  return (await server.services.db.execute(query)) as unknown as T[];
}

async function eventCount(tenantId: string): Promise<number> {
  const [row] = await rows<{ n: number }>(sql`select count(*)::int as n from usage_events where tenant_id = ${tenantId}`);
  return row?.n ?? 0;
}

/** Puts the organization on a fresh plan with these monthly usage limits (plan management is another module's). */
/** Puts the organization on a new plan with these usage limits (and 10 seats); answers its key. */
async function limitPlan(tenantId: string, usageLimits: Record<string, number>): Promise<string> {
  const planId = newId('subscriptionPlan');
  await server.services.db.execute(
    sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits) values (${planId}, ${planId.toLowerCase()}, 'Limited', 10, ${JSON.stringify(usageLimits)}::jsonb)`,
  );
  await server.services.db.execute(sql`update subscriptions set plan_id = ${planId} where tenant_id = ${tenantId}`);
  return planId.toLowerCase();
}

/** Where monthly counts start again: the first instant of the next calendar month, UTC. */
const nextMonthStart = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1)).toISOString();

async function get(path: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

describe('POST /v1/usage/events with an application secret key', () => {
  it('records one event (201), replays it (200, same event), refuses the key with another payload (409)', async () => {
    const app = await seedApplication(server.services.db);
    const k = key();
    const properties = { a: 1, nested: { y: 2, x: [1, { d: 1, c: 'two' }] }, '10': true, '9': false };
    const body = { idempotencyKey: k, eventType: 'api_call', quantity: 3, occurredAt: '2000-01-01T00:00:00Z', properties };
    // Far in the past: refused by the window check, with the field named.
    const old = await post('/v1/usage/events', body, bearer(app.secretKey));
    expect(old.status, old.text).toBe(400);
    expect(old.json.error.code).toBe('validation_failed');
    expect(old.json.error.issues.map((i: Json) => i.path.join('.'))).toEqual(['occurredAt']);

    const occurredAt = new Date(Date.now() - 3_600_000).toISOString();
    const created = await post('/v1/usage/events', { ...body, occurredAt }, bearer(app.secretKey));
    expect(created.status, created.text).toBe(201);
    expect(created.json.duplicate).toBe(false);
    expect(created.json.event).toMatchObject({
      idempotencyKey: k,
      eventType: 'api_call',
      quantity: 3,
      occurredAt,
      properties,
      channel: 'usage',
      sourceId: app.application.id,
    });
    expect(created.json.event.id).toMatch(/^uev_[0-9A-Za-z]{20}$/);
    expect(Object.keys(created.json.event).sort()).toEqual(
      ['channel', 'createdAt', 'eventType', 'id', 'idempotencyKey', 'occurredAt', 'properties', 'quantity', 'sourceId'].sort(),
    );

    // Same payload, keys of properties in another order: the same event.
    const replay = await post(
      '/v1/usage/events',
      {
        properties: { '9': false, nested: { x: [1, { c: 'two', d: 1 }], y: 2 }, '10': true, a: 1 },
        occurredAt: occurredAt.replace('Z', '+00:00'),
        quantity: 3,
        eventType: 'api_call',
        idempotencyKey: k,
      },
      bearer(app.secretKey),
    );
    expect(replay.status, replay.text).toBe(200);
    expect(replay.json).toEqual({ event: created.json.event, duplicate: true });

    for (const changed of [
      { quantity: 4 },
      { eventType: 'api_calls' },
      { properties: { a: 2 } },
      { occurredAt: new Date(Date.now() - 60_000).toISOString() },
    ]) {
      const reused = await post('/v1/usage/events', { ...body, occurredAt, ...changed }, bearer(app.secretKey));
      expect(reused.status, reused.text).toBe(409);
      expect(reused.json.error.code).toBe('idempotency_key_reused');
      expect(reused.json.error.message).toContain(k);
    }
    expect(await eventCount(app.organization.id)).toBe(1);
  });

  it('defaults quantity to 1 and occurredAt to the time of receipt; an omitted occurredAt stays part of the payload', async () => {
    const app = await seedApplication(server.services.db);
    const k = key();
    const before = Date.now();
    const created = await post('/v1/usage/events', { idempotencyKey: k, eventType: 'signup' }, bearer(app.secretKey));
    expect(created.status, created.text).toBe(201);
    expect(created.json.event.quantity).toBe(1);
    expect(created.json.event.properties).toEqual({});
    const at = Date.parse(created.json.event.occurredAt);
    expect(at).toBeGreaterThanOrEqual(before - 5);
    expect(at).toBeLessThanOrEqual(Date.now() + 5);
    // quantity 1 said out loud is the same payload; occurredAt said out loud is not.
    expect((await post('/v1/usage/events', { idempotencyKey: k, eventType: 'signup', quantity: 1 }, bearer(app.secretKey))).status).toBe(
      200,
    );
    const explicit = await post(
      '/v1/usage/events',
      { idempotencyKey: k, eventType: 'signup', occurredAt: created.json.event.occurredAt },
      bearer(app.secretKey),
    );
    expect(explicit.status).toBe(409);
  });

  it('keeps hourly totals, emits usage_event.created with a delivery per subscribed endpoint, and is append-only', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    const subscribed = await seedWebhookEndpoint(server.services.db, server.services.secretBox, {
      tenantId,
      eventTypes: ['usage_event.created'],
    });
    await seedWebhookEndpoint(server.services.db, server.services.secretBox, { tenantId, eventTypes: ['user.created'] });
    await server.services.db.execute(sql`select graphile_worker.remove_job('webhooks:dispatch')`);
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000;
    const at = (minute: number) => new Date(hour + minute * 60_000).toISOString();
    const res = await post(
      '/v1/usage/events',
      {
        events: [
          { idempotencyKey: key(), eventType: 'tokens', quantity: 100, occurredAt: at(1) },
          { idempotencyKey: key(), eventType: 'tokens', quantity: 50, occurredAt: at(59) },
          { idempotencyKey: key(), eventType: 'calls', occurredAt: at(2) },
        ],
      },
      bearer(app.secretKey),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json.results.map((r: Json) => [r.event.eventType, r.event.quantity, r.duplicate])).toEqual([
      ['tokens', 100, false],
      ['tokens', 50, false],
      ['calls', 1, false],
    ]);
    const hourly = await rows(sql`
      select event_type, (extract(epoch from hour) * 1000)::float8 as hour, events::int, quantity::int
      from usage_hourly where tenant_id = ${tenantId} order by event_type`);
    expect(hourly).toEqual([
      { event_type: 'calls', hour, events: 1, quantity: 1 },
      { event_type: 'tokens', hour, events: 2, quantity: 150 },
    ]);
    const events = await rows<{ id: string; data: Json }>(
      sql`select id, data from webhook_events where tenant_id = ${tenantId} and type = 'usage_event.created'`,
    );
    expect(events.map((e) => e.data.id).sort()).toEqual(res.json.results.map((r: Json) => r.event.id).sort());
    expect(events[0]?.data).toMatchObject({
      object: 'usage_event',
      organizationId: tenantId,
      actor: { type: 'application', id: app.application.id },
    });
    const deliveries = await rows<{ endpoint_id: string; event_id: string; status: string }>(
      sql`select endpoint_id, event_id, status from webhook_deliveries where tenant_id = ${tenantId}`,
    );
    expect(deliveries).toHaveLength(3);
    expect(deliveries.every((d) => d.endpoint_id === subscribed.id && d.status === 'pending')).toBe(true);
    expect(new Set(deliveries.map((d) => d.event_id))).toEqual(new Set(events.map((e) => e.id)));
    const jobs = await rows<{ n: number }>(sql`select count(*)::int as n from graphile_worker.jobs where key = 'webhooks:dispatch'`);
    expect(jobs[0]?.n).toBe(1);

    // A replay creates nothing: no event, no delivery, no change to the totals.
    const again = await post('/v1/usage/events', { events: [{ ...res.json.results[2].event, channel: undefined }] }, bearer(app.secretKey));
    expect(again.status).toBe(400); // unknown fields (id, channel, ...) are refused
    const { idempotencyKey, eventType, occurredAt } = res.json.results[2].event;
    const replay = await post('/v1/usage/events', { events: [{ idempotencyKey, eventType, occurredAt }] }, bearer(app.secretKey));
    expect(replay.json.results[0].duplicate).toBe(true);
    expect((await rows(sql`select 1 from webhook_events where tenant_id = ${tenantId} and type = 'usage_event.created'`)).length).toBe(3);
    expect((await rows<{ q: number }>(sql`select sum(quantity)::int as q from usage_hourly where tenant_id = ${tenantId}`))[0]?.q).toBe(
      151,
    );

    // Append-only: the database itself refuses UPDATE and DELETE.
    await expect(server.services.db.execute(sql`update usage_events set quantity = 0 where tenant_id = ${tenantId}`)).rejects.toThrow();
    await expect(server.services.db.execute(sql`delete from usage_events where tenant_id = ${tenantId}`)).rejects.toThrow();
    expect(await eventCount(tenantId)).toBe(3);
  });
});

describe('billing handoff', () => {
  it('queues one sync log per created event of a mapped type, in the ingesting transaction, and none for a replay', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    await server.services.db.execute(sql`
      insert into billing_mappings (id, tenant_id, provider, event_type, provider_item_id)
      values (${newId('billingMapping')}, ${tenantId}, 'stripe', 'tokens', 'meter_tokens')`);
    await server.services.db.execute(sql`select graphile_worker.remove_job('billing:sync')`);
    const events = [
      { idempotencyKey: key(), eventType: 'tokens', quantity: 30 },
      { idempotencyKey: key(), eventType: 'unmapped' },
      { idempotencyKey: key(), eventType: 'tokens', quantity: 12 },
    ];
    const res = await post('/v1/usage-events', { events }, bearer(app.secretKey));
    expect(res.status, res.text).toBe(200);
    const logs = await rows<{ usage_event_id: string; status: string; provider: string }>(
      sql`select usage_event_id, status, provider from billing_sync_logs where tenant_id = ${tenantId} order by usage_event_id`,
    );
    const tokenIds = res.json.results.filter((r: Json) => r.event.eventType === 'tokens').map((r: Json) => r.event.id);
    expect(logs).toEqual(tokenIds.sort().map((id: string) => ({ usage_event_id: id, status: 'queued', provider: 'stripe' })));
    const jobs = await rows<{ n: number }>(sql`select count(*)::int as n from graphile_worker.jobs where key = 'billing:sync'`);
    expect(jobs[0]?.n).toBe(1);
    expect((await post('/v1/usage-events', { events }, bearer(app.secretKey))).json.results.every((r: Json) => r.duplicate)).toBe(true);
    expect((await rows(sql`select 1 from billing_sync_logs where tenant_id = ${tenantId}`)).length).toBe(2);
  });
});

describe('batches', () => {
  it('answers in request order, new and replayed events mixed; a reused key refuses the whole batch', async () => {
    const app = await seedApplication(server.services.db);
    const [a, b, c] = [key('a'), key('b'), key('c')];
    expect((await post('/v1/usage/events', { idempotencyKey: b, eventType: 'x' }, bearer(app.secretKey))).status).toBe(201);
    const res = await post(
      '/v1/usage/events',
      {
        events: [
          { idempotencyKey: a, eventType: 'x' },
          { idempotencyKey: b, eventType: 'x' },
          { idempotencyKey: c, eventType: 'y', quantity: 0 },
        ],
      },
      bearer(app.secretKey),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json.results.map((r: Json) => [r.event.idempotencyKey, r.duplicate])).toEqual([
      [a, false],
      [b, true],
      [c, false],
    ]);
    const d = key('d');
    const refused = await post(
      '/v1/usage/events',
      {
        events: [
          { idempotencyKey: d, eventType: 'x' },
          { idempotencyKey: c, eventType: 'y', quantity: 5 },
        ],
      },
      bearer(app.secretKey),
    );
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.error.code).toBe('idempotency_key_reused');
    // Nothing of the refused batch was recorded: d is still free.
    expect((await post('/v1/usage/events', { idempotencyKey: d, eventType: 'x', quantity: 7 }, bearer(app.secretKey))).status).toBe(201);
  });

  it('accepts 1000 events and refuses 1001, and the same key twice in one batch', async () => {
    const app = await seedApplication(server.services.db);
    const events = Array.from({ length: 1000 }, (_, i) => ({ idempotencyKey: `bulk-${i}`, eventType: 'bulk' }));
    const ok = await post('/v1/usage/events', { events }, bearer(app.secretKey));
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
    expect(ok.json.results).toHaveLength(1000);
    expect(ok.json.results.map((r: Json) => r.event.idempotencyKey)).toEqual(events.map((e) => e.idempotencyKey));
    const tooMany = await post(
      '/v1/usage/events',
      { events: [...events, { idempotencyKey: 'bulk-1000', eventType: 'bulk' }] },
      bearer(app.secretKey),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error.issues[0].path).toEqual(['events']);
    const twice = await post(
      '/v1/usage/events',
      {
        events: [
          { idempotencyKey: 'same', eventType: 'x' },
          { idempotencyKey: 'other', eventType: 'x' },
          { idempotencyKey: 'same', eventType: 'x' },
        ],
      },
      bearer(app.secretKey),
    );
    expect(twice.status).toBe(400);
    expect(twice.json.error.issues).toEqual([{ path: ['events', 2, 'idempotencyKey'], message: expect.stringContaining('events[0]') }]);
  });
});

describe('validation', () => {
  const now = () => Date.now();
  const cases: [string, () => unknown, string][] = [
    ['no event type', () => ({ idempotencyKey: 'k' }), 'eventType'],
    ['no idempotency key', () => ({ eventType: 'x' }), 'idempotencyKey'],
    ['upper-case event type', () => ({ idempotencyKey: 'k', eventType: 'Api_Call' }), 'eventType'],
    ['event type with a space', () => ({ idempotencyKey: 'k', eventType: 'api call' }), 'eventType'],
    ['event type of 65 characters', () => ({ idempotencyKey: 'k', eventType: 'a'.repeat(65) }), 'eventType'],
    ['empty idempotency key', () => ({ idempotencyKey: '', eventType: 'x' }), 'idempotencyKey'],
    ['idempotency key of 256 characters', () => ({ idempotencyKey: 'k'.repeat(256), eventType: 'x' }), 'idempotencyKey'],
    ['idempotency key with a space', () => ({ idempotencyKey: 'a b', eventType: 'x' }), 'idempotencyKey'],
    ['negative quantity', () => ({ idempotencyKey: 'k', eventType: 'x', quantity: -1 }), 'quantity'],
    ['fractional quantity', () => ({ idempotencyKey: 'k', eventType: 'x', quantity: 1.5 }), 'quantity'],
    ['quantity above 1e9', () => ({ idempotencyKey: 'k', eventType: 'x', quantity: 1_000_000_001 }), 'quantity'],
    ['quantity as a string', () => ({ idempotencyKey: 'k', eventType: 'x', quantity: '3' }), 'quantity'],
    ['occurredAt not ISO', () => ({ idempotencyKey: 'k', eventType: 'x', occurredAt: 'yesterday' }), 'occurredAt'],
    [
      'occurredAt 36 days ago',
      () => ({ idempotencyKey: 'k', eventType: 'x', occurredAt: new Date(now() - 36 * 86_400_000).toISOString() }),
      'occurredAt',
    ],
    [
      'occurredAt 10 minutes ahead',
      () => ({ idempotencyKey: 'k', eventType: 'x', occurredAt: new Date(now() + 600_000).toISOString() }),
      'occurredAt',
    ],
    ['properties an array', () => ({ idempotencyKey: 'k', eventType: 'x', properties: [1] }), 'properties'],
    ['properties over 4 KiB', () => ({ idempotencyKey: 'k', eventType: 'x', properties: { s: 'é'.repeat(2100) } }), 'properties'],
    ['properties with NUL', () => ({ idempotencyKey: 'k', eventType: 'x', properties: { s: 'a\u0000b' } }), 'properties.s'],
    [
      'properties 6 levels deep',
      () => ({ idempotencyKey: 'k', eventType: 'x', properties: { a: { b: { c: { d: { e: { f: 1 } } } } } } }),
      'properties',
    ],
    ['an unknown field', () => ({ idempotencyKey: 'k', eventType: 'x', quantit: 2 }), ''],
    [
      'one event and events',
      () => ({ idempotencyKey: 'k', eventType: 'x', events: [{ idempotencyKey: 'j', eventType: 'x' }] }),
      'idempotencyKey',
    ],
    ['an empty batch', () => ({ events: [] }), 'events'],
    [
      'a bad event in a batch',
      () => ({
        events: [
          { idempotencyKey: 'j', eventType: 'x' },
          { idempotencyKey: 'k', eventType: 'x', quantity: -2 },
        ],
      }),
      'events.1.quantity',
    ],
  ];
  it.each(cases)('%s: 400 validation_failed naming the field', async (_name, body, path) => {
    const app = await seedApplication(server.services.db);
    const res = await post('/v1/usage/events', body(), bearer(app.secretKey));
    expect(res.status, res.text).toBe(400);
    expect(res.json.error.code).toBe('validation_failed');
    expect(res.json.error.issues.map((i: Json) => i.path.join('.'))).toContain(path);
    expect(await eventCount(app.organization.id)).toBe(0);
  });

  it('a body that is not JSON: 400 malformed_request; not declared JSON: 415; over 1 MB: 413', async () => {
    const app = await seedApplication(server.services.db);
    const bad = await post('/v1/usage/events', '{"idempotencyKey":', bearer(app.secretKey));
    expect([bad.status, bad.json.error.code]).toEqual([400, 'malformed_request']);
    const text = await fetch(`${server.url}/v1/usage/events`, {
      method: 'POST',
      headers: { ...bearer(app.secretKey), 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(text.status).toBe(415);
    expect(((await text.json()) as Json).error.code).toBe('unsupported_media_type');
    const big = await post(
      '/v1/usage/events',
      { idempotencyKey: 'k', eventType: 'x', properties: { s: 'x'.repeat(1_100_000) } },
      bearer(app.secretKey),
    );
    expect([big.status, big.json.error.code]).toEqual([413, 'payload_too_large']);
    expect(typeof big.json.error.requestId).toBe('string');
  });

  it('occurredAt within the window is accepted, 35 days back and 4 minutes ahead', async () => {
    const app = await seedApplication(server.services.db);
    for (const at of [Date.now() - 34.9 * 86_400_000, Date.now() + 4 * 60_000]) {
      const res = await post(
        '/v1/usage/events',
        { idempotencyKey: key(), eventType: 'x', occurredAt: new Date(at).toISOString() },
        bearer(app.secretKey),
      );
      expect(res.status, res.text).toBe(201);
    }
  });
});

describe('who may record usage', () => {
  it('tenant API keys need usage.write and write to their own organization only', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const writer = await seedApiKey(db, { tenantId: org.id, scopes: ['usage.write'] });
    const reader = await seedApiKey(db, { tenantId: org.id, scopes: PERMISSIONS.filter((p) => p !== 'usage.write') });
    const ok = await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'x' }, { authorization: writer.authorization });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.event).toMatchObject({ channel: 'metering', sourceId: writer.id });
    const named = await post(
      '/v1/usage/events',
      { organization_slug: org.slug, idempotencyKey: key(), eventType: 'x' },
      { authorization: writer.authorization },
    );
    expect(named.status).toBe(201);
    const forbidden = await post('/v1/usage/events', { idempotencyKey: key(), eventType: 'x' }, { authorization: reader.authorization });
    expect([forbidden.status, forbidden.json.error.code]).toEqual([403, 'forbidden']);
    const elsewhere = await post(
      '/v1/usage/events',
      { organization_slug: other.slug, idempotencyKey: key(), eventType: 'x' },
      { authorization: writer.authorization },
    );
    expect([elsewhere.status, elsewhere.json.error.code]).toEqual([404, 'not_found']);
    expect(await eventCount(other.id)).toBe(0);
  });

  it('an application key writes to its organization only; disabled: 409; unknown or malformed: 401; anonymous: 401', async () => {
    const app = await seedApplication(server.services.db);
    const other = await seedOrganization(server.services.db);
    const elsewhere = await post(
      '/v1/usage/events',
      { organization_slug: other.slug, idempotencyKey: key(), eventType: 'x' },
      bearer(app.secretKey),
    );
    expect(elsewhere.status).toBe(404);
    const disabled = await seedApplication(server.services.db, { status: 'disabled' });
    const refused = await post('/v1/usage/events', { idempotencyKey: key(), eventType: 'x' }, bearer(disabled.secretKey));
    expect([refused.status, refused.json.error.code]).toEqual([409, 'application_disabled']);
    const unknown = await post('/v1/usage/events', { idempotencyKey: key(), eventType: 'x' }, bearer(`sk_live_${'Q'.repeat(40)}`));
    expect([unknown.status, unknown.json.error.code]).toEqual([401, 'invalid_secret_key']);
    const malformed = await post('/v1/usage/events', { idempotencyKey: key(), eventType: 'x' }, { authorization: 'Bearer nope' });
    expect([malformed.status, malformed.json.error.code]).toEqual([401, 'invalid_secret_key']);
    const anonymous = await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'x' });
    expect([anonymous.status, anonymous.json.error.code]).toEqual([401, 'unauthenticated']);
    // Authentication comes before validation: an invalid body from nobody is still 401.
    expect((await post('/v1/usage-events', { events: [] })).status).toBe(401);
  });

  it('a session needs usage.write and the CSRF rule: JSON from an allowed origin', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const origin = server.services.config.publicUrl;
    const body = () => ({ organization_slug: org.slug, idempotencyKey: key(), eventType: 'x' });
    const ok = await post('/v1/usage/events', body(), { cookie: admin.cookie, origin });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.event.sourceId).toBe(admin.user.id);
    expect((await post('/v1/usage/events', body(), { cookie: member.cookie, origin })).status).toBe(403);
    const crossSite = await post('/v1/usage/events', body(), { cookie: admin.cookie, origin: 'https://evil.example' });
    expect([crossSite.status, crossSite.json.error.code]).toEqual([403, 'csrf_rejected']);
    const form = await fetch(`${server.url}/v1/usage/events`, {
      method: 'POST',
      headers: { cookie: admin.cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'idempotencyKey=k&eventType=x',
    });
    expect(form.status).toBe(403);
    expect(await eventCount(org.id)).toBe(1);
  });
});

describe('concurrency', () => {
  it('60 parallel requests with one key and payload create exactly one event', async () => {
    const app = await seedApplication(server.services.db);
    const k = key();
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        post('/v1/usage/events', { idempotencyKey: k, eventType: 'race', quantity: 2 }, bearer(app.secretKey)),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(59).fill(200), 201].sort());
    expect(new Set(answers.map((a) => a.json.event.id)).size).toBe(1);
    expect(answers.filter((a) => a.json.duplicate === false)).toHaveLength(1);
    const tenantId = app.organization.id;
    expect(await eventCount(tenantId)).toBe(1);
    expect(
      (
        await rows<{ e: number; q: number }>(
          sql`select events::int as e, quantity::int as q from usage_hourly where tenant_id = ${tenantId}`,
        )
      )[0],
    ).toEqual({ e: 1, q: 2 });
  });

  it('parallel requests with one key and different payloads: one wins, the same payload replays it, the rest get 409', async () => {
    const app = await seedApplication(server.services.db);
    const k = key();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        post('/v1/usage/events', { idempotencyKey: k, eventType: 'race', quantity: i % 4 }, bearer(app.secretKey)),
      ),
    );
    const winner = answers.find((a) => a.status === 201);
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const [i, a] of answers.entries()) {
      if (a === winner) {
        continue;
      }
      if (i % 4 === winner?.json.event.quantity) {
        expect(a.status, a.text).toBe(200);
        expect(a.json.event.id).toBe(winner?.json.event.id);
      } else {
        expect([a.status, a.json.error?.code]).toEqual([409, 'idempotency_key_reused']);
      }
    }
  });

  it('concurrent requests are committed together, and one that breaks its transaction fails alone', async () => {
    const app = await seedApplication(server.services.db);
    const db = server.services.db;
    // A trigger of this test's own database fails the insert of one key: the batch it lands in
    // breaks, and every other request of that batch must still succeed.
    await db.execute(
      sql.raw(`
      create function test_poison_usage() returns trigger language plpgsql as $$
      begin
        if new.idempotency_key = 'poison' then raise exception 'poisoned usage event'; end if;
        return new;
      end $$;
      create trigger test_poison_usage before insert on usage_events for each row execute function test_poison_usage();`),
    );
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          post('/v1/usage/events', { idempotencyKey: i === 20 ? 'poison' : key(), eventType: 'batch' }, bearer(app.secretKey)),
        ),
      );
      expect(answers[20]?.status).toBe(500);
      expect(answers[20]?.json.error).toMatchObject({ code: 'internal', message: 'Internal server error' });
      expect(answers.filter((a, i) => i !== 20 && a.status === 201)).toHaveLength(39);
    } finally {
      await db.execute(sql.raw('drop trigger test_poison_usage on usage_events; drop function test_poison_usage();'));
    }
    // Group commit: many requests shared a transaction (created_at is the transaction's start).
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => post('/v1/usage/events', { idempotencyKey: key(), eventType: 'grouped' }, bearer(app.secretKey))),
    );
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const transactions = new Set(answers.map((a) => a.json.event.createdAt));
    expect(transactions.size).toBeLessThan(20);
  });
});

describe('POST /v1/usage-events: usage limits', () => {
  it("refuses (402) an event that would pass the month's limit, allows reaching it exactly, replays at the limit", async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    const plan = await limitPlan(tenantId, { api_call: 10 });
    const reader = await seedApiKey(server.services.db, { tenantId, scopes: ['subscription.read'] });
    /** GET /v1/subscription's entry for api_call: the same fields a 402 names. */
    const apiCallLimit = async () => {
      const sub = await get('/v1/subscription', { authorization: reader.authorization });
      expect(sub.status, sub.text).toBe(200);
      return sub.json.limits.find((l: Json) => l.limit === 'api_call');
    };
    const limitFields = (used: number) => ({ kind: 'usage', limit: 'api_call', max: 10, used, periodEnd: nextMonthStart(), plan });
    expect(await apiCallLimit()).toEqual(limitFields(0));
    const first = key();
    expect(
      (await post('/v1/usage-events', { idempotencyKey: first, eventType: 'api_call', quantity: 8 }, bearer(app.secretKey))).status,
    ).toBe(201);
    const over = await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'api_call', quantity: 3 }, bearer(app.secretKey));
    expect(over.status, over.text).toBe(402);
    expect(over.json.error.code).toBe('subscription_limit_exceeded');
    expect(over.json.error.message).toContain('10 api_call');
    // The fields beside the message: 8 recorded this month, this request would add 3, 10 allowed.
    expect(over.json.error).toEqual({
      code: 'subscription_limit_exceeded',
      message: over.json.error.message,
      requestId: over.json.error.requestId,
      ...limitFields(8),
      requested: 3,
      upgradeUrl: null,
    });
    expect(await apiCallLimit()).toEqual(limitFields(8));
    expect(
      (await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'api_call', quantity: 2 }, bearer(app.secretKey))).status,
    ).toBe(201);
    expect(
      (await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'api_call', quantity: 1 }, bearer(app.secretKey))).status,
    ).toBe(402);
    // Quantity 0 never passes a limit; a replay of an accepted event answers it, at the limit too.
    expect(
      (await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'api_call', quantity: 0 }, bearer(app.secretKey))).status,
    ).toBe(201);
    const replay = await post('/v1/usage-events', { idempotencyKey: first, eventType: 'api_call', quantity: 8 }, bearer(app.secretKey));
    expect([replay.status, replay.json.duplicate]).toEqual([200, true]);
    // Other types are unlimited.
    expect(
      (await post('/v1/usage-events', { idempotencyKey: key(), eventType: 'storage', quantity: 1000 }, bearer(app.secretKey))).status,
    ).toBe(201);
    // A batch that would pass the limit is refused whole; requested is all it would add.
    const batchKey = key();
    const batch = await post(
      '/v1/usage-events',
      {
        events: [
          { idempotencyKey: batchKey, eventType: 'storage' },
          { idempotencyKey: key(), eventType: 'api_call' },
          { idempotencyKey: key(), eventType: 'api_call', quantity: 2 },
        ],
      },
      bearer(app.secretKey),
    );
    expect(batch.status).toBe(402);
    expect(batch.json.error).toMatchObject({ ...limitFields(10), requested: 3 });
    expect(await apiCallLimit()).toEqual(limitFields(10));
    expect((await rows(sql`select 1 from usage_events where tenant_id = ${tenantId} and idempotency_key = ${batchKey}`)).length).toBe(0);
    // Last month's events count against last month.
    const lastMonth = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1) - 3_600_000);
    if (Date.now() - lastMonth.getTime() < 34 * 86_400_000) {
      const earlier = await post(
        '/v1/usage-events',
        { idempotencyKey: key(), eventType: 'api_call', quantity: 10, occurredAt: lastMonth.toISOString() },
        bearer(app.secretKey),
      );
      expect(earlier.status, earlier.text).toBe(201);
    }
    // POST /v1/usage/events records without checking the limit; the organization is then over
    // it, and the subscription rule refuses every usage write until next month.
    expect(
      (await post('/v1/usage/events', { idempotencyKey: key(), eventType: 'api_call', quantity: 5 }, bearer(app.secretKey))).status,
    ).toBe(201);
    const blocked = await post('/v1/usage/events', { idempotencyKey: key(), eventType: 'storage' }, bearer(app.secretKey));
    expect([blocked.status, blocked.json.error.code]).toEqual([402, 'subscription_limit_exceeded']);
    // Refused because the month is already over (15 of 10): a storage event adds nothing to it,
    // an api_call batch adds its quantity dated this month.
    expect(blocked.json.error).toMatchObject({ ...limitFields(15), requested: 0 });
    const blockedCalls = await post(
      '/v1/usage-events',
      {
        events: [
          { idempotencyKey: key(), eventType: 'api_call', quantity: 4 },
          { idempotencyKey: key(), eventType: 'api_call', quantity: 1 },
        ],
      },
      bearer(app.secretKey),
    );
    expect(blockedCalls.json.error).toMatchObject({ ...limitFields(15), requested: 5 });
    expect(await apiCallLimit()).toEqual(limitFields(15));
  });

  it('holds under concurrency: 60 parallel single events against a limit of 25 accept exactly 25', async () => {
    const app = await seedApplication(server.services.db);
    const tenantId = app.organization.id;
    await limitPlan(tenantId, { seat_minute: 25 });
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        post('/v1/usage-events', { idempotencyKey: key(), eventType: 'seat_minute' }, bearer(app.secretKey)),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(25);
    expect(answers.filter((a) => a.status === 402)).toHaveLength(35);
    for (const refused of answers.filter((a) => a.status === 402)) {
      expect(refused.json.error).toMatchObject({ limit: 'seat_minute', max: 25, used: 25, requested: 1 });
    }
    expect(await eventCount(tenantId)).toBe(25);
  });
});
