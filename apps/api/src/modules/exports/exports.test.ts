import { createHash } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import type { Db } from '@svc/db/client';
import type { ExportFieldKind } from '@svc/db/export-section';
import { EXPORT_SECTIONS, insertExport, startExportBuild } from '@svc/db/queries/exports';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { apiKeys } from '@svc/db/schema/api-keys';
import { applications } from '@svc/db/schema/applications';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { billingMappings, billingProviders, billingSyncLogs } from '@svc/db/schema/billing';
import { emailDeliveries } from '@svc/db/schema/email-deliveries';
import { invitations } from '@svc/db/schema/invitations';
import { roles } from '@svc/db/schema/roles';
import { sessions } from '@svc/db/schema/sessions';
import { usageEvents, usageHourly } from '@svc/db/schema/usage';
import { webhookEndpoints, webhookEvents } from '@svc/db/schema/webhooks';
import type { JobContext } from '@svc/jobs/runner';
import { buildExport, EXPORT_BUILD_FAILED_MESSAGE } from '@svc/jobs/tasks/exports-build';
import { parse } from 'csv-parse/sync';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import type { RunningServer } from '../../server.ts';
import { seedWebhookDelivery } from '../webhooks/webhooks.fixtures.ts';
import { MATRIX } from './exports.matrix.ts';
import { CSV_COLUMNS, csvCell, EXPORT_HEADER_FIELDS } from './serialize.ts';

type Json = Record<string, any>;
type Reply = { status: number; body: Json; text: string; headers: Headers };

/** Runs the export worker in-process (WORKER_ENABLED), so POST /v1/export/all completes for real. */
let server: RunningServer;

async function call(
  method: 'GET' | 'POST' | 'HEAD',
  path: string,
  opts: { cookie?: string; authorization?: string; body?: unknown } = {},
): Promise<Reply> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method === 'POST' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
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
  return { status: res.status, body, text, headers: res.headers };
}

async function waitForStatus(cookie: string, id: string, status: string, timeoutMs = 20_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await call('GET', `/v1/exports/${id}`, { cookie });
    expect(reply.status, reply.text).toBe(200);
    if (reply.body.status === status) {
      return reply.body;
    }
    if (Date.now() > deadline) {
      throw new Error(`export ${id} is ${reply.body.status}, not ${status}, after ${timeoutMs} ms`);
    }
    await sleep(100);
  }
}

/** POST /v1/export/all, then wait for the worker to complete it. */
async function exportOf(admin: SignedIn, org: OrganizationRow, format: 'json' | 'csv'): Promise<Json> {
  const created = await call('POST', '/v1/export/all', { cookie: admin.cookie, body: { organization_slug: org.slug, format } });
  expect(created.status, created.text).toBe(202);
  expect(created.body).toEqual({ export: { id: expect.stringMatching(/^exp_[0-9A-Za-z]{20}$/), format, status: 'pending' } });
  return waitForStatus(admin.cookie, created.body.export.id, 'completed');
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

type Seeded = {
  org: OrganizationRow;
  admin: SignedIn;
  /** Every secret-shaped value svc holds for the organization: none may appear in an export. */
  secrets: string[];
  usageEventIds: string[];
};

/**
 * An organization with at least one row in every exported table, and every kind of secret:
 * an API key, an application secret key, a webhook endpoint with a rotated secret, an invitation
 * token, a queued email body (ciphertext, provider id and error text), sessions, usage event
 * request hashes, a billing sync failure reason, a webhook attempt's response excerpt.
 */
async function seedEverything(name = 'Everything Inc'): Promise<Seeded> {
  const db = server.services.db;
  const org = await seedOrganization(db, { name });
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin', name: 'Ada Admin' });
  const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member', name: 'Mo Member' });
  const secrets: string[] = [admin.token, member.token];
  for (const row of await db.select({ tokenHash: sessions.tokenHash }).from(sessions).where(eq(sessions.activeTenantId, org.id))) {
    secrets.push(row.tokenHash);
  }

  await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'auditor', name: 'Auditor', permissions: ['audit.read'] });

  const key = await seedApiKey(db, { tenantId: org.id, scopes: ['usage.write'], name: 'Backend key' });
  const [keyRow] = await db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
  secrets.push(key.secretKey, keyRow?.secretHash as string);

  const app = await call('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Storefront' } });
  expect(app.status, app.text).toBe(201);
  const [appRow] = await db.select().from(applications).where(eq(applications.id, app.body.application.id));
  secrets.push(app.body.secretKey, appRow?.secretKeyHash as string);

  const endpoint = await call('POST', '/v1/webhook-endpoints', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created', 'export.completed'] },
  });
  expect(endpoint.status, endpoint.text).toBe(201);
  const endpointId = endpoint.body.endpoint.id as string;
  const rotated = await call('POST', `/v1/webhook-endpoints/${endpointId}/rotate-secret?organization_slug=${org.slug}`, {
    cookie: admin.cookie,
  });
  expect(rotated.status, rotated.text).toBe(200);
  const [endpointRow] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId));
  secrets.push(
    endpoint.body.secret,
    rotated.body.secret,
    endpointRow?.secretCiphertext as string,
    endpointRow?.previousSecretCiphertext as string,
  );
  const domain = await call('POST', '/v1/domains', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, domain: 'Everything.example' },
  });
  expect(domain.status, domain.text).toBe(201);
  // The verification token is not a credential, but the export leaves it out all the same.
  secrets.push(String(domain.body.verification.value).split('=')[1] as string);
  const delivery = await seedWebhookDelivery(db, { tenantId: org.id, endpointId, status: 'failed', attempts: 2 });
  expect(delivery.id).toMatch(/^whd_/);

  const invitation = await call('POST', '/v1/invitations', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, email: 'new@example.com' },
  });
  expect(invitation.status, invitation.text).toBe(201);
  const [invitationRow] = await db.select().from(invitations).where(eq(invitations.id, invitation.body.invitation.id));
  secrets.push(invitation.body.invitationToken, invitation.body.inviteLink, invitationRow?.tokenHash as string);

  const body = server.services.secretBox.seal(JSON.stringify({ text: invitation.body.inviteLink }), 'email');
  await db.insert(emailDeliveries).values({
    id: newId('emailDelivery'),
    tenantId: org.id,
    kind: 'invitation',
    invitationId: invitation.body.invitation.id,
    recipient: 'new@example.com',
    subject: 'You are invited',
    bodyCiphertext: body,
    status: 'retrying',
    attemptCount: 1,
    provider: 'smtp',
    providerMessageId: 'provider-message-id-MARKER-71',
    lastError: 'provider error text MARKER-72 with smtp://user:pass@mail',
    metadata: { invitationId: invitation.body.invitation.id, roleKey: 'org_member', privateNote: 'PRIVATE-METADATA-MARKER-73' },
  });
  secrets.push(body, 'MARKER-71', 'MARKER-72', 'MARKER-73');

  const usageEventIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const id = newId('usageEvent');
    const requestHash = sha256(`request-${id}`);
    usageEventIds.push(id);
    secrets.push(requestHash);
    await db.insert(usageEvents).values({
      id,
      tenantId: org.id,
      idempotencyKey: `order-${i}`,
      requestHash,
      eventType: 'api.call',
      quantity: i + 1,
      occurredAt: new Date(Date.now() - 3_600_000),
      properties: { plan: 'pro', region: 'eu' },
      sourceId: key.id,
      channel: 'usage',
      createdAt: new Date(Date.now() - 60_000 + i),
    });
  }
  await db.insert(usageHourly).values({
    tenantId: org.id,
    eventType: 'api.call',
    hour: new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000),
    events: 3,
    quantity: 6,
  });
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
    usageEventId: usageEventIds[0] as string,
    status: 'failed',
    attempts: 1,
    reason: 'provider said MARKER-74: Invalid API Key provided: sk_test_4eC39Hq',
  });
  secrets.push('MARKER-74', 'sk_test_4eC39Hq');
  // A webhook attempt's response excerpt (what a receiver answered) is never exported.
  secrets.push('internal error');
  return { org, admin, secrets: secrets.filter(Boolean), usageEventIds };
}

async function download(admin: SignedIn, id: string, format?: 'json' | 'csv'): Promise<Reply> {
  const reply = await call('GET', `/v1/exports/${id}/download${format ? `?format=${format}` : ''}`, { cookie: admin.cookie });
  expect(reply.status, reply.text.slice(0, 500)).toBe(200);
  return reply;
}

/** What the CSV cell of a JSON value must be (serialize.ts's rules, spelled out again). */
function expectedCell(value: unknown, kind: ExportFieldKind): string {
  if (value === null || value === undefined) {
    return '';
  }
  if (typeof value === 'string') {
    return kind !== 'number' && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  }
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function parseCsv(text: string): string[][] {
  return parse(text, { record_delimiter: '\r\n', relax_column_count: false, skip_empty_lines: false }) as string[][];
}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKER_ENABLED: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' } });
}, 120_000);

afterAll(async () => {
  await server?.close();
});

describeAuthMatrix('exports', () => server, MATRIX);

describe('exports', () => {
  let seeded: Seeded;
  let jsonExport: Json;
  let doc: Json;

  beforeAll(async () => {
    seeded = await seedEverything();
    jsonExport = await exportOf(seeded.admin, seeded.org, 'json');
    const reply = await download(seeded.admin, jsonExport.id);
    doc = JSON.parse(reply.text) as Json;
  });

  it('POST /v1/export/all builds a snapshot with the worker: the record says completed, with counts and times', async () => {
    expect(Object.keys(jsonExport).sort()).toEqual([
      'asOf',
      'completedAt',
      'counts',
      'createdAt',
      'error',
      'format',
      'id',
      'startedAt',
      'status',
    ]);
    expect(jsonExport).toMatchObject({ format: 'json', status: 'completed', error: null });
    const created = Date.parse(jsonExport.createdAt);
    expect(Date.parse(jsonExport.startedAt)).toBeGreaterThanOrEqual(created);
    expect(Date.parse(jsonExport.completedAt)).toBeGreaterThanOrEqual(Date.parse(jsonExport.startedAt));
    expect(Date.parse(jsonExport.asOf)).toBeLessThanOrEqual(Date.parse(jsonExport.completedAt));
    expect(Object.keys(jsonExport.counts).sort()).toEqual(EXPORT_SECTIONS.map((s) => s.key).sort());
    expect(jsonExport.counts).toMatchObject({
      organization: 1,
      subscription: 1,
      members: 2,
      roles: 1,
      apiKeys: 1,
      applications: 1,
      usageEvents: 3,
    });
    // The list shows it, newest first.
    const list = await call('GET', `/v1/exports?organization_slug=${seeded.org.slug}`, { cookie: seeded.admin.cookie });
    expect(list.status).toBe(200);
    expect(list.body.data[0]).toEqual(jsonExport);
  });

  it('export.completed is recorded in the completing transaction, with a system audit entry, and delivered to subscribed endpoints', async () => {
    const db = server.services.db;
    const events = await db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, seeded.org.id), eq(webhookEvents.type, 'export.completed')));
    expect(events.map((e) => e.data)).toContainEqual(
      expect.objectContaining({
        object: 'export',
        id: jsonExport.id,
        organizationId: seeded.org.id,
        format: 'json',
        counts: jsonExport.counts,
      }),
    );
    const audit = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, seeded.org.id), eq(auditLogs.targetId, jsonExport.id)));
    expect(audit.map((a) => [a.action, a.actorType]).sort()).toEqual([
      ['export.completed', 'system'],
      ['export.created', 'user'],
    ]);
  });

  it('JSON: one document with every resource in order, exactly the allowlisted fields, counts matching the rows', async () => {
    expect(Object.keys(doc)).toEqual(['export', ...EXPORT_SECTIONS.map((s) => s.key)]);
    expect(Object.keys(doc.export)).toEqual(EXPORT_HEADER_FIELDS.map((f) => f.name));
    expect(doc.export).toMatchObject({
      id: jsonExport.id,
      organizationId: seeded.org.id,
      version: 1,
      asOf: jsonExport.asOf,
      counts: jsonExport.counts,
    });
    for (const section of EXPORT_SECTIONS) {
      const value = doc[section.key];
      const items: Json[] = section.shape === 'one' ? (value === null ? [] : [value]) : value;
      expect(Array.isArray(items), section.key).toBe(true);
      expect(items.length, section.key).toBe(jsonExport.counts[section.key]);
      for (const item of items) {
        expect(Object.keys(item), section.key).toEqual(section.fields.map((f) => f.name));
      }
    }
    expect(doc.organization).toMatchObject({ id: seeded.org.id, slug: seeded.org.slug, name: 'Everything Inc' });
    expect(doc.subscription).toMatchObject({ planKey: 'free', status: 'active' });
    expect(doc.members.map((m: Json) => m.email)).toContain(seeded.admin.user.email);
    expect(doc.members.find((m: Json) => m.id === seeded.admin.user.id)).toMatchObject({ roleKey: 'org_admin', name: 'Ada Admin' });
    expect(doc.apiKeys[0]).toMatchObject({ name: 'Backend key', scopes: ['usage.write'], status: 'active' });
    expect(doc.applications[0]).toMatchObject({ name: 'Storefront', status: 'active', publishableKey: expect.stringMatching(/^pk_live_/) });
    expect(doc.webhookEndpoints[0]).toMatchObject({
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['export.completed', 'user.created'],
      enabled: true,
    });
    expect(doc.domains).toEqual([expect.objectContaining({ domain: 'everything.example', verifiedAt: null, policy: 'none' })]);
    expect(doc.invitations[0]).toMatchObject({ email: 'new@example.com', status: 'pending', roleKey: 'org_member' });
    expect(doc.emailDeliveries[0]).toMatchObject({ status: 'retrying', attemptCount: 1, metadata: { roleKey: 'org_member' } });
    expect(Object.keys(doc.emailDeliveries[0].metadata).sort()).toEqual(['invitationId', 'roleKey']);
    expect(doc.billingSyncLogs[0]).toMatchObject({ provider: 'stripe', status: 'failed', attempts: 1 });
    expect(doc.usageHourly).toEqual([expect.objectContaining({ eventType: 'api.call', events: 3, quantity: 6 })]);
    expect(doc.usageEvents.map((e: Json) => e.id)).toEqual(seeded.usageEventIds);
    expect(doc.usageEvents[2]).toMatchObject({
      idempotencyKey: 'order-2',
      eventType: 'api.call',
      quantity: 3,
      properties: { plan: 'pro', region: 'eu' },
    });
    expect(doc.auditLogs.map((a: Json) => a.action)).toEqual(
      expect.arrayContaining(['application.created', 'webhook_endpoint.created', 'invitation.created', 'export.created']),
    );
    // The build's own entry is dated after the snapshot's instant: not in it.
    expect(doc.auditLogs.map((a: Json) => a.action)).not.toContain('export.completed');
    // ISO 8601 UTC timestamps, as the API writes them.
    expect(doc.usageEvents[0].createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('the download is an attachment with a safe filename, never cached; HEAD answers the headers only', async () => {
    const reply = await download(seeded.admin, jsonExport.id);
    expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(reply.headers.get('content-disposition')).toBe(`attachment; filename="svc-export-${seeded.org.slug}-${jsonExport.id}.json"`);
    expect(reply.headers.get('cache-control')).toBe('no-store');
    const csv = await download(seeded.admin, jsonExport.id, 'csv');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="svc-export-${seeded.org.slug}-${jsonExport.id}.csv"`);
    const head = await call('HEAD', `/v1/exports/${jsonExport.id}/download`, { cookie: seeded.admin.cookie });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('content-disposition')).toContain('attachment');
  });

  it('the snapshot is as of its instant: usage events recorded afterwards are not in it', async () => {
    await server.services.db.insert(usageEvents).values({
      id: newId('usageEvent'),
      tenantId: seeded.org.id,
      idempotencyKey: 'after-the-snapshot',
      requestHash: sha256('after'),
      eventType: 'api.call',
      occurredAt: new Date(),
      channel: 'usage',
    });
    const again = JSON.parse((await download(seeded.admin, jsonExport.id)).text) as Json;
    expect(again.usageEvents.map((e: Json) => e.id)).toEqual(seeded.usageEventIds);
    expect(again.usageEvents).toHaveLength(jsonExport.counts.usageEvents);
  });

  it('CSV: RFC 4180 that a standard parser reads; one header row; every row names its resource and equals the JSON document', async () => {
    const csvExport = await exportOf(seeded.admin, seeded.org, 'csv');
    const text = (await download(seeded.admin, csvExport.id)).text;
    const jsonText = (await download(seeded.admin, csvExport.id, 'json')).text;
    const json = JSON.parse(jsonText) as Json;
    expect(text.endsWith('\r\n')).toBe(true);
    const records = parseCsv(text);
    const [header, ...rows] = records;
    expect(header).toEqual([...CSV_COLUMNS]);
    expect(new Set(rows.map((r) => r.length))).toEqual(new Set([CSV_COLUMNS.length]));
    const resources = new Set(['export', ...EXPORT_SECTIONS.map((s) => s.resource)]);
    for (const row of rows) {
      expect(resources.has(row[0] as string), row[0]).toBe(true);
    }
    // The export row, then each section's rows in the JSON document's order, cell by cell.
    const expected: string[][] = [];
    const line = (resource: string, fields: readonly { name: string; kind: ExportFieldKind }[], item: Json) => {
      const cells = new Array<string>(CSV_COLUMNS.length).fill('');
      cells[0] = resource;
      for (const field of fields) {
        cells[CSV_COLUMNS.indexOf(field.name)] = expectedCell(item[field.name], field.kind);
      }
      return cells;
    };
    expected.push(line('export', EXPORT_HEADER_FIELDS, json.export));
    for (const section of EXPORT_SECTIONS) {
      const value = json[section.key];
      const items: Json[] = section.shape === 'one' ? (value === null ? [] : [value]) : value;
      for (const item of items) {
        expected.push(line(section.resource, section.fields, item));
      }
    }
    // JSON cells compare as JSON (PostgreSQL writes jsonb with spaces after `:` and `,`).
    const kinds = new Map<string, Map<string, ExportFieldKind>>(
      [['export', EXPORT_HEADER_FIELDS] as const, ...EXPORT_SECTIONS.map((s) => [s.resource, s.fields] as const)].map(
        ([resource, fields]) => [resource, new Map(fields.map((f) => [f.name, f.kind]))],
      ),
    );
    const comparable = (row: string[]) =>
      row.map((cell, i) =>
        cell !== '' && kinds.get(row[0] as string)?.get(CSV_COLUMNS[i] as string) === 'json' ? JSON.parse(cell) : cell,
      );
    expect(rows.map(comparable)).toEqual(expected.map(comparable));
    expect(rows.filter((r) => r[0] === 'usage_event').map((r) => r[CSV_COLUMNS.indexOf('id')])).toEqual(
      json.usageEvents.map((e: Json) => e.id),
    );
  });

  it('the same export downloads in either format: format= asks for the other; anything else is a 400', async () => {
    const csv = await download(seeded.admin, jsonExport.id, 'csv');
    expect(parseCsv(csv.text)[0]).toEqual([...CSV_COLUMNS]);
    const bad = await call('GET', `/v1/exports/${jsonExport.id}/download?format=xml`, { cookie: seeded.admin.cookie });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    const badId = await call('GET', '/v1/exports/exp_nope/download', { cookie: seeded.admin.cookie });
    expect(badId.status).toBe(400);
  });

  it('no secret-shaped value in any export, in either format: raw keys, hashes, tokens, ciphertexts, provider texts', async () => {
    const csvExport = await exportOf(seeded.admin, seeded.org, 'csv');
    const texts = [
      (await download(seeded.admin, jsonExport.id)).text,
      (await download(seeded.admin, jsonExport.id, 'csv')).text,
      (await download(seeded.admin, csvExport.id)).text,
      (await download(seeded.admin, csvExport.id, 'json')).text,
    ];
    expect(seeded.secrets.length).toBeGreaterThan(20);
    for (const text of texts) {
      // The export does contain the organization's data (so the scan is not vacuous).
      expect(text).toContain(seeded.usageEventIds[0]);
      for (const secret of seeded.secrets) {
        expect(text.includes(secret), `an export contains ${secret.slice(0, 12)}…`).toBe(false);
      }
      for (const shape of [
        'whsec_',
        'sk_live_',
        'svc_inv_',
        'token_hash',
        'tokenHash',
        'secretHash',
        'Ciphertext',
        'lastError',
        'requestHash',
      ]) {
        expect(text.includes(shape), `an export contains ${shape}`).toBe(false);
      }
    }
    // Nor the records themselves.
    const records = (await call('GET', `/v1/exports?organization_slug=${seeded.org.slug}`, { cookie: seeded.admin.cookie })).text;
    expect(records).toContain(jsonExport.id);
    for (const secret of seeded.secrets) {
      expect(records.includes(secret)).toBe(false);
    }
  });

  it('404 for another organization: the record, the download and with its own slug; nothing of the export leaks', async () => {
    const other = await seedOrganization(server.services.db);
    const outsider = await seedSignedIn(server.services.db, { organization: other, roleKey: 'org_admin' });
    for (const path of [
      `/v1/exports/${jsonExport.id}`,
      `/v1/exports/${jsonExport.id}/download`,
      `/v1/exports/${jsonExport.id}/download?organization_slug=${other.slug}`,
      `/v1/exports/${jsonExport.id}?organization_slug=${other.slug}`,
    ]) {
      const reply = await call('GET', path, { cookie: outsider.cookie });
      expect(reply.status, path).toBe(404);
      expect(reply.body.error.code).toBe('not_found');
      expect(reply.text).not.toContain(seeded.org.slug);
    }
    const key = await seedApiKey(server.services.db, { tenantId: other.id, scopes: [...PERMISSIONS] });
    expect((await call('GET', `/v1/exports/${jsonExport.id}/download`, { authorization: key.authorization })).status).toBe(404);
    // Unknown ids answer the same.
    expect((await call('GET', `/v1/exports/${newId('export')}/download`, { cookie: outsider.cookie })).status).toBe(404);
  });

  it('a tenant API key with exports.create downloads its own organization export', async () => {
    const key = await seedApiKey(server.services.db, { tenantId: seeded.org.id, scopes: ['exports.create'] });
    const reply = await call('GET', `/v1/exports/${jsonExport.id}/download`, { authorization: key.authorization });
    expect(reply.status).toBe(200);
    expect((JSON.parse(reply.text) as Json).export.id).toBe(jsonExport.id);
  });
});

describe('CSV formula neutralisation and quoting', () => {
  it('text cells starting with = + - @ tab or CR get a leading quote; commas, quotes and newlines round-trip; numbers are left alone', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db, { name: '=HYPERLINK("http://evil.example","click")' });
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin', name: '+1+1' });
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'minus', name: '-2+3', permissions: [] });
    await db.insert(webhookEndpoints).values({
      id: newId('webhookEndpoint'),
      tenantId: org.id,
      url: 'http://127.0.0.1:9/x',
      description: '@SUM(A1:A2)',
      eventTypes: ['user.created'],
      secretCiphertext: 'v1.a.b.c',
    });
    const tricky = 'Line one, "quoted"\r\nline two';
    await db.insert(usageEvents).values([
      {
        id: newId('usageEvent'),
        tenantId: org.id,
        idempotencyKey: '\tcmd',
        requestHash: 'h1',
        eventType: tricky,
        quantity: -5,
        occurredAt: new Date(),
        properties: { note: '=1+2' },
        sourceId: '\rcr',
        channel: 'usage',
        createdAt: new Date(Date.now() - 1000),
      },
    ]);
    const done = await exportOf(admin, org, 'csv');
    const text = (await download(admin, done.id)).text;
    const rows = parseCsv(text).slice(1);
    const col = (name: string) => CSV_COLUMNS.indexOf(name);
    const of = (resource: string) => rows.filter((r) => r[0] === resource);
    expect(of('organization')[0]?.[col('name')]).toBe('\'=HYPERLINK("http://evil.example","click")');
    expect(of('member')[0]?.[col('name')]).toBe("'+1+1");
    expect(of('role')[0]?.[col('name')]).toBe("'-2+3");
    expect(of('webhook_endpoint')[0]?.[col('description')]).toBe("'@SUM(A1:A2)");
    const event = of('usage_event')[0] as string[];
    expect(event[col('idempotencyKey')]).toBe("'\tcmd");
    expect(event[col('sourceId')]).toBe("'\rcr");
    expect(event[col('eventType')]).toBe(tricky);
    expect(event[col('quantity')]).toBe('-5');
    expect(JSON.parse(event[col('properties')] as string)).toEqual({ note: '=1+2' });
    // No cell of the file starts a formula (a negative number is a number, not a formula).
    for (const row of rows) {
      for (const cell of row) {
        expect(/^[=+\-@\t\r]/.test(cell) && !/^-\d+$/.test(cell), JSON.stringify(cell)).toBe(false);
      }
    }
    // The quoting on the wire: the quote doubled, the field quoted.
    expect(text).toContain('"Line one, ""quoted""\r\nline two"');
    // JSON keeps the values as they are.
    const json = JSON.parse((await download(admin, done.id, 'json')).text) as Json;
    expect(json.organization.name).toBe('=HYPERLINK("http://evil.example","click")');
    expect(json.usageEvents[0]).toMatchObject({ idempotencyKey: '\tcmd', quantity: -5, eventType: tricky });
  });

  it('csvCell: each rule on its own', () => {
    expect(csvCell('=1', 'text')).toBe("'=1");
    expect(csvCell('-1', 'number')).toBe('-1');
    expect(csvCell(-1, 'number')).toBe('-1');
    expect(csvCell('a,b', 'text')).toBe('"a,b"');
    expect(csvCell('say "hi"', 'text')).toBe('"say ""hi"""');
    expect(csvCell('+"x"', 'text')).toBe('"\'+""x"""');
    expect(csvCell(null, 'text')).toBe('');
    expect(csvCell(true, 'boolean')).toBe('true');
    expect(csvCell(['a', 'b'], 'json')).toBe('"[""a"",""b""]"');
    expect(csvCell('plain', 'text')).toBe('plain');
  });
});

describe('status transitions', () => {
  let org: OrganizationRow;
  let admin: SignedIn;

  beforeAll(async () => {
    org = await seedOrganization(server.services.db);
    admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
  });

  const logger = { debug: () => {}, info: () => {}, error: () => {} };
  const helpers = (attempts: number) => ({ job: { attempts, max_attempts: 5 } }) as unknown as Parameters<typeof buildExport>[2];
  // buildExport reads only `db` and `logger` of its context.
  const context = (db: Db) => ({ db, logger }) as unknown as JobContext;

  it('pending -> running -> completed: 409 export_not_ready until completed; a re-run changes nothing', async () => {
    const db = server.services.db;
    // No job: the export stays pending until this test builds it.
    const id = newId('export');
    await insertExport(db, { id, tenantId: org.id, format: 'json', requestedBy: admin.user.id });
    const pending = await call('GET', `/v1/exports/${id}/download`, { cookie: admin.cookie });
    expect(pending.status).toBe(409);
    expect(pending.body.error.code).toBe('export_not_ready');
    expect((await call('GET', `/v1/exports/${id}`, { cookie: admin.cookie })).body).toMatchObject({
      status: 'pending',
      counts: {},
      startedAt: null,
    });

    await startExportBuild(db, { tenantId: org.id, id });
    const running = await call('GET', `/v1/exports/${id}`, { cookie: admin.cookie });
    expect(running.body).toMatchObject({ status: 'running', completedAt: null, startedAt: expect.any(String) });
    expect((await call('GET', `/v1/exports/${id}/download`, { cookie: admin.cookie })).body.error.code).toBe('export_not_ready');

    await buildExport({ exportId: id, tenantId: org.id }, context(db), helpers(1));
    const completed = await waitForStatus(admin.cookie, id, 'completed', 1_000);
    expect(completed.counts.members).toBe(1);
    expect((await call('GET', `/v1/exports/${id}/download`, { cookie: admin.cookie })).status).toBe(200);

    // At-least-once: the job running again finds it completed and does nothing (no second event).
    await buildExport({ exportId: id, tenantId: org.id }, context(db), helpers(2));
    expect(await waitForStatus(admin.cookie, id, 'completed', 1_000)).toEqual(completed);
    const events = await db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, org.id), eq(webhookEvents.type, 'export.completed')));
    expect(events.filter((e) => (e.data as Json).id === id)).toHaveLength(1);
  });

  it('a build that keeps failing: retried (the job throws) until the last attempt marks it failed with a safe error; 409 export_failed', async () => {
    const db = server.services.db;
    const id = newId('export');
    await insertExport(db, { id, tenantId: org.id, format: 'csv', requestedBy: admin.user.id });
    let failures = 0;
    // The build's transaction fails (say the database drops the connection); the failure mark's does not.
    const flaky = new Proxy(db, {
      get(target, prop, receiver) {
        if (prop === 'transaction') {
          return (fn: (tx: unknown) => Promise<unknown>, opts?: unknown) => {
            if (opts !== undefined) {
              failures++;
              throw new Error('connection terminated unexpectedly: internal detail 10.0.0.7');
            }
            return target.transaction(fn as never);
          };
        }
        return Reflect.get(target, prop, receiver);
      },
    });
    await expect(buildExport({ exportId: id, tenantId: org.id }, context(flaky), helpers(1))).rejects.toThrow(/connection terminated/);
    expect((await call('GET', `/v1/exports/${id}`, { cookie: admin.cookie })).body.status).toBe('running');
    await buildExport({ exportId: id, tenantId: org.id }, context(flaky), helpers(5));
    expect(failures).toBe(2);
    const failed = await call('GET', `/v1/exports/${id}`, { cookie: admin.cookie });
    expect(failed.body).toMatchObject({
      status: 'failed',
      error: EXPORT_BUILD_FAILED_MESSAGE,
      counts: {},
      completedAt: expect.any(String),
    });
    expect(failed.text).not.toContain('10.0.0.7');
    const refused = await call('GET', `/v1/exports/${id}/download`, { cookie: admin.cookie });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('export_failed');
    expect(refused.text).not.toContain('10.0.0.7');
    const audit = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.targetId, id)));
    expect(audit.map((a) => [a.action, a.actorType])).toEqual([['export.failed', 'system']]);
  });
});

describe('streaming: backpressure, a client that leaves, the concurrency cap', () => {
  const EVENTS = 100_000;
  /**
   * Bytes of padding per event: the export (~110 MB) must be larger than everything the kernel
   * may buffer between PostgreSQL, svc and a client that stops reading (loopback TCP buffers
   * autotune up to 32 MB on each receiving side here), or the COPY could finish into the
   * buffers and a paused client would prove nothing.
   */
  const PAD = 1_000;
  let org: OrganizationRow;
  let admin: SignedIn;
  let exportId: string;

  beforeAll(async () => {
    const db = server.services.db;
    org = await seedOrganization(db);
    admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await server.services.sql`
      insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, properties, channel, created_at)
      select 'uev_' || lpad(g::text, 20, '0'), ${org.id}, 'key-' || g, md5(g::text), 'api.call', 1,
             now() - interval '1 day', jsonb_build_object('n', g, 'pad', repeat('x', ${PAD}::int)), 'usage',
             now() - interval '1 hour' + g * interval '1 millisecond'
      from generate_series(1, ${EVENTS}::int) g`;
    await server.services.sql`analyze usage_events`;
    exportId = (await exportOf(admin, org, 'json')).id;
  }, 120_000);

  /** The download transactions' backends (not their parallel workers) while their COPY runs. */
  async function downloadBackends(): Promise<{ state: string }[]> {
    return server.services.sql<{ state: string }[]>`
      select state from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
        and query like '%row_to_json%' and state in ('active', 'idle in transaction')`;
  }

  async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await sleep(50);
    }
  }

  /** A download whose client stops reading after the headers. */
  function pausedDownload(): Promise<{ res: http.IncomingMessage; req: http.ClientRequest }> {
    return new Promise((resolve, reject) => {
      const req = http.get(`${server.url}/v1/exports/${exportId}/download`, { headers: { cookie: admin.cookie } }, (res) => {
        res.pause();
        resolve({ res, req });
      });
      req.on('error', reject);
    });
  }

  it('a client that stops reading holds the COPY where it is (no table read ahead); it resumes and gets every row', async () => {
    const { res } = await pausedDownload();
    expect(res.statusCode).toBe(200);
    await waitFor(async () => (await downloadBackends()).length === 1, 'the download COPY');
    await sleep(2_000);
    // Still mid-table two seconds later: the server waited for the client instead of reading on.
    // `active`: the COPY is blocked on its send (had svc read it all, it would be idle in transaction).
    expect(await downloadBackends()).toEqual([{ state: 'active' }]);
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.resume();
    await new Promise((r) => res.on('end', r));
    const body = Buffer.concat(chunks);
    expect(body.length).toBeGreaterThan(EVENTS * PAD);
    const doc = JSON.parse(body.toString('utf8')) as Json;
    expect(doc.usageEvents).toHaveLength(EVENTS);
    expect(doc.usageEvents[EVENTS - 1]).toMatchObject({ idempotencyKey: `key-${EVENTS}`, properties: { n: EVENTS } });
    await waitFor(async () => (await downloadBackends()).length === 0, 'the transaction to end');
    // Reads and parses the whole ~110 MB export: the same longer budget as the cap test below.
  }, 90_000);

  it('a client that disconnects mid-stream: the COPY is cancelled and its transaction ends at once', async () => {
    const { req } = await pausedDownload();
    await waitFor(async () => (await downloadBackends()).length === 1, 'the download COPY');
    req.destroy();
    await waitFor(async () => (await downloadBackends()).length === 0, 'the transaction to end', 5_000);
    expect((await call('GET', '/healthz')).status).toBe(200);
    // Every pooled connection (the download's among them) answers, outside any transaction: none
    // is left mid-COPY, rolled back but confused, or in the download's snapshot.
    const pool = server.services.sql.options.max;
    const answers = await Promise.all(
      Array.from(
        { length: pool },
        () => server.services.sql<{ isolation: string }[]>`select pg_sleep(0.05), current_setting('transaction_isolation') as isolation`,
      ),
    );
    expect(new Set(answers.map(([a]) => a?.isolation))).toEqual(new Set(['read committed']));
  });

  // Reads and parses the whole 100,000-event CSV (~110 MB) at the end: a longer budget on a busy machine.
  it('at most MAX_CONCURRENT_DOWNLOADS stream at once per process; the next is told to retry (503, Retry-After)', async () => {
    const open = await Promise.all([1, 2, 3, 4].map(() => pausedDownload()));
    await waitFor(async () => (await downloadBackends()).length === 4, 'four download COPYs');
    const busy = await call('GET', `/v1/exports/${exportId}/download`, { cookie: admin.cookie });
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('5');
    expect(busy.body.error.code).toBe('service_unavailable');
    for (const { req } of open) {
      req.destroy();
    }
    await waitFor(async () => (await downloadBackends()).length === 0, 'the transactions to end');
    const res = await fetch(`${server.url}/v1/exports/${exportId}/download?format=csv`, { headers: { cookie: admin.cookie } });
    expect(res.status).toBe(200);
    const rows = parseCsv(await res.text());
    expect(rows.filter((r) => r[0] === 'usage_event')).toHaveLength(EVENTS);
  }, 90_000);
});
