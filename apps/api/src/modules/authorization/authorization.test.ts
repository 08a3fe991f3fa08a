import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { applications } from '@svc/db/schema/applications';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { apiPermissions, apiResources, productRoles } from '@svc/db/schema/authorization';
import { organizations } from '@svc/db/schema/organizations';
import { roles } from '@svc/db/schema/roles';
import { webhookDeliveries, webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { revokeSession } from '../session-store/service.ts';
import { seedWebhookEndpoint } from '../webhooks/webhooks.fixtures.ts';
import { MATRIX } from './authorization.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let platform: SignedIn;

beforeAll(async () => {
  server = await startTestServer();
  platform = await seedSignedIn(server.services.db, { platformAdmin: true });
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
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json, text };
}

const asPlatform = (method: string, path: string, body?: unknown) => call(method, path, { cookie: platform.cookie, body });

let n = 0;
/** A fresh identifier and permission prefix per test: the catalog is shared by the whole file. */
function fresh(prefix = 'api') {
  const tag = `${prefix}${++n}${Math.random().toString(36).slice(2, 6)}`;
  return { tag, identifier: `https://${tag}.example.com`, perm: (action: string) => `${tag}.${action}` };
}

async function createResource(body: Json): Promise<Json> {
  const res = await asPlatform('POST', '/v1/api-resources', body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function adminOfNewOrg() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

/** Every resource and permission row, and every product role key: what "nothing stored" compares. */
async function catalogSnapshot() {
  const db = server.services.db;
  return {
    resources: (await db.select({ id: apiResources.id, identifier: apiResources.identifier }).from(apiResources)).sort((a, b) =>
      a.id.localeCompare(b.id),
    ),
    permissions: (await db.select({ name: apiPermissions.name }).from(apiPermissions)).map((r) => r.name).sort(),
    productRoles: (
      await db.select({ key: productRoles.key, permissions: productRoles.permissions, name: productRoles.name }).from(productRoles)
    ).sort((a, b) => a.key.localeCompare(b.key)),
  };
}

function platformAudit(action: string, targetId: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(isNull(auditLogs.tenantId), eq(auditLogs.action, action), eq(auditLogs.targetId, targetId)));
}

describeAuthMatrix('authorization', () => server, MATRIX);

describe('platform-only routes: every kind of caller, and nothing stored on a refusal', () => {
  type Caller = { name: string; headers: () => { cookie?: string; authorization?: string }; expected: number | 'ok' };
  let callers: Caller[];
  let resource: Json;
  let role: Json;

  beforeAll(async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const f = fresh('only');
    resource = await createResource({ identifier: f.identifier, name: 'Only', permissions: [{ name: f.perm('read') }] });
    role = (await asPlatform('POST', '/v1/product-roles', { key: `${f.tag}_role`, name: 'Only role' })).body;
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const outsider = await seedSignedIn(db, { organization: await seedOrganization(db), roleKey: 'org_admin' });
    const revoked = await seedSignedIn(db, { platformAdmin: true });
    await revokeSession(db, revoked.sessionId);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    const revokedKey = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS], revoked: true });
    callers = [
      { name: 'anonymous', headers: () => ({}), expected: 401 },
      { name: 'revoked session of a platform admin', headers: () => ({ cookie: revoked.cookie }), expected: 401 },
      { name: 'revoked API key', headers: () => ({ authorization: revokedKey.authorization }), expected: 401 },
      { name: 'org admin of an organization', headers: () => ({ cookie: admin.cookie }), expected: 403 },
      { name: 'org member', headers: () => ({ cookie: member.cookie }), expected: 403 },
      { name: 'admin of another organization', headers: () => ({ cookie: outsider.cookie }), expected: 403 },
      { name: 'API key with every scope', headers: () => ({ authorization: key.authorization }), expected: 403 },
      { name: 'platform admin', headers: () => ({ cookie: platform.cookie }), expected: 'ok' },
    ];
  });

  const routes: { name: string; path: () => string; body?: () => Json }[] = [
    {
      name: 'POST /v1/api-resources',
      path: () => '/v1/api-resources',
      body: () => {
        const f = fresh('made');
        return { identifier: f.identifier, name: 'Made', permissions: [{ name: f.perm('read') }] };
      },
    },
    { name: 'PATCH /v1/api-resources/{id}', path: () => `/v1/api-resources/${resource.id}`, body: () => ({ name: `Renamed ${++n}` }) },
    {
      name: 'POST /v1/api-resources/{id}/permissions',
      path: () => `/v1/api-resources/${resource.id}/permissions`,
      body: () => ({ name: `${resource.permissions[0].name.split('.')[0]}.added${++n}` }),
    },
    {
      name: 'PATCH /v1/api-resources/{id}/permissions/{name}',
      path: () => `/v1/api-resources/${resource.id}/permissions/${resource.permissions[0].name}`,
      body: () => ({ description: `Reads ${++n}` }),
    },
    { name: 'POST /v1/product-roles', path: () => '/v1/product-roles', body: () => ({ key: `made_role_${++n}`, name: 'Made role' }) },
    { name: 'PATCH /v1/product-roles/{id}', path: () => `/v1/product-roles/${role.id}`, body: () => ({ name: `Role ${++n}` }) },
  ];
  const names = [
    'anonymous',
    'revoked session of a platform admin',
    'revoked API key',
    'org admin of an organization',
    'org member',
    'admin of another organization',
    'API key with every scope',
    'platform admin',
  ];
  for (const route of routes) {
    it.each(names)(`${route.name} as %s`, async (name) => {
      const caller = callers.find((c) => c.name === name) as Caller;
      const before = await catalogSnapshot();
      const res = await call(route.name.split(' ')[0] as string, route.path(), { ...caller.headers(), body: route.body?.() });
      if (caller.expected === 'ok') {
        expect(res.status >= 200 && res.status < 300, res.text).toBe(true);
      } else {
        expect(res.status, res.text).toBe(caller.expected);
        expect(res.body.error.code).toBe(
          caller.expected === 403 ? 'forbidden' : name === 'revoked API key' ? 'invalid_secret_key' : 'unauthenticated',
        );
        expect(await catalogSnapshot()).toEqual(before);
      }
    });
  }

  // The deletes, last: each caller but the platform admin is refused and the row stays.
  it.each(names.filter((x) => x !== 'platform admin'))('DELETE routes as %s: refused, nothing deleted', async (name) => {
    const caller = callers.find((c) => c.name === name) as Caller;
    const before = await catalogSnapshot();
    for (const path of [
      `/v1/api-resources/${resource.id}/permissions/${resource.permissions[0].name}`,
      `/v1/api-resources/${resource.id}`,
      `/v1/product-roles/${role.id}`,
    ]) {
      const res = await call('DELETE', path, caller.headers());
      expect(res.status, `${path}: ${res.text}`).toBe(caller.expected);
    }
    expect(await catalogSnapshot()).toEqual(before);
  });

  it('DELETE routes as a platform admin', async () => {
    expect((await asPlatform('DELETE', `/v1/api-resources/${resource.id}/permissions/${resource.permissions[0].name}`)).status).toBe(200);
    expect((await asPlatform('DELETE', `/v1/api-resources/${resource.id}`)).status).toBe(200);
    expect((await asPlatform('DELETE', `/v1/product-roles/${role.id}`)).status).toBe(200);
  });
});

describe('API resources', () => {
  it('creates a resource with its permissions (201), lists it newest first and reads it by id', async () => {
    const f = fresh('inv');
    const created = await createResource({
      identifier: f.identifier,
      name: 'Invoices API',
      description: 'Billing documents',
      permissions: [{ name: f.perm('read'), description: 'Read invoices' }, { name: f.perm('create') }],
    });
    expect(created.id).toMatch(/^res_[0-9A-Za-z]{20}$/);
    expect(created).toMatchObject({ identifier: f.identifier, name: 'Invoices API', description: 'Billing documents' });
    // Sorted by name.
    expect(created.permissions.map((p: Json) => [p.name, p.description])).toEqual([
      [f.perm('create'), ''],
      [f.perm('read'), 'Read invoices'],
    ]);
    const later = await createResource({ identifier: fresh().identifier, name: 'Later' });
    const list = await asPlatform('GET', '/v1/api-resources?limit=1');
    expect(list.status).toBe(200);
    expect(list.body.data.map((r: Json) => r.id)).toEqual([later.id]);
    const page2 = await asPlatform('GET', `/v1/api-resources?limit=1&cursor=${list.body.nextCursor}`);
    expect(page2.body.data.map((r: Json) => r.id)).toEqual([created.id]);
    const got = await asPlatform('GET', `/v1/api-resources/${created.id}`);
    expect(got.body).toEqual(created);
    expect((await asPlatform('GET', `/v1/api-resources/res_${'0'.repeat(20)}`)).status).toBe(404);
    expect((await asPlatform('GET', '/v1/api-resources/not-an-id')).status).toBe(400);
  });

  it('renames a resource; its identifier never changes (an identifier in the body is not read)', async () => {
    const f = fresh();
    const created = await createResource({ identifier: f.identifier, name: 'Before' });
    const res = await asPlatform('PATCH', `/v1/api-resources/${created.id}`, {
      name: 'After',
      description: 'Now described',
      identifier: 'https://elsewhere.example.com',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'After', description: 'Now described', identifier: f.identifier });
    expect((await asPlatform('PATCH', `/v1/api-resources/${created.id}`, {})).status).toBe(400);
    expect((await asPlatform('PATCH', `/v1/api-resources/res_${'1'.repeat(20)}`, { name: 'X' })).status).toBe(404);
  });

  it('adds, describes and deletes a permission', async () => {
    const f = fresh();
    const created = await createResource({ identifier: f.identifier, name: 'Perms' });
    const added = await asPlatform('POST', `/v1/api-resources/${created.id}/permissions`, { name: f.perm('write'), description: 'Write' });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({ name: f.perm('write'), description: 'Write' });
    const changed = await asPlatform('PATCH', `/v1/api-resources/${created.id}/permissions/${f.perm('write')}`, {
      description: 'Write it',
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.description).toBe('Write it');
    expect((await asPlatform('GET', `/v1/api-resources/${created.id}`)).body.permissions).toEqual([changed.body]);
    // A permission of another resource is not found through this one.
    const other = await createResource({ identifier: fresh().identifier, name: 'Other' });
    expect((await asPlatform('PATCH', `/v1/api-resources/${other.id}/permissions/${f.perm('write')}`, { description: 'x' })).status).toBe(
      404,
    );
    expect((await asPlatform('DELETE', `/v1/api-resources/${other.id}/permissions/${f.perm('write')}`)).status).toBe(404);
    const deleted = await asPlatform('DELETE', `/v1/api-resources/${created.id}/permissions/${f.perm('write')}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ id: created.id, name: f.perm('write'), deleted: true });
    expect((await asPlatform('GET', `/v1/api-resources/${created.id}`)).body.permissions).toEqual([]);
    expect((await asPlatform('DELETE', `/v1/api-resources/${created.id}/permissions/${f.perm('write')}`)).status).toBe(404);
  });

  it('409 resource_identifier_taken for a taken identifier, the other spelling of an empty path included; nothing stored', async () => {
    const f = fresh();
    await createResource({ identifier: f.identifier, name: 'First' });
    for (const identifier of [f.identifier, `${f.identifier}/`]) {
      const before = await catalogSnapshot();
      const again = await asPlatform('POST', '/v1/api-resources', {
        identifier,
        name: 'Second',
        permissions: [{ name: fresh().perm('read') }],
      });
      expect(again.status, identifier).toBe(409);
      expect(again.body.error.code).toBe('resource_identifier_taken');
      expect(await catalogSnapshot()).toEqual(before);
    }
    // A path is another API.
    await createResource({ identifier: `${f.identifier}/v2`, name: 'V2' });
  });

  it('409 permission_name_taken when any resource has the name (create and add); the whole create is undone', async () => {
    const f = fresh();
    const first = await createResource({ identifier: f.identifier, name: 'First', permissions: [{ name: f.perm('read') }] });
    const before = await catalogSnapshot();
    const g = fresh();
    const clash = await asPlatform('POST', '/v1/api-resources', {
      identifier: g.identifier,
      name: 'Clash',
      permissions: [{ name: g.perm('own') }, { name: f.perm('read') }],
    });
    expect(clash.status, clash.text).toBe(409);
    expect(clash.body.error).toMatchObject({ code: 'permission_name_taken' });
    expect(clash.body.error.message).toContain(f.perm('read'));
    expect(await catalogSnapshot()).toEqual(before);
    const second = await createResource({ identifier: g.identifier, name: 'Second' });
    const added = await asPlatform('POST', `/v1/api-resources/${second.id}/permissions`, { name: f.perm('read') });
    expect(added.status).toBe(409);
    expect(added.body.error.code).toBe('permission_name_taken');
    // Its own name again, too.
    expect((await asPlatform('POST', `/v1/api-resources/${first.id}/permissions`, { name: f.perm('read') })).body.error.code).toBe(
      'permission_name_taken',
    );
    expect(await catalogSnapshot()).toEqual({ ...before, resources: (await catalogSnapshot()).resources });
    // A name listed twice in one create is a 400.
    const twice = await asPlatform('POST', '/v1/api-resources', {
      identifier: fresh().identifier,
      name: 'Twice',
      permissions: [{ name: g.perm('x') }, { name: g.perm('x') }],
    });
    expect(twice.status).toBe(400);
    expect(twice.body.error.code).toBe('validation_failed');
  });

  it('two creates racing for one permission name: exactly one gets it', async () => {
    const name = fresh().perm('raced');
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        asPlatform('POST', '/v1/api-resources', { identifier: fresh().identifier, name: 'Race', permissions: [{ name }] }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const rows = await server.services.db.select().from(apiPermissions).where(eq(apiPermissions.name, name));
    expect(rows).toHaveLength(1);
  });

  it('two creates racing with both spellings of one identifier: exactly one resource', async () => {
    const f = fresh();
    const results = await Promise.all(
      [f.identifier, `${f.identifier}/`, f.identifier, `${f.identifier}/`].map((identifier) =>
        asPlatform('POST', '/v1/api-resources', { identifier, name: 'Race' }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    const rows = await server.services.db
      .select()
      .from(apiResources)
      .where(inArray(apiResources.identifier, [f.identifier, `${f.identifier}/`]));
    expect(rows).toHaveLength(1);
  });

  it('deleting a permission takes it out of every product role, custom role and machine client, in every organization', async () => {
    const db = server.services.db;
    const f = fresh();
    const created = await createResource({
      identifier: f.identifier,
      name: 'Spread',
      permissions: [{ name: f.perm('a') }, { name: f.perm('b') }],
    });
    const other = fresh();
    await createResource({ identifier: other.identifier, name: 'Untouched', permissions: [{ name: other.perm('z') }] });
    const role = await asPlatform('POST', '/v1/product-roles', {
      key: `${f.tag}_spread`,
      name: 'Spread',
      permissions: [f.perm('a'), f.perm('b'), other.perm('z')],
    });
    expect(role.status, role.text).toBe(201);
    const orgA = await seedOrganization(db);
    const orgB = await seedOrganization(db);
    const customA = newId('role');
    const customB = newId('role');
    await db.insert(roles).values([
      { id: customA, tenantId: orgA.id, key: 'spread', name: 'A', productPermissions: [f.perm('a'), other.perm('z')] },
      { id: customB, tenantId: orgB.id, key: 'spread', name: 'B', productPermissions: [f.perm('a')] },
    ]);
    const machine = await seedApplication(db, { org: orgA.slug, name: 'Machine' });
    await db
      .update(applications)
      .set({ machinePermissions: [f.perm('a'), f.perm('b')] })
      .where(eq(applications.id, machine.application.id));

    const res = await asPlatform('DELETE', `/v1/api-resources/${created.id}/permissions/${f.perm('a')}`);
    expect(res.status, res.text).toBe(200);
    const productRow = await db.select().from(productRoles).where(eq(productRoles.id, role.body.id));
    expect(productRow[0]?.permissions).toEqual([f.perm('b'), other.perm('z')]);
    const customRows = await db
      .select()
      .from(roles)
      .where(inArray(roles.id, [customA, customB]));
    expect(Object.fromEntries(customRows.map((r) => [r.id, r.productPermissions]))).toEqual({
      [customA]: [other.perm('z')],
      [customB]: [],
    });
    const app = await db.select().from(applications).where(eq(applications.id, machine.application.id));
    expect(app[0]?.machinePermissions).toEqual([f.perm('b')]);
    const [audit] = await platformAudit('api_resource.updated', created.id).then((rows) =>
      rows.filter((r) => JSON.stringify(r.summary).includes('removed')),
    );
    expect(audit?.summary).toMatchObject({
      changes: { permissions: { removed: [f.perm('a')] } },
      removedFrom: { productRoles: 1, customRoles: 2, machineClients: 1 },
    });

    // Deleting the resource takes the rest of its names, and leaves other resources' alone.
    const gone = await asPlatform('DELETE', `/v1/api-resources/${created.id}`);
    expect(gone.status, gone.text).toBe(200);
    expect(gone.body).toEqual({ id: created.id, deleted: true });
    expect((await db.select().from(productRoles).where(eq(productRoles.id, role.body.id)))[0]?.permissions).toEqual([other.perm('z')]);
    expect((await db.select().from(applications).where(eq(applications.id, machine.application.id)))[0]?.machinePermissions).toEqual([]);
    expect(await db.select().from(apiPermissions).where(eq(apiPermissions.resourceId, created.id))).toEqual([]);
    expect((await asPlatform('GET', `/v1/api-resources/${created.id}`)).status).toBe(404);
    expect((await asPlatform('DELETE', `/v1/api-resources/${created.id}`)).status).toBe(404);
  });
});

describe('races between the catalog and its holders', () => {
  it('a permission committed while its resource is being deleted goes from every holder too', async () => {
    const db = server.services.db;
    const f = fresh();
    const resource = await createResource({ identifier: f.identifier, name: 'Racing', permissions: [{ name: f.perm('a') }] });
    const org = await seedOrganization(db);
    const roleId = newId('role');
    await db.insert(roles).values({ id: roleId, tenantId: org.id, key: 'late', name: 'Late', productPermissions: [f.perm('a')] });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: () => void = () => {};
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    // What adding a permission and granting it does, held open: the resource is locked as
    // POST .../permissions locks it.
    const adder = server.services.sql.begin(async (tx) => {
      await tx`select id from api_resources where id = ${resource.id} for update`;
      await tx`insert into api_permissions (id, resource_id, name) values (${newId('apiPermission')}, ${resource.id}, ${f.perm('late')})`;
      await tx`update roles set product_permissions = ${[f.perm('a'), f.perm('late')]} where id = ${roleId}`;
      locked();
      await gate;
    });
    await isLocked;
    const deleting = asPlatform('DELETE', `/v1/api-resources/${resource.id}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await adder;
    const res = await deleting;
    expect(res.status, res.text).toBe(200);
    const [role] = await db.select().from(roles).where(eq(roles.id, roleId));
    expect(role?.productPermissions).toEqual([]);
    const [audit] = await platformAudit('api_resource.deleted', resource.id);
    expect(audit?.summary).toMatchObject({ permissions: [f.perm('a'), f.perm('late')] });
  });

  it('a role granting a permission while it is deleted never keeps the name', async () => {
    const db = server.services.db;
    const f = fresh();
    const resource = await createResource({ identifier: f.identifier, name: 'Racing', permissions: [{ name: f.perm('gone') }] });
    const { org } = await adminOfNewOrg();
    const results = await Promise.all([
      asPlatform('DELETE', `/v1/api-resources/${resource.id}/permissions/${f.perm('gone')}`),
      asPlatform('POST', '/v1/roles', {
        organization_slug: org.slug,
        key: 'racer',
        name: 'Racer',
        permissions: [],
        productPermissions: [f.perm('gone')],
      }),
      asPlatform('POST', '/v1/product-roles', { key: `${f.tag}_racer`, name: 'Racer', permissions: [f.perm('gone')] }),
    ]);
    expect(results[0]?.status).toBe(200);
    for (const r of results.slice(1)) {
      expect([201, 400], r.text).toContain(r.status);
    }
    const custom = await db.select().from(roles).where(eq(roles.tenantId, org.id));
    expect(custom.flatMap((r) => r.productPermissions)).toEqual([]);
    const product = await db
      .select()
      .from(productRoles)
      .where(eq(productRoles.key, `${f.tag}_racer`));
    expect(product.flatMap((r) => r.permissions)).toEqual([]);
  });
});

describe('bad input: refused with a code, nothing stored', () => {
  const badNames: [string, string, string][] = [
    ['upper case', 'Invoices.read', 'validation_failed'],
    ['a space', 'invoices .read', 'validation_failed'],
    ['a trailing space', 'invoices.read ', 'validation_failed'],
    ['a Cyrillic look-alike', 'invo\u0456ces.read', 'validation_failed'],
    ['a fullwidth letter', 'invoices.re\uff41d', 'validation_failed'],
    ['a zero-width space', 'invoices.\u200bread', 'validation_failed'],
    ['300 characters', `a${'b'.repeat(299)}`, 'validation_failed'],
    ['an empty segment', 'invoices..read', 'validation_failed'],
    ['empty', '', 'validation_failed'],
    ['a control-plane permission', 'tenant.read', 'permission_name_reserved'],
    ['another control-plane permission', 'roles.manage', 'permission_name_reserved'],
    ['an OpenID scope', 'openid', 'permission_name_reserved'],
    ['offline_access', 'offline_access', 'permission_name_reserved'],
    ['the svc prefix', 'svc.x', 'permission_name_reserved'],
    ['the svc prefix with a colon', 'svc:admin', 'permission_name_reserved'],
  ];

  it.each(badNames)('a permission name with %s (%j): %s', async (_what, name, code) => {
    const before = await catalogSnapshot();
    const f = fresh();
    const create = await asPlatform('POST', '/v1/api-resources', { identifier: f.identifier, name: 'Bad', permissions: [{ name }] });
    expect(create.status, create.text).toBe(400);
    expect(create.body.error.code).toBe(code);
    expect(await catalogSnapshot()).toEqual(before);
    const existing = await createResource({ identifier: f.identifier, name: 'Good' });
    const after = await catalogSnapshot();
    const add = await asPlatform('POST', `/v1/api-resources/${existing.id}/permissions`, { name });
    expect(add.status, add.text).toBe(400);
    expect(add.body.error.code).toBe(code);
    expect(await catalogSnapshot()).toEqual(after);
  });

  const badIdentifiers: [string, (host: string) => string][] = [
    ['a fragment', (h) => `https://${h}/api#frag`],
    ['an empty fragment', (h) => `https://${h}/#`],
    ['userinfo', (h) => `https://user:pass@${h}`],
    ['a user name alone', (h) => `https://user@${h}`],
    ['a query', (h) => `https://${h}/api?x=1`],
    ['upper case', (h) => `HTTPS://${h.toUpperCase()}`],
    ['an upper-case host', (h) => `https://${h.toUpperCase()}`],
    ['the default port', (h) => `https://${h}:443`],
    ['a non-http scheme', (h) => `ftp://${h}`],
    ['a URN', () => 'urn:svc:api'],
    ['javascript', () => 'javascript:alert(1)'],
    ['a relative path', () => '/api'],
    ['a space', (h) => `https://${h}/my api`],
    ['a dot segment', (h) => `https://${h}/a/../b`],
    ['a unicode host', () => 'https://b\u00fccher.example'],
    ['an empty string', () => ''],
    ['3,000 characters', (h) => `https://${h}/${'a'.repeat(3000)}`],
  ];

  it.each(badIdentifiers)('an identifier with %s: 400, nothing stored', async (_what, make) => {
    const before = await catalogSnapshot();
    const res = await asPlatform('POST', '/v1/api-resources', { identifier: make(`${fresh().tag}.example.com`), name: 'Bad' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(await catalogSnapshot()).toEqual(before);
  });

  it("svc's own origin is not an API of the product: 400, nothing stored", async () => {
    const before = await catalogSnapshot();
    const own = new URL(server.services.config.publicUrl).origin;
    for (const identifier of [own, `${own}/api`]) {
      const res = await asPlatform('POST', '/v1/api-resources', { identifier, name: 'Self' });
      expect(res.status, identifier).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect(await catalogSnapshot()).toEqual(before);
  });

  it('names, descriptions and the permission path parameter are checked too', async () => {
    const f = fresh();
    const existing = await createResource({ identifier: f.identifier, name: 'Checked', permissions: [{ name: f.perm('read') }] });
    const before = await catalogSnapshot();
    for (const body of [
      { identifier: fresh().identifier, name: '' },
      { identifier: fresh().identifier, name: 'x'.repeat(101) },
      { identifier: fresh().identifier, name: 'Bell\u0007' },
      { identifier: fresh().identifier, name: 'Ok', description: 'd'.repeat(501) },
      { identifier: fresh().identifier, name: 'Ok', description: 'nul\u0000' },
      { identifier: fresh().identifier, name: 'Ok', permissions: Array.from({ length: 501 }, (_, i) => ({ name: `p${i}.x` })) },
    ]) {
      const res = await asPlatform('POST', '/v1/api-resources', body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
    }
    const upper = await asPlatform('PATCH', `/v1/api-resources/${existing.id}/permissions/${f.perm('READ')}`, { description: 'x' });
    expect(upper.status).toBe(400);
    expect(await catalogSnapshot()).toEqual(before);
  });
});

describe('product roles', () => {
  it('lists the built-in rows first (builtin: true), then product roles newest first', async () => {
    const first = await asPlatform('POST', '/v1/product-roles', { key: `listed_a_${++n}`, name: 'Listed A' });
    const second = await asPlatform('POST', '/v1/product-roles', { key: `listed_b_${++n}`, name: 'Listed B' });
    expect(first.status, first.text).toBe(201);
    expect(second.body.id).toMatch(/^prl_[0-9A-Za-z]{20}$/);
    const page = await asPlatform('GET', '/v1/product-roles?limit=1');
    expect(page.status).toBe(200);
    expect(page.body.data.map((r: Json) => [r.id, r.key, r.builtin])).toEqual([
      ['prl_org_admin', 'org_admin', true],
      ['prl_org_member', 'org_member', true],
      [second.body.id, second.body.key, false],
    ]);
    const next = await asPlatform('GET', `/v1/product-roles?limit=1&cursor=${page.body.nextCursor}`);
    expect(next.body.data.map((r: Json) => r.id)).toEqual([first.body.id]);
  });

  it('creates a product role from existing permissions; 400 unknown_permission names the missing ones, nothing stored', async () => {
    const f = fresh();
    await createResource({
      identifier: f.identifier,
      name: 'For roles',
      permissions: [{ name: f.perm('read') }, { name: f.perm('write') }],
    });
    const made = await asPlatform('POST', '/v1/product-roles', {
      key: `${f.tag}_editor`,
      name: 'Editor',
      description: 'Edits',
      permissions: [f.perm('write'), f.perm('read'), f.perm('read')],
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({ key: `${f.tag}_editor`, name: 'Editor', description: 'Edits', builtin: false });
    expect(made.body.permissions).toEqual([f.perm('read'), f.perm('write')]);
    const before = await catalogSnapshot();
    const unknown = await asPlatform('POST', '/v1/product-roles', {
      key: `${f.tag}_ghost`,
      name: 'Ghost',
      permissions: [f.perm('read'), f.perm('delete'), 'nobody.has'],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('unknown_permission');
    expect(unknown.body.error.message).toContain(f.perm('delete'));
    expect(unknown.body.error.message).toContain('nobody.has');
    expect(unknown.body.error.message).not.toContain(f.perm('read'));
    // A control-plane name is not a product permission either.
    const control = await asPlatform('POST', '/v1/product-roles', { key: `${f.tag}_ctl`, name: 'Ctl', permissions: ['tenant.read'] });
    expect(control.body.error.code).toBe('unknown_permission');
    expect(await catalogSnapshot()).toEqual(before);
  });

  it('409 product_role_key_taken: a system key, another product role, any organization custom role; nothing stored', async () => {
    const db = server.services.db;
    const taken = `taken_${++n}`;
    expect((await asPlatform('POST', '/v1/product-roles', { key: taken, name: 'Taken' })).status).toBe(201);
    const org = await seedOrganization(db);
    const customKey = `custom_${++n}`;
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: customKey, name: 'Custom' });
    const before = await catalogSnapshot();
    for (const key of ['org_admin', 'org_member', taken, customKey]) {
      const res = await asPlatform('POST', '/v1/product-roles', { key, name: 'Again' });
      expect(res.status, key).toBe(409);
      expect(res.body.error.code).toBe('product_role_key_taken');
    }
    for (const key of ['Upper', 'a', 'has-dash', 'x'.repeat(49), '9lives', 'r\u0456le']) {
      const res = await asPlatform('POST', '/v1/product-roles', { key, name: 'Bad' });
      expect(res.status, key).toBe(400);
    }
    expect(await catalogSnapshot()).toEqual(before);
  });

  it('a product role and a custom role racing for one key: never both', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const key = `race_${++n}`;
    const [product, custom] = await Promise.all([
      asPlatform('POST', '/v1/product-roles', { key, name: 'Product' }),
      call('POST', '/v1/roles', { cookie: admin.cookie, body: { organization_slug: org.slug, key, name: 'Custom', permissions: [] } }),
    ]);
    expect([product.status, custom.status].filter((s) => s === 201)).toHaveLength(1);
    const products = await db.select().from(productRoles).where(eq(productRoles.key, key));
    const customs = await db.select().from(roles).where(eq(roles.key, key));
    expect(products.length + customs.length).toBe(1);
  });

  it('the built-in rows take permissions, never a name or description change, and are never deleted', async () => {
    const f = fresh();
    await createResource({ identifier: f.identifier, name: 'Builtin', permissions: [{ name: f.perm('read') }] });
    const before = (await asPlatform('GET', '/v1/product-roles')).body.data.find((r: Json) => r.id === 'prl_org_member');
    const changed = await asPlatform('PATCH', '/v1/product-roles/prl_org_member', { permissions: [...before.permissions, f.perm('read')] });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ key: 'org_member', builtin: true, name: before.name });
    expect(changed.body.permissions).toContain(f.perm('read'));
    const snapshot = await catalogSnapshot();
    for (const body of [{ name: 'Renamed' }, { description: 'Changed' }, { name: 'Renamed', permissions: [] }]) {
      const res = await asPlatform('PATCH', '/v1/product-roles/prl_org_member', body);
      expect(res.status, JSON.stringify(body)).toBe(409);
      expect(res.body.error.code).toBe('builtin_role_immutable');
    }
    for (const id of ['prl_org_admin', 'prl_org_member']) {
      const res = await asPlatform('DELETE', `/v1/product-roles/${id}`);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('builtin_role_immutable');
    }
    expect(await catalogSnapshot()).toEqual(snapshot);
    // Put it back (the file shares the built-in rows).
    await asPlatform('PATCH', '/v1/product-roles/prl_org_member', { permissions: before.permissions });
  });

  it('updates a product role; unknown permissions are 400 and change nothing; unknown ids are 404', async () => {
    const f = fresh();
    await createResource({ identifier: f.identifier, name: 'Upd', permissions: [{ name: f.perm('read') }] });
    const role = (await asPlatform('POST', '/v1/product-roles', { key: `${f.tag}_upd`, name: 'Upd' })).body;
    const res = await asPlatform('PATCH', `/v1/product-roles/${role.id}`, { name: 'Updated', permissions: [f.perm('read')] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'Updated', permissions: [f.perm('read')], key: role.key });
    const bad = await asPlatform('PATCH', `/v1/product-roles/${role.id}`, { name: 'Nope', permissions: [f.perm('gone')] });
    expect(bad.body.error.code).toBe('unknown_permission');
    expect((await server.services.db.select().from(productRoles).where(eq(productRoles.id, role.id)))[0]?.name).toBe('Updated');
    expect((await asPlatform('PATCH', `/v1/product-roles/prl_${'2'.repeat(20)}`, { name: 'X' })).status).toBe(404);
    expect((await asPlatform('PATCH', '/v1/product-roles/rol_org_admin', { name: 'X' })).status).toBe(400);
  });

  it('409 role_in_use while a membership (any organization, any status) or a pending invitation holds it', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const key = `held_${++n}`;
    const role = (await asPlatform('POST', '/v1/product-roles', { key, name: 'Held' })).body;
    // Assignable by an org admin: an invitation with the product role's key.
    const invited = await call('POST', '/v1/invitations', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: `held-${n}@example.com`, roleKey: key },
    });
    expect(invited.status, invited.text).toBe(201);
    const refused = await asPlatform('DELETE', `/v1/product-roles/${role.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'role_in_use' });
    expect(refused.body.error.message).toContain('1 pending invitation');
    const revoked = await call('POST', `/v1/invitations/${invited.body.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(revoked.status, revoked.text).toBe(200);
    // A member of another organization holding it.
    const elsewhere = await seedOrganization(db);
    const member = await seedSignedIn(db, { organization: elsewhere, roleKey: key });
    const stillHeld = await asPlatform('DELETE', `/v1/product-roles/${role.id}`);
    expect(stillHeld.body.error.code).toBe('role_in_use');
    expect(stillHeld.body.error.message).toContain('1 member');
    expect((await db.select().from(productRoles).where(eq(productRoles.id, role.id))).length).toBe(1);
    const otherAdmin = await seedSignedIn(db, { organization: elsewhere, roleKey: 'org_admin' });
    const moved = await call('PATCH', `/v1/users/${member.user.id}`, {
      cookie: otherAdmin.cookie,
      body: { organization_slug: elsewhere.slug, roleKey: 'org_member' },
    });
    expect(moved.status, moved.text).toBe(200);
    const deleted = await asPlatform('DELETE', `/v1/product-roles/${role.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ id: role.id, deleted: true });
    expect((await asPlatform('DELETE', `/v1/product-roles/${role.id}`)).status).toBe(404);
  });
});

describe('tenants read the catalog, never change it', () => {
  it('an org admin (roles.read) lists resources and product roles; an org member is 403; creating is 403 and stores nothing', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const f = fresh();
    const created = await createResource({ identifier: f.identifier, name: 'Readable', permissions: [{ name: f.perm('read') }] });
    const list = await call('GET', `/v1/api-resources?organization_slug=${org.slug}&limit=200`, { cookie: admin.cookie });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((r: Json) => r.id)).toContain(created.id);
    expect((await call('GET', `/v1/api-resources/${created.id}`, { cookie: admin.cookie })).status).toBe(200);
    expect((await call('GET', '/v1/product-roles', { cookie: admin.cookie })).status).toBe(200);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['roles.read'] });
    expect((await call('GET', '/v1/api-resources', { authorization: key.authorization })).status).toBe(200);
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect((await call('GET', '/v1/api-resources', { cookie: member.cookie })).status).toBe(403);

    const before = await catalogSnapshot();
    const g = fresh();
    const refusals = [
      await call('POST', '/v1/api-resources', {
        cookie: admin.cookie,
        body: { identifier: g.identifier, name: 'Mine', permissions: [{ name: g.perm('read') }] },
      }),
      await call('POST', '/v1/product-roles', { cookie: admin.cookie, body: { key: `${g.tag}_mine`, name: 'Mine' } }),
      await call('POST', `/v1/api-resources/${created.id}/permissions`, { cookie: admin.cookie, body: { name: g.perm('x') } }),
      await call('PATCH', '/v1/product-roles/prl_org_admin', { cookie: admin.cookie, body: { permissions: [f.perm('read')] } }),
      await call('DELETE', `/v1/api-resources/${created.id}`, { cookie: admin.cookie }),
    ];
    for (const r of refusals) {
      expect(r.status, r.text).toBe(403);
      expect(r.body.error.code).toBe('forbidden');
    }
    expect(await catalogSnapshot()).toEqual(before);
  });
});

describe('audit entries and webhook events', () => {
  it('every change is a platform-level audit entry and an event for the platform workspace endpoints, never a tenant one', async () => {
    const db = server.services.db;
    const [platformOrg] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.kind, 'platform'));
    expect(platformOrg).toBeDefined();
    const platformId = platformOrg?.id as string;
    const types = [
      'api_resource.created',
      'api_resource.updated',
      'api_resource.deleted',
      'product_role.created',
      'product_role.updated',
      'product_role.deleted',
    ];
    const endpoint = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: platformId, eventTypes: types });
    const tenant = await seedOrganization(db);
    const tenantEndpoint = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: tenant.id, eventTypes: types });

    const f = fresh();
    const resource = await createResource({ identifier: f.identifier, name: 'Audited', permissions: [{ name: f.perm('read') }] });
    await asPlatform('PATCH', `/v1/api-resources/${resource.id}`, { name: 'Audited 2' });
    await asPlatform('POST', `/v1/api-resources/${resource.id}/permissions`, { name: f.perm('write') });
    const role = (await asPlatform('POST', '/v1/product-roles', { key: `${f.tag}_aud`, name: 'Aud', permissions: [f.perm('read')] })).body;
    await asPlatform('PATCH', `/v1/product-roles/${role.id}`, { permissions: [f.perm('write')] });
    await asPlatform('DELETE', `/v1/product-roles/${role.id}`);
    await asPlatform('DELETE', `/v1/api-resources/${resource.id}`);

    const created = await platformAudit('api_resource.created', resource.id);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      actorType: 'user',
      actorId: platform.user.id,
      targetType: 'api_resource',
      summary: { identifier: f.identifier, name: 'Audited', permissions: [f.perm('read')] },
    });
    expect(await platformAudit('api_resource.updated', resource.id)).toHaveLength(2);
    expect((await platformAudit('api_resource.deleted', resource.id))[0]?.summary).toMatchObject({
      permissions: [f.perm('read'), f.perm('write')],
    });
    expect((await platformAudit('product_role.updated', role.id))[0]?.summary).toMatchObject({
      key: role.key,
      changes: { permissions: { from: [f.perm('read')], to: [f.perm('write')] } },
    });
    expect(await platformAudit('product_role.created', role.id)).toHaveLength(1);
    expect(await platformAudit('product_role.deleted', role.id)).toHaveLength(1);

    const events = await db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, platformId), inArray(webhookEvents.type, types)));
    const ours = events.filter((e) => (e.data as Json).id === resource.id || (e.data as Json).id === role.id);
    expect(ours.map((e) => e.type).sort()).toEqual(
      [
        'api_resource.created',
        'api_resource.updated',
        'api_resource.updated',
        'api_resource.deleted',
        'product_role.created',
        'product_role.updated',
        'product_role.deleted',
      ].sort(),
    );
    const deliveries = await db
      .select()
      .from(webhookDeliveries)
      .where(
        inArray(
          webhookDeliveries.eventId,
          ours.map((e) => e.id),
        ),
      );
    expect(deliveries.map((d) => d.endpointId)).toEqual(ours.map(() => endpoint.id));
    expect(await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, tenantEndpoint.id))).toEqual([]);
  });

  it('a refused change records nothing', async () => {
    const db = server.services.db;
    const f = fresh();
    await createResource({ identifier: f.identifier, name: 'Once' });
    const count = async () => (await db.select().from(auditLogs).where(isNull(auditLogs.tenantId))).length;
    const before = await count();
    expect((await asPlatform('POST', '/v1/api-resources', { identifier: f.identifier, name: 'Twice' })).status).toBe(409);
    expect((await asPlatform('POST', '/v1/product-roles', { key: 'org_admin', name: 'X' })).status).toBe(409);
    expect(await count()).toBe(before);
  });
});
