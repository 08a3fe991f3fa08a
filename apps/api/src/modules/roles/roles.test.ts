import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { roles } from '@svc/db/schema/roles';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX } from './roles.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
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
      ...(opts.body !== undefined ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Json };
}

async function adminOfNewOrg() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

function auditOf(tenantId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, action)));
}

describeAuthMatrix('roles', () => server, MATRIX);

describe('GET /v1/roles', () => {
  it('lists the two system roles first, then custom roles newest first, paging over the custom ones', async () => {
    const { org, admin } = await adminOfNewOrg();
    for (const key of ['first', 'second', 'third']) {
      const created = await call('POST', '/v1/roles', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, key, name: `Role ${key}`, permissions: ['tenant.read'] },
      });
      expect(created.status).toBe(201);
    }
    const page1 = await call('GET', `/v1/roles?organization_slug=${org.slug}&limit=2`, { cookie: admin.cookie });
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((r: Json) => r.key)).toEqual(['org_admin', 'org_member', 'third', 'second']);
    expect(page1.body.data[0]).toMatchObject({ id: 'rol_org_admin', system: true, createdAt: null, permissions: [...PERMISSIONS].sort() });
    expect(page1.body.data[1]).toMatchObject({
      id: 'rol_org_member',
      system: true,
      permissions: ['members.read', 'subscription.read', 'tenant.read', 'usage.read'],
    });
    expect(page1.body.data[2]).toMatchObject({ system: false, name: 'Role third', permissions: ['tenant.read'] });
    expect(page1.body.data[2].id).toMatch(/^rol_[0-9A-Za-z]{20}$/);
    expect(typeof page1.body.nextCursor).toBe('string');

    const page2 = await call('GET', `/v1/roles?organization_slug=${org.slug}&limit=2&cursor=${page1.body.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(page2.status).toBe(200);
    expect(page2.body.data.map((r: Json) => r.key)).toEqual(['first']);
    expect(page2.body.nextCursor).toBeNull();
  });

  it('refuses malformed cursors, cursors of another organization and bad limits with 400', async () => {
    const { org, admin } = await adminOfNewOrg();
    const other = await seedOrganization(server.services.db);
    await server.services.db.insert(roles).values({ id: newId('role'), tenantId: other.id, key: 'a', name: 'A' });
    await server.services.db.insert(roles).values({ id: newId('role'), tenantId: other.id, key: 'b', name: 'B' });
    const otherAdmin = await seedSignedIn(server.services.db, { organization: other, roleKey: 'org_admin' });
    const foreign = await call('GET', `/v1/roles?organization_slug=${other.slug}&limit=1`, { cookie: otherAdmin.cookie });
    expect(foreign.body.nextCursor).toEqual(expect.any(String));

    const replayed = await call('GET', `/v1/roles?organization_slug=${org.slug}&cursor=${foreign.body.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(replayed.status).toBe(400);
    expect(replayed.body.error.code).toBe('validation_failed');
    for (const query of ['cursor=not-a-cursor', 'limit=0', 'limit=201', 'limit=abc', 'organization_slug=Not%20A%20Slug']) {
      const bad = await call(
        'GET',
        `/v1/roles?${query.startsWith('organization_slug') ? query : `organization_slug=${org.slug}&${query}`}`,
        {
          cookie: admin.cookie,
        },
      );
      expect(bad.status, query).toBe(400);
    }
  });

  it('without organization_slug reads the session workspace (or the API key organization)', async () => {
    const { org, admin } = await adminOfNewOrg();
    await call('POST', '/v1/roles', { cookie: admin.cookie, body: { key: 'implicit', name: 'Implicit', permissions: [] } });
    const bySession = await call('GET', '/v1/roles', { cookie: admin.cookie });
    expect(bySession.body.data.map((r: Json) => r.key)).toContain('implicit');
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['roles.read'] });
    const byKey = await call('GET', '/v1/roles', { authorization: key.authorization });
    expect(byKey.status).toBe(200);
    expect(byKey.body.data.map((r: Json) => r.key)).toContain('implicit');
  });
});

describe('POST /v1/roles', () => {
  it('creates a custom role (permissions deduplicated and sorted) with one audit entry', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        key: 'billing_admin',
        name: '  Billing admin ',
        permissions: ['billing.read', 'billing.manage', 'billing.read'],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      key: 'billing_admin',
      name: 'Billing admin',
      permissions: ['billing.manage', 'billing.read'],
      system: false,
    });
    const entries = await auditOf(org.id, 'role.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: admin.user.id, targetType: 'role', targetId: res.body.id });
    expect(entries[0]?.summary).toMatchObject({ key: 'billing_admin', permissions: ['billing.manage', 'billing.read'] });
  });

  it('a taken key or a system key is 409 role_key_taken; nothing is written', async () => {
    const { org, admin } = await adminOfNewOrg();
    const body = { organization_slug: org.slug, key: 'support', name: 'Support', permissions: [] };
    expect((await call('POST', '/v1/roles', { cookie: admin.cookie, body })).status).toBe(201);
    const again = await call('POST', '/v1/roles', { cookie: admin.cookie, body });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('role_key_taken');
    for (const key of ['org_admin', 'org_member']) {
      const system = await call('POST', '/v1/roles', { cookie: admin.cookie, body: { ...body, key } });
      expect(system.status, key).toBe(409);
      expect(system.body.error.code).toBe('role_key_taken');
    }
    expect(await auditOf(org.id, 'role.created')).toHaveLength(1);
    // The same key in another organization is fine: keys are per organization.
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    expect((await call('POST', '/v1/roles', { cookie: otherAdmin.cookie, body: { ...body, organization_slug: other.slug } })).status).toBe(
      201,
    );
  });

  it('refuses unknown permissions, bad keys and bad names with 400', async () => {
    const { org, admin } = await adminOfNewOrg();
    const good = { organization_slug: org.slug, key: 'ok_key', name: 'Fine', permissions: ['tenant.read'] };
    const cases: Json[] = [
      { permissions: ['tenant.read', 'tenant.own'] },
      { permissions: ['*'] },
      { permissions: 'tenant.read' },
      { key: 'Upper' },
      { key: 'x' },
      { key: 'has-dash' },
      { key: `k${'x'.repeat(48)}` },
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'a\u0000b' },
      { name: undefined },
    ];
    for (const patch of cases) {
      const res = await call('POST', '/v1/roles', { cookie: admin.cookie, body: { ...good, ...patch } });
      expect(res.status, JSON.stringify(patch)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect(await auditOf(org.id, 'role.created')).toHaveLength(0);
  });

  it('needs the org admin role, not just roles.manage; an API key cannot grant beyond its scopes', async () => {
    const { db, org } = await adminOfNewOrg();
    await db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'role_manager', name: 'RM', permissions: ['roles.manage', 'roles.read'] });
    const manager = await seedSignedIn(db, { organization: org, roleKey: 'role_manager' });
    const body = { organization_slug: org.slug, key: 'escalated', name: 'Escalated', permissions: ['users.manage'] };
    const byManager = await call('POST', '/v1/roles', { cookie: manager.cookie, body });
    expect(byManager.status).toBe(403);
    expect(byManager.body.error.code).toBe('forbidden');

    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['roles.manage', 'tenant.read'] });
    const beyond = await call('POST', '/v1/roles', { authorization: key.authorization, body });
    expect(beyond.status).toBe(403);
    expect(beyond.body.error.message).toContain('users.manage');
    const within = await call('POST', '/v1/roles', { authorization: key.authorization, body: { ...body, permissions: ['tenant.read'] } });
    expect(within.status).toBe(201);
    expect((await auditOf(org.id, 'role.created'))[0]).toMatchObject({ actorType: 'api_key', actorId: key.id });
  });
});

describe('PATCH /v1/roles/{id}', () => {
  it('renames and replaces permissions with one audit entry; members feel the change on their next request', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const created = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'viewer', name: 'Viewer', permissions: ['roles.read'] },
    });
    const viewer = await seedSignedIn(db, { organization: org, roleKey: 'viewer' });
    expect((await call('GET', `/v1/roles?organization_slug=${org.slug}`, { cookie: viewer.cookie })).status).toBe(200);

    const res = await call('PATCH', `/v1/roles/${created.body.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Read nothing', permissions: ['tenant.read'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.id, key: 'viewer', name: 'Read nothing', permissions: ['tenant.read'] });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));
    const entries = await auditOf(org.id, 'role.updated');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.summary).toMatchObject({
      key: 'viewer',
      changes: { name: { from: 'Viewer', to: 'Read nothing' }, permissions: { from: ['roles.read'], to: ['tenant.read'] } },
    });
    const denied = await call('GET', `/v1/roles?organization_slug=${org.slug}`, { cookie: viewer.cookie });
    expect(denied.status).toBe(403);
  });

  it('a roles.manage key cannot rename or reshape a role above it (403, unchanged); a role within it may change', async () => {
    const { db, org } = await adminOfNewOrg();
    const aboveId = newId('role');
    await db.insert(roles).values({
      id: aboveId,
      tenantId: org.id,
      key: 'auditor',
      name: 'Auditor',
      permissions: ['audit.read', 'roles.read', 'tenant.read', 'users.read'],
    });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['roles.manage', 'roles.read', 'tenant.read'] });
    for (const body of [{ name: 'Renamed' }, { permissions: ['tenant.read'] }]) {
      const res = await call('PATCH', `/v1/roles/${aboveId}`, {
        authorization: key.authorization,
        body: { organization_slug: org.slug, ...body },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
      expect(res.body.error.message).toContain('audit.read');
      expect(res.body.error.message).toContain('users.read');
    }
    const [row] = await db.select().from(roles).where(eq(roles.id, aboveId));
    expect(row).toMatchObject({ name: 'Auditor', permissions: ['audit.read', 'roles.read', 'tenant.read', 'users.read'] });
    expect(await auditOf(org.id, 'role.updated')).toHaveLength(0);

    const withinId = newId('role');
    await db.insert(roles).values({ id: withinId, tenantId: org.id, key: 'reader', name: 'Reader', permissions: ['tenant.read'] });
    const renamed = await call('PATCH', `/v1/roles/${withinId}`, {
      authorization: key.authorization,
      body: { organization_slug: org.slug, name: 'Reader 2' },
    });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
  });

  it('system roles cannot be changed (409); a role of another organization is 404; bad ids and bodies are 400', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    for (const id of ['rol_org_admin', 'rol_org_member']) {
      const res = await call('PATCH', `/v1/roles/${id}`, { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Mine now' } });
      expect(res.status, id).toBe(409);
      expect(res.body.error.code).toBe('system_role_immutable');
    }
    const other = await seedOrganization(db);
    const foreignId = newId('role');
    await db.insert(roles).values({ id: foreignId, tenantId: other.id, key: 'foreign', name: 'Foreign', permissions: [] });
    const foreign = await call('PATCH', `/v1/roles/${foreignId}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Stolen' },
    });
    expect(foreign.status).toBe(404);
    const [untouched] = await db.select().from(roles).where(eq(roles.id, foreignId));
    expect(untouched?.name).toBe('Foreign');
    expect((await call('PATCH', `/v1/roles/${newId('role')}`, { cookie: admin.cookie, body: { name: 'Nobody' } })).status).toBe(404);

    const mine = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'mine', name: 'Mine', permissions: [] },
    });
    for (const [id, body] of [
      [newId('user'), { name: 'x' }],
      ['rol_short', { name: 'x' }],
      [mine.body.id, {}],
      [mine.body.id, { name: 'x'.repeat(101) }],
      [mine.body.id, { permissions: ['nope.nope'] }],
    ] as const) {
      const res = await call('PATCH', `/v1/roles/${id}`, { cookie: admin.cookie, body: { organization_slug: org.slug, ...body } });
      expect(res.status, `${id} ${JSON.stringify(body)}`).toBe(400);
    }
    expect(await auditOf(org.id, 'role.updated')).toHaveLength(0);
  });
});

describe('OpenAPI', () => {
  it('documents the role routes under the roles tag, create answering 201', async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Json;
    expect(doc.paths['/roles'].get.tags).toEqual(['roles']);
    expect(doc.paths['/roles'].post.responses['201']).toBeDefined();
    expect(doc.paths['/roles/{id}'].patch.summary).toBeTruthy();
  });
});
