import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '@svc/contracts/ids';
import { WEBHOOK_REPLAY_MAX_EVENTS } from '@svc/contracts/webhooks';
import { insertReplayDeliveries } from '@svc/db/queries/webhooks';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { webhookDeliveries, webhookDeliveryAttempts, webhookEvents } from '@svc/db/schema/webhooks';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { type Receiver, startReceiver } from '../../../../../test/support/webhook-receiver.ts';
import { seedWebhookDelivery } from './webhooks.fixtures.ts';

/**
 * Webhook replay (docs/api.md "Replay"): POST /v1/webhook-endpoints/{id}/replay re-sends events
 * to one endpoint as new deliveries, sent by the real worker (startWorker, in this process) to a
 * real receiver that verifies every request with the `standardwebhooks` package.
 */

type Json = Record<string, any>;

const REPLAYS_PER_MINUTE = 5;

let server: Awaited<ReturnType<typeof startTestServer>>;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  server = await startTestServer({
    env: {
      WORKER_ENABLED: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_WEBHOOK_REPLAYS_PER_MINUTE: String(REPLAYS_PER_MINUTE),
    },
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

async function call(
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  opts: { cookie?: string; bearer?: string; body?: unknown } = {},
): Promise<{ status: number; json: Json; text: string; headers: Headers }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.bearer ? { authorization: opts.bearer } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: method !== 'GET' ? JSON.stringify(opts.body ?? {}) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text, headers: res.headers };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await sleep(50);
  }
}

let endpoints = 0;

/** An org admin and an endpoint of theirs (created through the API) whose receiver knows its secret. */
async function adminWithEndpoint(eventTypes: string[] = ['user.created', 'user.updated']) {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  const name = `replay-${++endpoints}-${org.id}`;
  const created = await call('POST', '/v1/webhook-endpoints', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, url: receiver.url(name), eventTypes },
  });
  expect(created.status, created.text).toBe(201);
  receiver.addEndpoint(name, created.json.secret);
  return { db, org, admin, name, endpointId: created.json.endpoint.id as string };
}

/** An event of the organization recorded at `createdAt`, with no delivery (as if no endpoint wanted it then). */
async function seedEvent(tenantId: string, type: string, createdAt: Date): Promise<string> {
  const id = newId('event');
  await server.services.db.insert(webhookEvents).values({ id, tenantId, type, data: { object: 'user', id: `usr_${id}` }, createdAt });
  return id;
}

async function deliveriesOf(endpointId: string) {
  return server.services.db
    .select()
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.endpointId, endpointId))
    .orderBy(asc(webhookDeliveries.nextAttemptAt));
}

async function replayAudits(endpointId: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.targetId, endpointId), eq(auditLogs.action, 'webhook_endpoint.replayed')));
}

const replay = (endpointId: string, who: { cookie?: string; bearer?: string }, body: Json) =>
  call('POST', `/v1/webhook-endpoints/${endpointId}/replay`, { ...who, body });

/** The webhook-ids the receiver got for endpoint `name`, verified, in arrival order. */
const received = (name: string) => receiver.requests.filter((r) => r.endpoint === name && r.verified).map((r) => r.webhookId);

describe('POST /v1/webhook-endpoints/{id}/replay', () => {
  it('re-sends one event with its original webhook-id as a new delivery with its own attempt log; audited with the count', async () => {
    const { db, org, admin, name, endpointId } = await adminWithEndpoint();
    const original = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'succeeded', attempts: 2 });

    const res = await replay(endpointId, { cookie: admin.cookie }, { organization_slug: org.slug, eventId: original.eventId });
    expect(res.status, res.text).toBe(202);
    expect(res.json).toMatchObject({ endpointId, count: 1, eventTypes: ['user.created'] });
    const delivery = res.json.delivery as Json;
    expect(delivery).toMatchObject({
      endpointId,
      eventId: original.eventId,
      eventType: 'user.created',
      replay: true,
      status: 'pending',
      attemptCount: 0,
    });
    expect(delivery.id).not.toBe(original.id);
    // Listed beside the live delivery, each labelled.
    const listed = await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}&endpoint_id=${endpointId}`, {
      cookie: admin.cookie,
    });
    expect(listed.status, listed.text).toBe(200);
    expect(new Map(listed.json.data.map((d: Json) => [d.id, d.replay]))).toEqual(
      new Map([
        [original.id, false],
        [delivery.id, true],
      ]),
    );

    await waitFor('the replayed event', () => (received(name).length >= 1 ? true : undefined));
    expect(received(name)).toEqual([original.eventId]);
    const sent = receiver.requests.find((r) => r.endpoint === name);
    expect(sent?.payload).toMatchObject({ id: original.eventId, type: 'user.created', data: { object: 'user', id: 'usr_x' } });

    const row = await waitFor('the delivery to succeed', async () => {
      const [d] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery.id));
      return d?.status === 'succeeded' ? d : undefined;
    });
    expect(row).toMatchObject({ eventId: original.eventId, attemptCount: 1, lastStatusCode: 200 });
    const attempts = await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, delivery.id));
    expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.statusCode])).toEqual([[1, 'succeeded', 200]]);
    // The original delivery and its log are untouched.
    const originalAttempts = await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, original.id));
    expect(originalAttempts).toHaveLength(2);
    const detail = await call('GET', `/v1/webhook-deliveries/${delivery.id}`, { cookie: admin.cookie });
    expect(detail.json.attempts).toHaveLength(1);

    const audits = await replayAudits(endpointId);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ tenantId: org.id, actorType: 'user', actorId: admin.user.id, targetType: 'webhook_endpoint' });
    expect(audits[0]?.summary).toEqual({ count: 1, eventTypes: ['user.created'], eventId: original.eventId });
  });

  it('re-sends exactly the events of the range, oldest first, of the subscribed (or named) types of this organization only', async () => {
    const { db, org, admin, name, endpointId } = await adminWithEndpoint(['user.created', 'user.updated']);
    const other = await seedOrganization(db);
    const from = new Date(Date.now() - 3_600_000);
    const to = new Date(from.getTime() + 60_000);
    const at = (ms: number) => new Date(from.getTime() + ms);
    // Seeded out of order: the replay orders by the events' time.
    const inRange = {
      third: await seedEvent(org.id, 'user.created', at(30_000)),
      first: await seedEvent(org.id, 'user.updated', at(0)),
      second: await seedEvent(org.id, 'user.created', at(10_000)),
      last: await seedEvent(org.id, 'user.updated', at(59_999)),
    };
    await seedEvent(org.id, 'user.created', at(-1)); // before from
    await seedEvent(org.id, 'user.created', to); // to is exclusive
    await seedEvent(org.id, 'member.added', at(20_000)); // not subscribed
    await seedEvent(other.id, 'user.created', at(20_000)); // another organization's

    const res = await replay(
      endpointId,
      { cookie: admin.cookie },
      { organization_slug: org.slug, from: from.toISOString(), to: to.toISOString() },
    );
    expect(res.status, res.text).toBe(202);
    expect(res.json).toMatchObject({ endpointId, count: 4, eventTypes: ['user.created', 'user.updated'], delivery: null });
    const expected = [inRange.first, inRange.second, inRange.third, inRange.last];

    await waitFor('the four replayed events', () => (received(name).length >= 4 ? true : undefined));
    await sleep(300);
    expect(received(name).sort()).toEqual([...expected].sort());
    // Queued in the order of the events, and the worker claimed and sent them in that order.
    const rows = await waitFor('the deliveries to succeed', async () => {
      const d = await deliveriesOf(endpointId);
      return d.every((x) => x.status === 'succeeded') ? d : undefined;
    });
    expect(rows.map((d) => d.eventId).sort()).toEqual([...expected].sort());
    const byEvent = new Map(rows.map((d) => [d.eventId, d.id]));
    const attempts = await db
      .select()
      .from(webhookDeliveryAttempts)
      .where(
        inArray(
          webhookDeliveryAttempts.deliveryId,
          rows.map((d) => d.id),
        ),
      );
    // Sent in the order of the events (next_attempt_at is cleared once a delivery succeeded).
    const startedAt = expected.map((e) => attempts.find((a) => a.deliveryId === byEvent.get(e))?.startedAt.getTime() ?? Number.NaN);
    expect(startedAt).toEqual([...startedAt].sort((a, b) => a - b));

    // Named types: only those.
    const updated = await replay(
      endpointId,
      { cookie: admin.cookie },
      {
        organization_slug: org.slug,
        from: from.toISOString(),
        to: to.toISOString(),
        types: ['user.updated'],
      },
    );
    expect(updated.status, updated.text).toBe(202);
    expect(updated.json).toMatchObject({ count: 2, eventTypes: ['user.updated'] });
    await waitFor('the two user.updated events', () => (received(name).length >= 6 ? true : undefined));
    await sleep(300);
    expect(received(name).slice(4).sort()).toEqual([inRange.first, inRange.last].sort());

    // A type the endpoint does not receive is refused, not sent.
    const unsubscribed = await replay(
      endpointId,
      { cookie: admin.cookie },
      {
        organization_slug: org.slug,
        from: from.toISOString(),
        to: to.toISOString(),
        types: ['member.added'],
      },
    );
    expect(unsubscribed.status, unsubscribed.text).toBe(400);
    expect(unsubscribed.json.error.code).toBe('webhook_event_type_not_subscribed');
    expect((await replayAudits(endpointId)).map((a) => (a.summary as Json).count).sort()).toEqual([2, 4]);
  });

  it("answers 404 for another organization's endpoint or event, the same as an unknown id, and sends nothing", async () => {
    const mine = await adminWithEndpoint();
    const theirs = await adminWithEndpoint();
    const theirEvent = await seedWebhookDelivery(theirs.db, {
      tenantId: theirs.org.id,
      endpointId: theirs.endpointId,
      status: 'succeeded',
    });
    const myEvent = await seedWebhookDelivery(mine.db, { tenantId: mine.org.id, endpointId: mine.endpointId, status: 'succeeded' });
    const lastHour = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() };

    // Their endpoint, with my session: by id alone, within my organization, and named by their slug.
    const byId = await replay(theirs.endpointId, { cookie: mine.admin.cookie }, { eventId: theirEvent.eventId });
    const mineNamed = await replay(
      theirs.endpointId,
      { cookie: mine.admin.cookie },
      { organization_slug: mine.org.slug, eventId: myEvent.eventId },
    );
    const theirsNamed = await replay(theirs.endpointId, { cookie: mine.admin.cookie }, { organization_slug: theirs.org.slug, ...lastHour });
    const unknown = await replay(
      newId('webhookEndpoint'),
      { cookie: mine.admin.cookie },
      { organization_slug: mine.org.slug, ...lastHour },
    );
    for (const res of [byId, mineNamed, theirsNamed, unknown]) {
      expect(res.status, res.text).toBe(404);
      expect(res.json.error.code).toBe('not_found');
    }
    expect(mineNamed.json.error.message).toBe(unknown.json.error.message);
    // Their event, to my endpoint.
    const theirEventToMine = await replay(
      mine.endpointId,
      { cookie: mine.admin.cookie },
      { organization_slug: mine.org.slug, eventId: theirEvent.eventId },
    );
    expect(theirEventToMine.status, theirEventToMine.text).toBe(404);
    expect(theirEventToMine.json.error.code).toBe('not_found');
    const unknownEvent = await replay(
      mine.endpointId,
      { cookie: mine.admin.cookie },
      { organization_slug: mine.org.slug, eventId: newId('event') },
    );
    expect(unknownEvent.json.error).toMatchObject({ code: 'not_found', message: theirEventToMine.json.error.message });

    await sleep(500);
    expect(await deliveriesOf(theirs.endpointId)).toHaveLength(1);
    expect(await deliveriesOf(mine.endpointId)).toHaveLength(1);
    expect(received(theirs.name)).toEqual([]);
    expect(received(mine.name)).toEqual([]);
    expect(await replayAudits(theirs.endpointId)).toHaveLength(0);
  });

  it('needs webhooks.manage as an org admin, and the read permission of every event type replayed', async () => {
    const { db, org, endpointId, name } = await adminWithEndpoint(['user.created', 'member.added']);
    const event = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'failed' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const reader = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read', 'users.read'] });
    const lastHour = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() };

    const byReader = await replay(endpointId, { bearer: reader.authorization }, { eventId: event.eventId });
    expect(byReader.status, byReader.text).toBe(403);
    expect(byReader.json.error.code).toBe('forbidden');
    const byMember = await replay(endpointId, { cookie: member.cookie }, { organization_slug: org.slug, eventId: event.eventId });
    expect(byMember.status, byMember.text).toBe(403);

    // A key that may manage webhooks but not read users replays no user.* event, alone or in a range.
    const manager = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.manage', 'members.read'] });
    const single = await replay(endpointId, { bearer: manager.authorization }, { eventId: event.eventId });
    expect(single.status, single.text).toBe(403);
    expect(single.json.error.message).toContain('user.created (needs users.read)');
    const range = await replay(endpointId, { bearer: manager.authorization }, lastHour);
    expect(range.status, range.text).toBe(403);
    // What it may read, it may replay.
    const members = await replay(endpointId, { bearer: manager.authorization }, { ...lastHour, types: ['member.added'] });
    expect(members.status, members.text).toBe(202);
    expect(members.json.count).toBe(0);

    await sleep(300);
    expect(await deliveriesOf(endpointId)).toHaveLength(1);
    expect(received(name)).toEqual([]);
  });

  it('refuses a disabled endpoint with 409 webhook_endpoint_disabled', async () => {
    const { db, org, admin, endpointId, name } = await adminWithEndpoint();
    const event = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'failed' });
    const disabled = await call('PATCH', `/v1/webhook-endpoints/${endpointId}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, enabled: false },
    });
    expect(disabled.status, disabled.text).toBe(200);
    const res = await replay(endpointId, { cookie: admin.cookie }, { organization_slug: org.slug, eventId: event.eventId });
    expect(res.status, res.text).toBe(409);
    expect(res.json.error.code).toBe('webhook_endpoint_disabled');
    expect(await deliveriesOf(endpointId)).toHaveLength(1);
    expect(received(name)).toEqual([]);
  });

  it(`refuses more than ${WEBHOOK_REPLAY_MAX_EVENTS} events, or more than 7 days, with 400 webhook_replay_too_large`, async () => {
    const { db, org, admin, endpointId, name } = await adminWithEndpoint(['user.created']);
    const from = new Date(Date.now() - 86_400_000);
    await db.execute(sql`
      insert into webhook_events (id, tenant_id, type, data, created_at)
      select 'evt_' || lpad(g::text, 20, '0'), ${org.id}, 'user.created', '{}'::jsonb, ${from.toISOString()}::timestamptz + g * interval '1 millisecond'
      from generate_series(1, ${WEBHOOK_REPLAY_MAX_EVENTS + 1}) as g`);
    const to = new Date(from.getTime() + 3_600_000);
    const tooMany = await replay(
      endpointId,
      { cookie: admin.cookie },
      { organization_slug: org.slug, from: from.toISOString(), to: to.toISOString() },
    );
    expect(tooMany.status, tooMany.text).toBe(400);
    expect(tooMany.json.error.code).toBe('webhook_replay_too_large');

    const eightDays = new Date(to.getTime() - 8 * 86_400_000);
    const tooLong = await replay(
      endpointId,
      { cookie: admin.cookie },
      {
        organization_slug: org.slug,
        from: eightDays.toISOString(),
        to: new Date(eightDays.getTime() + 7 * 86_400_000 + 1).toISOString(),
      },
    );
    expect(tooLong.status, tooLong.text).toBe(400);
    expect(tooLong.json.error.code).toBe('webhook_replay_too_large');

    // Exactly the maximum is allowed (queued, not waited for here: the worker sends them meanwhile).
    const justFits = await replay(
      endpointId,
      { cookie: admin.cookie },
      {
        organization_slug: org.slug,
        from: new Date(from.getTime() + 2).toISOString(),
        to: to.toISOString(),
      },
    );
    expect(justFits.status, justFits.text).toBe(202);
    expect(justFits.json.count).toBe(WEBHOOK_REPLAY_MAX_EVENTS);

    // Malformed requests are validation errors.
    for (const body of [
      { eventId: newId('event'), from: from.toISOString(), to: to.toISOString() },
      { from: from.toISOString() },
      { from: to.toISOString(), to: from.toISOString() },
      {},
    ]) {
      const res = await replay(endpointId, { cookie: admin.cookie }, { organization_slug: org.slug, ...body });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.code).toBe('validation_failed');
    }
    expect((await replayAudits(endpointId)).map((a) => (a.summary as Json).count)).toEqual([WEBHOOK_REPLAY_MAX_EVENTS]);
    await waitFor('the replay to arrive', () => (received(name).length >= WEBHOOK_REPLAY_MAX_EVENTS ? true : undefined), 120_000);
  }, 180_000);

  it(`allows ${REPLAYS_PER_MINUTE} replays per endpoint per minute, then 429 rate_limited with Retry-After`, async () => {
    const { db, org, admin, endpointId } = await adminWithEndpoint();
    const event = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'succeeded' });
    const body = { organization_slug: org.slug, eventId: event.eventId };
    const statuses: number[] = [];
    for (let i = 0; i < REPLAYS_PER_MINUTE; i++) {
      statuses.push((await replay(endpointId, { cookie: admin.cookie }, body)).status);
    }
    expect(statuses).toEqual(Array(REPLAYS_PER_MINUTE).fill(202));
    const limited = await replay(endpointId, { cookie: admin.cookie }, body);
    // The minute may have turned between the replays and this one: then the budget is fresh again.
    if (limited.status !== 202) {
      expect(limited.status, limited.text).toBe(429);
      expect(limited.json.error.code).toBe('rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await deliveriesOf(endpointId)).toHaveLength(1 + REPLAYS_PER_MINUTE);
    } else {
      expect(new Date().getSeconds()).toBeLessThan(5);
    }
    // Another endpoint has its own budget.
    const other = await adminWithEndpoint();
    const otherEvent = await seedWebhookDelivery(db, { tenantId: other.org.id, endpointId: other.endpointId, status: 'succeeded' });
    expect((await replay(other.endpointId, { cookie: other.admin.cookie }, { eventId: otherEvent.eventId })).status).toBe(202);
  });

  it('queues a replay behind the deliveries already due, never ahead of a live one, in the order of its events', async () => {
    const { db, org, endpointId } = await adminWithEndpoint(['user.created']);
    const old = new Date(Date.now() - 3_600_000);
    const events = [await seedEvent(org.id, 'user.created', old), await seedEvent(org.id, 'user.created', new Date(old.getTime() + 1))];
    const live = await seedEvent(org.id, 'user.created', new Date());
    // In a transaction rolled back at the end: the worker never sees these rows.
    const rolledBack = new Error('rolled back');
    await expect(
      db.transaction(async (tx) => {
        // A live delivery that fell due this instant and is not sent yet (a busy worker, say).
        await tx.insert(webhookDeliveries).values({
          id: newId('webhookDelivery'),
          tenantId: org.id,
          endpointId,
          eventId: live,
          eventType: 'user.created',
          nextAttemptAt: sql`now()`,
        });
        const ids = await insertReplayDeliveries(tx, { tenantId: org.id, endpointId, eventIds: [...events, ...events] });
        expect(ids).toHaveLength(4);
        // The dispatcher claims by next_attempt_at: the live one first, then the replay in order.
        const rows = await tx
          .select()
          .from(webhookDeliveries)
          .where(eq(webhookDeliveries.endpointId, endpointId))
          .orderBy(asc(webhookDeliveries.nextAttemptAt));
        expect(rows.map((r) => [r.eventId, r.replay])).toEqual([
          [live, false],
          [events[0], true],
          [events[1], true],
          [events[0], true],
          [events[1], true],
        ]);
        expect(rows.slice(1).map((r) => r.id)).toEqual(ids);
        const due = rows.map((r) => r.nextAttemptAt?.getTime() ?? Number.NaN);
        for (let i = 1; i < due.length; i++) {
          expect(due[i]).toBeGreaterThan(due[i - 1] as number);
        }
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
  });

  it('is in the OpenAPI document, answering 202', async () => {
    const res = await call('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    const operation = res.json.paths['/webhook-endpoints/{id}/replay']?.post;
    expect(operation?.responses?.['202']).toBeDefined();
  });
});
