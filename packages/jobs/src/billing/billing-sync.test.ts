import { randomBytes } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { claimBillingSyncLogs } from '@svc/db/queries/billing';
import { BILLING_SYNC_JOB_KEY, queueBillingSync } from '@svc/db/queries/billing-sync-queue';
import { insertOrganization } from '@svc/db/queries/organizations';
import { billingMappings, billingProviders, billingSyncLogs } from '@svc/db/schema/billing';
import { usageEvents } from '@svc/db/schema/usage';
import { createSecretBox } from '@svc/db/secret-box';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { type JobContext, type JobLogger, startWorker } from '../runner.ts';
import { syncBilling } from '../tasks/billing-sync.ts';
import { type BillingSettings, billingAdapterStatuses, keyModeOf } from './providers.ts';
import { type BillingSync, processBillingSync } from './sync.ts';
import { type ProviderServer, startPaddleServer, startRazorpayServer, startStripeServer } from './test-provider-servers.ts';

const STRIPE_KEY = `sk_test_${randomBytes(18).toString('hex')}`;
const RAZORPAY_KEY_ID = `rzp_test_${randomBytes(7).toString('hex')}`;
const RAZORPAY_SECRET = randomBytes(18).toString('base64url');
const PADDLE_KEY = `pdl_sdbx_apikey_${randomBytes(13).toString('hex')}_${randomBytes(11).toString('base64url')}`;
const SECRETS = [STRIPE_KEY, RAZORPAY_SECRET, PADDLE_KEY];

let url: string;
let database: Database;
let stripe: ProviderServer;
let razorpay: ProviderServer;
let paddle: ProviderServer;

/** Every line every logger of this file wrote: no key may ever appear in it. */
const logLines: string[] = [];
const logger: JobLogger = {
  debug: (obj, msg) => logLines.push(`${msg} ${JSON.stringify(obj)}`),
  info: (obj, msg) => logLines.push(`${msg} ${JSON.stringify(obj)}`),
  error: (obj, msg) => logLines.push(`${msg} ${JSON.stringify(obj)}`),
};

function allProviders(): BillingSettings {
  return {
    stripe: { secretKey: STRIPE_KEY, apiBase: stripe.url },
    razorpay: { keyId: RAZORPAY_KEY_ID, keySecret: RAZORPAY_SECRET, apiBase: razorpay.url },
    paddle: { apiKey: PADDLE_KEY, apiBase: paddle.url },
  };
}

/** Fast schedules: retries are due at once, claims end at once (tests drive each attempt). */
function sync(overrides: Partial<BillingSync> = {}): BillingSync {
  return { settings: allProviders(), logger, timeoutMs: 2_000, retryDelaysMs: [0, 0], leaseMs: 0, ...overrides };
}

beforeAll(async () => {
  url = await createTestDatabase();
  database = createDatabase({ url, max: 8 });
  [stripe, razorpay, paddle] = await Promise.all([startStripeServer(), startRazorpayServer(), startPaddleServer()]);
});
afterAll(async () => {
  await Promise.all([stripe?.close(), razorpay?.close(), paddle?.close()]);
  await database?.close();
  // No key in any log line, whatever the providers answered.
  for (const secret of SECRETS) {
    expect(logLines.join('\n')).not.toContain(secret);
  }
});
beforeEach(async () => {
  for (const s of [stripe, razorpay, paddle]) {
    s.requests.length = 0;
  }
  // Each test drains only its own logs: earlier tests' leftovers are closed off.
  await database.db.update(billingSyncLogs).set({ status: 'skipped' }).where(eq(billingSyncLogs.status, 'queued'));
  await database.db.execute(
    sql`select graphile_worker.remove_job(${BILLING_SYNC_JOB_KEY}), graphile_worker.remove_job(${`${BILLING_SYNC_JOB_KEY}:wake`})`,
  );
});

let n = 0;
type Org = { tenantId: string };

async function org(): Promise<Org> {
  const id = `${++n}-${randomBytes(3).toString('hex')}`;
  const row = await insertOrganization(database.db, { id: newId('organization'), slug: `bill-${id}`, name: `Billing ${id}` });
  if (!row) {
    throw new Error('slug taken');
  }
  return { tenantId: row.id };
}

async function connect(
  o: Org,
  provider: 'stripe' | 'razorpay' | 'paddle',
  externalAccountId: string | null,
  mode: 'sandbox' | 'live' = 'sandbox',
) {
  await database.db.insert(billingProviders).values({
    id: newId('billingProvider'),
    tenantId: o.tenantId,
    provider,
    externalAccountId,
    mode,
    status: externalAccountId ? 'connected' : 'pending',
  });
}

async function map(o: Org, provider: 'stripe' | 'razorpay' | 'paddle', eventType: string, providerItemId: string): Promise<string> {
  const id = newId('billingMapping');
  await database.db.insert(billingMappings).values({ id, tenantId: o.tenantId, provider, eventType, providerItemId });
  return id;
}

/** Usage events written and queued for sync in one transaction, as usage ingestion does it. */
async function ingest(o: Org, events: { eventType: string; quantity?: number }[]): Promise<{ ids: string[]; queued: number }> {
  return database.db.transaction(async (tx) => {
    const rows = events.map((e) => ({
      id: newId('usageEvent'),
      tenantId: o.tenantId,
      idempotencyKey: `k-${randomBytes(6).toString('hex')}`,
      requestHash: randomBytes(32).toString('hex'),
      eventType: e.eventType,
      quantity: e.quantity ?? 1,
      occurredAt: new Date(Date.now() - 60_000),
      channel: 'usage' as const,
    }));
    await tx.insert(usageEvents).values(rows);
    const queued = await queueBillingSync(
      tx,
      o.tenantId,
      rows.map((r) => ({ id: r.id, eventType: r.eventType })),
    );
    return { ids: rows.map((r) => r.id), queued };
  });
}

async function logsOf(o: Org) {
  return database.db.select().from(billingSyncLogs).where(eq(billingSyncLogs.tenantId, o.tenantId)).orderBy(billingSyncLogs.createdAt);
}

async function syncJobs(): Promise<{ key: string | null; run_at: Date }[]> {
  return (await database.db.execute(
    sql`select key, run_at from graphile_worker.jobs where task_identifier = 'billing:sync' order by run_at`,
  )) as unknown as { key: string | null; run_at: Date }[];
}

function ctx(s: BillingSync): JobContext {
  return {
    db: database.db,
    logger,
    secretBox: createSecretBox(randomBytes(32)),
    webhooks: { allowPrivate: true, timeoutMs: 1_000, retryScheduleMs: [0], secretGraceMs: 0 },
    webhookSender: { close: () => {} } as unknown as JobContext['webhookSender'],
    billing: { settings: s.settings, timeoutMs: s.timeoutMs, retryDelaysMs: s.retryDelaysMs, leaseMs: s.leaseMs },
    stopping: new AbortController().signal,
  };
}

describe('queueBillingSync', () => {
  it('queues one log per event and matching mapping of its own organization, and wakes the task once', async () => {
    const a = await org();
    const b = await org();
    const stripeMapping = await map(a, 'stripe', 'api.request', 'api_requests');
    const paddleMapping = await map(a, 'paddle', 'api.request', 'pri_01');
    // Another organization's mapping of the same type is never used.
    await map(b, 'stripe', 'api.request', 'other_meter');

    const { ids, queued } = await ingest(a, [{ eventType: 'api.request' }, { eventType: 'unmapped.type' }]);
    expect(queued).toBe(2);
    const logs = await logsOf(a);
    expect(logs.map((l) => [l.usageEventId, l.mappingId, l.provider, l.status, l.attempts]).sort()).toEqual(
      [
        [ids[0], stripeMapping, 'stripe', 'queued', 0],
        [ids[0], paddleMapping, 'paddle', 'queued', 0],
      ].sort(),
    );
    expect(logs.every((l) => /^bsl_[0-9A-Za-z]{20}$/.test(l.id))).toBe(true);
    expect(await logsOf(b)).toEqual([]);
    expect(await syncJobs()).toEqual([expect.objectContaining({ key: BILLING_SYNC_JOB_KEY })]);

    // The same events again (a replay): nothing new, and no second job.
    const again = await database.db.transaction((tx) =>
      queueBillingSync(tx, a.tenantId, [{ id: ids[0] as string, eventType: 'api.request' }]),
    );
    expect(again).toBe(0);
    expect(await logsOf(a)).toHaveLength(2);
    expect(await syncJobs()).toHaveLength(1);
  });

  it('queues nothing and adds no job when no mapping matches; nothing at all when the transaction rolls back', async () => {
    const a = await org();
    await map(a, 'stripe', 'api.request', 'api_requests');
    expect((await ingest(a, [{ eventType: 'storage.gb' }])).queued).toBe(0);
    expect(await syncJobs()).toEqual([]);

    await expect(
      database.db.transaction(async (tx) => {
        const id = newId('usageEvent');
        await tx.insert(usageEvents).values({
          id,
          tenantId: a.tenantId,
          idempotencyKey: 'rolled-back',
          requestHash: 'x',
          eventType: 'api.request',
          occurredAt: new Date(),
          channel: 'usage',
        });
        await queueBillingSync(tx, a.tenantId, [{ id, eventType: 'api.request' }]);
        throw new Error('ingestion failed');
      }),
    ).rejects.toThrow('ingestion failed');
    expect(await logsOf(a)).toEqual([]);
    expect(await syncJobs()).toEqual([]);
  });
});

describe('adapter status', () => {
  it('reads sandbox or live from the form of each key, and never returns a key', () => {
    expect(keyModeOf('stripe', 'sk_test_abc')).toBe('sandbox');
    expect(keyModeOf('stripe', 'rk_test_abc')).toBe('sandbox');
    expect(keyModeOf('stripe', 'sk_live_abc')).toBe('live');
    expect(keyModeOf('stripe', 'rk_live_abc')).toBe('live');
    expect(keyModeOf('razorpay', 'rzp_test_abc')).toBe('sandbox');
    expect(keyModeOf('razorpay', 'rzp_live_abc')).toBe('live');
    expect(keyModeOf('paddle', 'pdl_sdbx_apikey_01abc_xyz')).toBe('sandbox');
    expect(keyModeOf('paddle', 'pdl_live_apikey_01abc_xyz')).toBe('live');
    // A legacy Paddle key (50 random characters) does not tell.
    expect(keyModeOf('paddle', 'a'.repeat(50))).toBeNull();

    const statuses = billingAdapterStatuses({
      stripe: { secretKey: 'sk_live_123456', apiBase: null },
      razorpay: null,
      paddle: { apiKey: PADDLE_KEY, apiBase: null },
    });
    expect(statuses).toEqual([
      { provider: 'stripe', configured: true, mode: 'live' },
      { provider: 'razorpay', configured: false, mode: null },
      { provider: 'paddle', configured: true, mode: 'sandbox' },
    ]);
    expect(JSON.stringify(statuses)).not.toMatch(/sk_live_123456|pdl_sdbx/);
  });
});

describe('billing:sync with Stripe', () => {
  it('records a meter event through the SDK: auth header, idempotency key, payload; the log succeeds', async () => {
    const a = await org();
    await connect(a, 'stripe', 'cus_TEST123');
    const mappingId = await map(a, 'stripe', 'api.request', 'api_requests');
    const { ids } = await ingest(a, [{ eventType: 'api.request', quantity: 7 }]);

    const result = await processBillingSync(database.db, sync(), { limit: 100 });
    expect(result).toMatchObject({ processed: 1, succeeded: 1 });

    expect(stripe.requests).toHaveLength(1);
    const req = stripe.requests[0] as (typeof stripe.requests)[number];
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/v1/billing/meter_events');
    expect(req.headers.authorization).toBe(`Bearer ${STRIPE_KEY}`);
    expect(req.headers['idempotency-key']).toBe(`svc-${ids[0]}-${mappingId}`);
    const form = new URLSearchParams(req.body);
    expect(Object.fromEntries(form)).toEqual({
      event_name: 'api_requests',
      identifier: ids[0],
      timestamp: expect.stringMatching(/^\d{10}$/),
      'payload[value]': '7',
      'payload[stripe_customer_id]': 'cus_TEST123',
    });

    const [log] = await logsOf(a);
    expect(log).toMatchObject({ status: 'succeeded', attempts: 1, reason: null, providerRecordId: ids[0] });
  });

  it('is idempotent: the task run twice, or twice at once, calls Stripe once per event and mapping', async () => {
    const a = await org();
    await connect(a, 'stripe', 'cus_TWICE');
    await map(a, 'stripe', 'api.request', 'api_requests');
    await ingest(a, [{ eventType: 'api.request' }, { eventType: 'api.request' }]);

    // Claims last 30 s: a concurrent run never takes a log another run is sending.
    const s = sync({ leaseMs: 30_000 });
    await Promise.all([syncBilling({}, ctx(s)), syncBilling({}, ctx(s))]);
    await syncBilling({}, ctx(s));
    expect(stripe.requests).toHaveLength(2);
    expect(new Set(stripe.requests.map((r) => r.headers['idempotency-key'])).size).toBe(2);
    expect((await logsOf(a)).map((l) => [l.status, l.attempts])).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
    ]);
  });

  it('a 5xx keeps the log queued with the reason, wakes the task for the retry, and the retry reuses the idempotency key; then gives up', async () => {
    const a = await org();
    await connect(a, 'stripe', 'cus_FLAKY');
    await map(a, 'stripe', 'api.request', 'api_requests');
    await ingest(a, [{ eventType: 'api.request' }, { eventType: 'api.request' }]);
    stripe.script(500, 500);

    await syncBilling({}, ctx(sync({ retryDelaysMs: [60_000, 60_000], leaseMs: 0 })));
    let logs = await logsOf(a);
    expect(logs.map((l) => [l.status, l.attempts])).toEqual([
      ['queued', 1],
      ['queued', 1],
    ]);
    expect(logs[0]?.reason).toMatch(
      /^Stripe answered 500: No such meter \(request authorized as Bearer \[redacted\]\) \(attempt 1 of 3: will retry\)$/,
    );
    // The wake-up run is due when the retry delay has passed.
    const wake = (await syncJobs()).find((j) => j.key === `${BILLING_SYNC_JOB_KEY}:wake`);
    expect(wake).toBeDefined();
    expect(new Date(wake?.run_at as Date).getTime()).toBeGreaterThan(Date.now() + 50_000);
    // Not due yet: nothing is sent.
    await processBillingSync(database.db, sync({ retryDelaysMs: [60_000, 60_000] }), { limit: 100 });
    expect(stripe.requests).toHaveLength(2);

    // Due: the retry carries the same key as the first attempt.
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect(stripe.requests).toHaveLength(4);
    const keys = stripe.requests.map((r) => r.headers['idempotency-key']);
    expect(new Set(keys.slice(2))).toEqual(new Set(keys.slice(0, 2)));
    expect(new Set(keys).size).toBe(2);
    logs = await logsOf(a);
    expect(logs.map((l) => [l.status, l.attempts])).toEqual([
      ['succeeded', 2],
      ['succeeded', 2],
    ]);

    // Three 5xx in a row (retryDelaysMs of length 2: three attempts): failed, with why.
    const b = await org();
    await connect(b, 'stripe', 'cus_DOWN');
    await map(b, 'stripe', 'api.request', 'api_requests');
    await ingest(b, [{ eventType: 'api.request' }]);
    stripe.requests.length = 0;
    stripe.script(503, 503, 503);
    for (let i = 0; i < 4; i++) {
      await processBillingSync(database.db, sync(), { limit: 100 });
    }
    expect(stripe.requests).toHaveLength(3);
    const [failed] = await logsOf(b);
    expect(failed).toMatchObject({ status: 'failed', attempts: 3 });
    expect(failed?.reason).toMatch(/Stripe answered 503.*attempt 3 of 3: giving up/);
  });

  it('a 4xx fails the log at once with a safe reason (a key the provider echoed is masked)', async () => {
    const a = await org();
    await connect(a, 'stripe', 'cus_BAD');
    await map(a, 'stripe', 'api.request', 'no_such_meter');
    await ingest(a, [{ eventType: 'api.request' }]);
    stripe.script(400);
    await processBillingSync(database.db, sync(), { limit: 100 });
    const [log] = await logsOf(a);
    expect(log).toMatchObject({ status: 'failed', attempts: 1 });
    expect(log?.reason).toContain('Stripe refused it (400 resource_missing): No such meter');
    expect(log?.reason).not.toContain(STRIPE_KEY);
    expect(log?.reason).toContain('request authorized as Bearer [redacted]');
  });

  it('no answer in time: Stripe deduplicates, so the log stays queued for a retry', async () => {
    const a = await org();
    await connect(a, 'stripe', 'cus_SLOW');
    await map(a, 'stripe', 'api.request', 'api_requests');
    await ingest(a, [{ eventType: 'api.request' }]);
    stripe.script('hang');
    await processBillingSync(database.db, sync({ timeoutMs: 300 }), { limit: 100 });
    const [log] = await logsOf(a);
    expect(log).toMatchObject({ status: 'queued', attempts: 1 });
    expect(log?.reason).toMatch(/^Stripe did not answer .*will retry\)$/);
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect((await logsOf(a))[0]).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(stripe.requests.map((r) => r.headers['idempotency-key'])).toEqual([
      stripe.requests[0]?.headers['idempotency-key'],
      stripe.requests[0]?.headers['idempotency-key'],
    ]);
  });
});

describe('billing:sync skips what it must not send', () => {
  it('provider not configured, no connection, a pending connection, a mode mismatch: skipped with the reason, nothing sent', async () => {
    const a = await org();
    await map(a, 'razorpay', 'api.request', 'item_1');
    await map(a, 'paddle', 'api.request', 'pri_1');
    await connect(a, 'paddle', null);
    const b = await org();
    await connect(b, 'stripe', 'cus_LIVE', 'live');
    await map(b, 'stripe', 'api.request', 'api_requests');
    await ingest(a, [{ eventType: 'api.request' }]);
    await ingest(b, [{ eventType: 'api.request' }]);

    // This worker has no Razorpay key; its Stripe key is a test key.
    const settings = { ...allProviders(), razorpay: null };
    const result = await processBillingSync(database.db, sync({ settings }), { limit: 100 });
    expect(result).toMatchObject({ processed: 3, skipped: 3 });
    const reasons = [...(await logsOf(a)), ...(await logsOf(b))].map((l) => [l.provider, l.status, l.reason]).sort();
    expect(reasons).toEqual([
      ['paddle', 'skipped', 'the Paddle connection is pending: it needs an external account id'],
      ['razorpay', 'skipped', 'Razorpay is not configured on this svc (RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET unset)'],
      ['stripe', 'skipped', 'the Stripe connection is live but the configured Stripe key is sandbox: nothing was sent'],
    ]);
    expect([...stripe.requests, ...razorpay.requests, ...paddle.requests]).toEqual([]);

    // Without any connection record.
    const c = await org();
    await map(c, 'stripe', 'api.request', 'api_requests');
    await ingest(c, [{ eventType: 'api.request' }]);
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect((await logsOf(c))[0]).toMatchObject({
      status: 'skipped',
      reason: 'the organization has no Stripe connection (POST /v1/billing/connect/stripe)',
    });
    expect(stripe.requests).toEqual([]);
  });
});

describe('billing:sync with Razorpay', () => {
  it("creates an add-on on the subscription for the mapped item (Basic auth, the item's price, the key in its description)", async () => {
    const a = await org();
    await connect(a, 'razorpay', 'sub_RZP123');
    const mappingId = await map(a, 'razorpay', 'seats.added', 'item_RZPITEM');
    const { ids } = await ingest(a, [{ eventType: 'seats.added', quantity: 3 }]);

    await processBillingSync(database.db, sync(), { limit: 100 });
    expect(razorpay.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /v1/items/item_RZPITEM',
      'POST /v1/subscriptions/sub_RZP123/addons',
    ]);
    const basic = `Basic ${Buffer.from(`${RAZORPAY_KEY_ID}:${RAZORPAY_SECRET}`).toString('base64')}`;
    expect(razorpay.requests.every((r) => r.headers.authorization === basic)).toBe(true);
    expect(JSON.parse(razorpay.requests[1]?.body ?? '')).toEqual({
      item: { name: 'API calls', amount: 250, currency: 'INR', description: `svc usage svc-${ids[0]}-${mappingId}` },
      quantity: 3,
    });
    expect((await logsOf(a))[0]).toMatchObject({ status: 'succeeded', attempts: 1, providerRecordId: 'ao_00000000000001' });
  });

  it('a 5xx is retried; no answer is never resent automatically (Razorpay takes no idempotency key): failed until retried by hand', async () => {
    const a = await org();
    await connect(a, 'razorpay', 'sub_RZPFLAKY');
    await map(a, 'razorpay', 'seats.added', 'item_RZPITEM');
    await ingest(a, [{ eventType: 'seats.added' }]);

    razorpay.script('ok', 503);
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect((await logsOf(a))[0]).toMatchObject({ status: 'queued', attempts: 1 });
    expect((await logsOf(a))[0]?.reason).toMatch(/^Razorpay answered 503 while creating the add-on: Something went wrong/);

    razorpay.script('ok', 'hang');
    await processBillingSync(database.db, sync({ timeoutMs: 300 }), { limit: 100 });
    const [log] = await logsOf(a);
    expect(log).toMatchObject({ status: 'failed', attempts: 2 });
    expect(log?.reason).toBe(
      'Razorpay did not answer while creating the add-on: it may or may not have been recorded; check Razorpay before retrying',
    );
    // Further runs leave it alone.
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect(razorpay.writes()).toHaveLength(2);
  });

  it('a log whose earlier attempt recorded no outcome (its worker died mid-call) is failed, not resent', async () => {
    const a = await org();
    await connect(a, 'razorpay', 'sub_RZPCRASH');
    await map(a, 'razorpay', 'seats.added', 'item_RZPITEM');
    await ingest(a, [{ eventType: 'seats.added' }]);
    // A worker claims it and dies before recording anything.
    expect(await claimBillingSyncLogs(database.db, { retryDelaysMs: [0, 0], leaseMs: 0, limit: 10 })).toHaveLength(1);

    await processBillingSync(database.db, sync(), { limit: 100 });
    const [log] = await logsOf(a);
    expect(log).toMatchObject({ status: 'failed', attempts: 2 });
    expect(log?.reason).toMatch(/earlier attempt ended without an outcome.*check Razorpay for it before retrying/);
    expect(razorpay.requests).toEqual([]);
  });
});

describe('billing:sync with Paddle', () => {
  it('adds a one-time charge to the next billing period of the subscription (never immediately); bearer key, price and quantity', async () => {
    const a = await org();
    await connect(a, 'paddle', 'sub_01PADDLE');
    await map(a, 'paddle', 'exports.created', 'pri_01EXPORT');
    await ingest(a, [{ eventType: 'exports.created', quantity: 2 }]);

    await processBillingSync(database.db, sync(), { limit: 100 });
    expect(paddle.requests).toHaveLength(1);
    const req = paddle.requests[0] as (typeof paddle.requests)[number];
    expect(`${req.method} ${req.url}`).toBe('POST /subscriptions/sub_01PADDLE/charge');
    expect(req.headers.authorization).toBe(`bearer ${PADDLE_KEY}`);
    expect(JSON.parse(req.body)).toEqual({ effective_from: 'next_billing_period', items: [{ price_id: 'pri_01EXPORT', quantity: 2 }] });
    expect((await logsOf(a))[0]).toMatchObject({ status: 'succeeded', attempts: 1, providerRecordId: 'sub_01PADDLE' });
  });

  it("a 5xx (Paddle's api_error) is retried; a request_error fails with Paddle's reason", async () => {
    const a = await org();
    await connect(a, 'paddle', 'sub_01FLAKY');
    await map(a, 'paddle', 'exports.created', 'pri_01EXPORT');
    await ingest(a, [{ eventType: 'exports.created' }]);
    paddle.script(500, 400);
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect((await logsOf(a))[0]).toMatchObject({ status: 'queued', attempts: 1 });
    expect((await logsOf(a))[0]?.reason).toMatch(/^Paddle answered internal_error: An internal error occurred/);
    await processBillingSync(database.db, sync(), { limit: 100 });
    expect((await logsOf(a))[0]).toMatchObject({
      status: 'failed',
      attempts: 2,
      reason: 'Paddle refused it (subscription_locked_pending_changes): The subscription has pending changes',
    });
    expect(paddle.requests).toHaveLength(2);
  });
});

describe('billing:sync in a real worker', () => {
  it('usage queued in a transaction reaches the provider once through the Graphile worker', async () => {
    const a = await org();
    await connect(a, 'stripe', 'cus_WORKER');
    await map(a, 'stripe', 'api.request', 'api_requests');
    const worker = await startWorker({
      connectionString: url,
      db: database.db,
      logger,
      pollInterval: 100,
      secretBox: createSecretBox(randomBytes(32)),
      webhooks: { allowPrivate: true, timeoutMs: 1_000, retryScheduleMs: [0], secretGraceMs: 0 },
      billing: { settings: allProviders(), timeoutMs: 2_000 },
    });
    try {
      const { ids } = await ingest(a, [{ eventType: 'api.request', quantity: 5 }]);
      await stripe.waitForRequests(1, 15_000);
      for (let i = 0; i < 100; i++) {
        const [log] = await logsOf(a);
        if (log?.status !== 'queued') {
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await logsOf(a))[0]).toMatchObject({ status: 'succeeded', providerRecordId: ids[0] });
      expect(stripe.requests).toHaveLength(1);
      expect(new URLSearchParams(stripe.requests[0]?.body).get('payload[value]')).toBe('5');
    } finally {
      await worker.stop();
    }
    const [row] = await database.db
      .select()
      .from(billingSyncLogs)
      .where(and(eq(billingSyncLogs.tenantId, a.tenantId), eq(billingSyncLogs.status, 'succeeded')));
    expect(row?.attempts).toBe(1);
  });
});
