import { randomBytes } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { addJob } from '@svc/db/jobs';
import { claimDueDeliveries, recordDeliveryResults } from '@svc/db/queries/webhook-dispatch';
import { recordEvent } from '@svc/db/queries/webhook-events';
import { webhookEndpoints } from '@svc/db/schema/webhooks';
import { createSecretBox } from '@svc/db/secret-box';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { seedOrganization } from '../../../../test/support/tenancy.ts';
import type { WebhookDeliverySettings } from '../context.ts';
import { type JobLogger, startWorker, type WorkerHandle } from '../runner.ts';
import { DISPATCH_CONCURRENCY, LINGER_MS, retryDelayMs, stateAfter } from './dispatch.ts';
import { generateWebhookSecret, sealWebhookSecret } from './secrets.ts';
import { EXCERPT_BYTES } from './sender.ts';
import { endlessBody, hang, type ReceivedRequest, type Receiver, type Respond, startReceiver } from './test-receivers.ts';

const EVENT_TYPE = 'user.created';

type DeliveryRow = {
  id: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string | null;
  locked_until: string | null;
  locked_by: string | null;
  last_status_code: number | null;
  last_outcome: string | null;
  succeeded_at: string | null;
};

type AttemptRow = {
  attempt_number: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  outcome: string;
  error: string | null;
  response_excerpt: string | null;
  signature_count: number;
};

/** Standard Webhooks verification by the reference library; returns the parsed payload or throws. */
function verify(secret: string, req: ReceivedRequest): unknown {
  return new Webhook(secret).verify(req.body, {
    'webhook-id': String(req.headers['webhook-id']),
    'webhook-timestamp': String(req.headers['webhook-timestamp']),
    'webhook-signature': String(req.headers['webhook-signature']),
  });
}

function recordingLogger() {
  const lines: string[] = [];
  const push = (_obj: object, msg: string) => {
    lines.push(msg);
  };
  const logger: JobLogger = { debug: push, info: push, error: push };
  const completedDispatches = () => lines.filter((l) => /^Completed task \d+ \(webhooks:dispatch/.test(l)).length;
  return { logger, lines, completedDispatches };
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('webhooks:dispatch against real PostgreSQL and real receivers', () => {
  let url: string;
  let database: Database;
  const box = createSecretBox(randomBytes(32));
  const workers: WorkerHandle[] = [];
  const receivers: Receiver[] = [];

  async function receiver(respond?: Respond, host?: string): Promise<Receiver> {
    const r = await startReceiver(respond, host);
    receivers.push(r);
    return r;
  }

  async function startDispatcher(settings: Partial<WebhookDeliverySettings> = {}, logger: JobLogger = recordingLogger().logger) {
    const worker = await startWorker({
      connectionString: url,
      db: database.db,
      logger,
      concurrency: 5,
      pollInterval: 50,
      secretBox: box,
      webhooks: { allowPrivate: true, timeoutMs: 2_000, retryScheduleMs: [0, 60_000], secretGraceMs: 0, ...settings },
    });
    workers.push(worker);
    return worker;
  }

  async function seedEndpoint(
    endpointUrl: string,
    opts: { previous?: { secret: string; expiresAt: Date }; tenantId?: string } = {},
  ): Promise<{ id: string; tenantId: string; secret: string }> {
    const tenantId = opts.tenantId ?? (await seedOrganization(database.db)).id;
    const id = newId('webhookEndpoint');
    const secret = generateWebhookSecret();
    await database.db.insert(webhookEndpoints).values({
      id,
      tenantId,
      url: endpointUrl,
      eventTypes: [EVENT_TYPE],
      secretCiphertext: sealWebhookSecret(box, id, secret),
      previousSecretCiphertext: opts.previous ? sealWebhookSecret(box, id, opts.previous.secret) : null,
      previousSecretExpiresAt: opts.previous?.expiresAt ?? null,
    });
    return { id, tenantId, secret };
  }

  async function emit(tenantId: string, data: Record<string, unknown> = { user: { id: 'usr_1' } }) {
    return database.db.transaction((tx) => recordEvent(tx, { tenantId, type: EVENT_TYPE, data }));
  }

  async function delivery(id: string): Promise<DeliveryRow> {
    const [row] = await database.sql<DeliveryRow[]>`
      select id, status, attempt_count, next_attempt_at, locked_until, locked_by, last_status_code, last_outcome, succeeded_at
      from webhook_deliveries where id = ${id}`;
    if (!row) {
      throw new Error(`no delivery ${id}`);
    }
    return row;
  }

  async function attempts(deliveryId: string): Promise<AttemptRow[]> {
    return database.sql<AttemptRow[]>`
      select attempt_number, started_at, duration_ms, status_code, outcome, error, response_excerpt, signature_count
      from webhook_delivery_attempts where delivery_id = ${deliveryId} order by attempt_number`;
  }

  async function waitForStatus(id: string, statuses: string[], timeoutMs = 10_000): Promise<DeliveryRow> {
    await waitFor(async () => statuses.includes((await delivery(id)).status), timeoutMs, `delivery ${id} to be ${statuses.join('/')}`);
    return delivery(id);
  }

  /** Waits until the delivery has `n` attempts recorded (its row written, its claim released). */
  async function waitForAttempts(id: string, n: number, timeoutMs = 10_000): Promise<DeliveryRow> {
    await waitFor(
      async () => {
        const d = await delivery(id);
        return d.attempt_count >= n && d.locked_by === null;
      },
      timeoutMs,
      `delivery ${id} to have ${n} attempts`,
    );
    return delivery(id);
  }

  beforeAll(async () => {
    url = await createTestDatabase();
    database = createDatabase({ url, max: 5, applicationName: 'svc-webhooks-test' });
  });

  afterEach(async () => {
    for (const w of workers.splice(0)) {
      await w.stop().catch(() => {});
    }
    for (const r of receivers.splice(0)) {
      await r.close();
    }
    await database.sql`delete from webhook_endpoints`;
    await database.sql`delete from graphile_worker._private_jobs`;
  });

  afterAll(async () => {
    await database?.close();
  });

  it('every delivery arrives once, signed per Standard Webhooks, with the event as its body, and is recorded as succeeded', async () => {
    const a = await receiver((_req, res) => res.end('thanks'));
    const b = await receiver((_req, res) => res.writeHead(202).end());
    const org = await seedOrganization(database.db);
    const endpointA = await seedEndpoint(`${a.url}/hooks`, { tenantId: org.id });
    const endpointB = await seedEndpoint(b.url, { tenantId: org.id });
    const events = [];
    for (let i = 0; i < 5; i++) {
      events.push(await emit(org.id, { user: { id: `usr_${i}`, email: `u${i}@example.com` }, n: i }));
    }
    const deliveryIds = events.flatMap((e) => e.deliveryIds);
    expect(deliveryIds).toHaveLength(10);

    await startDispatcher();
    for (const id of deliveryIds) {
      await waitForStatus(id, ['succeeded']);
    }
    const created = await database.sql<{ id: string; created_at: string }[]>`
      select id, created_at from webhook_events where id = any(${events.map((e) => e.id)})`;
    const createdAt = new Map(created.map((r) => [r.id, new Date(r.created_at).toISOString()]));

    for (const [r, endpoint] of [
      [a, endpointA],
      [b, endpointB],
    ] as const) {
      expect(r.requests).toHaveLength(5);
      expect(new Set(r.requests.map((q) => q.headers['webhook-id']))).toEqual(new Set(events.map((e) => e.id)));
      for (const req of r.requests) {
        const payload = verify(endpoint.secret, req) as { id: string; type: string; timestamp: string; data: { n: number } };
        expect(payload.id).toBe(req.headers['webhook-id']);
        expect(payload.type).toBe(EVENT_TYPE);
        expect(payload.timestamp).toBe(createdAt.get(payload.id));
        expect(payload.data).toEqual({ user: { id: `usr_${payload.data.n}`, email: `u${payload.data.n}@example.com` }, n: payload.data.n });
        expect(req.headers['content-type']).toBe('application/json');
        expect(req.headers['user-agent']).toBe('svc-webhooks/1');
        expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
        // A verifier holding another secret refuses it (the check above means something).
        expect(() => verify(generateWebhookSecret(), req)).toThrow();
      }
    }
    expect(a.requests[0]?.url).toBe('/hooks');

    const d = await delivery(deliveryIds[0] as string);
    expect(d).toMatchObject({ status: 'succeeded', attempt_count: 1, next_attempt_at: null, locked_until: null, locked_by: null });
    expect(d.last_status_code).toBe(200);
    expect(d.last_outcome).toBe('succeeded');
    expect(d.succeeded_at).not.toBeNull();
    const [attempt, ...more] = await attempts(deliveryIds[0] as string);
    expect(more).toEqual([]);
    expect(attempt).toMatchObject({
      attempt_number: 1,
      status_code: 200,
      outcome: 'succeeded',
      error: null,
      response_excerpt: 'thanks',
      signature_count: 1,
    });
    expect(attempt?.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('during a rotation grace period both secrets sign, each verifying alone; after it only the new one', async () => {
    const r = await receiver();
    const oldSecret = generateWebhookSecret();
    const endpoint = await seedEndpoint(r.url, { previous: { secret: oldSecret, expiresAt: new Date(Date.now() + 3_600_000) } });
    const first = await emit(endpoint.tenantId);
    await startDispatcher();
    await waitForStatus(first.deliveryIds[0] as string, ['succeeded']);

    const [during] = r.requests;
    if (!during) {
      throw new Error('no request');
    }
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(endpoint.secret, during)).toMatchObject({ id: first.id });
    expect(verify(oldSecret, during)).toMatchObject({ id: first.id });
    expect((await attempts(first.deliveryIds[0] as string))[0]?.signature_count).toBe(2);

    await database.sql`update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ${endpoint.id}`;
    const second = await emit(endpoint.tenantId);
    await waitForStatus(second.deliveryIds[0] as string, ['succeeded']);
    const after = r.requests[1];
    if (!after) {
      throw new Error('no second request');
    }
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(endpoint.secret, after)).toMatchObject({ id: second.id });
    expect(() => verify(oldSecret, after)).toThrow();
    expect((await attempts(second.deliveryIds[0] as string))[0]?.signature_count).toBe(1);
  });

  it('a 500 schedules the next attempt per the schedule (with jitter) and a wake-up job for it', async () => {
    const r = await receiver((_req, res) => res.writeHead(500).end('database on fire'));
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    const id = event.deliveryIds[0] as string;
    await startDispatcher({ retryScheduleMs: [0, 60_000, 60_000] });
    const before = Date.now();
    const d = await waitForAttempts(id, 1);
    expect(d).toMatchObject({
      status: 'retrying',
      attempt_count: 1,
      last_status_code: 500,
      last_outcome: 'http_error',
      locked_until: null,
    });
    const next = new Date(d.next_attempt_at as string).getTime();
    // 60 s ± 20 %, counted from around the attempt.
    expect(next).toBeGreaterThanOrEqual(before + 48_000 - 2_000);
    expect(next).toBeLessThanOrEqual(Date.now() + 72_000);
    expect(await attempts(id)).toEqual([
      expect.objectContaining({ attempt_number: 1, status_code: 500, outcome: 'http_error', response_excerpt: 'database on fire' }),
    ]);
    await waitFor(
      async () => (await database.sql`select 1 from graphile_worker.jobs where key = 'webhooks:wake'`).length === 1,
      5_000,
      'the wake job',
    );
    const [wake] = await database.sql<{ run_at: string }[]>`select run_at from graphile_worker.jobs where key = 'webhooks:wake'`;
    expect(new Date(wake?.run_at as string).getTime()).toBe(next);
    // Not due yet: nothing more is sent.
    await sleep(300);
    expect(r.requests).toHaveLength(1);
  });

  it('a 410 fails the delivery and disables the endpoint (reason gone)', async () => {
    const r = await receiver((_req, res) => res.writeHead(410).end());
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    await startDispatcher();
    const d = await waitForStatus(event.deliveryIds[0] as string, ['failed']);
    expect(d).toMatchObject({ attempt_count: 1, next_attempt_at: null, last_status_code: 410, last_outcome: 'gone', locked_by: null });
    const [e] = await database.sql<{ enabled: boolean; disabled_reason: string | null; disabled_at: string | null }[]>`
      select enabled, disabled_reason, disabled_at from webhook_endpoints where id = ${endpoint.id}`;
    expect(e).toMatchObject({ enabled: false, disabled_reason: 'gone' });
    expect(e?.disabled_at).not.toBeNull();
  });

  it('a delivery whose endpoint was disabled before it was sent fails as endpoint_disabled without a request', async () => {
    const r = await receiver();
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    await database.sql`update webhook_endpoints set enabled = false, disabled_reason = 'manual', disabled_at = now() where id = ${endpoint.id}`;
    await startDispatcher();
    const d = await waitForStatus(event.deliveryIds[0] as string, ['failed']);
    expect(d).toMatchObject({ attempt_count: 1, last_outcome: 'endpoint_disabled', next_attempt_at: null });
    expect(await attempts(event.deliveryIds[0] as string)).toEqual([
      expect.objectContaining({ attempt_number: 1, outcome: 'endpoint_disabled', duration_ms: 0, status_code: null, signature_count: 0 }),
    ]);
    expect(r.connections()).toBe(0);
  });

  it('a receiver that hangs costs the timeout: outcome timeout, retrying', async () => {
    const r = await receiver(hang);
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    await startDispatcher({ timeoutMs: 500 });
    const d = await waitForAttempts(event.deliveryIds[0] as string, 1, 5_000);
    expect(d).toMatchObject({ status: 'retrying', last_outcome: 'timeout', last_status_code: null });
    const [attempt] = await attempts(event.deliveryIds[0] as string);
    expect(attempt?.outcome).toBe('timeout');
    expect(attempt?.duration_ms).toBeGreaterThanOrEqual(490);
    expect(attempt?.duration_ms).toBeLessThan(2_000);
    expect(r.requests).toHaveLength(1);
  });

  it('a redirect is not followed: outcome redirect, retrying, the target receives nothing', async () => {
    const target = await receiver();
    const r = await receiver((_req, res) => res.writeHead(302, { location: `${target.url}/stolen` }).end());
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    await startDispatcher();
    const d = await waitForAttempts(event.deliveryIds[0] as string, 1);
    expect(d).toMatchObject({ status: 'retrying', last_outcome: 'redirect', last_status_code: 302 });
    await sleep(200);
    expect(target.connections()).toBe(0);
  });

  it('10 MB and endless answers: bounded time and memory, excerpts capped at 1 KiB, the status decides the state', async () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 'z');
    const floods: Receiver[] = [];
    for (let i = 0; i < 8; i++) {
      floods.push(
        await receiver((_req, res) => {
          res.on('error', () => {});
          res.writeHead(200, { 'content-length': String(big.length) });
          res.end(big);
        }),
      );
    }
    const endless = await receiver(endlessBody(500));
    const org = await seedOrganization(database.db);
    for (const f of floods) {
      await seedEndpoint(f.url, { tenantId: org.id });
    }
    const endlessEndpoint = await seedEndpoint(endless.url, { tenantId: org.id });
    const event = await emit(org.id);
    expect(event.deliveryIds).toHaveLength(9);
    const [endlessDelivery] = await database.sql<{ id: string }[]>`
      select id from webhook_deliveries where endpoint_id = ${endlessEndpoint.id}`;

    const memoryBefore = process.memoryUsage();
    const started = Date.now();
    await startDispatcher({ timeoutMs: 10_000 });
    for (const id of event.deliveryIds) {
      await waitForAttempts(id, 1, 10_000);
    }
    const elapsed = Date.now() - started;
    const memoryAfter = process.memoryUsage();

    // Far below the 10 s timeout: the answers are cut off at the cap, not read to the end.
    expect(elapsed).toBeLessThan(5_000);
    // Reading them in full would hold 80 MB and more.
    const grown = memoryAfter.heapUsed + memoryAfter.arrayBuffers - (memoryBefore.heapUsed + memoryBefore.arrayBuffers);
    expect(grown).toBeLessThan(30 * 1024 * 1024);
    for (const id of event.deliveryIds) {
      const [attempt] = await attempts(id);
      expect(attempt?.response_excerpt).toHaveLength(EXCERPT_BYTES);
      if (id === endlessDelivery?.id) {
        expect(attempt).toMatchObject({ outcome: 'http_error', status_code: 500 });
        expect((await delivery(id)).status).toBe('retrying');
      } else {
        expect(attempt).toMatchObject({ outcome: 'succeeded', status_code: 200 });
        expect((await delivery(id)).status).toBe('succeeded');
      }
    }
  });

  it('the schedule exhausted: failed, with every attempt recorded and every request verifiable', async () => {
    const r = await receiver((_req, res) => res.writeHead(503).end('later'));
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    const id = event.deliveryIds[0] as string;
    await startDispatcher({ retryScheduleMs: [0, 150, 150, 150] });
    const d = await waitForStatus(id, ['failed'], 10_000);
    expect(d).toMatchObject({
      attempt_count: 4,
      next_attempt_at: null,
      last_status_code: 503,
      last_outcome: 'http_error',
      locked_by: null,
    });
    const rows = await attempts(id);
    expect(rows.map((a) => [a.attempt_number, a.status_code, a.outcome])).toEqual([
      [1, 503, 'http_error'],
      [2, 503, 'http_error'],
      [3, 503, 'http_error'],
      [4, 503, 'http_error'],
    ]);
    // Each retry waited its (jittered) delay: at least 150 ms - 20 %.
    for (let i = 1; i < rows.length; i++) {
      const gap = new Date((rows[i] as AttemptRow).started_at).getTime() - new Date((rows[i - 1] as AttemptRow).started_at).getTime();
      expect(gap).toBeGreaterThanOrEqual(115);
    }
    expect(r.requests).toHaveLength(4);
    for (const req of r.requests) {
      expect(req.headers['webhook-id']).toBe(event.id);
      expect(verify(endpoint.secret, req)).toMatchObject({ id: event.id });
    }
    await sleep(400);
    expect(r.requests).toHaveLength(4);
  });

  it('SSRF at delivery time: loopback by IP, by name, over IPv6 and the metadata address end address_not_allowed, and nothing is received', async () => {
    const r = await receiver(undefined, '::');
    const org = await seedOrganization(database.db);
    const urls = [`http://127.0.0.1:${r.port}/`, `http://localhost:${r.port}/`, `http://[::1]:${r.port}/`, 'http://169.254.169.254/'];
    for (const u of urls) {
      await seedEndpoint(u, { tenantId: org.id });
    }
    const event = await emit(org.id);
    expect(event.deliveryIds).toHaveLength(4);
    await startDispatcher({ allowPrivate: false, retryScheduleMs: [0] });
    for (const id of event.deliveryIds) {
      const d = await waitForStatus(id, ['failed']);
      expect(d.last_outcome).toBe('address_not_allowed');
      expect((await attempts(id))[0]).toMatchObject({ outcome: 'address_not_allowed', status_code: null });
    }
    expect(r.connections()).toBe(0);
  });

  it('dispatch jobs that run at the same time send a delivery once while its claim holds', async () => {
    const r = await receiver((_req, res) => {
      setTimeout(() => res.end('ok'), 800);
    });
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    const id = event.deliveryIds[0] as string;
    // Three more runs beside the keyed one recordEvent queued: all start together on a fresh worker.
    await database.db.transaction(async (tx) => {
      await addJob(tx, 'webhooks:dispatch', {});
      await addJob(tx, 'webhooks:dispatch', { deliveryIds: [id] });
      await addJob(tx, 'webhooks:dispatch', { deliveryIds: [id] });
    });
    const rec = recordingLogger();
    await startDispatcher({}, rec.logger);
    await waitForStatus(id, ['succeeded']);
    // At least the four queued runs (plus the worker's own start-up run) completed.
    await waitFor(() => rec.completedDispatches() >= 4, 5_000, 'the dispatch runs to complete');
    await sleep(300);
    expect(r.requests).toHaveLength(1);
    expect(await attempts(id)).toHaveLength(1);
  });

  it('a claim held by a worker that died is respected until it expires, then the delivery is sent', async () => {
    const r = await receiver();
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    const id = event.deliveryIds[0] as string;
    await database.sql`
      update webhook_deliveries set locked_until = now() + interval '1500 milliseconds', locked_by = 'a-dead-worker' where id = ${id}`;
    await startDispatcher();
    await sleep(700);
    expect(r.requests).toHaveLength(0);
    // The wake-up job at the claim's expiry sends it, without waiting for the minute sweep.
    const d = await waitForStatus(id, ['succeeded'], 5_000);
    expect(d.attempt_count).toBe(1);
    expect(r.requests).toHaveLength(1);
  });

  it('a worker starting up dispatches deliveries left due with no job queued', async () => {
    const r = await receiver();
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    await database.sql`delete from graphile_worker._private_jobs`;
    await startDispatcher();
    await waitForStatus(event.deliveryIds[0] as string, ['succeeded'], 5_000);
    expect(r.requests).toHaveLength(1);
  });

  it('a graceful stop lets an in-flight send finish and records it; nothing is left locked', async () => {
    const r = await receiver((_req, res) => {
      setTimeout(() => res.end('late but fine'), 700);
    });
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    const worker = await startDispatcher();
    await r.waitForRequests(1);
    await worker.stop();
    workers.splice(workers.indexOf(worker), 1);
    const d = await delivery(event.deliveryIds[0] as string);
    expect(d).toMatchObject({ status: 'succeeded', attempt_count: 1, locked_by: null, locked_until: null });
    expect((await attempts(event.deliveryIds[0] as string))[0]).toMatchObject({ outcome: 'succeeded', response_excerpt: 'late but fine' });
  });

  it('a backlog is sent with at most DISPATCH_CONCURRENCY requests open at once, each delivery once', async () => {
    const r = await receiver((_req, res) => {
      setTimeout(() => res.end('ok'), 150);
    });
    const org = await seedOrganization(database.db);
    const endpoints = [];
    for (let i = 0; i < 4; i++) {
      endpoints.push(await seedEndpoint(r.url, { tenantId: org.id }));
    }
    const deliveryIds: string[] = [];
    for (let i = 0; i < 25; i++) {
      deliveryIds.push(...(await emit(org.id)).deliveryIds);
    }
    expect(deliveryIds).toHaveLength(100);
    await startDispatcher();
    await waitFor(
      async () => (await database.sql`select 1 from webhook_deliveries where status = 'succeeded'`).length === 100,
      15_000,
      'all 100 deliveries to succeed',
    );
    expect(r.requests).toHaveLength(100);
    expect(r.maxOpen()).toBeGreaterThan(1);
    expect(r.maxOpen()).toBeLessThanOrEqual(DISPATCH_CONCURRENCY);
    const perDelivery = await database.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_delivery_attempts where delivery_id = any(${deliveryIds}) group by delivery_id`;
    expect(perDelivery.every((row) => row.n === 1)).toBe(true);
  });

  it('a stream of events, with pauses longer than a run lingers, is delivered promptly: none waits for the minute sweep', async () => {
    const arrivals = new Map<string, number>();
    const r = await receiver((req, res) => {
      arrivals.set(String(req.headers['webhook-id']), Date.now());
      res.end('ok');
    });
    const endpoint = await seedEndpoint(r.url);
    await startDispatcher();
    const committed = new Map<string, number>();
    for (const pause of [0, LINGER_MS + 300, LINGER_MS - 200, 0]) {
      await sleep(pause);
      for (let i = 0; i < 15; i++) {
        const event = await emit(endpoint.tenantId);
        committed.set(event.id, Date.now());
        await sleep(10);
      }
    }
    await waitFor(() => arrivals.size === committed.size, 10_000, 'every event to arrive');
    const lags = [...committed].map(([id, at]) => (arrivals.get(id) as number) - at);
    // Seconds would mean a delivery left to a wake-up or the sweep; this is one run's polling.
    expect(Math.max(...lags)).toBeLessThan(2_000);
    expect(r.requests).toHaveLength(committed.size);
  });

  it('a stop gives back claimed deliveries it has not sent yet: the next worker sends them, nothing twice', async () => {
    const r = await receiver((_req, res) => {
      setTimeout(() => res.end('ok'), 600);
    });
    const org = await seedOrganization(database.db);
    await seedEndpoint(r.url, { tenantId: org.id });
    const deliveryIds: string[] = [];
    for (let i = 0; i < DISPATCH_CONCURRENCY + 8; i++) {
      deliveryIds.push(...(await emit(org.id)).deliveryIds);
    }
    const first = await startDispatcher();
    // The first round is on the wire; the rest are claimed behind it.
    await r.waitForRequests(DISPATCH_CONCURRENCY);
    await first.stop();
    workers.splice(workers.indexOf(first), 1);
    expect(r.requests).toHaveLength(DISPATCH_CONCURRENCY);
    const states = await database.sql<{ status: string; attempt_count: number; locked_by: string | null }[]>`
      select status, attempt_count, locked_by from webhook_deliveries where id = any(${deliveryIds})`;
    expect(states.filter((d) => d.status === 'succeeded' && d.attempt_count === 1)).toHaveLength(DISPATCH_CONCURRENCY);
    // Given back, not left locked until the claim runs out.
    expect(states.filter((d) => d.status === 'pending' && d.attempt_count === 0 && d.locked_by === null)).toHaveLength(8);

    await startDispatcher();
    await waitFor(
      async () => (await database.sql`select 1 from webhook_deliveries where status = 'succeeded'`).length === deliveryIds.length,
      10_000,
      'the rest to be sent by the next worker',
    );
    expect(r.requests).toHaveLength(DISPATCH_CONCURRENCY + 8);
    expect(new Set(r.requests.map((q) => q.headers['webhook-id'])).size).toBe(DISPATCH_CONCURRENCY + 8);
  });

  it('a stop that can wait no longer interrupts a hanging send: recorded as interrupted, due again at once, not locked', async () => {
    const r = await receiver(hang);
    const endpoint = await seedEndpoint(r.url);
    const event = await emit(endpoint.tenantId);
    const id = event.deliveryIds[0] as string;
    const worker = await startDispatcher({ timeoutMs: 60_000 });
    await r.waitForRequests(1);
    const stopping = Date.now();
    await worker.stop();
    workers.splice(workers.indexOf(worker), 1);
    // Graphile signals the abort after its 5 s graceful-shutdown allowance, far before the 60 s timeout.
    expect(Date.now() - stopping).toBeLessThan(15_000);
    const d = await delivery(id);
    expect(d).toMatchObject({ status: 'retrying', attempt_count: 1, last_outcome: 'interrupted', locked_by: null, locked_until: null });
    expect(new Date(d.next_attempt_at as string).getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    expect((await attempts(id))[0]).toMatchObject({ outcome: 'interrupted', status_code: null });
  }, 30_000);

  it('when Graphile gives up its runner (a job outcome it could not record), a new runner starts and delivering goes on', async () => {
    let broken = false;
    // Not before the worker has finished starting (it queues a job of its own as it starts): the
    // first delivery can reach the receiver sooner than that on a busy machine.
    let started = () => {};
    const dispatcherUp = new Promise<void>((resolve) => {
      started = resolve;
    });
    const r = await receiver((_req, res) => {
      if (broken) {
        res.end('ok');
        return;
      }
      broken = true;
      // The queue table vanishes mid-run: recording this job's outcome fails, which Graphile
      // 0.17.3 treats as fatal for its whole worker pool.
      dispatcherUp
        .then(() => database.sql`alter table graphile_worker._private_jobs rename to _private_jobs_away`)
        .then(
          () => res.end('ok'),
          () => res.end('ok'),
        );
    });
    const endpoint = await seedEndpoint(r.url);
    const first = await emit(endpoint.tenantId);
    const rec = recordingLogger();
    await startDispatcher({}, rec.logger);
    started();
    await waitFor(() => rec.lines.some((l) => /^Failed to (complete|fail) jobs/.test(l)), 10_000, 'Graphile to give up its pool');
    await database.sql`alter table graphile_worker._private_jobs_away rename to _private_jobs`;
    expect((await delivery(first.deliveryIds[0] as string)).status).toBe('succeeded');

    const second = await emit(endpoint.tenantId);
    await waitForStatus(second.deliveryIds[0] as string, ['succeeded'], 10_000);
    expect(r.requests.map((q) => q.headers['webhook-id'])).toEqual([first.id, second.id]);
  });

  it('a result whose claim passed to another worker is not written; the current claimant writes it', async () => {
    const endpoint = await seedEndpoint('http://127.0.0.1:9/');
    const event = await emit(endpoint.tenantId);
    const id = event.deliveryIds[0] as string;
    const [first] = await claimDueDeliveries(database.db, { token: 'worker-a', limit: 10, lockMs: 60_000 });
    expect(first?.id).toBe(id);
    // While the claim holds, no one else gets the row.
    expect(await claimDueDeliveries(database.db, { token: 'worker-b', limit: 10, lockMs: 60_000 })).toEqual([]);
    // Worker A's claim expires; B takes the row.
    await database.sql`update webhook_deliveries set locked_until = now() - interval '1 second' where id = ${id}`;
    const [second] = await claimDueDeliveries(database.db, { token: 'worker-b', limit: 10, lockMs: 60_000 });
    expect(second?.attemptNumber).toBe(1);

    const result = {
      deliveryId: id,
      attemptNumber: 1,
      startedAt: new Date(),
      durationMs: 5,
      statusCode: 200,
      outcome: 'succeeded' as const,
      error: null,
      responseExcerpt: null,
      signatureCount: 1,
      status: 'succeeded' as const,
      retryInMs: null,
    };
    expect(await recordDeliveryResults(database.db, [{ ...result, token: 'worker-a' }])).toEqual([]);
    expect(await delivery(id)).toMatchObject({ status: 'pending', locked_by: 'worker-b', attempt_count: 0 });
    expect(await attempts(id)).toEqual([]);
    expect(await recordDeliveryResults(database.db, [{ ...result, token: 'worker-b' }])).toEqual([id]);
    expect(await delivery(id)).toMatchObject({ status: 'succeeded', locked_by: null, attempt_count: 1 });
    expect(await attempts(id)).toHaveLength(1);
  });
});

describe('retry schedule', () => {
  it('attempt n failed waits schedule[n], jittered ±20 %; 0 stays 0; past the end there is no retry', () => {
    const schedule = [0, 5_000, 300_000];
    expect(retryDelayMs(schedule, 1, () => 0)).toBe(4_000);
    expect(retryDelayMs(schedule, 1, () => 1)).toBe(6_000);
    expect(retryDelayMs(schedule, 2, () => 0.5)).toBe(300_000);
    expect(retryDelayMs([0, 0], 1, () => 1)).toBe(0);
    expect(retryDelayMs(schedule, 3)).toBeNull();
  });

  it('outcomes map to states: success final, 410 and disabled endpoints failed, interruptions due at once', () => {
    const schedule = [0, 1_000];
    expect(stateAfter('succeeded', 1, schedule)).toEqual({ status: 'succeeded', retryInMs: null });
    expect(stateAfter('gone', 1, schedule)).toEqual({ status: 'failed', retryInMs: null });
    expect(stateAfter('endpoint_disabled', 1, schedule)).toEqual({ status: 'failed', retryInMs: null });
    expect(stateAfter('interrupted', 5, schedule)).toEqual({ status: 'retrying', retryInMs: 0 });
    expect(stateAfter('timeout', 1, schedule).status).toBe('retrying');
    expect(stateAfter('timeout', 2, schedule)).toEqual({ status: 'failed', retryInMs: null });
  });
});
