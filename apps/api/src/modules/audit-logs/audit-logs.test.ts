import { type TAuditLogEntry, type TAuditLogPage, ZAuditActorFilter, ZAuditTargetFilter } from '@svc/contracts/audit-logs';
import { ID_PREFIXES, type IdKind, newId } from '@svc/contracts/ids';
import { insertAuditLog } from '@svc/db/queries/audit-logs';
import { findOrganizationBySlug } from '@svc/db/queries/organizations';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { PLATFORM_ORGANIZATION_SLUG } from '../identity/service.ts';
import { MATRIX } from './audit-logs.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describeAuthMatrix('audit-logs', () => server, MATRIX);

type Headers = { cookie?: string; authorization?: string };

async function get(path: string, headers: Headers) {
  const res = await fetch(`${server.url}${path}`, { headers: { ...headers } });
  return { status: res.status, body: (await res.json()) as TAuditLogPage & { error?: { code: string; message: string } } };
}

/** GET /v1/audit-logs with these query parameters; expects 200. */
async function list(headers: Headers, query: Record<string, string | number | undefined> = {}): Promise<TAuditLogPage> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined) {
      params.set(k, String(v));
    }
  }
  const { status, body } = await get(`/v1/audit-logs?${params}`, headers);
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}

async function statusOf(headers: Headers, query: Record<string, string>): Promise<{ status: number; code?: string }> {
  const { status, body } = await get(`/v1/audit-logs?${new URLSearchParams(query)}`, headers);
  return { status, code: body.error?.code };
}

/** Every page of a list, following nextCursor. */
async function walk(headers: Headers, query: Record<string, string | number | undefined>): Promise<TAuditLogEntry[][]> {
  const pages: TAuditLogEntry[][] = [];
  let cursor: string | undefined;
  do {
    const page = await list(headers, { ...query, cursor });
    pages.push(page.data);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && pages.length < 100);
  return pages;
}

type Seed = {
  tenantId: string | null;
  action?: string;
  actorId?: string;
  targetId?: string;
  createdAt?: Date;
  summary?: Record<string, unknown>;
};

/** Appends an entry as recordAudit would, at an explicit time. */
async function seedEntry(seed: Seed): Promise<string> {
  const id = newId('auditLog');
  await insertAuditLog(server.services.db, {
    id,
    tenantId: seed.tenantId,
    actorType: seed.actorId?.startsWith('key_') ? 'api_key' : 'user',
    actorId: seed.actorId ?? newId('user'),
    actorLabel: 'someone@example.com',
    action: seed.action ?? 'tenant.updated',
    targetType: 'tenant',
    targetId: seed.targetId ?? null,
    ipAddress: '127.0.0.1',
    userAgent: 'test',
    requestId: newId('request'),
    summary: seed.summary ?? {},
    createdAt: seed.createdAt,
  });
  return id;
}

/** An organization with its org admin. */
async function orgWithAdmin() {
  const org = await seedOrganization(server.services.db);
  const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
  return { org, admin, cookie: { cookie: admin.cookie } };
}

describe('audit-log filter schemas', () => {
  it('agree with the id table: every kind is a target, users, API keys and setup links are actors', () => {
    for (const kind of Object.keys(ID_PREFIXES) as IdKind[]) {
      expect(ZAuditTargetFilter.safeParse(newId(kind)).success, kind).toBe(true);
      expect(ZAuditActorFilter.safeParse(newId(kind)).success, kind).toBe(kind === 'user' || kind === 'apiKey' || kind === 'setupLink');
    }
  });
});

describe('GET /v1/audit-logs', () => {
  it('shows a real mutation as its entry: actor, action, target, request facts and the summary', async () => {
    const { org, admin, cookie } = await orgWithAdmin();
    const res = await fetch(`${server.url}/v1/tenants/${org.id}`, {
      method: 'PATCH',
      headers: {
        cookie: admin.cookie,
        'content-type': 'application/json',
        origin: server.services.config.publicUrl,
        'user-agent': 'audit-test/1.0',
      },
      body: JSON.stringify({ name: 'Renamed for the log' }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id');

    // Without organization_slug: the session's active workspace, which is this organization.
    const page = await list(cookie);
    expect(page.nextCursor).toBeNull();
    expect(page.data).toHaveLength(1);
    const [entry] = page.data;
    expect(entry).toMatchObject({
      tenantId: org.id,
      actor: { type: 'user', id: admin.user.id, label: admin.user.email },
      action: 'tenant.updated',
      target: { type: 'tenant', id: org.id },
      userAgent: 'audit-test/1.0',
      summary: { changes: { name: { from: org.name, to: 'Renamed for the log' } } },
    });
    expect(entry?.id).toMatch(/^aud_/);
    expect(entry?.ipAddress).toBeTruthy();
    expect(Date.parse(entry?.createdAt ?? '')).not.toBeNaN();
    if (requestId) {
      expect(entry?.requestId).toBe(requestId);
    }
    expect(await list(cookie, { organization_slug: org.slug })).toEqual(page);
  });

  it('anonymous gets 401; an outsider, an unknown slug and a member without audit.read get nothing', async () => {
    const { org } = await orgWithAdmin();
    await seedEntry({ tenantId: org.id });
    expect(await statusOf({}, {})).toMatchObject({ status: 401, code: 'unauthenticated' });
    expect(await statusOf({}, { organization_slug: org.slug })).toMatchObject({ status: 401 });
    const outsider = await seedSignedIn(server.services.db);
    expect(await statusOf({ cookie: outsider.cookie }, { organization_slug: org.slug })).toMatchObject({ status: 404, code: 'not_found' });
    expect(await statusOf({ cookie: outsider.cookie }, { organization_slug: 'no-such-org' })).toMatchObject({ status: 404 });
    const member = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member' });
    expect(await statusOf({ cookie: member.cookie }, {})).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it("never shows another organization's entries, whatever the filters", async () => {
    const a = await orgWithAdmin();
    const b = await orgWithAdmin();
    const actor = newId('user');
    const target = newId('user');
    const at = new Date('2024-03-01T10:00:00.000Z');
    const mine = await seedEntry({ tenantId: a.org.id, actorId: actor, targetId: target, action: 'user.created', createdAt: at });
    // Same actor, target, action and millisecond in the other organization, plus a platform-level entry.
    await seedEntry({ tenantId: b.org.id, actorId: actor, targetId: target, action: 'user.created', createdAt: at });
    await seedEntry({ tenantId: null, actorId: actor, targetId: target, action: 'user.created', createdAt: at });
    for (const query of [{}, { actor }, { target }, { action: 'user.created' }, { action: 'user.*' }, { from: at.toISOString() }]) {
      const page = await list(a.cookie, query);
      expect(
        page.data.map((e) => e.id),
        JSON.stringify(query),
      ).toEqual([mine]);
    }
    // A's admin naming B: 404, never B's entries.
    expect(await statusOf(a.cookie, { organization_slug: b.org.slug })).toMatchObject({ status: 404 });
  });

  it('each filter narrows: action (exact and resource.*), actor, target', async () => {
    const { org, cookie } = await orgWithAdmin();
    const alice = newId('user');
    const key = newId('apiKey');
    const t1 = newId('user');
    const t2 = newId('apiKey');
    const base = Date.parse('2024-05-01T00:00:00.000Z');
    const ids: Record<string, string> = {};
    const rows: [string, string, string, string][] = [
      ['userCreated', 'user.created', alice, t1],
      ['userUpdated', 'user.updated', key, t1],
      ['keyCreated', 'api_key.created', alice, t2],
      ['keyRevoked', 'api_key.revoked', key, t2],
      // Look-alikes the resource prefix must not catch: `_` is not a wildcard, `users` is not `user`.
      ['apiXkey', 'apiXkey.created', alice, t2],
      ['users', 'users.imported', alice, t1],
    ];
    for (const [i, [name, action, actorId, targetId]] of rows.entries()) {
      ids[name] = await seedEntry({ tenantId: org.id, action, actorId, targetId, createdAt: new Date(base + i * 1000) });
    }
    const idsOf = async (query: Record<string, string>) => (await list(cookie, query)).data.map((e) => e.id);
    expect(await idsOf({ action: 'user.created' })).toEqual([ids.userCreated]);
    expect(await idsOf({ action: 'user.*' })).toEqual([ids.userUpdated, ids.userCreated]);
    expect(await idsOf({ action: 'api_key.*' })).toEqual([ids.keyRevoked, ids.keyCreated]);
    expect(await idsOf({ action: 'nothing.*' })).toEqual([]);
    expect(await idsOf({ actor: key })).toEqual([ids.keyRevoked, ids.userUpdated]);
    expect(await idsOf({ target: t1 })).toEqual([ids.users, ids.userUpdated, ids.userCreated]);
    // As curl sends it (docs/api.md): `*` and `:` unencoded.
    const raw = await get('/v1/audit-logs?action=user.*&from=2024-05-01T00:00:00Z&limit=1', cookie);
    expect(raw.status).toBe(200);
    expect(raw.body.data.map((e) => e.id)).toEqual([ids.userUpdated]);
    // Filters combine (AND).
    expect(await idsOf({ actor: alice, action: 'api_key.*', target: t2 })).toEqual([ids.keyCreated]);
    expect(await idsOf({ actor: alice, action: 'user.updated' })).toEqual([]);
    // The actor as a user principal sees itself named as the actor.
    const entry = (await list(cookie, { actor: key })).data[0];
    expect(entry?.actor).toEqual({ type: 'api_key', id: key, label: 'someone@example.com' });
  });

  it("the actor filter takes a person's email: that user's entries, whatever the case; an unknown email is an empty page", async () => {
    const { org, admin, cookie } = await orgWithAdmin();
    const other = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_member', email: 'Grace.Hopper@Example.com' });
    expect(other.user.email).toBe('grace.hopper@example.com');
    const key = newId('apiKey');
    const base = Date.parse('2024-06-01T00:00:00.000Z');
    const graces = [
      await seedEntry({ tenantId: org.id, actorId: other.user.id, action: 'user.created', createdAt: new Date(base) }),
      await seedEntry({ tenantId: org.id, actorId: other.user.id, action: 'user.updated', createdAt: new Date(base + 1000) }),
    ];
    await seedEntry({ tenantId: org.id, actorId: admin.user.id, action: 'user.created', createdAt: new Date(base + 2000) });
    await seedEntry({ tenantId: org.id, actorId: key, action: 'api_key.created', createdAt: new Date(base + 3000) });
    // The same person acting in another organization: never in this one's log.
    const elsewhere = await seedOrganization(server.services.db);
    await seedEntry({ tenantId: elsewhere.id, actorId: other.user.id, action: 'user.created', createdAt: new Date(base + 4000) });

    const idsOf = async (query: Record<string, string | number>) => (await list(cookie, query)).data.map((e) => e.id);
    expect(await idsOf({ actor: 'grace.hopper@example.com' })).toEqual([...graces].reverse());
    expect(await idsOf({ actor: ' GRACE.HOPPER@example.COM ' })).toEqual([...graces].reverse());
    expect(await idsOf({ actor: 'grace.hopper@example.com', action: 'user.updated' })).toEqual([graces[1]]);
    // A page at a time: the cursor continues the email's list.
    const first = await list(cookie, { actor: 'grace.hopper@example.com', limit: 1 });
    expect(first.data.map((e) => e.id)).toEqual([graces[1]]);
    const second = await list(cookie, { actor: 'grace.hopper@example.com', limit: 1, cursor: first.nextCursor ?? '' });
    expect(second.data.map((e) => e.id)).toEqual([graces[0]]);
    expect(await idsOf({ actor: 'nobody@example.com' })).toEqual([]);
    expect((await list(cookie, { actor: 'nobody@example.com' })).nextCursor).toBeNull();
  });

  it('time range: from is inclusive, to is exclusive; from after to is 400', async () => {
    const { org, cookie } = await orgWithAdmin();
    const t = (ms: number) => new Date(Date.parse('2024-06-01T12:00:00.000Z') + ms);
    const e0 = await seedEntry({ tenantId: org.id, createdAt: t(0) });
    const e1 = await seedEntry({ tenantId: org.id, createdAt: t(1) });
    const e2 = await seedEntry({ tenantId: org.id, createdAt: t(2) });
    const e3 = await seedEntry({ tenantId: org.id, createdAt: t(3) });
    const idsOf = async (query: Record<string, string>) => (await list(cookie, query)).data.map((e) => e.id);
    const iso = (ms: number) => t(ms).toISOString();

    expect(await idsOf({ from: iso(1), to: iso(3) })).toEqual([e2, e1]);
    expect(await idsOf({ from: iso(1) })).toEqual([e3, e2, e1]);
    expect(await idsOf({ to: iso(1) })).toEqual([e0]);
    // Adjacent ranges tile the log: every entry exactly once.
    expect([...(await idsOf({ from: iso(2), to: iso(4) })), ...(await idsOf({ from: iso(0), to: iso(2) }))]).toEqual([e3, e2, e1, e0]);
    // An empty range is allowed and empty.
    expect(await idsOf({ from: iso(2), to: iso(2) })).toEqual([]);
    // Offsets are the same instant; finer than a millisecond rounds to the entries it selects.
    expect(await idsOf({ from: '2024-06-01T14:00:00.001+02:00', to: '2024-06-01T14:00:00.003+02:00' })).toEqual([e2, e1]);
    expect(await idsOf({ from: '2024-06-01T12:00:00.0005Z', to: '2024-06-01T12:00:00.0025Z' })).toEqual([e2, e1]);

    expect(await statusOf(cookie, { from: iso(3), to: iso(2) })).toMatchObject({ status: 400, code: 'validation_failed' });
    for (const bad of ['yesterday', '2024-06-01', '2024-06-01T12:00:00', '1717243200000']) {
      expect(await statusOf(cookie, { from: bad }), bad).toMatchObject({ status: 400 });
      expect(await statusOf(cookie, { to: bad }), bad).toMatchObject({ status: 400 });
    }
  });

  it('pages through 120 entries with limit 50: each exactly once, newest first, ties in one millisecond included', async () => {
    const { org, cookie } = await orgWithAdmin();
    const other = await seedOrganization(server.services.db);
    const base = Date.parse('2024-07-01T00:00:00.000Z');
    const seeded: { id: string; at: number }[] = [];
    for (let i = 0; i < 120; i++) {
      // Groups of 7 share a millisecond, so page boundaries fall inside groups.
      const at = base + Math.floor(i / 7);
      seeded.push({ id: await seedEntry({ tenantId: org.id, createdAt: new Date(at) }), at });
      if (i % 10 === 0) {
        await seedEntry({ tenantId: other.id, createdAt: new Date(at) });
      }
    }
    const expected = [...seeded].sort((x, y) => y.at - x.at || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0)).map((e) => e.id);

    const pages = await walk(cookie, { limit: 50 });
    expect(pages.map((p) => p.length)).toEqual([50, 50, 20]);
    const got = pages.flat().map((e) => e.id);
    expect(new Set(got).size).toBe(120);
    expect(got).toEqual(expected);
    // The page size may change between pages; the order does not.
    const first = await list(cookie, { limit: 30 });
    const rest = await list(cookie, { limit: 200, cursor: first.nextCursor ?? undefined });
    expect([...first.data, ...rest.data].map((e) => e.id)).toEqual(expected);
    expect(rest.nextCursor).toBeNull();
    // An exact multiple of the page size ends without an empty extra page.
    expect((await walk(cookie, { limit: 60 })).map((p) => p.length)).toEqual([60, 60]);
  });

  it('entries written while paging do not shift the pages being read', async () => {
    const { org, cookie } = await orgWithAdmin();
    const base = Date.parse('2024-08-01T00:00:00.000Z');
    for (let i = 0; i < 10; i++) {
      await seedEntry({ tenantId: org.id, createdAt: new Date(base + i) });
    }
    const page1 = await list(cookie, { limit: 4 });
    await seedEntry({ tenantId: org.id, createdAt: new Date(base + 100) });
    const page2 = await list(cookie, { limit: 4, cursor: page1.nextCursor ?? undefined });
    const page3 = await list(cookie, { limit: 4, cursor: page2.nextCursor ?? undefined });
    const ids = [...page1.data, ...page2.data, ...page3.data].map((e) => e.id);
    expect(new Set(ids).size).toBe(10);
    expect(page3.nextCursor).toBeNull();
  });

  it('a cursor only continues its own list: other filters or another organization are 400, so is garbage', async () => {
    const a = await orgWithAdmin();
    const b = await seedOrganization(server.services.db);
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const base = Date.parse('2024-09-01T00:00:00.000Z');
    for (let i = 0; i < 3; i++) {
      await seedEntry({ tenantId: a.org.id, action: 'user.created', createdAt: new Date(base + i) });
      await seedEntry({ tenantId: b.id, action: 'user.created', createdAt: new Date(base + i) });
    }
    const { nextCursor } = await list(a.cookie, { limit: 1 });
    expect(nextCursor).toBeTruthy();
    const cursor = nextCursor as string;
    expect((await list(a.cookie, { limit: 1, cursor })).data).toHaveLength(1);

    const others: Record<string, string>[] = [
      { action: 'user.created' },
      { action: 'user.*' },
      { actor: newId('user') },
      { target: newId('user') },
      { from: '2024-01-01T00:00:00Z' },
      { to: '2030-01-01T00:00:00Z' },
    ];
    for (const extra of others) {
      expect(await statusOf(a.cookie, { limit: '1', cursor, ...extra }), JSON.stringify(extra)).toMatchObject({
        status: 400,
        code: 'validation_failed',
      });
    }
    // The same cursor in another organization's list (a platform admin may read both).
    expect(await statusOf({ cookie: platform.cookie }, { organization_slug: a.org.slug, limit: '1', cursor })).toMatchObject({
      status: 200,
    });
    expect(await statusOf({ cookie: platform.cookie }, { organization_slug: b.slug, limit: '1', cursor })).toMatchObject({
      status: 400,
      code: 'validation_failed',
    });

    const forged = Buffer.from(JSON.stringify(['audit_logs|x', 'not a date', 'aud_x'])).toString('base64url');
    for (const bad of ['garbage!!', 'e30', forged, Buffer.from('[1,2,3]').toString('base64url'), 'x'.repeat(513)]) {
      expect(await statusOf(a.cookie, { cursor: bad }), bad).toMatchObject({ status: 400 });
    }
  });

  it('refuses malformed filters and limits with 400', async () => {
    const { cookie } = await orgWithAdmin();
    const bad: Record<string, string>[] = [
      { action: 'user' },
      { action: 'user.%' },
      { action: 'user_%.created' },
      { action: '*' },
      { action: 'user.*.created' },
      { action: 'User.Created' },
      { actor: newId('organization') },
      { actor: 'usr_short' },
      { actor: 'not an email' },
      { actor: 'a|b@example.com' },
      { actor: `${'a'.repeat(250)}@example.com` },
      { target: 'anything' },
      { target: "ten_00000000000000000000' or 1=1" },
      { limit: '0' },
      { limit: '201' },
      { limit: 'ten' },
      { organization_slug: 'Not A Slug' },
    ];
    for (const query of bad) {
      expect(await statusOf(cookie, query), JSON.stringify(query)).toMatchObject({ status: 400, code: 'validation_failed' });
    }
  });

  it('a tenant API key with audit.read reads its own organization only; without the scope 403', async () => {
    const { org } = await orgWithAdmin();
    const other = await seedOrganization(server.services.db);
    const id = await seedEntry({ tenantId: org.id });
    await seedEntry({ tenantId: other.id });
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['audit.read'] });
    const auth = { authorization: key.authorization };
    expect((await list(auth)).data.map((e) => e.id)).toEqual([id]);
    expect((await list(auth, { organization_slug: org.slug })).data.map((e) => e.id)).toEqual([id]);
    expect(await statusOf(auth, { organization_slug: other.slug })).toMatchObject({ status: 404 });
    const narrow = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['tenant.read'] });
    expect(await statusOf({ authorization: narrow.authorization }, {})).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('platform admins read any organization; the platform workspace log adds platform-level entries', async () => {
    const { org, cookie } = await orgWithAdmin();
    const platformAdmin = await seedSignedIn(server.services.db, { platformAdmin: true });
    expect(platformAdmin.organization.kind).toBe('platform');
    const platformOrg = await findOrganizationBySlug(server.services.db, PLATFORM_ORGANIZATION_SLUG);
    const base = Date.parse('2024-10-01T00:00:00.000Z');
    const tenantEntry = await seedEntry({ tenantId: org.id, createdAt: new Date(base) });
    const platformLevel = await seedEntry({ tenantId: null, action: 'platform.engine_read', createdAt: new Date(base + 1) });
    const platformOrgEntry = await seedEntry({
      tenantId: platformOrg?.id ?? null,
      action: 'tenant.updated',
      createdAt: new Date(base + 2),
    });
    const pa = { cookie: platformAdmin.cookie };

    expect((await list(pa, { organization_slug: org.slug })).data.map((e) => e.id)).toEqual([tenantEntry]);
    const own = (await list(pa, { from: new Date(base).toISOString(), to: new Date(base + 3).toISOString() })).data.map((e) => e.id);
    expect(own).toEqual([platformOrgEntry, platformLevel]);
    // Merged from two lists, still paged once each, in order.
    const pages = await walk(pa, { limit: 1, from: new Date(base).toISOString(), to: new Date(base + 3).toISOString() });
    expect(pages.flat().map((e) => e.id)).toEqual([platformOrgEntry, platformLevel]);
    expect((await list(pa, { organization_slug: PLATFORM_ORGANIZATION_SLUG, action: 'platform.*' })).data.map((e) => e.id)).toEqual([
      platformLevel,
    ]);
    // A tenant org admin never sees platform-level entries, nor the platform workspace.
    expect((await list(cookie)).data.map((e) => e.id)).toEqual([tenantEntry]);
    expect(await statusOf(cookie, { organization_slug: PLATFORM_ORGANIZATION_SLUG })).toMatchObject({ status: 404 });
  });
});

describe('GET /v1/audit-logs/{id}', () => {
  it("reads one entry of the organization's log, as the list shows it; another organization's, a platform-level one and a bad id are not", async () => {
    const { org, cookie } = await orgWithAdmin();
    const other = await orgWithAdmin();
    const summary = { changes: { name: { from: 'Acme', to: 'Acme Inc.' } } };
    const mine = await seedEntry({ tenantId: org.id, targetId: org.id, summary });
    const theirs = await seedEntry({ tenantId: other.org.id, targetId: other.org.id });
    const platformLevel = await seedEntry({ tenantId: null, action: 'platform.engine_read' });

    const one = await get(`/v1/audit-logs/${mine}?organization_slug=${org.slug}`, cookie);
    expect(one.status).toBe(200);
    const listed = (await list(cookie, { target: org.id })).data.find((e) => e.id === mine);
    expect(one.body).toEqual(listed);
    expect((one.body as unknown as TAuditLogEntry).summary).toEqual(summary);
    // The active workspace when no slug is named.
    expect((await get(`/v1/audit-logs/${mine}`, cookie)).status).toBe(200);

    // Another organization's entry, asked in one's own organization or in theirs: 404, the same answer as a made-up id.
    for (const path of [
      `/v1/audit-logs/${theirs}?organization_slug=${org.slug}`,
      `/v1/audit-logs/${theirs}?organization_slug=${other.org.slug}`,
      `/v1/audit-logs/${platformLevel}`,
      `/v1/audit-logs/${newId('auditLog')}`,
    ]) {
      const answer = await get(path, cookie);
      expect(answer.status, path).toBe(404);
      expect(answer.body.error?.code).toBe('not_found');
    }
    // The platform admin reads a platform-level entry in the platform workspace only.
    const platformAdmin = { cookie: (await seedSignedIn(server.services.db, { platformAdmin: true })).cookie };
    expect((await get(`/v1/audit-logs/${platformLevel}`, platformAdmin)).status).toBe(200);
    expect((await get(`/v1/audit-logs/${platformLevel}?organization_slug=${org.slug}`, platformAdmin)).status).toBe(404);
    expect((await get(`/v1/audit-logs/${mine}?organization_slug=${org.slug}`, platformAdmin)).status).toBe(200);

    // Not an entry id: 400 with its message, never a lookup.
    for (const bad of ['usr_00000000000000000000', 'aud_short', "aud_0000000000000000000'"]) {
      const answer = await get(`/v1/audit-logs/${encodeURIComponent(bad)}`, cookie);
      expect(answer.status, bad).toBe(400);
      expect(answer.body.error?.code).toBe('validation_failed');
    }
  });
});
