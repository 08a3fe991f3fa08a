import { EVENT_TYPES } from '@svc/contracts/events';
import { newId } from '@svc/contracts/ids';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { roles } from '@svc/db/schema/roles';
import { webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints, webhookEvents } from '@svc/db/schema/webhooks';
import { openWebhookSecret } from '@svc/jobs/webhooks/secrets';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedWebhookDelivery, seedWebhookEndpoint } from './webhooks.fixtures.ts';
import { MATRIX } from './webhooks.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  // Receivers in these tests are on loopback; the worker stays off so deliveries keep their state.
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;

/** Every answer of this file, to scan for secrets at the end. */
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
    body: opts.body !== undefined ? JSON.stringify(opts.body) : method === 'POST' || method === 'PATCH' ? '{}' : undefined,
  });
  const text = await res.text();
  answers.push({ route: `${method} ${path}`, text });
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text };
}

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function createEndpoint(cookie: string, body: Json) {
  return call('POST', '/v1/webhook-endpoints', { cookie, body });
}

async function endpointRow(id: string) {
  const [row] = await server.services.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id));
  return row;
}

async function auditOf(targetId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.targetId, targetId), eq(auditLogs.action, action)));
}

/** The queued dispatch jobs: recordEvent's job key, so at most one waits at a time. */
async function dispatchJobs(): Promise<{ key: string | null }[]> {
  return (await server.services.db.execute(
    sql`select key from graphile_worker.jobs where task_identifier = 'webhooks:dispatch'`,
  )) as unknown as { key: string | null }[];
}

async function clearDispatchJobs(): Promise<void> {
  await server.services.db.execute(sql`select graphile_worker.remove_job('webhooks:dispatch')`);
}

describeAuthMatrix('webhooks', () => server, MATRIX);

describe('GET /v1/webhook-event-types', () => {
  it('answers the catalog, in catalog order, each with a description; never webhook.test', async () => {
    const { admin } = await adminOf();
    const res = await call('GET', '/v1/webhook-event-types', { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.map((t: Json) => t.type)).toEqual([...EVENT_TYPES]);
    expect(res.json.nextCursor).toBeNull();
    expect(res.json.data.every((t: Json) => typeof t.description === 'string' && t.description.length > 0)).toBe(true);
    expect(res.text).not.toContain('webhook.test');
    expect((await call('GET', '/v1/webhook-event-types')).status).toBe(401);
  });
});

describe('POST /v1/webhook-endpoints', () => {
  it('answers 201 with the endpoint and its secret once; only a sealed secret is stored; audited without an event', async () => {
    const { db, org, admin } = await adminOf();
    const res = await createEndpoint(admin.cookie, {
      organization_slug: org.slug,
      url: 'http://127.0.0.1:9/hooks?team=a',
      eventTypes: ['user.updated', 'user.created', 'user.created'],
      description: '  Billing sync  ',
    });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.json).sort()).toEqual(['endpoint', 'secret']);
    const { endpoint, secret } = res.json;
    expect(secret).toMatch(SECRET);
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^wh_[0-9A-Za-z]{20}$/),
      url: 'http://127.0.0.1:9/hooks?team=a',
      description: 'Billing sync',
      eventTypes: ['user.created', 'user.updated'],
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      secretRotatedAt: null,
      previousSecretExpiresAt: null,
      // A new endpoint: nothing delivered yet.
      health: { attempted: 0, succeeded: 0, successRate: null, unsucceeded: 0, failing: false, lastError: null },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const row = await endpointRow(endpoint.id);
    expect(row?.tenantId).toBe(org.id);
    expect(row?.secretCiphertext).not.toBe(secret);
    expect(JSON.stringify(row)).not.toContain(secret);
    expect(JSON.stringify(row)).not.toContain(secret.slice('whsec_'.length, 20));
    // Sealed for this row: it opens to the secret with the endpoint's id, and not with another.
    expect(openWebhookSecret(server.services.secretBox, endpoint.id, row?.secretCiphertext ?? '')).toBe(secret);
    expect(() => openWebhookSecret(server.services.secretBox, newId('webhookEndpoint'), row?.secretCiphertext ?? '')).toThrow();

    const entries = await auditOf(endpoint.id, 'webhook_endpoint.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ tenantId: org.id, actorType: 'user', actorId: admin.user.id, targetType: 'webhook_endpoint' });
    // The host, not the URL (receivers often carry a token in the path or query).
    expect(entries[0]?.summary).toEqual({ host: '127.0.0.1:9', eventTypes: ['user.created', 'user.updated'] });
    expect(JSON.stringify(entries[0])).not.toContain(secret);
    // webhook_endpoint.* is not in the event catalog: no event.
    const events = await db.select().from(webhookEvents).where(eq(webhookEvents.tenantId, org.id));
    expect(events).toEqual([]);
  });

  it('refuses bad input, each with its code, and creates nothing', async () => {
    const { org, admin } = await adminOf();
    const good = { organization_slug: org.slug, url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created'] };
    const cases: [Json, string][] = [
      [{ ...good, eventTypes: [] }, 'validation_failed'],
      [{ ...good, eventTypes: undefined }, 'validation_failed'],
      [{ ...good, eventTypes: 'user.created' }, 'validation_failed'],
      [{ ...good, eventTypes: ['user.created', 'user.exploded'] }, 'unknown_event_type'],
      [{ ...good, eventTypes: ['webhook.test'] }, 'unknown_event_type'],
      [{ ...good, eventTypes: ['user.*'] }, 'unknown_event_type'],
      [{ ...good, url: undefined }, 'validation_failed'],
      [{ ...good, url: '' }, 'validation_failed'],
      [{ ...good, url: 'not a url' }, 'webhook_url_invalid'],
      [{ ...good, url: 'ftp://127.0.0.1/hook' }, 'webhook_url_invalid'],
      [{ ...good, url: 'javascript:alert(1)' }, 'webhook_url_invalid'],
      [{ ...good, url: 'http://user:pass@127.0.0.1/hook' }, 'webhook_url_invalid'],
      [{ ...good, url: 'http://127.0.0.1/hook#frag' }, 'webhook_url_invalid'],
      [{ ...good, url: `http://127.0.0.1/${'a'.repeat(2100)}` }, 'webhook_url_invalid'],
      // Link-local and cloud metadata stay refused even with WEBHOOK_ALLOW_PRIVATE.
      [{ ...good, url: 'http://169.254.169.254/latest/meta-data' }, 'webhook_url_not_allowed'],
      [{ ...good, url: 'http://[fe80::1]/hook' }, 'webhook_url_not_allowed'],
      [{ ...good, url: 'http://0.0.0.0/hook' }, 'webhook_url_not_allowed'],
      [{ ...good, description: 'x'.repeat(501) }, 'validation_failed'],
      [{ ...good, organization_slug: 'Not A Slug' }, 'validation_failed'],
    ];
    for (const [body, code] of cases) {
      const res = await createEndpoint(admin.cookie, body);
      expect(res.json.error?.code, `${JSON.stringify(body).slice(0, 120)} -> ${res.text}`).toBe(code);
      expect(res.status).toBe(400);
    }
    const list = await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.json.data).toEqual([]);
  });

  it('refuses a private address unless WEBHOOK_ALLOW_PRIVATE is set', async () => {
    const strict = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    try {
      const org = await seedOrganization(strict.services.db);
      const admin = await seedSignedIn(strict.services.db, { organization: org, roleKey: 'org_admin' });
      for (const url of ['http://127.0.0.1:9/hook', 'http://10.1.2.3/hook', 'http://[::1]/hook', 'http://localhost/hook']) {
        const res = await fetch(`${strict.url}/v1/webhook-endpoints`, {
          method: 'POST',
          headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: strict.services.config.publicUrl },
          body: JSON.stringify({ organization_slug: org.slug, url, eventTypes: ['user.created'] }),
        });
        const body = (await res.json()) as Json;
        expect(res.status, url).toBe(400);
        expect(body.error.code, url).toBe('webhook_url_not_allowed');
      }
    } finally {
      await strict.close();
    }
  });

  it('a custom role holding webhooks.manage is still not an org admin (403); an API key with the scope may create', async () => {
    const { db, org } = await adminOf();
    await db.insert(roles).values({
      id: newId('role'),
      tenantId: org.id,
      key: 'hooks',
      name: 'Hooks',
      permissions: ['webhooks.manage', 'webhooks.read'],
    });
    const hooks = await seedSignedIn(db, { organization: org, roleKey: 'hooks' });
    const body = { organization_slug: org.slug, url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created'] };
    const refused = await createEndpoint(hooks.cookie, body);
    expect(refused.status, refused.text).toBe(403);
    // ... but may read.
    expect((await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}`, { cookie: hooks.cookie })).status).toBe(200);

    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read', 'webhooks.manage'] });
    const created = await call('POST', '/v1/webhook-endpoints', {
      bearer: key.authorization,
      body: { ...body, organization_slug: undefined },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json.secret).toMatch(SECRET);
    expect((await auditOf(created.json.endpoint.id, 'webhook_endpoint.created'))[0]).toMatchObject({
      actorType: 'api_key',
      actorId: key.id,
    });
  });
});

describe('subscriptions stay within what the caller may read', () => {
  it('a webhooks.manage key cannot subscribe to events about what it cannot read: 403 naming them, nothing created', async () => {
    const { db, org } = await adminOf();
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.manage', 'webhooks.read', 'roles.read'] });
    const refused = await call('POST', '/v1/webhook-endpoints', {
      bearer: key.authorization,
      body: { url: 'http://127.0.0.1:9/hook', eventTypes: ['role.created', 'user.created', 'api_key.created'] },
    });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.json.error.code).toBe('forbidden');
    expect(refused.json.error.message).toContain('user.created (needs users.read)');
    expect(refused.json.error.message).toContain('api_key.created (needs api_keys.read)');
    expect(refused.json.error.message).not.toContain('role.created');
    expect(await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.tenantId, org.id))).toHaveLength(0);

    const created = await call('POST', '/v1/webhook-endpoints', {
      bearer: key.authorization,
      body: { url: 'http://127.0.0.1:9/hook', eventTypes: ['role.created'] },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.json.endpoint.id as string;

    // Nor by changing an endpoint's subscriptions ...
    const widened = await call('PATCH', `/v1/webhook-endpoints/${id}`, {
      bearer: key.authorization,
      body: { eventTypes: ['user.created'] },
    });
    expect(widened.status, widened.text).toBe(403);
    expect(widened.json.error.message).toContain('user.created');
    expect((await endpointRow(id))?.eventTypes).toEqual(['role.created']);
  });

  it('nor redirect or re-enable an endpoint whose events it cannot read; it may still describe or disable it', async () => {
    const { db, org } = await adminOf();
    const { id } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id, eventTypes: ['user.updated'] });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.manage', 'webhooks.read'] });
    const redirected = await call('PATCH', `/v1/webhook-endpoints/${id}`, {
      bearer: key.authorization,
      body: { url: 'http://127.0.0.1:11/mine' },
    });
    expect(redirected.status, redirected.text).toBe(403);
    expect(redirected.json.error.message).toContain('user.updated (needs users.read)');
    expect((await endpointRow(id))?.url).not.toBe('http://127.0.0.1:11/mine');
    const disabled = await call('PATCH', `/v1/webhook-endpoints/${id}`, {
      bearer: key.authorization,
      body: { enabled: false, description: 'paused' },
    });
    expect(disabled.status, disabled.text).toBe(200);
    const enabled = await call('PATCH', `/v1/webhook-endpoints/${id}`, { bearer: key.authorization, body: { enabled: true } });
    expect(enabled.status, enabled.text).toBe(403);
    expect((await endpointRow(id))?.enabled).toBe(false);
  });

  it('every event type of the catalog needs a read permission the org admin holds', async () => {
    const { admin } = await adminOf();
    const created = await createEndpoint(admin.cookie, { url: 'http://127.0.0.1:9/all', eventTypes: [...EVENT_TYPES] });
    expect(created.status, created.text).toBe(201);
  });
});

describe('endpoint reads, updates and deletes', () => {
  it('lists newest first with cursor paging; reads one; never a secret', async () => {
    const { org, admin } = await adminOf();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await createEndpoint(admin.cookie, {
        organization_slug: org.slug,
        url: `http://127.0.0.1:9/hook-${i}`,
        eventTypes: ['user.created'],
      });
      ids.push(res.json.endpoint.id);
    }
    const first = await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}&limit=2`, { cookie: admin.cookie });
    expect(first.status, first.text).toBe(200);
    expect(first.json.data.map((e: Json) => e.id)).toEqual([ids[2], ids[1]]);
    expect(first.json.nextCursor).toEqual(expect.any(String));
    const second = await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}&limit=2&cursor=${first.json.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(second.json.data.map((e: Json) => e.id)).toEqual([ids[0]]);
    expect(second.json.nextCursor).toBeNull();

    const one = await call('GET', `/v1/webhook-endpoints/${ids[0]}`, { cookie: admin.cookie });
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ id: ids[0], url: 'http://127.0.0.1:9/hook-0', enabled: true });
    expect(Object.keys(one.json)).not.toContain('secret');
    expect(one.text).not.toMatch(/whsec_|secretCiphertext|v1\.[A-Za-z0-9_-]{16}\./);
  });

  it('PATCH changes url, event types and description; disabling records manual; enabling clears a 410 (gone)', async () => {
    const { db, org, admin } = await adminOf();
    const { id } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const changed = await call('PATCH', `/v1/webhook-endpoints/${id}`, {
      cookie: admin.cookie,
      body: { url: 'http://127.0.0.1:10/new', eventTypes: ['role.updated', 'role.created'], description: 'Roles' },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json).toMatchObject({
      url: 'http://127.0.0.1:10/new',
      eventTypes: ['role.created', 'role.updated'],
      description: 'Roles',
    });

    const cleared = await call('PATCH', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie, body: { description: null } });
    expect(cleared.json.description).toBeNull();

    const disabled = await call('PATCH', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie, body: { enabled: false } });
    expect(disabled.json).toMatchObject({ enabled: false, disabledReason: 'manual', disabledAt: expect.any(String) });

    // The worker disables an endpoint whose receiver answers 410 Gone.
    await db.update(webhookEndpoints).set({ disabledReason: 'gone' }).where(eq(webhookEndpoints.id, id));
    const again = await call('PATCH', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie, body: { enabled: false } });
    expect(again.json.disabledReason).toBe('gone');
    const enabled = await call('PATCH', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie, body: { enabled: true } });
    expect(enabled.json).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null });
    const row = await endpointRow(id);
    expect(row).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null });

    const entries = await auditOf(id, 'webhook_endpoint.updated');
    expect(entries).toHaveLength(5);
    expect(entries.map((e) => e.summary)).toContainEqual({ changes: { enabled: { from: false, to: true } }, wasDisabledFor: 'gone' });
  });

  it('PATCH refuses bad input with its code and changes nothing', async () => {
    const { db, org, admin } = await adminOf();
    const { id } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const before = await endpointRow(id);
    const cases: [Json, string][] = [
      [{}, 'validation_failed'],
      [{ eventTypes: [] }, 'validation_failed'],
      [{ eventTypes: ['nope.nope'] }, 'unknown_event_type'],
      [{ url: 'gopher://127.0.0.1' }, 'webhook_url_invalid'],
      [{ url: 'http://169.254.169.254/' }, 'webhook_url_not_allowed'],
      [{ description: 'x'.repeat(501) }, 'validation_failed'],
      [{ enabled: 'false' }, 'validation_failed'],
    ];
    for (const [body, code] of cases) {
      const res = await call('PATCH', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie, body });
      expect(res.json.error?.code, `${JSON.stringify(body)} -> ${res.text}`).toBe(code);
    }
    expect(await endpointRow(id)).toEqual(before);
    const badId = await call('PATCH', '/v1/webhook-endpoints/whd_00000000000000000000', {
      cookie: admin.cookie,
      body: { description: 'x' },
    });
    expect(badId.status).toBe(400);
    const unknown = await call('PATCH', `/v1/webhook-endpoints/${newId('webhookEndpoint')}`, {
      cookie: admin.cookie,
      body: { description: 'x' },
    });
    expect(unknown.status).toBe(404);
  });

  it('deleting the organization removes its deliveries and their attempts', async () => {
    const { db, org, admin } = await adminOf();
    const { id } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const delivery = await seedWebhookDelivery(db, { tenantId: org.id, endpointId: id, status: 'failed', attempts: 2 });
    expect(await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, delivery.id))).toHaveLength(2);
    expect((await call('DELETE', `/v1/tenants/${org.id}`, { cookie: admin.cookie })).status).toBe(200);
    expect(await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.tenantId, org.id))).toEqual([]);
    expect(await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.tenantId, org.id))).toEqual([]);
  });

  it('DELETE removes the endpoint with its deliveries and attempts; a second delete is 404', async () => {
    const { db, org, admin } = await adminOf();
    const { id } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const delivery = await seedWebhookDelivery(db, { tenantId: org.id, endpointId: id, status: 'failed', attempts: 2 });
    const res = await call('DELETE', `/v1/webhook-endpoints/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ id, deleted: true });
    expect(await endpointRow(id)).toBeUndefined();
    expect(await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery.id))).toEqual([]);
    expect(await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, delivery.id))).toEqual([]);
    expect(await auditOf(id, 'webhook_endpoint.deleted')).toHaveLength(1);
    expect((await call('DELETE', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie })).status).toBe(404);
  });
});

describe('POST /v1/webhook-endpoints/{id}/rotate-secret', () => {
  it('returns a new secret once; the previous one keeps signing for the grace period', async () => {
    const { org, admin } = await adminOf();
    const created = await createEndpoint(admin.cookie, {
      organization_slug: org.slug,
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['user.created'],
    });
    const { endpoint, secret: first } = created.json;
    const before = await endpointRow(endpoint.id);
    const startedAt = Date.now();
    const res = await call('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.json).sort()).toEqual(['endpoint', 'secret']);
    const second = res.json.secret as string;
    expect(second).toMatch(SECRET);
    expect(second).not.toBe(first);
    const grace = server.services.config.webhooks.secretGraceMs;
    expect(grace).toBeGreaterThan(0);
    const expiresAt = Date.parse(res.json.endpoint.previousSecretExpiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(startedAt + grace - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + grace + 1000);
    expect(res.json.endpoint.secretRotatedAt).toEqual(expect.any(String));

    const row = await endpointRow(endpoint.id);
    const box = server.services.secretBox;
    expect(openWebhookSecret(box, endpoint.id, row?.secretCiphertext ?? '')).toBe(second);
    // The old ciphertext moved, untouched, to previous_secret_ciphertext.
    expect(row?.previousSecretCiphertext).toBe(before?.secretCiphertext);
    expect(openWebhookSecret(box, endpoint.id, row?.previousSecretCiphertext ?? '')).toBe(first);
    expect(JSON.stringify(row)).not.toContain(second);

    // A second rotation drops the first secret.
    const third = await call('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { cookie: admin.cookie });
    const after = await endpointRow(endpoint.id);
    expect(openWebhookSecret(box, endpoint.id, after?.previousSecretCiphertext ?? '')).toBe(second);
    expect(openWebhookSecret(box, endpoint.id, after?.secretCiphertext ?? '')).toBe(third.json.secret);

    const entries = await auditOf(endpoint.id, 'webhook_endpoint.secret_rotated');
    expect(entries).toHaveLength(2);
    expect(JSON.stringify(entries)).not.toMatch(/whsec_[A-Za-z0-9]/);
  });

  it('with WEBHOOK_SECRET_GRACE_HOURS=0 the previous secret stops at once', async () => {
    const strict = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_SECRET_GRACE_HOURS: '0' } });
    try {
      const db = strict.services.db;
      const org = await seedOrganization(db);
      const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
      const { id } = await seedWebhookEndpoint(db, strict.services.secretBox, { tenantId: org.id });
      const res = await fetch(`${strict.url}/v1/webhook-endpoints/${id}/rotate-secret`, {
        method: 'POST',
        headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: strict.services.config.publicUrl },
        body: '{}',
      });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(200);
      expect(body.endpoint.previousSecretExpiresAt).toBeNull();
      const [row] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id));
      expect(row?.previousSecretCiphertext).toBeNull();
    } finally {
      await strict.close();
    }
  });
});

describe('POST /v1/webhook-endpoints/{id}/test', () => {
  it('records a webhook.test event for this endpoint only, one pending delivery, and wakes the dispatcher', async () => {
    const { db, org, admin } = await adminOf();
    const box = server.services.secretBox;
    const target = await seedWebhookEndpoint(db, box, { tenantId: org.id, eventTypes: ['user.created'] });
    const sibling = await seedWebhookEndpoint(db, box, { tenantId: org.id, eventTypes: ['user.created'] });
    await clearDispatchJobs();

    const res = await call('POST', `/v1/webhook-endpoints/${target.id}/test`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(202);
    expect(res.json.delivery).toMatchObject({
      id: expect.stringMatching(/^whd_/),
      endpointId: target.id,
      eventId: expect.stringMatching(/^evt_/),
      eventType: 'webhook.test',
      status: 'pending',
      attemptCount: 0,
      nextAttemptAt: expect.any(String),
    });
    const events = await db.select().from(webhookEvents).where(eq(webhookEvents.tenantId, org.id));
    expect(events.map((e) => e.type)).toEqual(['webhook.test']);
    expect(events[0]?.data).toMatchObject({ object: 'webhook_endpoint', id: target.id, organizationId: org.id });
    const deliveries = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, res.json.delivery.eventId));
    expect(deliveries.map((d) => d.endpointId)).toEqual([target.id]);
    expect(deliveries.some((d) => d.endpointId === sibling.id)).toBe(false);
    // One dispatch job under recordEvent's key (replace mode: never one per delivery).
    expect(await dispatchJobs()).toEqual([{ key: 'webhooks:dispatch' }]);
    await call('POST', `/v1/webhook-endpoints/${target.id}/test`, { cookie: admin.cookie });
    expect(await dispatchJobs()).toHaveLength(1);
    expect(await auditOf(target.id, 'webhook_endpoint.tested')).toHaveLength(2);
  });

  it('a disabled endpoint is refused with 409 webhook_endpoint_disabled, and nothing is recorded', async () => {
    const { db, org, admin } = await adminOf();
    const { id } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id, enabled: false, disabledReason: 'gone' });
    const res = await call('POST', `/v1/webhook-endpoints/${id}/test`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(409);
    expect(res.json.error.code).toBe('webhook_endpoint_disabled');
    expect(await db.select().from(webhookEvents).where(eq(webhookEvents.tenantId, org.id))).toEqual([]);
    expect(await auditOf(id, 'webhook_endpoint.tested')).toEqual([]);
  });
});

describe('GET /v1/webhook-deliveries', () => {
  it('filters by endpoint, status and event type, newest first, with cursor paging', async () => {
    const { db, org, admin } = await adminOf();
    const box = server.services.secretBox;
    const a = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const b = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const t0 = Date.now() - 60_000;
    const at = (s: number) => new Date(t0 + s * 1000);
    const d1 = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: a.id,
      status: 'failed',
      type: 'user.created',
      createdAt: at(1),
    });
    const d2 = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: a.id,
      status: 'succeeded',
      type: 'user.updated',
      createdAt: at(2),
    });
    const d3 = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: b.id,
      status: 'retrying',
      type: 'user.created',
      createdAt: at(3),
    });
    const d4 = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: b.id,
      status: 'failed',
      type: 'role.created',
      createdAt: at(4),
    });
    const list = async (query: string) => {
      const res = await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}${query}`, { cookie: admin.cookie });
      expect(res.status, res.text).toBe(200);
      return res.json as { data: Json[]; nextCursor: string | null };
    };
    expect((await list('')).data.map((d) => d.id)).toEqual([d4.id, d3.id, d2.id, d1.id]);
    expect((await list(`&endpoint_id=${a.id}`)).data.map((d) => d.id)).toEqual([d2.id, d1.id]);
    expect((await list('&status=failed')).data.map((d) => d.id)).toEqual([d4.id, d1.id]);
    expect((await list('&event_type=user.created')).data.map((d) => d.id)).toEqual([d3.id, d1.id]);
    expect((await list(`&endpoint_id=${b.id}&status=retrying&event_type=user.created`)).data.map((d) => d.id)).toEqual([d3.id]);

    const row = (await list(`&endpoint_id=${b.id}&status=retrying`)).data[0];
    expect(row).toEqual({
      id: d3.id,
      endpointId: b.id,
      eventId: d3.eventId,
      eventType: 'user.created',
      replay: false,
      status: 'retrying',
      attemptCount: 1,
      nextAttemptAt: expect.any(String),
      lastAttemptAt: expect.any(String),
      lastStatusCode: 500,
      lastOutcome: 'http_error',
      succeededAt: null,
      createdAt: at(3).toISOString(),
      updatedAt: expect.any(String),
    });

    const page1 = await list('&limit=3');
    expect(page1.data.map((d) => d.id)).toEqual([d4.id, d3.id, d2.id]);
    const page2 = await list(`&limit=3&cursor=${page1.nextCursor}`);
    expect(page2.data.map((d) => d.id)).toEqual([d1.id]);
    expect(page2.nextCursor).toBeNull();
    // A cursor continues only the list it came from.
    const replayed = await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}&status=failed&cursor=${page1.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(replayed.status).toBe(400);
    expect(replayed.json.error.code).toBe('validation_failed');
  });

  it('refuses bad filters with their codes; an endpoint of another organization is 404', async () => {
    const { db, org, admin } = await adminOf();
    const other = await seedOrganization(db);
    const foreign = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: other.id });
    const cases: [string, number, string][] = [
      ['&status=exploded', 400, 'validation_failed'],
      ['&endpoint_id=whd_00000000000000000000', 400, 'validation_failed'],
      ['&event_type=user.exploded', 400, 'unknown_event_type'],
      ['&limit=0', 400, 'validation_failed'],
      ['&limit=201', 400, 'validation_failed'],
      ['&cursor=garbage', 400, 'validation_failed'],
      [`&endpoint_id=${foreign.id}`, 404, 'not_found'],
      [`&endpoint_id=${newId('webhookEndpoint')}`, 404, 'not_found'],
    ];
    for (const [query, status, code] of cases) {
      const res = await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}${query}`, { cookie: admin.cookie });
      expect(res.status, `${query} -> ${res.text}`).toBe(status);
      expect(res.json.error.code).toBe(code);
    }
    // webhook.test is a valid filter (the test route sends it).
    const tests = await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}&event_type=webhook.test`, {
      cookie: admin.cookie,
    });
    expect(tests.status).toBe(200);
  });
});

describe('GET /v1/webhook-deliveries/{id}', () => {
  it('answers the delivery with its attempts (oldest first) and its event', async () => {
    const { db, org, admin } = await adminOf();
    const { id: endpointId } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const d = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'retrying', attempts: 3 });
    const res = await call('GET', `/v1/webhook-deliveries/${d.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id: d.id, endpointId, status: 'retrying', attemptCount: 3 });
    expect(res.json.attempts.map((a: Json) => a.attemptNumber)).toEqual([1, 2, 3]);
    expect(res.json.attempts[0]).toEqual({
      attemptNumber: 1,
      startedAt: expect.any(String),
      durationMs: 12,
      statusCode: 500,
      outcome: 'http_error',
      error: 'the receiver answered HTTP 500',
      responseExcerpt: 'internal error',
    });
    expect(res.json.event).toEqual({
      id: d.eventId,
      type: 'user.created',
      createdAt: expect.any(String),
      data: { object: 'user', id: 'usr_x' },
    });
    // The worker's claim is internal.
    expect(res.text).not.toMatch(/lockedUntil|lockedBy|signature/);
  });
});

describe('POST /v1/webhook-deliveries/{id}/retry', () => {
  it('moves a failed delivery to pending, due now, keeping its attempts, and wakes the dispatcher', async () => {
    const { db, org, admin } = await adminOf();
    const { id: endpointId } = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const d = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'failed', attempts: 8 });
    await clearDispatchJobs();
    const before = Date.now();
    const res = await call('POST', `/v1/webhook-deliveries/${d.id}/retry?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id: d.id, status: 'pending', attemptCount: 8, lastOutcome: 'http_error' });
    expect(Date.parse(res.json.nextAttemptAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(res.json.nextAttemptAt)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, d.id))).toHaveLength(8);
    expect(await dispatchJobs()).toEqual([{ key: 'webhooks:dispatch' }]);
    const entries = await auditOf(d.id, 'webhook_delivery.retried');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.summary).toMatchObject({ previousStatus: 'failed', endpointId });

    // A retrying one too (without waiting for its next attempt).
    const r = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'retrying' });
    const retried = await call('POST', `/v1/webhook-deliveries/${r.id}/retry`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(retried.json.status).toBe('pending');
  });

  it('any other state, an attempt in flight or a disabled endpoint: 409 with its code, nothing changed', async () => {
    const { db, org, admin } = await adminOf();
    const box = server.services.secretBox;
    const { id: endpointId } = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const pending = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'pending' });
    const succeeded = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'succeeded' });
    const inFlight = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId,
      status: 'retrying',
      lockedUntil: new Date(Date.now() + 60_000),
    });
    const off = await seedWebhookEndpoint(db, box, { tenantId: org.id, enabled: false });
    const ofDisabled = await seedWebhookDelivery(db, { tenantId: org.id, endpointId: off.id, status: 'failed' });
    const cases: [string, string][] = [
      [pending.id, 'webhook_delivery_not_retryable'],
      [succeeded.id, 'webhook_delivery_not_retryable'],
      [inFlight.id, 'webhook_delivery_not_retryable'],
      [ofDisabled.id, 'webhook_endpoint_disabled'],
    ];
    for (const [id, code] of cases) {
      const [before] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
      const res = await call('POST', `/v1/webhook-deliveries/${id}/retry`, { cookie: admin.cookie });
      expect(res.status, res.text).toBe(409);
      expect(res.json.error.code).toBe(code);
      const [after] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
      expect(after).toEqual(before);
    }
    const slugs = await call('POST', `/v1/webhook-deliveries/${pending.id}/retry?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
      body: { organization_slug: 'another-org' },
    });
    expect(slugs.status).toBe(400);
  });
});

describe('endpoint health and POST /v1/webhook-endpoints/{id}/retry-failed', () => {
  it('an endpoint whose receiver fails shows failing, its success rate and last error over the last 24 hours', async () => {
    const { db, org, admin } = await adminOf();
    const box = server.services.secretBox;
    const failing = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const healthy = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const quiet = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const hourAgo = new Date(Date.now() - 3_600_000);
    await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: failing.id,
      status: 'succeeded',
      createdAt: new Date(hourAgo.getTime() - 60_000),
    });
    const lastFailed = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: failing.id,
      status: 'failed',
      attempts: 3,
      createdAt: hourAgo,
    });
    await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: failing.id,
      status: 'retrying',
      attempts: 1,
      createdAt: new Date(hourAgo.getTime() - 30_000),
    });
    // Older than the window: not counted.
    await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: failing.id,
      status: 'failed',
      createdAt: new Date(Date.now() - 30 * 3_600_000),
    });
    await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId: healthy.id,
      status: 'failed',
      createdAt: new Date(hourAgo.getTime() - 60_000),
    });
    await seedWebhookDelivery(db, { tenantId: org.id, endpointId: healthy.id, status: 'succeeded', createdAt: hourAgo });

    const list = await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.status, list.text).toBe(200);
    const byId = new Map<string, Json>(list.json.data.map((e: Json) => [e.id, e.health]));
    expect(byId.get(failing.id)).toMatchObject({ attempted: 3, succeeded: 1, unsucceeded: 2, failing: true });
    expect(byId.get(failing.id)?.successRate).toBeCloseTo(1 / 3);
    expect(byId.get(failing.id)?.lastError).toMatchObject({
      deliveryId: lastFailed.id,
      statusCode: 500,
      outcome: 'http_error',
      error: 'the receiver answered HTTP 500',
    });
    expect(Date.parse(byId.get(failing.id)?.lastError.at)).toBe(hourAgo.getTime() + 3000);
    // A failure, then a success: recovered, not failing, the error still shown.
    expect(byId.get(healthy.id)).toMatchObject({ attempted: 2, succeeded: 1, successRate: 0.5, failing: false });
    expect(byId.get(healthy.id)?.lastError).not.toBeNull();
    expect(byId.get(quiet.id)).toEqual({ attempted: 0, succeeded: 0, successRate: null, unsucceeded: 0, failing: false, lastError: null });
    const one = await call('GET', `/v1/webhook-endpoints/${failing.id}`, { cookie: admin.cookie });
    expect(one.json.health).toEqual(byId.get(failing.id));
  });

  it("moves the endpoint's failed and retrying deliveries back to pending together, wakes the dispatcher, audits the count", async () => {
    const { db, org, admin } = await adminOf();
    const box = server.services.secretBox;
    const { id: endpointId } = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const other = await seedWebhookEndpoint(db, box, { tenantId: org.id });
    const failed = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'failed', attempts: 8 });
    const retrying = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'retrying', attempts: 2 });
    const succeeded = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'succeeded' });
    const inFlight = await seedWebhookDelivery(db, {
      tenantId: org.id,
      endpointId,
      status: 'retrying',
      lockedUntil: new Date(Date.now() + 60_000),
    });
    const elsewhere = await seedWebhookDelivery(db, { tenantId: org.id, endpointId: other.id, status: 'failed' });
    await clearDispatchJobs();

    const res = await call('POST', `/v1/webhook-endpoints/${endpointId}/retry-failed?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(res.status, res.text).toBe(202);
    // The one in flight is left to its attempt, and still counts as waiting.
    expect(res.json).toEqual({ endpointId, count: 2, more: true });
    const statusOf = async (id: string) => (await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)))[0];
    expect(await statusOf(failed.id)).toMatchObject({ status: 'pending', attemptCount: 8 });
    expect(await statusOf(retrying.id)).toMatchObject({ status: 'pending', attemptCount: 2 });
    expect((await statusOf(succeeded.id))?.status).toBe('succeeded');
    expect((await statusOf(inFlight.id))?.status).toBe('retrying');
    expect((await statusOf(elsewhere.id))?.status).toBe('failed');
    expect(await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, failed.id))).toHaveLength(8);
    expect(await dispatchJobs()).toEqual([{ key: 'webhooks:dispatch' }]);
    const entries = await auditOf(endpointId, 'webhook_endpoint.failed_retried');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.summary).toEqual({ host: '127.0.0.1:9', count: 2 });

    // Nothing left to move: 202 with count 0.
    await db.update(webhookDeliveries).set({ lockedUntil: null, status: 'succeeded' }).where(eq(webhookDeliveries.id, inFlight.id));
    const again = await call('POST', `/v1/webhook-endpoints/${endpointId}/retry-failed`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(again.json).toEqual({ endpointId, count: 0, more: false });
  });

  it('a disabled endpoint is 409 webhook_endpoint_disabled, nothing moved; a member without the role is 403', async () => {
    const { db, org, admin } = await adminOf();
    const off = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id, enabled: false });
    const d = await seedWebhookDelivery(db, { tenantId: org.id, endpointId: off.id, status: 'failed' });
    const res = await call('POST', `/v1/webhook-endpoints/${off.id}/retry-failed`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(409);
    expect(res.json.error.code).toBe('webhook_endpoint_disabled');
    expect((await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, d.id)))[0]?.status).toBe('failed');
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const refused = await call('POST', `/v1/webhook-endpoints/${off.id}/retry-failed`, { cookie: member.cookie });
    expect(refused.status).toBe(403);
  });
});

describe('cross-tenant ids', () => {
  it('every {id} route answers 404, the same body as an unknown id, to an admin of another organization', async () => {
    const { db, org } = await adminOf();
    const outsiderOrg = await seedOrganization(db);
    const outsider = await seedSignedIn(db, { organization: outsiderOrg, roleKey: 'org_admin' });
    const outsiderKey = await seedApiKey(db, { tenantId: outsiderOrg.id, scopes: ['webhooks.read', 'webhooks.manage'] });
    const endpoint = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id });
    const delivery = await seedWebhookDelivery(db, { tenantId: org.id, endpointId: endpoint.id, status: 'failed' });
    const routes: [string, (id: string) => string, Json | undefined, string][] = [
      ['GET', (id) => `/v1/webhook-endpoints/${id}`, undefined, 'wh'],
      ['PATCH', (id) => `/v1/webhook-endpoints/${id}`, { enabled: false }, 'wh'],
      ['DELETE', (id) => `/v1/webhook-endpoints/${id}`, undefined, 'wh'],
      ['POST', (id) => `/v1/webhook-endpoints/${id}/rotate-secret`, {}, 'wh'],
      ['POST', (id) => `/v1/webhook-endpoints/${id}/test`, {}, 'wh'],
      ['POST', (id) => `/v1/webhook-endpoints/${id}/retry-failed`, {}, 'wh'],
      ['GET', (id) => `/v1/webhook-deliveries/${id}`, undefined, 'whd'],
      ['POST', (id) => `/v1/webhook-deliveries/${id}/retry`, {}, 'whd'],
    ];
    for (const [method, path, body, kind] of routes) {
      const real = kind === 'wh' ? endpoint.id : delivery.id;
      const unknown = kind === 'wh' ? newId('webhookEndpoint') : newId('webhookDelivery');
      for (const auth of [{ cookie: outsider.cookie }, { bearer: outsiderKey.authorization }]) {
        const foreign = await call(method, path(real), { ...auth, body });
        const missing = await call(method, path(unknown), { ...auth, body });
        expect(foreign.status, `${method} ${path(real)}: ${foreign.text}`).toBe(404);
        expect(missing.status).toBe(404);
        expect(foreign.json.error.message).toBe(missing.json.error.message);
        expect(foreign.text).not.toContain(org.slug);
        // Naming the outsider's own organization does not help either.
        const sep = path(real).includes('?') ? '&' : '?';
        const named = await call(method, `${path(real)}${sep}organization_slug=${outsiderOrg.slug}`, { ...auth, body });
        expect(named.status, named.text).toBe(404);
      }
    }
    // Nothing changed.
    expect(await endpointRow(endpoint.id)).toMatchObject({ enabled: true, secretRotatedAt: null });
    const [d] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery.id));
    expect(d?.status).toBe('failed');
    expect(
      await db
        .select()
        .from(webhookEvents)
        .where(and(eq(webhookEvents.tenantId, org.id), eq(webhookEvents.type, 'webhook.test'))),
    ).toEqual([]);
  });
});

describe('secrets', () => {
  it('no answer of this file ever carried whsec_ outside the secret field of create and rotate', async () => {
    // Run after the other tests of this file (vitest runs a file's tests in order).
    const { org, admin } = await adminOf();
    const created = await createEndpoint(admin.cookie, {
      organization_slug: org.slug,
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['user.created'],
    });
    const id = created.json.endpoint.id;
    await call('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { cookie: admin.cookie });
    await call('POST', `/v1/webhook-endpoints/${id}/test`, { cookie: admin.cookie });
    await call('GET', `/v1/webhook-endpoints/${id}`, { cookie: admin.cookie });
    await call('GET', `/v1/webhook-endpoints?organization_slug=${org.slug}`, { cookie: admin.cookie });
    const deliveries = await call('GET', `/v1/webhook-deliveries?organization_slug=${org.slug}`, { cookie: admin.cookie });
    await call('GET', `/v1/webhook-deliveries/${deliveries.json.data[0].id}`, { cookie: admin.cookie });
    await call('GET', `/v1/audit-logs?organization_slug=${org.slug}`, { cookie: admin.cookie });
    await call('GET', '/v1/openapi.json');

    let secretsSeen = 0;
    for (const { route, text } of answers) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      // The one place a secret may be: the top-level `secret` of a create or rotate answer.
      if (json && typeof json === 'object' && 'secret' in json && typeof json.secret === 'string' && json.secret.startsWith('whsec_')) {
        expect(route).toMatch(/^POST \/v1\/webhook-endpoints(\/wh_[0-9A-Za-z]{20}\/rotate-secret)?$/);
        secretsSeen++;
        const { secret: _shown, ...rest } = json as Record<string, unknown>;
        expect(JSON.stringify(rest), route).not.toContain('whsec_');
        continue;
      }
      expect(text, route).not.toMatch(/whsec_[A-Za-z0-9+/]/);
    }
    expect(secretsSeen).toBeGreaterThan(5);
  });
});
