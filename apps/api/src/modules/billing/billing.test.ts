import { randomBytes } from 'node:crypto';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { billingProviders, billingSyncLogs } from '@svc/db/schema/billing';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedSyncLog } from './billing.fixtures.ts';
import { MATRIX } from './billing.matrix.ts';

// This server has a Stripe test key and a Razorpay live key; Paddle is not configured.
const STRIPE_KEY = `sk_test_${randomBytes(16).toString('hex')}`;
const RAZORPAY_KEY_ID = `rzp_live_${randomBytes(7).toString('hex')}`;
const RAZORPAY_SECRET = randomBytes(18).toString('base64url');

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({
    env: { STRIPE_SECRET_KEY: STRIPE_KEY, RAZORPAY_KEY_ID: RAZORPAY_KEY_ID, RAZORPAY_KEY_SECRET: RAZORPAY_SECRET },
  });
});
afterAll(async () => {
  // Nothing secret in any answer of this file.
  const all = answers.map((a) => a.text).join('\n');
  for (const secret of [STRIPE_KEY, RAZORPAY_SECRET, STRIPE_KEY.slice(8), RAZORPAY_SECRET.slice(0, 12)]) {
    expect(all).not.toContain(secret);
  }
  await server?.close();
});

type Json = Record<string, any>;
const answers: { route: string; text: string }[] = [];

async function call(
  method: string,
  path: string,
  opts: { cookie?: string; bearer?: string; body?: unknown } = {},
): Promise<{ status: number; json: Json; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.bearer ? { authorization: opts.bearer } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : method === 'POST' ? '{}' : undefined,
  });
  const text = await res.text();
  answers.push({ route: `${method} ${path}`, text });
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text };
}

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function auditOf(targetId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.targetId, targetId), eq(auditLogs.action, action)));
}

const RECORD = {
  id: expect.stringMatching(/^bpr_[0-9A-Za-z]{20}$/),
  createdAt: expect.any(String),
  updatedAt: expect.any(String),
};

describeAuthMatrix('billing', () => server, MATRIX);

describe('GET /v1/tenants/{id}/billing/providers', () => {
  it("answers the organization's records and each adapter's status from the environment, never a key", async () => {
    const { org, admin } = await adminOf();
    const empty = await call('GET', `/v1/tenants/${org.id}/billing/providers`, { cookie: admin.cookie });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.json).toEqual({
      data: [],
      nextCursor: null,
      adapters: [
        { provider: 'stripe', configured: true, mode: 'sandbox' },
        { provider: 'razorpay', configured: true, mode: 'live' },
        { provider: 'paddle', configured: false, mode: null },
      ],
    });
    await call('POST', '/v1/billing/connect/stripe', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, externalAccountId: 'cus_A1' },
    });
    const listed = await call('GET', `/v1/tenants/${org.id}/billing/providers`, { cookie: admin.cookie });
    expect(listed.json.data).toEqual([
      { ...RECORD, provider: 'stripe', externalAccountId: 'cus_A1', mode: 'sandbox', status: 'connected' },
    ]);
    expect(listed.text).not.toMatch(/sk_test_|rzp_live_|secret/i);
  });

  it('another organization, or a malformed id, is refused', async () => {
    const { admin } = await adminOf();
    const other = await seedOrganization(server.services.db);
    expect((await call('GET', `/v1/tenants/${other.id}/billing/providers`, { cookie: admin.cookie })).status).toBe(404);
    const bad = await call('GET', '/v1/tenants/nope/billing/providers', { cookie: admin.cookie });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('validation_failed');
  });
});

describe('POST /v1/tenants/{id}/billing/providers', () => {
  it('creates a record (pending without an account id), audited; a second one for the provider is 409', async () => {
    const { org, admin } = await adminOf();
    const res = await call('POST', `/v1/tenants/${org.id}/billing/providers`, { cookie: admin.cookie, body: { provider: 'paddle' } });
    expect(res.status, res.text).toBe(201);
    expect(res.json).toEqual({ ...RECORD, provider: 'paddle', externalAccountId: null, mode: 'sandbox', status: 'pending' });
    expect(await auditOf(res.json.id, 'billing_provider.created')).toHaveLength(1);

    const again = await call('POST', `/v1/tenants/${org.id}/billing/providers`, {
      cookie: admin.cookie,
      body: { provider: 'paddle', externalAccountId: 'sub_01X' },
    });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('billing_provider_exists');
    expect(again.json.error.message).toContain('POST /v1/billing/connect/paddle');
  });

  it('refuses an account id shaped like a key (a key pasted in the wrong field is never stored)', async () => {
    const { db, org, admin } = await adminOf();
    const res = await call('POST', `/v1/tenants/${org.id}/billing/providers`, {
      cookie: admin.cookie,
      body: { provider: 'stripe', externalAccountId: 'sk_live_pasted_by_mistake' },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('validation_failed');
    expect(res.text).not.toContain('sk_live_pasted_by_mistake');
    expect(await db.select().from(billingProviders).where(eq(billingProviders.tenantId, org.id))).toEqual([]);
  });
});

describe('POST /v1/billing/connect/{provider}', () => {
  it("defaults the mode to the configured key's, keeps the account id when a later connect leaves it out, and audits", async () => {
    const { org, admin } = await adminOf();
    const first = await call('POST', '/v1/billing/connect/razorpay', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, externalAccountId: 'sub_RZP1' },
    });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toEqual({ ...RECORD, provider: 'razorpay', externalAccountId: 'sub_RZP1', mode: 'live', status: 'connected' });

    const second = await call('POST', '/v1/billing/connect/razorpay', { cookie: admin.cookie, body: { organization_slug: org.slug } });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ id: first.json.id, externalAccountId: 'sub_RZP1', mode: 'live', status: 'connected' });
    const audits = await auditOf(first.json.id, 'billing_provider.connected');
    expect(audits.map((a) => (a.summary as Json).created).sort()).toEqual([false, true]);

    // An unconfigured provider: sandbox by default, live allowed (sync skips until it is configured).
    const paddle = await call('POST', '/v1/billing/connect/paddle', { cookie: admin.cookie, body: { organization_slug: org.slug } });
    expect(paddle.json).toMatchObject({ provider: 'paddle', mode: 'sandbox', status: 'pending', externalAccountId: null });
    const live = await call('POST', '/v1/billing/connect/paddle', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, mode: 'live', externalAccountId: 'sub_01LIVE' },
    });
    expect(live.json).toMatchObject({ mode: 'live', status: 'connected' });
  });

  it('refuses a mode the configured key cannot serve (live on a test key, sandbox on a live key)', async () => {
    const { db, org, admin } = await adminOf();
    const live = await call('POST', '/v1/billing/connect/stripe', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, externalAccountId: 'cus_X', mode: 'live' },
    });
    expect(live.status).toBe(409);
    expect(live.json.error).toMatchObject({ code: 'billing_mode_mismatch' });
    expect(live.json.error.message).toBe(
      'the configured stripe key is a sandbox key: a live connection would send usage to the wrong account',
    );
    const sandbox = await call('POST', '/v1/billing/connect/razorpay', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, externalAccountId: 'sub_X', mode: 'sandbox' },
    });
    expect(sandbox.status).toBe(409);
    expect(await db.select().from(billingProviders).where(eq(billingProviders.tenantId, org.id))).toEqual([]);
  });

  it('an unknown provider is 400, never a record', async () => {
    const { org, admin } = await adminOf();
    const res = await call('POST', '/v1/billing/connect/paypal', { cookie: admin.cookie, body: { organization_slug: org.slug } });
    expect(res.status).toBe(400);
  });
});

describe('/v1/billing/mappings', () => {
  it('creates a mapping, re-points it when posted again (audited with the previous item), and lists it', async () => {
    const { org, admin } = await adminOf();
    const body = { organization_slug: org.slug, provider: 'stripe', eventType: 'api.request', providerItemId: 'api_requests' };
    const created = await call('POST', '/v1/billing/mappings', { cookie: admin.cookie, body });
    // docs/api.md: 201 when it created the mapping, 200 when it re-pointed it.
    expect(created.status, created.text).toBe(201);
    expect(created.json).toEqual({
      created: true,
      mapping: {
        id: expect.stringMatching(/^bmp_[0-9A-Za-z]{20}$/),
        provider: 'stripe',
        eventType: 'api.request',
        providerItemId: 'api_requests',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    });
    const moved = await call('POST', '/v1/billing/mappings', { cookie: admin.cookie, body: { ...body, providerItemId: 'api_calls_v2' } });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toMatchObject({ created: false, mapping: { id: created.json.mapping.id, providerItemId: 'api_calls_v2' } });
    const [audit] = await auditOf(created.json.mapping.id, 'billing_mapping.updated');
    expect(audit?.summary).toMatchObject({ providerItemId: 'api_calls_v2', previousProviderItemId: 'api_requests' });

    await call('POST', '/v1/billing/mappings', { cookie: admin.cookie, body: { ...body, provider: 'paddle', providerItemId: 'pri_01' } });
    const page = await call('GET', `/v1/billing/mappings?organization_slug=${org.slug}&limit=1`, { cookie: admin.cookie });
    expect(page.json.data).toHaveLength(1);
    expect(page.json.data[0]).toMatchObject({ provider: 'paddle' });
    const next = await call('GET', `/v1/billing/mappings?organization_slug=${org.slug}&limit=1&cursor=${page.json.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(next.json).toMatchObject({ data: [{ provider: 'stripe', providerItemId: 'api_calls_v2' }], nextCursor: null });
  });

  it('validates the body', async () => {
    const { org, admin } = await adminOf();
    const res = await call('POST', '/v1/billing/mappings', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, provider: 'stripe', eventType: 'has space', providerItemId: '' },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('validation_failed');
    // Only names usage events can carry: a mapping for any other could never match.
    const upper = await call('POST', '/v1/billing/mappings', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, provider: 'stripe', eventType: 'API.Request', providerItemId: 'api_requests' },
    });
    expect(upper.status).toBe(400);
    expect(upper.text).toContain('lower-case letters and digits');
  });
});

describe('GET /v1/billing/sync-logs', () => {
  it('lists by tenant_id, newest first, filtered by status and provider, paged', async () => {
    const { db, org, admin } = await adminOf();
    // A second apart: seeded back to back they can share a millisecond, and the order would be the ids'.
    const at = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000);
    const failed = await seedSyncLog(db, { tenantId: org.id, status: 'failed', createdAt: at(3) });
    const ok = await seedSyncLog(db, { tenantId: org.id, status: 'succeeded', createdAt: at(2) });
    const paddle = await seedSyncLog(db, {
      tenantId: org.id,
      provider: 'paddle',
      status: 'skipped',
      reason: 'Paddle is not configured',
      createdAt: at(1),
    });
    const other = await seedOrganization(db);
    await seedSyncLog(db, { tenantId: other.id, status: 'failed' });

    const all = await call('GET', `/v1/billing/sync-logs?tenant_id=${org.id}`, { cookie: admin.cookie });
    expect(all.status, all.text).toBe(200);
    expect(all.json.data.map((l: Json) => l.id)).toEqual([paddle.id, ok.id, failed.id]);
    expect(all.json.data[2]).toEqual({
      id: failed.id,
      provider: 'stripe',
      mappingId: failed.mappingId,
      eventType: 'api.request',
      providerItemId: 'item_api.request',
      usageEventId: failed.usageEventId,
      status: 'failed',
      attempts: 1,
      reason: 'Stripe refused it (400 resource_missing): No such meter',
      providerRecordId: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const onlyFailed = await call('GET', `/v1/billing/sync-logs?tenant_id=${org.id}&status=failed`, { cookie: admin.cookie });
    expect(onlyFailed.json.data.map((l: Json) => l.id)).toEqual([failed.id]);
    const onlyPaddle = await call('GET', `/v1/billing/sync-logs?organization_slug=${org.slug}&provider=paddle`, { cookie: admin.cookie });
    expect(onlyPaddle.json.data.map((l: Json) => l.id)).toEqual([paddle.id]);

    const first = await call('GET', `/v1/billing/sync-logs?tenant_id=${org.id}&limit=2`, { cookie: admin.cookie });
    expect(first.json.data).toHaveLength(2);
    const rest = await call('GET', `/v1/billing/sync-logs?tenant_id=${org.id}&limit=2&cursor=${first.json.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(rest.json).toMatchObject({ data: [{ id: failed.id }], nextCursor: null });
    // A cursor of one filter replayed on another is refused.
    const replay = await call('GET', `/v1/billing/sync-logs?tenant_id=${org.id}&status=failed&limit=2&cursor=${first.json.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(replay.status).toBe(400);
  });

  it("another organization's tenant_id is 404; tenant_id and organization_slug naming different organizations is 400", async () => {
    const { db, org, admin } = await adminOf();
    const other = await seedOrganization(db);
    expect((await call('GET', `/v1/billing/sync-logs?tenant_id=${other.id}`, { cookie: admin.cookie })).status).toBe(404);
    const mine = await seedOrganization(db);
    await db.execute(sql`insert into memberships (tenant_id, user_id, role_key) values (${mine.id}, ${admin.user.id}, 'org_admin')`);
    const mixed = await call('GET', `/v1/billing/sync-logs?tenant_id=${org.id}&organization_slug=${mine.slug}`, { cookie: admin.cookie });
    expect(mixed.status).toBe(400);
    expect(mixed.json.error.code).toBe('validation_failed');
  });
});

describe('POST /v1/billing/sync-logs/{id}/retry', () => {
  it('puts a failed or skipped log back in the queue with a fresh round, wakes the task, and audits', async () => {
    const { db, org, admin } = await adminOf();
    const failed = await seedSyncLog(db, { tenantId: org.id, status: 'failed', attempts: 6 });
    await db.execute(sql`select graphile_worker.remove_job('billing:sync')`);
    const res = await call('POST', `/v1/billing/sync-logs/${failed.id}/retry`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id: failed.id, status: 'queued', attempts: 0, reason: null, eventType: 'api.request' });
    const jobs = (await db.execute(sql`select key from graphile_worker.jobs where task_identifier = 'billing:sync'`)) as unknown as {
      key: string;
    }[];
    expect(jobs).toEqual([{ key: 'billing:sync' }]);
    const [audit] = await auditOf(failed.id, 'billing_sync_log.retried');
    expect(audit?.summary).toMatchObject({ previousStatus: 'failed', previousAttempts: 6 });

    const skipped = await seedSyncLog(db, { tenantId: org.id, status: 'skipped', reason: 'Paddle is not configured' });
    const again = await call('POST', `/v1/billing/sync-logs/${skipped.id}/retry?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(again.json).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it('a queued or succeeded log is 409 billing_sync_log_not_retryable, unchanged', async () => {
    const { db, org, admin } = await adminOf();
    for (const status of ['queued', 'succeeded'] as const) {
      const log = await seedSyncLog(db, { tenantId: org.id, status });
      const res = await call('POST', `/v1/billing/sync-logs/${log.id}/retry`, { cookie: admin.cookie });
      expect(res.status).toBe(409);
      expect(res.json.error.code).toBe('billing_sync_log_not_retryable');
      const [row] = await db.select().from(billingSyncLogs).where(eq(billingSyncLogs.id, log.id));
      expect(row?.status).toBe(status);
    }
  });

  it("another organization's log is 404 whether named by id alone or inside the caller's organization", async () => {
    const { db, org, admin } = await adminOf();
    const other = await seedOrganization(db);
    const theirs = await seedSyncLog(db, { tenantId: other.id, status: 'failed' });
    const byId = await call('POST', `/v1/billing/sync-logs/${theirs.id}/retry`, { cookie: admin.cookie });
    expect(byId.status).toBe(404);
    expect(byId.json.error.message).toBe('billing sync log not found');
    const inMine = await call('POST', `/v1/billing/sync-logs/${theirs.id}/retry?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(inMine.status).toBe(404);
    const unknown = await call('POST', '/v1/billing/sync-logs/bsl_00000000000000000000/retry', { cookie: admin.cookie });
    expect(unknown.status).toBe(404);
    const [row] = await db.select().from(billingSyncLogs).where(eq(billingSyncLogs.id, theirs.id));
    expect(row?.status).toBe('failed');
  });

  it('a tenant API key with billing.manage may retry; one with only billing.read may not', async () => {
    const { db, org } = await adminOf();
    const log = await seedSyncLog(db, { tenantId: org.id, status: 'failed' });
    const reader = await seedApiKey(db, { tenantId: org.id, scopes: ['billing.read'] });
    expect((await call('POST', `/v1/billing/sync-logs/${log.id}/retry`, { bearer: reader.authorization })).status).toBe(403);
    const manager = await seedApiKey(db, { tenantId: org.id, scopes: ['billing.manage'] });
    expect((await call('POST', `/v1/billing/sync-logs/${log.id}/retry`, { bearer: manager.authorization })).status).toBe(200);
  });
});
