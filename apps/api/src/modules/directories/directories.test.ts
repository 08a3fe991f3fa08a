import { createHash } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { scimDirectories, scimUsers } from '@svc/db/schema/directories';
import { memberships } from '@svc/db/schema/identity';
import { roles } from '@svc/db/schema/roles';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedDomain } from '../domains/domains.fixtures.ts';
import { seedDirectory } from './directories.fixtures.ts';
import { MATRIX } from './directories.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;

async function call(method: string, path: string, opts: { cookie?: string; bearer?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.bearer ? { authorization: opts.bearer } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(opts.body ?? {}),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as Json };
}

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

describeAuthMatrix('directories', () => server, MATRIX);

describe('/v1/directories', () => {
  it('creates a directory whose token is shown once and stored only as SHA-256; lists, renames, deletes; audited and evented', async () => {
    const { db, org, admin } = await adminOf();
    const created = await call('POST', '/v1/directories', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Okta' } });
    expect(created.status).toBe(201);
    expect(created.json.scimBaseUrl).toBe(`${server.services.config.publicUrl}/scim/v2/${created.json.id}`);
    const [row] = await db.select().from(scimDirectories).where(eq(scimDirectories.id, created.json.id));
    expect(row?.tokenHash).toBe(createHash('sha256').update(created.json.token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(created.json.token);
    const read = await call('GET', `/v1/directories/${created.json.id}`, { cookie: admin.cookie });
    expect(read.json.token).toBeUndefined();
    expect(read.json.tokenPrefix).toBe(created.json.token.slice(0, 11));
    const listed = await call('GET', `/v1/directories?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(listed.json.data.map((d: Json) => d.id)).toEqual([created.json.id]);
    const renamed = await call('PATCH', `/v1/directories/${created.json.id}`, { cookie: admin.cookie, body: { name: 'Okta (prod)' } });
    expect(renamed.json.name).toBe('Okta (prod)');
    expect((await call('DELETE', `/v1/directories/${created.json.id}`, { cookie: admin.cookie })).json).toEqual({
      id: created.json.id,
      deleted: true,
    });
    const audit = await db
      .select({ action: auditLogs.action, summary: auditLogs.summary })
      .from(auditLogs)
      .where(eq(auditLogs.tenantId, org.id));
    expect(audit.map((a) => a.action)).toEqual(expect.arrayContaining(['directory.created', 'directory.updated', 'directory.deleted']));
    expect(JSON.stringify(audit)).not.toContain(created.json.token);
  });

  it('refuses a mapping to a role the organization does not have, or one the caller could not grant', async () => {
    const { db, org, admin } = await adminOf();
    const unknown = await call('POST', '/v1/directories', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'x', groupRoles: [{ group: 'Admins', roleKey: 'nope' }] },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe('unknown_role');
    const other = await seedOrganization(db);
    await db.insert(roles).values({ id: newId('role'), tenantId: other.id, key: 'elsewhere', name: 'Elsewhere', permissions: [] });
    const foreignRole = await call('POST', '/v1/directories', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'x', defaultRoleKey: 'elsewhere' },
    });
    expect(foreignRole.json.error.code).toBe('unknown_role');
    // A key holding only directories.* cannot make a directory that hands out org_admin.
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['directories.read', 'directories.manage'] });
    const escalating = await call('POST', '/v1/directories', {
      bearer: key.authorization,
      body: { name: 'x', groupRoles: [{ group: 'Admins', roleKey: 'org_admin' }] },
    });
    expect(escalating.status).toBe(403);
    expect(await db.select().from(scimDirectories).where(eq(scimDirectories.tenantId, org.id))).toHaveLength(0);
  });

  it("another organization's directory id is a 404 on every route", async () => {
    const { admin } = await adminOf();
    const other = await seedOrganization(server.services.db);
    const theirs = await seedDirectory(server.services.db, { tenantId: other.id });
    for (const [method, path] of [
      ['GET', `/v1/directories/${theirs.id}`],
      ['PATCH', `/v1/directories/${theirs.id}`],
      ['POST', `/v1/directories/${theirs.id}/rotate-token`],
      ['DELETE', `/v1/directories/${theirs.id}`],
      ['GET', `/v1/directories/${theirs.id}/requests`],
    ] as const) {
      const res = await call(method, path, { cookie: admin.cookie, body: method === 'PATCH' ? { name: 'mine now' } : {} });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
  });

  it('changing the mapping re-roles provisioned people at once', async () => {
    const { db, org, admin } = await adminOf();
    const { domain } = await seedDomain(db, { tenantId: org.id, verified: true });
    const dir = await call('POST', '/v1/directories', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Entra' } });
    const scim = (method: string, path: string, body?: unknown) =>
      fetch(`${dir.json.scimBaseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${dir.json.token}`, 'content-type': 'application/scim+json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, json: (await r.json().catch(() => ({}))) as Json }));
    const user = await scim('POST', '/Users', { userName: `ada@${domain}` });
    await scim('POST', '/Groups', { displayName: 'Engineering Leads', members: [{ value: user.json.id }] });
    const [scimUser] = await db.select().from(scimUsers).where(eq(scimUsers.id, user.json.id));
    const membershipRole = async () =>
      (
        await db
          .select()
          .from(memberships)
          .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, scimUser?.userId ?? '')))
      )[0]?.roleKey;
    expect(await membershipRole()).toBe('org_member');
    const mapped = await call('PATCH', `/v1/directories/${dir.json.id}`, {
      cookie: admin.cookie,
      body: { groupRoles: [{ group: 'engineering leads', roleKey: 'org_admin' }] },
    });
    expect(mapped.status).toBe(200);
    expect(await membershipRole()).toBe('org_admin');
  });
});
