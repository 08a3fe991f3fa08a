import { newId } from '@svc/contracts/ids';
import { PERMISSION_CATALOG } from '@svc/contracts/permissions';
import { afterCursor } from '@svc/db/pagination';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships } from '@svc/db/schema/identity';
import { organizations } from '@svc/db/schema/organizations';
import { roles } from '@svc/db/schema/roles';
import { and, desc, eq, inArray, isNull, ne, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { slugFromName } from './service.ts';
import { MATRIX } from './tenants.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

type Caller = { cookie?: string; authorization?: string };

function call(method: string, path: string, opts: Caller & { body?: unknown } = {}) {
  return fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      // Mutations go as a browser sends them: JSON from our origin (docs/api.md).
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
}

async function json(res: Response): Promise<any> {
  return res.json();
}

async function codeOf(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

/** Every item of a paged list, following nextCursor. */
async function allPages(path: string, caller: Caller, limit = 2): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await call('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, caller);
    expect(res.status).toBe(200);
    const page = await json(res);
    items.push(...page.data);
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 100);
  return { items, pages };
}

/** Ids in list order: created_at descending, then id descending. */
function newestFirst(rows: { id: string; createdAt: Date }[]): string[] {
  return [...rows]
    .sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0))
    .map((r) => r.id);
}

/** The record of an organization's deletion: platform-level (tenant_id null), naming it as the target. */
function deletionRecords(tenantId: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(isNull(auditLogs.tenantId), eq(auditLogs.targetId, tenantId), eq(auditLogs.action, 'tenant.deleted')));
}

function auditEntries(tenantId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, action)));
}

describeAuthMatrix(
  'tenants',
  () => server,
  MATRIX.filter((r) => r.method !== 'DELETE'),
);
// Deleting gets a fixture of its own: the other routes must never meet a deleted organization.
describeAuthMatrix(
  'tenants (delete)',
  () => server,
  MATRIX.filter((r) => r.method === 'DELETE'),
);

describe('tenants', () => {
  it('reads an organization; a malformed id is a 400, an unknown one a 404', async () => {
    const org = await seedOrganization(server.services.db, { name: 'Acme' });
    const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
    const res = await call('GET', `/v1/tenants/${org.id}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: org.id, slug: org.slug, name: 'Acme', kind: 'tenant' });
    expect((await call('GET', '/v1/tenants/usr_00000000000000000000', { cookie: admin.cookie })).status).toBe(400);
    expect((await call('GET', '/v1/tenants/ten_00000000000000000000', { cookie: admin.cookie })).status).toBe(404);
  });

  it('renames and re-slugs with one audit entry; a taken slug is 409; bad names are 400', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const taken = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const res = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body: { name: 'New name', slug: `${org.slug}-x` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'New name', slug: `${org.slug}-x` });
    const entries = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'tenant.updated')));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: admin.user.id, targetId: org.id });
    // Each field before and after, for the log to read "Old → New".
    expect(entries[0]?.summary).toEqual({
      changes: { name: { from: org.name, to: 'New name' }, slug: { from: org.slug, to: `${org.slug}-x` } },
    });

    const clash = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body: { slug: taken.slug } });
    expect(clash.status).toBe(409);
    expect(((await clash.json()) as any).error.code).toBe('conflict');
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 'a\u0000b' }, { slug: 'Not A Slug' }]) {
      const bad = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('refuses the slugs svc looks workspaces up by, and never moves the platform workspace off its slug', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    for (const slug of ['platform', 'keyless-development']) {
      const res = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body: { slug } });
      expect(res.status, slug).toBe(409);
      expect((await json(res)).error.message).toMatch(/reserved|taken/);
      const created = await call('POST', '/v1/tenants', { cookie: admin.cookie, body: { name: 'Squatter', slug } });
      expect(created.status, slug).toBe(409);
    }
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const moved = await call('PATCH', `/v1/tenants/${platform.organization.id}`, { cookie: platform.cookie, body: { slug: 'platform-2' } });
    expect(moved.status).toBe(409);
    expect((await json(moved)).error.message).toMatch(/platform workspace/);
    const renamed = await call('PATCH', `/v1/tenants/${platform.organization.id}`, {
      cookie: platform.cookie,
      body: { name: 'Operations', slug: 'platform' },
    });
    expect(renamed.status).toBe(200);
    expect(await json(renamed)).toMatchObject({ name: 'Operations', slug: 'platform', kind: 'platform' });
  });
});

describe('the OpenAPI document', () => {
  it('documents every tenants route with its credentials; create answers 201', async () => {
    const doc = (await json(await fetch(`${server.url}/v1/openapi.json`))) as { paths: Record<string, Record<string, any>> };
    const both = [{ sessionCookie: [] }, { secretKey: [] }];
    const sessionOnly = [{ sessionCookie: [] }];
    expect(doc.paths['/tenants']?.get.security).toEqual(both);
    expect(doc.paths['/tenants']?.post.security).toEqual(sessionOnly);
    expect(Object.keys(doc.paths['/tenants']?.post.responses)).toContain('201');
    expect(doc.paths['/tenants/{id}']?.delete.security).toEqual(sessionOnly);
    expect(doc.paths['/tenants/{id}/members']?.get.security).toEqual(both);
    expect(doc.paths['/tenants/{id}/overview']?.get.security).toEqual(both);
    expect(doc.paths['/tenants']?.get.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['cursor', 'limit', 'q']);
    expect(doc.paths['/permissions']?.get.security).toEqual(both);
    const check = doc.paths['/tenants/{id}/permissions/check']?.get;
    expect(check.security).toEqual(both);
    expect(check.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(['path:id', 'query:permission']);
  });
});

describe('GET /v1/tenants', () => {
  it('a user sees exactly their organizations, newest first, a page at a time', async () => {
    const db = server.services.db;
    const a = await seedOrganization(db);
    const b = await seedOrganization(db);
    await seedOrganization(db); // not theirs
    const user = await seedSignedIn(db, { organization: a, roleKey: 'org_member' });
    await db.insert(memberships).values({ tenantId: b.id, userId: user.user.id, roleKey: 'org_admin' });

    const expected = newestFirst(
      await db
        .select()
        .from(organizations)
        .where(inArray(organizations.id, [a.id, b.id, user.ownWorkspace.id])),
    );
    const first = await json(await call('GET', '/v1/tenants?limit=2', { cookie: user.cookie }));
    expect(first.data.map((t: any) => t.id)).toEqual(expected.slice(0, 2));
    expect(first.nextCursor).toEqual(expect.any(String));
    const { items, pages } = await allPages('/v1/tenants', { cookie: user.cookie });
    expect(pages).toBe(2);
    expect(items.map((t) => t.id)).toEqual(expected);
    expect(items.find((t) => t.id === user.ownWorkspace.id)).toMatchObject({ kind: 'tenant', slug: user.ownWorkspace.slug });
  });

  it('a platform admin sees every organization except the keyless workspace', async () => {
    const db = server.services.db;
    await fetch(`${server.url}/v1/client/config?keyless=1`);
    const [keyless] = await db.select().from(organizations).where(eq(organizations.kind, 'keyless'));
    expect(keyless).toBeDefined();
    const stranger = await seedOrganization(db);
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const { items } = await allPages('/v1/tenants', { cookie: platform.cookie }, 200);
    const ids = items.map((t) => t.id);
    expect(ids).toContain(stranger.id);
    expect(ids).toContain(platform.organization.id);
    expect(ids).not.toContain(keyless?.id);
    expect(new Set(ids).size).toBe(ids.length);
    const total = await db.$count(organizations);
    expect(ids).toHaveLength(total - 1);
  });

  it('an API key sees its own organization, and only with tenant.read in scope', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    await seedOrganization(db);
    const reader = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const res = await call('GET', '/v1/tenants', { authorization: reader.authorization });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ data: [expect.objectContaining({ id: org.id })], nextCursor: null });
    const blind = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'] });
    const refused = await call('GET', '/v1/tenants', { authorization: blind.authorization });
    expect(refused.status).toBe(403);
    expect(await codeOf(refused)).toBe('forbidden');
  });

  it("anonymous is 401; another caller's cursor, a malformed cursor and a bad limit are 400", async () => {
    const db = server.services.db;
    expect((await call('GET', '/v1/tenants')).status).toBe(401);
    const one = await seedSignedIn(db, { organization: await seedOrganization(db) });
    const other = await seedSignedIn(db, { organization: await seedOrganization(db) });
    const { nextCursor } = await json(await call('GET', '/v1/tenants?limit=1', { cookie: one.cookie }));
    expect(nextCursor).toEqual(expect.any(String));
    const replayed = await call('GET', `/v1/tenants?cursor=${nextCursor}`, { cookie: other.cookie });
    expect(replayed.status).toBe(400);
    expect(await codeOf(replayed)).toBe('validation_failed');
    for (const query of ['cursor=not-a-cursor', 'limit=0', 'limit=201', 'limit=abc']) {
      expect((await call('GET', `/v1/tenants?${query}`, { cookie: one.cookie })).status, query).toBe(400);
    }
    // The same cursor works for its owner.
    expect((await call('GET', `/v1/tenants?cursor=${nextCursor}`, { cookie: one.cookie })).status).toBe(200);
  });
});

describe('GET /v1/tenants?q= (search) and the platform admin summary', () => {
  let n = 0;
  /** A token no other organization of this file's database holds: a search for it sees only this test's. */
  const token = () => `zq${++n}${Math.random().toString(36).slice(2, 8)}`;

  async function search(q: string, caller: Caller, limit = 200): Promise<any[]> {
    const { items } = await allPages(`/v1/tenants?q=${encodeURIComponent(q)}`, caller, limit);
    return items;
  }

  it('keeps the organizations whose name or slug contains the text, ignoring case', async () => {
    const db = server.services.db;
    const t = token();
    const byName = await seedOrganization(db, { name: `Acme ${t.toUpperCase()} Labs` });
    const bySlug = await seedOrganization(db, { name: 'Unrelated name', slug: `shop-${t}` });
    await seedOrganization(db, { name: `Acme ${t.slice(0, -1)}` }); // one character short
    const platform = await seedSignedIn(db, { platformAdmin: true });

    const found = await search(t, { cookie: platform.cookie });
    expect(found.map((o) => o.id)).toEqual(newestFirst([byName, bySlug]));
    expect((await search(t.toUpperCase(), { cookie: platform.cookie })).map((o) => o.id)).toEqual(newestFirst([byName, bySlug]));
    expect((await search(`  ${t}  `, { cookie: platform.cookie })).map((o) => o.id)).toEqual(newestFirst([byName, bySlug]));
    expect(await search(`${t}-nothing`, { cookie: platform.cookie })).toEqual([]);
    // An empty search is no filter.
    const all = await json(await call('GET', '/v1/tenants?q=&limit=200', { cookie: platform.cookie }));
    expect(all.data.length).toBeGreaterThan(2);
    expect((await call('GET', `/v1/tenants?q=${'x'.repeat(101)}`, { cookie: platform.cookie })).status).toBe(400);
  });

  it('takes % and _ (and the escape character) literally', async () => {
    const db = server.services.db;
    const t = token();
    const percent = await seedOrganization(db, { name: `${t} 50%off` });
    await seedOrganization(db, { name: `${t} 50xoff` });
    await seedOrganization(db, { name: `${t} 50 off` });
    const underscore = await seedOrganization(db, { name: `${t} a_b` });
    await seedOrganization(db, { name: `${t} axb` });
    const backslash = await seedOrganization(db, { name: `${t} c\\d` });
    await seedOrganization(db, { name: `${t} cd` });
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const ids = async (q: string) => (await search(q, { cookie: platform.cookie })).map((o) => o.id);

    expect(await ids(`${t} 50%`)).toEqual([percent.id]);
    expect(await ids('%')).toContain(percent.id);
    expect(await ids('%')).not.toContain(underscore.id);
    expect(await ids(`${t} a_b`)).toEqual([underscore.id]);
    expect(await ids(`${t} c\\d`)).toEqual([backslash.id]);
    expect(await ids(`${t}%`)).toEqual([]);
    expect(await ids(`${t}_`)).toEqual([]);
  });

  it('pages through a search; a cursor continues only its own search', async () => {
    const db = server.services.db;
    const t = token();
    const matching = [];
    for (let i = 0; i < 5; i++) {
      matching.push(await seedOrganization(db, { name: `Match ${t} ${i}` }));
      await seedOrganization(db, { name: `Other ${i} ${t.slice(1)}` });
    }
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const { items, pages } = await allPages(`/v1/tenants?q=${t}`, { cookie: platform.cookie }, 2);
    expect(pages).toBe(3);
    expect(items.map((o) => o.id)).toEqual(newestFirst(matching));

    const first = await json(await call('GET', `/v1/tenants?q=${t}&limit=2`, { cookie: platform.cookie }));
    expect(first.nextCursor).toEqual(expect.any(String));
    for (const other of [`q=${t}x&`, '']) {
      const replayed = await call('GET', `/v1/tenants?${other}cursor=${first.nextCursor}`, { cookie: platform.cookie });
      expect(replayed.status, other).toBe(400);
      expect((await json(replayed)).error.message).toMatch(/another list/);
    }
    const unfiltered = await json(await call('GET', '/v1/tenants?limit=1', { cookie: platform.cookie }));
    expect((await call('GET', `/v1/tenants?q=${t}&cursor=${unfiltered.nextCursor}`, { cookie: platform.cookie })).status).toBe(400);
  });

  it('a later page starts at its cursor in organizations_created_idx instead of walking the pages before it', async () => {
    const db = server.services.db;
    const cursor = { createdAt: new Date(), id: newId('organization') };
    const page = db
      .select({ id: organizations.id })
      .from(organizations)
      .where(and(ne(organizations.kind, 'keyless'), afterCursor(organizations.createdAt, organizations.id, cursor)))
      .orderBy(desc(organizations.createdAt), desc(organizations.id))
      .limit(51);
    const plan = await db.transaction(async (tx) => {
      // The test database is small enough for a sequential scan to win; the question is whether
      // the index can bound the scan at all.
      await tx.execute(sql`set local enable_seqscan = off`);
      const [row] = await tx.execute<{ 'QUERY PLAN': unknown }>(sql`explain (format json) ${page}`);
      return JSON.stringify(row?.['QUERY PLAN']);
    });
    expect(plan).toMatch(/"Index Name":"organizations_created_idx"/);
    expect(plan).toMatch(/"Scan Direction":"Backward"/);
    expect(plan).toMatch(/"Index Cond":"\(ROW\(created_at, id\) < ROW\(/);
    expect(plan).not.toMatch(/"Node Type":"Sort"/);
  });

  it("a user's search covers only their active memberships; no summary for them", async () => {
    const db = server.services.db;
    const t = token();
    const mine = await seedOrganization(db, { name: `Mine ${t}` });
    const notMine = await seedOrganization(db, { name: `Theirs ${t}` });
    const suspended = await seedOrganization(db, { name: `Suspended ${t}` });
    const invited = await seedOrganization(db, { name: `Invited ${t}` });
    const user = await seedSignedIn(db, { organization: mine, roleKey: 'org_admin' });
    await seedSignedIn(db, { organization: notMine, roleKey: 'org_admin' });
    await db.insert(memberships).values([
      { tenantId: suspended.id, userId: user.user.id, roleKey: 'org_admin', status: 'suspended' },
      { tenantId: invited.id, userId: user.user.id, roleKey: 'org_admin', status: 'invited' },
    ]);
    const found = await search(t, { cookie: user.cookie });
    expect(found).toEqual([{ ...(await json(await call('GET', `/v1/tenants/${mine.id}`, { cookie: user.cookie }))), summary: null }]);
    expect(await search(user.ownWorkspace.slug, { cookie: user.cookie })).toEqual([expect.objectContaining({ id: user.ownWorkspace.id })]);
  });

  it('a tenant API key finds only its own organization', async () => {
    const db = server.services.db;
    const t = token();
    const own = await seedOrganization(db, { name: `Own ${t}` });
    await seedOrganization(db, { name: `Foreign ${t}` });
    const key = await seedApiKey(db, { tenantId: own.id, scopes: ['tenant.read'] });
    const found = await search(t, { authorization: key.authorization });
    expect(found).toEqual([expect.objectContaining({ id: own.id, summary: null })]);
    expect(await search(`Foreign ${t}`, { authorization: key.authorization })).toEqual([]);
  });

  it("a platform admin's items carry the member count and the subscription's plan and status", async () => {
    const db = server.services.db;
    const t = token();
    const org = await seedOrganization(db, { name: `Summary ${t}` });
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const left = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const summaryOf = async (q: string) => (await search(q, { cookie: platform.cookie }))[0]?.summary;

    // New organizations are on the default plan.
    expect(await summaryOf(t)).toEqual({
      memberCount: 3,
      subscription: { plan: { key: 'free', name: expect.any(String) }, status: 'active' },
    });

    const planKey = `team-${t}`;
    const plan = await call('POST', '/v1/subscription-plans', {
      cookie: platform.cookie,
      body: { key: planKey, name: `Team ${t}`, seatLimit: 10, usageLimits: {} },
    });
    expect(plan.status).toBe(201);
    const patched = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, {
      cookie: platform.cookie,
      body: { planKey, status: 'trialing' },
    });
    expect(patched.status).toBe(200);
    await db.update(memberships).set({ status: 'suspended' }).where(eq(memberships.userId, left.user.id));
    expect(await summaryOf(t)).toEqual({ memberCount: 3, subscription: { plan: { key: planKey, name: `Team ${t}` }, status: 'trialing' } });
    const removed = await call('DELETE', `/v1/users/${left.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(removed.status, await removed.clone().text()).toBe(200);
    expect((await summaryOf(t)).memberCount).toBe(2);

    // The platform workspace has no subscription.
    const workspace = (await search(platform.organization.slug, { cookie: platform.cookie })).find((o) => o.kind === 'platform');
    expect(workspace.summary).toEqual({ memberCount: expect.any(Number), subscription: null });
  });
});

describe('POST /v1/tenants', () => {
  it('creates an organization (201) with the caller as its org_admin and one audit entry', async () => {
    const db = server.services.db;
    const user = await seedSignedIn(db);
    const name = `Acme Corp ${newId('request').slice(-6)}`;
    const res = await call('POST', '/v1/tenants', { cookie: user.cookie, body: { name } });
    expect(res.status).toBe(201);
    const tenant = await json(res);
    expect(tenant).toMatchObject({ id: expect.stringMatching(/^ten_/), name, slug: slugFromName(name), kind: 'tenant' });

    const members = await json(await call('GET', `/v1/tenants/${tenant.id}/members`, { cookie: user.cookie }));
    expect(members.data).toEqual([expect.objectContaining({ userId: user.user.id, roleKey: 'org_admin' })]);
    const listed = await allPages('/v1/tenants', { cookie: user.cookie });
    expect(listed.items.map((t) => t.id)).toContain(tenant.id);
    const entries = await auditEntries(tenant.id, 'tenant.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: user.user.id, targetType: 'tenant', targetId: tenant.id });
    expect(entries[0]?.summary).toEqual({ name, slug: tenant.slug });
    // The creator administers it at once: rename it.
    expect((await call('PATCH', `/v1/tenants/${tenant.id}`, { cookie: user.cookie, body: { name: 'Renamed' } })).status).toBe(200);
  });

  it('derives a fresh slug when the name slug is taken; an explicit taken slug is 409 and creates nothing', async () => {
    const db = server.services.db;
    const user = await seedSignedIn(db);
    const name = `Globex ${newId('request').slice(-6)}`;
    const first = await json(await call('POST', '/v1/tenants', { cookie: user.cookie, body: { name } }));
    const second = await json(await call('POST', '/v1/tenants', { cookie: user.cookie, body: { name } }));
    expect(first.slug).toBe(slugFromName(name));
    expect(second.slug).toMatch(new RegExp(`^${first.slug}-[a-z0-9]{6}$`));

    const clash = await call('POST', '/v1/tenants', { cookie: user.cookie, body: { name: 'Other', slug: first.slug } });
    expect(clash.status).toBe(409);
    expect(await codeOf(clash)).toBe('conflict');
    expect(await db.$count(organizations, eq(organizations.name, 'Other'))).toBe(0);

    const explicit = await call('POST', '/v1/tenants', { cookie: user.cookie, body: { name: 'Initech', slug: `initech-${first.slug}` } });
    expect(explicit.status).toBe(201);
    expect((await json(explicit)).slug).toBe(`initech-${first.slug}`);
  });

  it('slugs come from any name: accents folded, symbols dropped, too short padded', () => {
    expect(slugFromName('Café  Société!')).toBe('cafe-societe');
    expect(slugFromName('日本')).toBe('org');
    expect(slugFromName('X')).toBe('org-x');
    expect(slugFromName('a'.repeat(100))).toHaveLength(41);
  });

  it('bad bodies are 400; API keys (403), anonymous (401) and cross-site posts (403) create nothing', async () => {
    const db = server.services.db;
    const user = await seedSignedIn(db);
    for (const body of [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'x'.repeat(101) },
      { name: 'a\u0007b' },
      { name: 42 },
      { name: 'Ok', slug: 'Not A Slug' },
      { name: 'Ok', slug: 'a' },
      { name: 'Ok', slug: 'a'.repeat(49) },
      { name: 'Ok', slug: 'double--hyphen' },
    ]) {
      const res = await call('POST', '/v1/tenants', { cookie: user.cookie, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.update', 'tenant.read'] });
    const byKey = await call('POST', '/v1/tenants', { authorization: key.authorization, body: { name: 'By key' } });
    expect(byKey.status).toBe(403);
    expect((await call('POST', '/v1/tenants', { body: { name: 'Anonymous' } })).status).toBe(401);
    const crossSite = await fetch(`${server.url}/v1/tenants`, {
      method: 'POST',
      headers: { cookie: user.cookie, 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ name: 'Cross site' }),
    });
    expect(crossSite.status).toBe(403);
    expect(await codeOf(crossSite)).toBe('csrf_rejected');
    for (const name of ['By key', 'Anonymous', 'Cross site']) {
      expect(await db.$count(organizations, eq(organizations.name, name)), name).toBe(0);
    }
  });
});

describe('DELETE /v1/tenants/{id}', () => {
  it('deletes the organization and what it owns; its keys stop working; the audit entry outlives it', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db, { name: 'Doomed' });
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: [] });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    expect((await call('GET', `/v1/tenants/${org.id}`, { authorization: key.authorization })).status).toBe(200);

    const res = await call('DELETE', `/v1/tenants/${org.id}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ id: org.id, deleted: true });

    const platform = await seedSignedIn(db, { platformAdmin: true });
    expect((await call('GET', `/v1/tenants/${org.id}`, { cookie: platform.cookie })).status).toBe(404);
    expect((await call('GET', `/v1/tenants/${org.id}`, { authorization: key.authorization })).status).toBe(401);
    expect(await db.$count(memberships, eq(memberships.tenantId, org.id))).toBe(0);
    expect(await db.$count(roles, eq(roles.tenantId, org.id))).toBe(0);
    const entries = await deletionRecords(org.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorId: admin.user.id, targetId: org.id, summary: { name: 'Doomed', slug: org.slug } });
    // The member is still signed in, now in their own workspace.
    const me = await json(await call('GET', '/v1/me', { cookie: member.cookie }));
    expect(me.activeWorkspace?.id).toBe(member.ownWorkspace.id);
  });

  it('deleting the organization you are in leaves your session working in your other organizations', async () => {
    const db = server.services.db;
    const current = await seedOrganization(db);
    const other = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: current, roleKey: 'org_admin' });
    await db.insert(memberships).values({ tenantId: other.id, userId: admin.user.id, roleKey: 'org_admin' });
    expect((await json(await call('GET', '/v1/me', { cookie: admin.cookie }))).activeWorkspace.id).toBe(current.id);

    expect((await call('DELETE', `/v1/tenants/${current.id}`, { cookie: admin.cookie })).status).toBe(200);
    const me = await call('GET', '/v1/me', { cookie: admin.cookie });
    expect(me.status).toBe(200);
    // The oldest remaining membership: the workspace made at first sign-in.
    expect((await json(me)).activeWorkspace.id).toBe(admin.ownWorkspace.id);
    const listed = await allPages('/v1/tenants', { cookie: admin.cookie });
    expect(listed.items.map((t) => t.id).sort()).toEqual([admin.ownWorkspace.id, other.id].sort());
    expect((await call('PATCH', `/v1/tenants/${other.id}`, { cookie: admin.cookie, body: { name: 'Still mine' } })).status).toBe(200);

    // With no organization left the session lives on, without a workspace, and can start anew.
    for (const id of [admin.ownWorkspace.id, other.id]) {
      expect((await call('DELETE', `/v1/tenants/${id}`, { cookie: admin.cookie })).status).toBe(200);
    }
    const bare = await json(await call('GET', '/v1/me', { cookie: admin.cookie }));
    expect(bare).toMatchObject({ activeWorkspace: null, memberships: [] });
    expect(await json(await call('GET', '/v1/tenants', { cookie: admin.cookie }))).toEqual({ data: [], nextCursor: null });
    expect((await call('POST', '/v1/tenants', { cookie: admin.cookie, body: { name: 'Fresh start' } })).status).toBe(201);
  });

  it('an application of a deleted organization stops answering to its secret key', async () => {
    const db = server.services.db;
    const created = await seedApplication(db);
    const [org] = await db.select().from(organizations).where(eq(organizations.id, created.application.tenantId));
    const backend = () => fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `Bearer ${created.secretKey}` } });
    expect((await backend()).status).toBe(200);
    const platform = await seedSignedIn(db, { platformAdmin: true });
    expect((await call('DELETE', `/v1/tenants/${org?.id}`, { cookie: platform.cookie })).status).toBe(200);
    await expect.poll(async () => (await backend()).status, { timeout: 2_000 }).toBe(401);
  });

  it('the platform workspace cannot be deleted (409); twice, or at once, deletes once (404)', async () => {
    const db = server.services.db;
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const refused = await call('DELETE', `/v1/tenants/${platform.organization.id}`, { cookie: platform.cookie });
    expect(refused.status).toBe(409);
    expect(await codeOf(refused)).toBe('conflict');
    expect(await db.$count(organizations, eq(organizations.id, platform.organization.id))).toBe(1);

    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const raced = await Promise.all([
      call('DELETE', `/v1/tenants/${org.id}`, { cookie: admin.cookie }),
      call('DELETE', `/v1/tenants/${org.id}`, { cookie: platform.cookie }),
    ]);
    expect(raced.map((r) => r.status).sort()).toEqual([200, 404]);
    expect(await deletionRecords(org.id)).toHaveLength(1);
    expect((await call('DELETE', `/v1/tenants/${org.id}`, { cookie: platform.cookie })).status).toBe(404);
  });

  it('a wrong-prefix id is 400, an unknown one 404; members and API keys cannot delete', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect((await call('DELETE', `/v1/tenants/usr_${'0'.repeat(20)}`, { cookie: admin.cookie })).status).toBe(400);
    expect((await call('DELETE', '/v1/tenants/ten_short', { cookie: admin.cookie })).status).toBe(400);
    expect((await call('DELETE', `/v1/tenants/${newId('organization')}`, { cookie: admin.cookie })).status).toBe(404);
    expect((await call('DELETE', `/v1/tenants/${org.id}`, { cookie: member.cookie })).status).toBe(403);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.delete', 'tenant.read'] });
    expect((await call('DELETE', `/v1/tenants/${org.id}`, { authorization: key.authorization })).status).toBe(403);
    expect(await db.$count(organizations, eq(organizations.id, org.id))).toBe(1);
  });
});

describe('GET /v1/tenants/{id}/members', () => {
  it('lists members with their roles, newest first, a page at a time, and nobody else', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin', name: 'Ada Admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: ['users.read'] });
    const support = await seedSignedIn(db, { organization: org, roleKey: 'support' });
    await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });

    const { items, pages } = await allPages(`/v1/tenants/${org.id}/members`, { cookie: member.cookie });
    expect(pages).toBe(2);
    const joined = await db.select().from(memberships).where(eq(memberships.tenantId, org.id));
    const order = newestFirst(joined.map((m) => ({ id: m.userId, createdAt: m.createdAt })));
    const expected = new Map([
      [support.user.id, { userId: support.user.id, email: support.user.email, name: support.user.name, roleKey: 'support' }],
      [member.user.id, { userId: member.user.id, email: member.user.email, name: member.user.name, roleKey: 'org_member' }],
      [admin.user.id, { userId: admin.user.id, email: admin.user.email, name: 'Ada Admin', roleKey: 'org_admin' }],
    ]);
    expect(order).toHaveLength(3);
    expect(items).toEqual(
      order.map((id) => ({
        ...expected.get(id),
        status: 'active',
        joinedAt: joined.find((m) => m.userId === id)?.createdAt.toISOString(),
      })),
    );
  });

  it("another organization's cursor, a malformed cursor and a wrong-prefix id are 400; an unknown id 404", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const platform = await seedSignedIn(db, { platformAdmin: true });
    for (const o of [org, other]) {
      await seedSignedIn(db, { organization: o, roleKey: 'org_admin' });
      await seedSignedIn(db, { organization: o, roleKey: 'org_member' });
    }
    const { nextCursor } = await json(await call('GET', `/v1/tenants/${other.id}/members?limit=1`, { cookie: platform.cookie }));
    const replayed = await call('GET', `/v1/tenants/${org.id}/members?cursor=${nextCursor}`, { cookie: platform.cookie });
    expect(replayed.status).toBe(400);
    expect((await json(replayed)).error.message).toMatch(/another list/);
    expect((await call('GET', `/v1/tenants/${org.id}/members?cursor=%%%`, { cookie: platform.cookie })).status).toBe(400);
    expect((await call('GET', `/v1/tenants/${org.id}/members?cursor=bm9wZQ`, { cookie: platform.cookie })).status).toBe(400);
    expect((await call('GET', `/v1/tenants/key_${'0'.repeat(20)}/members`, { cookie: platform.cookie })).status).toBe(400);
    expect((await call('GET', `/v1/tenants/${newId('organization')}/members`, { cookie: platform.cookie })).status).toBe(404);
  });
});

describe('permissions', () => {
  it('GET /v1/permissions is the catalog for any signed-in caller or API key; anonymous is 401', async () => {
    const db = server.services.db;
    const user = await seedSignedIn(db);
    const org = await seedOrganization(db);
    const scopeless = await seedApiKey(db, { tenantId: org.id, scopes: [] });
    for (const caller of [{ cookie: user.cookie }, { authorization: scopeless.authorization }]) {
      const res = await call('GET', '/v1/permissions', caller);
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual({ data: PERMISSION_CATALOG, nextCursor: null });
    }
    const names = PERMISSION_CATALOG.map((p) => p.name);
    expect(names).toContain('tenant.delete');
    expect(names).toContain('applications.manage');
    expect((await call('GET', '/v1/permissions')).status).toBe(401);
  });

  it('check answers for the caller: role permissions, API-key scopes, platform admin', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    await db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: ['tenant.read', 'users.read'] });
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const support = await seedSignedIn(db, { organization: org, roleKey: 'support' });
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read', 'usage.write'] });
    const check = async (caller: Caller, permission: string) => {
      const res = await call('GET', `/v1/tenants/${org.id}/permissions/check?permission=${permission}`, caller);
      expect(res.status, `${permission}: ${res.status}`).toBe(200);
      const body = await json(res);
      expect(body.permission).toBe(permission);
      return body.allowed as boolean;
    };
    expect(await check({ cookie: admin.cookie }, 'users.manage')).toBe(true);
    expect(await check({ cookie: admin.cookie }, 'tenant.delete')).toBe(true);
    expect(await check({ cookie: member.cookie }, 'users.manage')).toBe(false);
    expect(await check({ cookie: member.cookie }, 'members.read')).toBe(true);
    expect(await check({ cookie: support.cookie }, 'users.read')).toBe(true);
    expect(await check({ cookie: support.cookie }, 'users.manage')).toBe(false);
    expect(await check({ cookie: platform.cookie }, 'billing.manage')).toBe(true);
    expect(await check({ authorization: key.authorization }, 'usage.write')).toBe(true);
    expect(await check({ authorization: key.authorization }, 'users.read')).toBe(false);
  });

  it('an unknown, missing or mangled permission name is 400', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    for (const query of ['permission=users.fly', '', 'permission=', 'permission=USERS.READ', 'permission=users.read%20']) {
      const res = await call('GET', `/v1/tenants/${org.id}/permissions/check?${query}`, { cookie: admin.cookie });
      expect(res.status, query).toBe(400);
      expect(await codeOf(res)).toBe('validation_failed');
    }
  });
});
