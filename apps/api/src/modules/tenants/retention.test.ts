import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '@svc/contracts/ids';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { billingMappings, billingProviders, billingSyncLogs } from '@svc/db/schema/billing';
import { users } from '@svc/db/schema/identity';
import { webhookDeliveries, webhookDeliveryAttempts } from '@svc/db/schema/webhooks';
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { type Receiver, startReceiver } from '../../../../../test/support/webhook-receiver.ts';

/**
 * Retention (docs/api.md "Retention"): what deleting an organization erases, what it keeps, the
 * export a platform admin takes first, and the organization's last webhook, `tenant.deleted`,
 * which must reach its endpoints although their rows go with the organization.
 */

type Json = Record<string, any>;
type Reply = { status: number; body: Json; text: string };

let server: Awaited<ReturnType<typeof startTestServer>>;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  server = await startTestServer({
    // A short retry schedule: the organization's last webhook is retried within the test.
    env: { WORKER_ENABLED: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0,200ms,200ms' },
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

async function call(method: 'GET' | 'POST' | 'DELETE', path: string, opts: { cookie?: string; body?: unknown } = {}): Promise<Reply> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: method === 'POST' ? JSON.stringify(opts.body ?? {}) : undefined,
  });
  const text = await res.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    // CSV, or empty.
  }
  return { status: res.status, body, text };
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

/** POST /v1/export/all as `caller`, then wait for the worker to complete it. */
async function completedExport(caller: SignedIn, org: OrganizationRow, format: 'json' | 'csv'): Promise<Json> {
  const created = await call('POST', '/v1/export/all', { cookie: caller.cookie, body: { organization_slug: org.slug, format } });
  expect(created.status, created.text).toBe(202);
  const id = created.body.export.id as string;
  return waitFor(`export ${id}`, async () => {
    const reply = await call('GET', `/v1/exports/${id}`, { cookie: caller.cookie });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.status === 'completed' ? reply.body : undefined;
  });
}

/** Every public table with a `tenant_id` column: the organization's rows, wherever they are. */
async function tenantTables(): Promise<string[]> {
  const rows = await server.services.db.execute<{ table_name: string }>(
    // A partitioned table counts once, as its parent (its months are partitions: pg_class.relispartition).
    sql`select c.table_name from information_schema.columns c
        join pg_class t on t.relname = c.table_name and t.relnamespace = 'public'::regnamespace
        where c.table_schema = 'public' and c.column_name = 'tenant_id' and not t.relispartition
        order by c.table_name`,
  );
  return rows.map((r) => r.table_name);
}

async function rowsPerTable(tenantId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of await tenantTables()) {
    const [row] = await server.services.db.execute<{ n: number }>(
      sql`select count(*)::int as n from ${sql.identifier(table)} where tenant_id = ${tenantId}`,
    );
    counts[table] = row?.n ?? 0;
  }
  return counts;
}

/**
 * An organization with rows in everything deletion must erase: members, a role, an invitation,
 * an API key, an application, usage events and hourly totals, billing provider, mapping and sync
 * logs, a webhook endpoint with events, deliveries and attempts, a completed export, and the
 * audit entries all of that wrote.
 */
async function seedBusyOrganization(): Promise<{ org: OrganizationRow; admin: SignedIn; member: SignedIn }> {
  const db = server.services.db;
  const org = await seedOrganization(db, { name: 'Busy Corp' });
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
  const ok = (reply: Reply, status: number) => expect(reply.status, reply.text).toBe(status);

  ok(
    await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'auditor', name: 'Auditor', permissions: ['audit.read'] },
    }),
    201,
  );
  ok(
    await call('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email: 'later@example.com' } }),
    201,
  );
  ok(
    await call('POST', `/v1/tenants/${org.id}/api-keys`, { cookie: admin.cookie, body: { name: 'Backend', scopes: ['usage.write'] } }),
    201,
  );
  ok(await call('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Storefront' } }), 201);
  const endpoint = await call('POST', '/v1/webhook-endpoints', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, url: receiver.url(`busy-${org.id}`), eventTypes: ['usage_event.created'] },
  });
  ok(endpoint, 201);
  receiver.addEndpoint(`busy-${org.id}`, endpoint.body.secret);
  for (let i = 0; i < 3; i++) {
    ok(
      await call('POST', '/v1/usage/events', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, idempotencyKey: `order-${i}`, eventType: 'api.call', quantity: i + 1 },
      }),
      201,
    );
  }
  // The events' deliveries are sent and their attempts recorded.
  await waitFor('usage webhooks', () => (receiver.processed(`busy-${org.id}`).length === 3 ? true : undefined));
  const [usageEvent] = await db.execute<{ id: string }>(sql`select id from usage_events where tenant_id = ${org.id} limit 1`);
  await db
    .insert(billingProviders)
    .values({ id: newId('billingProvider'), tenantId: org.id, provider: 'stripe', externalAccountId: 'cus_123', mode: 'sandbox' });
  const mappingId = newId('billingMapping');
  await db
    .insert(billingMappings)
    .values({ id: mappingId, tenantId: org.id, provider: 'stripe', eventType: 'api.call', providerItemId: 'meter_api' });
  await db.insert(billingSyncLogs).values({
    id: newId('billingSyncLog'),
    tenantId: org.id,
    provider: 'stripe',
    mappingId,
    usageEventId: usageEvent?.id as string,
    status: 'failed',
    attempts: 1,
    reason: 'provider unavailable',
  });
  await completedExport(admin, org, 'json');
  return { org, admin, member };
}

describe('deleting an organization', () => {
  it('erases every row of the organization at once and keeps exactly its audit entries and the platform-level record of the deletion', async () => {
    const db = server.services.db;
    const { org, admin, member } = await seedBusyOrganization();
    const before = await rowsPerTable(org.id);
    // The seed reached every kind of record the retention rule names.
    for (const table of [
      'memberships',
      'roles',
      'invitations',
      'api_keys',
      'applications',
      'usage_events',
      'usage_hourly',
      'subscriptions',
      'billing_providers',
      'billing_mappings',
      'billing_sync_logs',
      'webhook_endpoints',
      'webhook_events',
      'webhook_deliveries',
      'export_snapshots',
      'audit_logs',
    ]) {
      expect(before[table], table).toBeGreaterThan(0);
    }
    const deliveryIds = (
      await db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(eq(webhookDeliveries.tenantId, org.id))
    ).map((d) => d.id);
    expect(await db.$count(webhookDeliveryAttempts, inArray(webhookDeliveryAttempts.deliveryId, deliveryIds))).toBeGreaterThan(0);
    const auditBefore = await db.select().from(auditLogs).where(eq(auditLogs.tenantId, org.id));

    const deleted = await call('DELETE', `/v1/tenants/${org.id}`, { cookie: admin.cookie });
    expect(deleted.status, deleted.text).toBe(200);

    // Everything with the organization's tenant_id is gone, except the audit log, kept whole.
    const after = await rowsPerTable(org.id);
    const expected = Object.fromEntries(Object.keys(after).map((table) => [table, table === 'audit_logs' ? auditBefore.length : 0]));
    expect(after).toEqual(expected);
    expect((await db.select().from(auditLogs).where(eq(auditLogs.tenantId, org.id))).map((a) => a.id).sort()).toEqual(
      auditBefore.map((a) => a.id).sort(),
    );
    expect(await db.$count(webhookDeliveryAttempts, inArray(webhookDeliveryAttempts.deliveryId, deliveryIds))).toBe(0);
    // The people are not the organization's: they stay, signed in, in their own workspaces.
    expect(await db.$count(users, inArray(users.id, [admin.user.id, member.user.id]))).toBe(2);

    // One record of the deletion, platform-level (no organization to cascade from or to show it in).
    const records = await db
      .select()
      .from(auditLogs)
      .where(and(isNull(auditLogs.tenantId), eq(auditLogs.action, 'tenant.deleted'), eq(auditLogs.targetId, org.id)));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ actorType: 'user', actorId: admin.user.id, summary: { name: 'Busy Corp', slug: org.slug } });
    // Platform admins read it in the platform workspace's log; the deleting admin has no log to read it in.
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const log = await call('GET', `/v1/audit-logs?organization_slug=platform&target=${org.id}`, { cookie: platform.cookie });
    expect(log.status, log.text).toBe(200);
    expect(log.body.data.map((e: Json) => [e.action, e.tenantId, e.target.id])).toEqual([['tenant.deleted', null, org.id]]);
    expect((await call('GET', `/v1/audit-logs?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(404);
  });
});

describe('a platform admin exports any organization before it goes', () => {
  it('creates, reads and downloads the export of an organization it is not a member of; an outsider gets 404 on each', async () => {
    const db = server.services.db;
    const { org } = await seedBusyOrganization();
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const outsider = await seedSignedIn(db);

    const done = await completedExport(platform, org, 'json');
    expect(done.counts).toMatchObject({ organization: 1, usageEvents: 3, billingSyncLogs: 1, webhookEndpoints: 1 });
    const file = await call('GET', `/v1/exports/${done.id}/download`, { cookie: platform.cookie });
    expect(file.status, file.text.slice(0, 300)).toBe(200);
    const doc = JSON.parse(file.text) as Json;
    expect(doc.organization).toMatchObject({ id: org.id, slug: org.slug });
    expect(doc.usageEvents.map((e: Json) => e.idempotencyKey).sort()).toEqual(['order-0', 'order-1', 'order-2']);
    expect(doc.auditLogs.length).toBeGreaterThan(0);

    // Someone who is neither a member nor a platform admin learns nothing, on every export route.
    const refused = await call('POST', '/v1/export/all', {
      cookie: outsider.cookie,
      body: { organization_slug: org.slug, format: 'json' },
    });
    expect(refused.status, refused.text).toBe(404);
    expect(refused.body.error.code).toBe('not_found');
    expect((await call('GET', `/v1/exports?organization_slug=${org.slug}`, { cookie: outsider.cookie })).status).toBe(404);
    expect((await call('GET', `/v1/exports/${done.id}`, { cookie: outsider.cookie })).status).toBe(404);
    expect((await call('GET', `/v1/exports/${done.id}/download`, { cookie: outsider.cookie })).status).toBe(404);
    expect(
      await db.execute(sql`select 1 from export_snapshots where tenant_id = ${org.id} and requested_by = ${outsider.user.id}`),
    ).toHaveLength(0);

    // Then the platform admin deletes it: the export goes with it.
    expect((await call('DELETE', `/v1/tenants/${org.id}`, { cookie: platform.cookie })).status).toBe(200);
    expect((await call('GET', `/v1/exports/${done.id}`, { cookie: platform.cookie })).status).toBe(404);
  });
});

/** Queued `webhooks:send_detached` jobs of an organization, payload as stored (graphile's public view hides it). */
async function detachedJobs(tenantId: string): Promise<{ payload: string }[]> {
  return server.services.db.execute<{ payload: string }>(sql`
    select j.payload::text as payload from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'webhooks:send_detached' and j.payload->>'tenantId' = ${tenantId}`);
}

describe('tenant.deleted', () => {
  it("reaches the organization's subscribed endpoints after their rows are gone: signed, retried, never a plaintext secret in the queue", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db, { name: 'Farewell Ltd' });
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const name = `farewell-${org.id}`;
    const subscribed = await call('POST', '/v1/webhook-endpoints', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, url: receiver.url(name), eventTypes: ['tenant.deleted'] },
    });
    expect(subscribed.status, subscribed.text).toBe(201);
    receiver.addEndpoint(name, subscribed.body.secret);
    const other = `not-subscribed-${org.id}`;
    const unsubscribed = await call('POST', '/v1/webhook-endpoints', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, url: receiver.url(other), eventTypes: ['tenant.updated'] },
    });
    expect(unsubscribed.status, unsubscribed.text).toBe(201);
    receiver.addEndpoint(other, unsubscribed.body.secret);

    // The first attempt is held at the receiver (the job is then still in the queue), and refused.
    let attempts = 0;
    receiver.setPolicy((request) => (request.endpoint === name && ++attempts === 1 ? { hold: true } : { status: 200 }));
    try {
      expect((await call('DELETE', `/v1/tenants/${org.id}`, { cookie: admin.cookie })).status).toBe(200);
      await waitFor('the first attempt', () => (receiver.inFlightIds().some((id) => id.startsWith(`${name}/`)) ? true : undefined));
      // The endpoint, its event and its delivery are gone: the job carries what the send needs,
      // its secret sealed as the endpoint row held it, never in plain text.
      expect(await db.execute(sql`select 1 from webhook_endpoints where tenant_id = ${org.id}`)).toHaveLength(0);
      const jobs = await detachedJobs(org.id);
      expect(jobs).toHaveLength(1);
      expect(jobs[0]?.payload).not.toContain(subscribed.body.secret);
      expect(jobs[0]?.payload).not.toContain((subscribed.body.secret as string).slice('whsec_'.length));
      expect(JSON.parse(jobs[0]?.payload as string)).toMatchObject({ url: receiver.url(name), secretCiphertext: expect.any(String) });
      receiver.release(503);

      const delivered = await waitFor('the retried delivery', () => {
        const ok = receiver.requests.filter((r) => r.endpoint === name && r.verified);
        return ok.length >= 2 ? ok : undefined;
      });
      // Both attempts verified with the endpoint's secret (standardwebhooks), one webhook-id.
      expect(new Set(delivered.map((r) => r.webhookId)).size).toBe(1);
      expect(receiver.processed(name)).toHaveLength(1);
      expect(delivered[0]?.payload).toMatchObject({
        type: 'tenant.deleted',
        data: {
          object: 'tenant',
          id: org.id,
          organizationId: org.id,
          name: 'Farewell Ltd',
          slug: org.slug,
          actor: { type: 'user', id: admin.user.id },
        },
      });
      // Delivered: no further attempt is queued.
      await waitFor('the queue to empty', async () => {
        return (await detachedJobs(org.id)).length === 0 ? true : undefined;
      });
      expect(receiver.requests.filter((r) => r.endpoint === other)).toHaveLength(0);
    } finally {
      receiver.setPolicy(() => ({ status: 200 }));
    }
  });
});
