import { newId } from '@svc/contracts/ids';
import { SYSTEM_ROLES } from '@svc/contracts/permissions';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { roles } from '@svc/db/schema/roles';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';

/**
 * Custom roles and the product's permissions (docs/authorization.md): a custom role carries
 * product permissions that exist and that its author holds; GET /v1/roles shows the product
 * roles every organization has and the system roles' product permissions; a custom role never
 * takes a product role's key.
 */

let server: Awaited<ReturnType<typeof startTestServer>>;
let platform: SignedIn;
/** Permissions of one resource made for this file: read, write, admin. */
let perm: (action: 'read' | 'write' | 'admin') => string;

type Json = Record<string, any>;

async function call(method: string, path: string, opts: { cookie?: string; authorization?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json, text };
}

const asPlatform = (method: string, path: string, body?: unknown) => call(method, path, { cookie: platform.cookie, body });

beforeAll(async () => {
  server = await startTestServer();
  platform = await seedSignedIn(server.services.db, { platformAdmin: true });
  perm = (action) => `docs.${action}`;
  const resource = await asPlatform('POST', '/v1/api-resources', {
    identifier: 'https://docs.example.com',
    name: 'Docs API',
    permissions: [{ name: perm('read') }, { name: perm('write') }, { name: perm('admin') }],
  });
  expect(resource.status, resource.text).toBe(201);
  // What org_admin and org_member carry of the product: the platform decides.
  expect((await asPlatform('PATCH', '/v1/product-roles/prl_org_admin', { permissions: [perm('read'), perm('write')] })).status).toBe(200);
  expect((await asPlatform('PATCH', '/v1/product-roles/prl_org_member', { permissions: [perm('read')] })).status).toBe(200);
});
afterAll(async () => {
  await server?.close();
});

async function adminOfNewOrg() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function rolesOf(tenantId: string) {
  return server.services.db.select().from(roles).where(eq(roles.tenantId, tenantId));
}

describe('custom roles with product permissions', () => {
  it('an org admin grants what org_admin holds of the product; the role shows and stores it', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        key: 'writer',
        name: 'Writer',
        permissions: ['tenant.read'],
        productPermissions: [perm('write'), perm('read'), perm('write')],
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      kind: 'custom',
      system: false,
      permissions: ['tenant.read'],
      productPermissions: [perm('read'), perm('write')],
    });
    expect((await rolesOf(org.id))[0]?.productPermissions).toEqual([perm('read'), perm('write')]);
    const [audit] = await server.services.db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'role.created')));
    expect(audit?.summary).toMatchObject({ productPermissions: [perm('read'), perm('write')] });
    // Without productPermissions: none.
    const plain = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'plain', name: 'Plain', permissions: [] },
    });
    expect(plain.body.productPermissions).toEqual([]);
  });

  it('403 for a product permission the creator lacks, naming it; nothing stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        key: 'escalate',
        name: 'Escalate',
        permissions: [],
        productPermissions: [perm('read'), perm('admin')],
      },
    });
    expect(res.status, res.text).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    expect(res.body.error.message).toContain(perm('admin'));
    expect(res.body.error.message).not.toContain(perm('read'));
    expect(await rolesOf(org.id)).toEqual([]);
  });

  it('400 unknown_permission for a name no resource declares (a control-plane name too); nothing stored', async () => {
    const { org, admin } = await adminOfNewOrg();
    for (const productPermissions of [['docs.delete'], ['nothing.here', perm('read')]]) {
      const res = await call('POST', '/v1/roles', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, key: 'ghost', name: 'Ghost', permissions: [], productPermissions },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.code).toBe('unknown_permission');
    }
    const control = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'ghost', name: 'Ghost', permissions: [], productPermissions: ['tenant.read'] },
    });
    expect(control.body.error.code).toBe('unknown_permission');
    for (const bad of ['Docs.read', 'docs.re\u0430d', 'docs read', 'd'.repeat(300)]) {
      const res = await call('POST', '/v1/roles', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, key: 'ghost', name: 'Ghost', permissions: [], productPermissions: [bad] },
      });
      expect(res.status, bad).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect(await rolesOf(org.id)).toEqual([]);
  });

  it('a tenant API key grants what its org-admin creator holds of the product, never more; a platform admin grants any', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['roles.manage', 'roles.read'], createdBy: admin.user.id });
    // org_admin holds read and write of the product, not admin: neither does the key.
    const beyond = await call('POST', '/v1/roles', {
      authorization: key.authorization,
      body: { key: 'bykey', name: 'By key', permissions: [], productPermissions: [perm('read'), perm('admin')] },
    });
    expect(beyond.status, beyond.text).toBe(403);
    expect(beyond.body.error.message).toContain(perm('admin'));
    expect(await rolesOf(org.id)).toEqual([]);
    const byKey = await call('POST', '/v1/roles', {
      authorization: key.authorization,
      body: { key: 'bykey', name: 'By key', permissions: [], productPermissions: [perm('read')] },
    });
    expect(byKey.status, byKey.text).toBe(201);
    expect(byKey.body.productPermissions).toEqual([perm('read')]);

    const byPlatform = await asPlatform('POST', '/v1/roles', {
      organization_slug: org.slug,
      key: 'top',
      name: 'Top',
      permissions: [],
      productPermissions: [perm('admin')],
    });
    expect(byPlatform.status, byPlatform.text).toBe(201);
    // A role above the key (it holds product permissions) is not the key's to change or delete.
    const change = await call('PATCH', `/v1/roles/${byPlatform.body.id}`, { authorization: key.authorization, body: { name: 'Mine now' } });
    expect(change.status).toBe(403);
    const remove = await call('DELETE', `/v1/roles/${byPlatform.body.id}`, { authorization: key.authorization });
    expect(remove.status).toBe(403);
    expect((await rolesOf(org.id)).find((r) => r.key === 'top')?.name).toBe('Top');
  });

  it('updates: new product permissions must exist and be held; a role above the caller is not theirs; nothing changes on a refusal', async () => {
    const { db, org, admin } = await adminOfNewOrg();
    const mine = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'mine', name: 'Mine', permissions: [], productPermissions: [perm('read')] },
    });
    const changed = await call('PATCH', `/v1/roles/${mine.body.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, productPermissions: [perm('write')] },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.productPermissions).toEqual([perm('write')]);
    for (const [productPermissions, code] of [
      [[perm('admin')], 'forbidden'],
      [['docs.nothing'], 'unknown_permission'],
    ] as const) {
      const res = await call('PATCH', `/v1/roles/${mine.body.id}`, {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, name: 'Changed', productPermissions },
      });
      expect(res.body.error?.code, JSON.stringify(productPermissions)).toBe(code);
    }
    const above = newId('role');
    await db.insert(roles).values({ id: above, tenantId: org.id, key: 'above', name: 'Above', productPermissions: [perm('admin')] });
    const rename = await call('PATCH', `/v1/roles/${above}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Renamed' },
    });
    expect(rename.status).toBe(403);
    expect(rename.body.error.message).toContain(perm('admin'));
    const remove = await call('DELETE', `/v1/roles/${above}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(remove.status).toBe(403);
    const rows = await rolesOf(org.id);
    expect(rows.find((r) => r.id === mine.body.id)).toMatchObject({ name: 'Mine', productPermissions: [perm('write')] });
    expect(rows.find((r) => r.id === above)).toMatchObject({ name: 'Above', productPermissions: [perm('admin')] });
  });

  it("another organization's custom role id is 404 and stays as it was", async () => {
    const { org, admin } = await adminOfNewOrg();
    const other = await adminOfNewOrg();
    const theirs = await call('POST', '/v1/roles', {
      cookie: other.admin.cookie,
      body: { organization_slug: other.org.slug, key: 'theirs', name: 'Theirs', permissions: [], productPermissions: [perm('read')] },
    });
    expect(theirs.status).toBe(201);
    for (const body of [
      { organization_slug: org.slug, productPermissions: [perm('write')] },
      { organization_slug: other.org.slug, productPermissions: [perm('write')] },
      { productPermissions: [] },
    ]) {
      const res = await call('PATCH', `/v1/roles/${theirs.body.id}`, { cookie: admin.cookie, body });
      expect(res.status, JSON.stringify(body)).toBe(404);
      expect(res.text).not.toContain(other.org.name);
    }
    expect((await call('DELETE', `/v1/roles/${theirs.body.id}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(404);
    expect((await rolesOf(other.org.id))[0]).toMatchObject({ name: 'Theirs', productPermissions: [perm('read')] });
  });
});

describe('GET /v1/roles with product roles', () => {
  it('shows the system roles with their product permissions, then product and custom roles newest first, paged together', async () => {
    const { org, admin } = await adminOfNewOrg();
    const product = await asPlatform('POST', '/v1/product-roles', { key: 'editor', name: 'Editor', permissions: [perm('write')] });
    expect(product.status, product.text).toBe(201);
    const custom = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'reviewer', name: 'Reviewer', permissions: ['tenant.read'] },
    });
    const page1 = await call('GET', `/v1/roles?organization_slug=${org.slug}&limit=1`, { cookie: admin.cookie });
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((r: Json) => [r.key, r.kind])).toEqual([
      ['org_admin', 'system'],
      ['org_member', 'system'],
      ['reviewer', 'custom'],
    ]);
    expect(page1.body.data[0].productPermissions).toEqual([perm('read'), perm('write')]);
    expect(page1.body.data[1].productPermissions).toEqual([perm('read')]);
    expect(page1.body.data[2]).toMatchObject({ id: custom.body.id, system: false, productPermissions: [] });
    const page2 = await call('GET', `/v1/roles?organization_slug=${org.slug}&limit=1&cursor=${page1.body.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(page2.body.data).toEqual([
      expect.objectContaining({
        id: product.body.id,
        key: 'editor',
        kind: 'product',
        system: true,
        productPermissions: [perm('write')],
        // In svc's own control plane a product role holds what org_member holds.
        permissions: [...SYSTEM_ROLES.org_member.permissions].sort(),
      }),
    ]);
    // Every organization sees it; no organization sees another's custom roles.
    const other = await adminOfNewOrg();
    const theirs = await call('GET', `/v1/roles?organization_slug=${other.org.slug}&limit=200`, { cookie: other.admin.cookie });
    expect(theirs.body.data.map((r: Json) => r.key)).toContain('editor');
    expect(theirs.body.data.map((r: Json) => r.key)).not.toContain('reviewer');
  });

  it('a product role is assigned like any role, and changed or deleted only by the platform', async () => {
    const { org, admin } = await adminOfNewOrg();
    const product = await asPlatform('POST', '/v1/product-roles', { key: 'assignable', name: 'Assignable' });
    const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
    const assigned = await call('PATCH', `/v1/users/${member.user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'assignable' },
    });
    expect(assigned.status, assigned.text).toBe(200);
    for (const [method, path, body] of [
      ['PATCH', `/v1/roles/${product.body.id}`, { organization_slug: org.slug, name: 'Mine' }],
      ['DELETE', `/v1/roles/${product.body.id}?organization_slug=${org.slug}`, undefined],
    ] as const) {
      const res = await call(method, path, { cookie: admin.cookie, body });
      expect(res.status, res.text).toBe(409);
      expect(res.body.error.code).toBe('system_role_immutable');
    }
    const [row] = (await asPlatform('GET', '/v1/product-roles?limit=200')).body.data.filter((r: Json) => r.id === product.body.id);
    expect(row.name).toBe('Assignable');
  });

  it("409 role_key_taken for a custom role with a product role's key; nothing stored", async () => {
    const { org, admin } = await adminOfNewOrg();
    expect((await asPlatform('POST', '/v1/product-roles', { key: 'support_agent', name: 'Support agent' })).status).toBe(201);
    const res = await call('POST', '/v1/roles', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, key: 'support_agent', name: 'Mine', permissions: [] },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('role_key_taken');
    expect(await rolesOf(org.id)).toEqual([]);
  });
});
