import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { invitations } from '@svc/db/schema/invitations';
import { roles } from '@svc/db/schema/roles';
import { webhookEvents } from '@svc/db/schema/webhooks';
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
      // docs/api.md ("Tenants, members and permissions"): every cookie-authenticated mutation, DELETE included, is sent as JSON from the console's origin.
      ...(opts.body !== undefined || method === 'DELETE'
        ? { 'content-type': 'application/json', origin: server.services.config.publicUrl }
        : {}),
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

describe('DELETE /v1/roles/{id}', () => {
  async function customRole(tenantId: string, key: string, permissions: string[] = ['tenant.read']) {
    const id = newId('role');
    await server.services.db.insert(roles).values({ id, tenantId, key, name: `Role ${key}`, permissions });
    return id;
  }

  async function inviteWithRole(tenantId: string, roleKey: string, state: 'pending' | 'expired' | 'revoked' | 'accepted' = 'pending') {
    const id = newId('invitation');
    const hour = 3_600_000;
    await server.services.db.insert(invitations).values({
      id,
      tenantId,
      email: `${id.toLowerCase()}@example.com`,
      roleKey,
      tokenHash: `test-${id}`,
      expiresAt: new Date(Date.now() + (state === 'expired' ? -hour : hour)),
      ...(state === 'revoked' ? { revokedAt: new Date() } : {}),
      ...(state === 'accepted' ? { acceptedAt: new Date() } : {}),
    });
    return id;
  }

  it('deletes an unused custom role: 200 { id, deleted }, gone from the list, one audit entry and one event', async () => {
    const { org, admin } = await adminOfNewOrg();
    const created = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'temporary', name: 'Temporary', permissions: ['tenant.read', 'members.read'] },
    });
    expect(created.status).toBe(201);
    // A revoked, an accepted and an expired invitation with the role do not hold it.
    for (const state of ['revoked', 'accepted', 'expired'] as const) {
      await inviteWithRole(org.id, 'temporary', state);
    }

    const res = await call('DELETE', `/v1/roles/${created.body.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ id: created.body.id, deleted: true });

    const list = await call('GET', `/v1/roles?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.body.data.map((r: Json) => r.key)).toEqual(['org_admin', 'org_member']);
    expect(await server.services.db.select().from(roles).where(eq(roles.id, created.body.id))).toEqual([]);

    const entries = await auditOf(org.id, 'role.deleted');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: admin.user.id, targetType: 'role', targetId: created.body.id });
    expect(entries[0]?.summary).toMatchObject({ key: 'temporary', name: 'Temporary', permissions: ['members.read', 'tenant.read'] });
    const events = await server.services.db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, org.id), eq(webhookEvents.type, 'role.deleted')));
    expect(events).toHaveLength(1);

    // Deleted once: a second DELETE finds nothing, and the key may be used again.
    const again = await call('DELETE', `/v1/roles/${created.body.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(again.status).toBe(404);
    const recreated = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'temporary', name: 'Temporary again', permissions: [] },
    });
    expect(recreated.status).toBe(201);
  });

  it('without organization_slug acts in the session workspace (or the API key organization), like PATCH', async () => {
    const { org, admin } = await adminOfNewOrg();
    const bySession = await customRole(org.id, 'by_session');
    expect((await call('DELETE', `/v1/roles/${bySession}`, { cookie: admin.cookie })).status).toBe(200);
    const byKey = await customRole(org.id, 'by_key');
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['roles.manage', 'tenant.read'] });
    const res = await call('DELETE', `/v1/roles/${byKey}`, { authorization: key.authorization });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await auditOf(org.id, 'role.deleted')).map((e) => e.actorType).sort()).toEqual(['api_key', 'user']);
  });

  it("another organization's role id is 404 and stays; an unknown id is 404; a malformed id is 400", async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const other = await seedOrganization(db);
    const foreignId = await customRole(other.id, 'foreign');
    const foreign = await call('DELETE', `/v1/roles/${foreignId}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect(await db.select().from(roles).where(eq(roles.id, foreignId))).toHaveLength(1);
    // Naming the other organization does not help: the caller is not in it.
    const named = await call('DELETE', `/v1/roles/${foreignId}?organization_slug=${other.slug}`, { cookie: admin.cookie });
    expect(named.status).toBe(404);
    expect(await db.select().from(roles).where(eq(roles.id, foreignId))).toHaveLength(1);
    expect((await call('DELETE', `/v1/roles/${newId('role')}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(404);
    for (const id of ['rol_short', newId('user')]) {
      const bad = await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
      expect(bad.status, id).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
    }
    expect(await auditOf(org.id, 'role.deleted')).toHaveLength(0);
    expect(await auditOf(other.id, 'role.deleted')).toHaveLength(0);
  });

  it('a member without roles.manage (or the org admin role) and an API key without the scope are 403; the role stays', async () => {
    const { db, org } = await adminOfNewOrg();
    const id = await customRole(org.id, 'kept');
    await customRole(org.id, 'role_manager', ['roles.manage', 'roles.read']);
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const manager = await seedSignedIn(db, { organization: org, roleKey: 'role_manager' });
    const readKey = await seedApiKey(db, { tenantId: org.id, scopes: ['roles.read', 'tenant.read'] });
    for (const [who, auth] of [
      ['org_member', { cookie: member.cookie }],
      ['roles.manage without org_admin', { cookie: manager.cookie }],
      ['API key without roles.manage', { authorization: readKey.authorization }],
    ] as const) {
      const res = await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, auth);
      expect(res.status, who).toBe(403);
      expect(res.body.error.code, who).toBe('forbidden');
    }
    expect(await db.select().from(roles).where(eq(roles.id, id))).toHaveLength(1);
    expect(await auditOf(org.id, 'role.deleted')).toHaveLength(0);
  });

  it('a roles.manage key cannot delete a role above its scopes (403)', async () => {
    const { db, org } = await adminOfNewOrg();
    const above = await customRole(org.id, 'auditor', ['audit.read', 'tenant.read']);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['roles.manage', 'tenant.read'] });
    const res = await call('DELETE', `/v1/roles/${above}`, { authorization: key.authorization });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toContain('audit.read');
    expect(await db.select().from(roles).where(eq(roles.id, above))).toHaveLength(1);
  });

  it('the system roles cannot be deleted (409 system_role_immutable)', async () => {
    const { org, admin } = await adminOfNewOrg();
    for (const id of ['rol_org_admin', 'rol_org_member']) {
      const res = await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
      expect(res.status, id).toBe(409);
      expect(res.body.error.code).toBe('system_role_immutable');
    }
    const list = await call('GET', `/v1/roles?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.body.data.map((r: Json) => r.key)).toEqual(['org_admin', 'org_member']);
    expect(await auditOf(org.id, 'role.deleted')).toHaveLength(0);
  });

  it('a role held by a member, whatever the membership status, is 409 role_in_use saying how many; nothing is deleted', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const id = await customRole(org.id, 'support');
    await seedSignedIn(db, { organization: org, roleKey: 'support' });
    // An invited (not yet accepted) membership holds the role too.
    const invitedId = newId('user');
    await db.insert(users).values({ id: invitedId, email: `${invitedId.toLowerCase()}@example.com` });
    await db.insert(memberships).values({ tenantId: org.id, userId: invitedId, roleKey: 'support', status: 'invited' });

    const res = await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('role_in_use');
    expect(res.body.error.message).toContain('2 members');
    expect(res.body.error.message).not.toContain('invitation');
    expect(await db.select().from(roles).where(eq(roles.id, id))).toHaveLength(1);
    expect(await auditOf(org.id, 'role.deleted')).toHaveLength(0);

    // Once nobody holds it, it goes.
    await db
      .update(memberships)
      .set({ roleKey: 'org_member' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.roleKey, 'support')));
    expect((await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(200);
  });

  it('a role held by a pending invitation is 409 role_in_use; members and invitations are both counted', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const id = await customRole(org.id, 'contractor');
    await inviteWithRole(org.id, 'contractor');

    const res = await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('role_in_use');
    expect(res.body.error.message).toContain('1 pending invitation');
    expect(res.body.error.message).not.toContain('member');

    await seedSignedIn(db, { organization: org, roleKey: 'contractor' });
    await inviteWithRole(org.id, 'contractor');
    const both = await call('DELETE', `/v1/roles/${id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(both.status).toBe(409);
    expect(both.body.error.message).toContain('1 member and 2 pending invitations');
    expect(await db.select().from(roles).where(eq(roles.id, id))).toHaveLength(1);
    expect(await auditOf(org.id, 'role.deleted')).toHaveLength(0);

    // The same role key in another organization is not this role's holder.
    const { org: other } = await adminOfNewOrg();
    await inviteWithRole(other.id, 'lonely');
    const lonely = await customRole(org.id, 'lonely');
    expect((await call('DELETE', `/v1/roles/${lonely}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(200);
  });
});

describe('OpenAPI', () => {
  it('documents the role routes under the roles tag, create answering 201', async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Json;
    expect(doc.paths['/roles'].get.tags).toEqual(['roles']);
    expect(doc.paths['/roles'].post.responses['201']).toBeDefined();
    expect(doc.paths['/roles/{id}'].patch.summary).toBeTruthy();
    expect(doc.paths['/roles/{id}'].delete.tags).toEqual(['roles']);
    expect(doc.paths['/roles/{id}'].delete.responses['200']).toBeDefined();
  });
});
