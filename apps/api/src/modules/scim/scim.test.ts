import { auditLogs } from '@svc/db/schema/audit-logs';
import { scimGroups, scimUsers } from '@svc/db/schema/directories';
import { memberships, users } from '@svc/db/schema/identity';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedDomain } from '../domains/domains.fixtures.ts';

// SCIM 2.0 as Entra ID and Okta speak it (docs/enterprise.md "Directory sync"): the request
// sequences of their provisioning documentation, written out literally, against a real server
// and database; then the input a directory must not get past.

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;

async function v1(method: string, path: string, cookie: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { cookie, ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}) },
    body: method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(body ?? {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {} };
}

type Directory = { id: string; base: string; token: string; tenantId: string; slug: string; domain: string; adminCookie: string };

async function directoryOf(opts: { groupRoles?: { group: string; roleKey: string }[] } = {}): Promise<Directory> {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  const { domain } = await seedDomain(db, { tenantId: org.id, verified: true });
  const created = await v1('POST', '/v1/directories', admin.cookie, {
    organization_slug: org.slug,
    name: 'Corporate directory',
    groupRoles: opts.groupRoles ?? [],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  expect(created.json.token).toMatch(/^scim_[0-9A-Za-z]{40}$/);
  return {
    id: created.json.id,
    base: created.json.scimBaseUrl,
    token: created.json.token,
    tenantId: org.id,
    slug: org.slug,
    domain,
    adminCookie: admin.cookie,
  };
}

async function scim(
  dir: Pick<Directory, 'base' | 'token'>,
  method: string,
  path: string,
  body?: unknown,
  opts: { raw?: string; contentType?: string; token?: string } = {},
): Promise<{ status: number; json: Json; contentType: string | null }> {
  const res = await fetch(`${dir.base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${opts.token ?? dir.token}`,
      ...(body !== undefined || opts.raw !== undefined ? { 'content-type': opts.contentType ?? 'application/scim+json' } : {}),
    },
    body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, contentType: res.headers.get('content-type') };
}

const q = (filter: string) => encodeURIComponent(filter);

async function membershipOf(tenantId: string, email: string) {
  const [row] = await server.services.db
    .select({ status: memberships.status, roleKey: memberships.roleKey, userId: memberships.userId })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.tenantId, tenantId), eq(users.email, email.toLowerCase())));
  return row;
}

async function eventTypes(tenantId: string): Promise<string[]> {
  const rows = await server.services.db
    .select({ type: webhookEvents.type })
    .from(webhookEvents)
    .where(eq(webhookEvents.tenantId, tenantId));
  return rows.map((r) => r.type);
}

function expectScimError(res: { status: number; json: Json; contentType: string | null }, status: number, scimType?: string) {
  expect(res.status, JSON.stringify(res.json)).toBe(status);
  expect(res.contentType).toMatch(/^application\/scim\+json/);
  expect(res.json.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
  expect(res.json.status).toBe(String(status));
  if (scimType) {
    expect(res.json.scimType).toBe(scimType);
  }
}

describe('Entra ID provisioning sequence', () => {
  it('filters, creates, reads, patches (with and without paths, active "False"), and deletes a user; the membership follows', async () => {
    const dir = await directoryOf();
    const userName = `Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1@${dir.domain}`;
    const externalId = '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef';

    const none = await scim(dir, 'GET', `/Users?filter=${q(`userName eq "${userName}"`)}`);
    expect(none.status).toBe(200);
    expect(none.contentType).toMatch(/^application\/scim\+json/);
    expect(none.json).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, Resources: [] });

    const created = await scim(dir, 'POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId,
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: userName }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Engineering', manager: { value: 'x' } },
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const id = created.json.id as string;
    expect(created.json).toMatchObject({ userName, externalId, active: true, name: { givenName: 'givenName', familyName: 'familyName' } });
    expect(created.json.meta.location).toBe(`${dir.base}/Users/${id}`);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ status: 'active', roleKey: 'org_member' });

    expect((await scim(dir, 'GET', `/Users/${id}`)).json.userName).toBe(userName);
    // userName is not case-exact (RFC 7643): Entra ID's filter matches whatever the case.
    const byName = await scim(dir, 'GET', `/Users?filter=${q(`userName eq "${userName.toUpperCase()}"`)}`);
    expect(byName.json.totalResults).toBe(1);
    expect(byName.json.Resources[0].id).toBe(id);
    const byExternal = await scim(dir, 'GET', `/Users?filter=${q(`externalId eq "${externalId}"`)}`);
    expect(byExternal.json.Resources.map((r: Json) => r.id)).toEqual([id]);
    // externalId is case-exact.
    expect((await scim(dir, 'GET', `/Users?filter=${q(`externalId eq "${externalId.toUpperCase()}"`)}`)).json.totalResults).toBe(0);

    const patched = await scim(dir, 'PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: `updatedEmail@${dir.domain}` },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
        { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber', value: '1234' },
      ],
    });
    expect(patched.status, JSON.stringify(patched.json)).toBe(200);
    expect(patched.json.name.familyName).toBe('updatedFamilyName');
    expect(patched.json.emails[0].value).toBe(`updatedemail@${dir.domain}`);

    // Entra ID sends active as the string "False".
    const disabled = await scim(dir, 'PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
    });
    expect(disabled.status, JSON.stringify(disabled.json)).toBe(200);
    expect(disabled.json.active).toBe(false);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ status: 'suspended' });

    const enabled = await scim(dir, 'PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
    });
    expect(enabled.json.active).toBe(true);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ status: 'active' });

    expect((await scim(dir, 'DELETE', `/Users/${id}`)).status).toBe(204);
    expect(await membershipOf(dir.tenantId, userName)).toBeUndefined();
    expectScimError(await scim(dir, 'GET', `/Users/${id}`), 404);

    const events = await eventTypes(dir.tenantId);
    expect(events).toEqual(expect.arrayContaining(['directory.created', 'member.added', 'user.updated', 'member.removed']));
    const audit = await server.services.db.select().from(auditLogs).where(eq(auditLogs.tenantId, dir.tenantId));
    expect(audit.filter((a) => a.action === 'user.updated' && (a.summary as Json).via === 'scim')).toHaveLength(2);
  });

  it('creates, renames, adds and removes members of a group (path "members" with values), and deletes it; roles follow the mapping', async () => {
    const dir = await directoryOf({ groupRoles: [{ group: 'Administrators', roleKey: 'org_admin' }] });
    const userName = `member@${dir.domain}`;
    const user = await scim(dir, 'POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName, active: true });
    expect(user.status).toBe(201);
    const userId = user.json.id as string;

    const group = await scim(dir, 'POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    });
    expect(group.status, JSON.stringify(group.json)).toBe(201);
    const groupId = group.json.id as string;
    expect((await scim(dir, 'GET', `/Groups/${groupId}?excludedAttributes=members`)).json.members).toBeUndefined();
    const found = await scim(dir, 'GET', `/Groups?excludedAttributes=members&filter=${q('displayName eq "displayName"')}`);
    expect(found.json.Resources.map((g: Json) => g.id)).toEqual([groupId]);

    const renamed = await scim(dir, 'PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'displayName', value: 'Administrators' }],
    });
    expect(renamed.status).toBe(204);

    const added = await scim(dir, 'PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: userId }] }],
    });
    expect(added.status).toBe(204);
    expect((await scim(dir, 'GET', `/Groups/${groupId}`)).json.members.map((m: Json) => m.value)).toEqual([userId]);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ roleKey: 'org_admin' });
    expect((await scim(dir, 'GET', `/Users/${userId}`)).json.groups.map((g: Json) => g.display)).toEqual(['Administrators']);

    const removed = await scim(dir, 'PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: userId }] }],
    });
    expect(removed.status).toBe(204);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ roleKey: 'org_member' });

    expect((await scim(dir, 'DELETE', `/Groups/${groupId}`)).status).toBe(204);
    expectScimError(await scim(dir, 'GET', `/Groups/${groupId}`), 404);
    expect(await eventTypes(dir.tenantId)).toEqual(
      expect.arrayContaining(['directory_group.created', 'directory_group.updated', 'directory_group.deleted']),
    );
  });
});

describe('Okta provisioning sequence', () => {
  it('checks for the user, creates it, reads it, replaces it (PUT), deactivates with replace without a path, and manages group members', async () => {
    const dir = await directoryOf({ groupRoles: [{ group: 'Test SCIMv2 Updated', roleKey: 'org_admin' }] });
    const userName = `test.user@${dir.domain}`;
    const none = await scim(dir, 'GET', `/Users?filter=${q(`userName eq "${userName}"`)}&startIndex=1&count=100`);
    expect(none.json).toMatchObject({ totalResults: 0, startIndex: 1, itemsPerPage: 0 });

    const body = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName,
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    };
    const created = await scim(dir, 'POST', '/Users', body);
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const id = created.json.id as string;
    expect(JSON.stringify(created.json)).not.toContain('1mz050nq');
    expect((await scim(dir, 'GET', `/Users/${id}`)).json.displayName).toBe('Test User');
    // A second create of the same userName: 409 uniqueness, nothing more stored.
    expectScimError(await scim(dir, 'POST', '/Users', body), 409, 'uniqueness');

    const put = await scim(dir, 'PUT', `/Users/${id}`, { ...body, id, name: { givenName: 'Another', familyName: 'User' } });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(put.json.name.givenName).toBe('Another');

    const deactivated = await scim(dir, 'PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(deactivated.status).toBe(200);
    expect(deactivated.json.active).toBe(false);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ status: 'suspended' });
    const reactivated = await scim(dir, 'PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: true } }],
    });
    expect(reactivated.json.active).toBe(true);

    const group = await scim(dir, 'POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'Test SCIMv2',
      members: [],
    });
    expect(group.status).toBe(201);
    const groupId = group.json.id as string;
    const renamed = await scim(dir, 'PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { id: groupId, displayName: 'Test SCIMv2 Updated' } }],
    });
    expect(renamed.status).toBe(204);
    const add = await scim(dir, 'PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: [{ value: id, display: userName }] }],
    });
    expect(add.status).toBe(204);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ status: 'active', roleKey: 'org_admin' });
    const remove = await scim(dir, 'PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'remove', path: `members[value eq "${id}"]` }],
    });
    expect(remove.status).toBe(204);
    expect((await scim(dir, 'GET', `/Groups/${groupId}`)).json.members).toEqual([]);
    expect(await membershipOf(dir.tenantId, userName)).toMatchObject({ roleKey: 'org_member' });
    expect((await scim(dir, 'DELETE', `/Groups/${groupId}`)).status).toBe(204);
  });

  it('pages with startIndex and count', async () => {
    const dir = await directoryOf();
    for (const n of [1, 2, 3]) {
      expect((await scim(dir, 'POST', '/Users', { userName: `page${n}@${dir.domain}` })).status).toBe(201);
    }
    const page = await scim(dir, 'GET', '/Users?startIndex=2&count=1');
    expect(page.json).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect(page.json.Resources[0].userName).toBe(`page2@${dir.domain}`);
    const or = await scim(
      dir,
      'GET',
      `/Users?filter=${q(`userName eq "page1@${dir.domain}" or (userName sw "PAGE3" and active eq true)`)}`,
    );
    expect(or.json.Resources.map((r: Json) => r.userName).sort()).toEqual([`page1@${dir.domain}`, `page3@${dir.domain}`]);
  });
});

describe('discovery', () => {
  it('answers ServiceProviderConfig, ResourceTypes and Schemas', async () => {
    const dir = await directoryOf();
    const config = await scim(dir, 'GET', '/ServiceProviderConfig');
    expect(config.json).toMatchObject({ patch: { supported: true }, filter: { supported: true }, bulk: { supported: false } });
    expect((await scim(dir, 'GET', '/ResourceTypes')).json.Resources.map((r: Json) => r.id)).toEqual(['User', 'Group']);
    const schemas = await scim(dir, 'GET', '/Schemas');
    expect(schemas.json.Resources.map((r: Json) => r.id)).toEqual([
      'urn:ietf:params:scim:schemas:core:2.0:User',
      'urn:ietf:params:scim:schemas:core:2.0:Group',
    ]);
  });
});

describe('what a directory must not get past', () => {
  async function storedUsers(directoryId: string): Promise<number> {
    return (await server.services.db.select().from(scimUsers).where(eq(scimUsers.directoryId, directoryId))).length;
  }

  it('malformed JSON, unknown attributes, a wrong content type: 4xx and nothing stored', async () => {
    const dir = await directoryOf();
    expectScimError(await scim(dir, 'POST', '/Users', undefined, { raw: '{"userName": "a@b.c",' }), 400, 'invalidSyntax');
    expectScimError(await scim(dir, 'POST', '/Users', { userName: `x@${dir.domain}`, favouriteColour: 'blue' }), 400, 'invalidSyntax');
    expectScimError(
      await scim(dir, 'POST', '/Users', { userName: `x@${dir.domain}`, 'urn:example:custom:1.0:User': {} }),
      400,
      'invalidSyntax',
    );
    expectScimError(await scim(dir, 'POST', '/Users', { userName: 'not-an-email' }), 400, 'invalidValue');
    expectScimError(await scim(dir, 'POST', '/Users', [1, 2]), 400, 'invalidSyntax');
    expectScimError(await scim(dir, 'POST', '/Users', { userName: `x@${dir.domain}` }, { contentType: 'text/plain' }), 415);
    expectScimError(await scim(dir, 'POST', '/Users', { userName: `x@${dir.domain}`, active: 'maybe' }), 400, 'invalidValue');
    expect(await storedUsers(dir.id)).toBe(0);

    const user = await scim(dir, 'POST', '/Users', { userName: `y@${dir.domain}` });
    const id = user.json.id as string;
    expectScimError(
      await scim(dir, 'PATCH', `/Users/${id}`, { Operations: [{ op: 'replace', path: 'favouriteColour', value: 'blue' }] }),
      400,
      'invalidSyntax',
    );
    expectScimError(await scim(dir, 'PATCH', `/Users/${id}`, { Operations: [{ op: 'explode', path: 'active' }] }), 400, 'invalidSyntax');
    expectScimError(
      await scim(dir, 'PATCH', `/Users/${id}`, { Operations: [{ op: 'replace', path: 'emails[', value: 'x' }] }),
      400,
      'invalidPath',
    );
    expect((await scim(dir, 'GET', `/Users/${id}`)).json.active).toBe(true);
  });

  it('a filter of 10,000 clauses is a 400 invalidFilter, at once, by GET and by .search; so are unknown attributes and nonsense', async () => {
    const dir = await directoryOf();
    const huge = Array.from({ length: 10_000 }, (_, i) => `userName eq "u${i}"`).join(' or ');
    const started = Date.now();
    expectScimError(
      await scim(dir, 'POST', '/Users/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: huge }),
      400,
      'invalidFilter',
    );
    const deep = `${'('.repeat(5000)}userName eq "a"${')'.repeat(5000)}`;
    expectScimError(await scim(dir, 'POST', '/Users/.search', { filter: deep }), 400, 'invalidFilter');
    const under = Array.from({ length: 200 }, (_, i) => `userName eq "u${i}"`).join(' or ');
    expectScimError(await scim(dir, 'GET', `/Users?filter=${q(under)}`), 400, 'invalidFilter');
    expect(Date.now() - started).toBeLessThan(5_000);
    for (const bad of [
      'favouriteColour eq "blue"',
      'userName eq',
      'userName zz "a"',
      'userName eq "a" and',
      '(userName eq "a"',
      'userName eq "a\\q"',
      'emails[type eq "work"]',
    ]) {
      expectScimError(await scim(dir, 'GET', `/Users?filter=${q(bad)}`), 400, 'invalidFilter');
    }
    expectScimError(await scim(dir, 'GET', `/Groups?filter=${q('userName eq "a"')}`), 400, 'invalidFilter');
  });

  it("another directory's token, a made-up token, no token: 401; another organization's user ids are not found", async () => {
    const mine = await directoryOf();
    const theirs = await directoryOf();
    const theirUser = await scim(theirs, 'POST', '/Users', { userName: `t@${theirs.domain}` });
    expect(theirUser.status).toBe(201);
    expectScimError(await scim(mine, 'GET', '/Users', undefined, { token: theirs.token }), 401);
    expectScimError(await scim(mine, 'POST', '/Users', { userName: `z@${mine.domain}` }, { token: theirs.token }), 401);
    expectScimError(await scim(mine, 'GET', '/Users', undefined, { token: `scim_${'A'.repeat(40)}` }), 401);
    const bare = await fetch(`${mine.base}/Users`);
    expect(bare.status).toBe(401);
    expect(await storedUsers(mine.id)).toBe(0);

    const id = theirUser.json.id as string;
    expectScimError(await scim(mine, 'GET', `/Users/${id}`), 404);
    expectScimError(await scim(mine, 'PATCH', `/Users/${id}`, { Operations: [{ op: 'replace', value: { active: false } }] }), 404);
    expectScimError(await scim(mine, 'DELETE', `/Users/${id}`), 404);
    // Nor can a group of mine take their user as a member.
    const group = await scim(mine, 'POST', '/Groups', { displayName: 'Mine', members: [{ value: id }] });
    expectScimError(group, 400, 'invalidValue');
    expect(await server.services.db.select().from(scimGroups).where(eq(scimGroups.directoryId, mine.id))).toHaveLength(0);
    expect(await membershipOf(theirs.tenantId, `t@${theirs.domain}`)).toMatchObject({ status: 'active' });
  });

  it("a platform admin's email is never made an active member, nor suspended or removed by a directory", async () => {
    const dir = await directoryOf();
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true, email: `boss@${dir.domain}` });
    const created = await scim(dir, 'POST', '/Users', { userName: platform.user.email });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    expect(await membershipOf(dir.tenantId, platform.user.email)).toMatchObject({ status: 'invited' });
    // Accepted later by the person: the directory still cannot act on them.
    await server.services.db
      .update(memberships)
      .set({ status: 'active' })
      .where(and(eq(memberships.tenantId, dir.tenantId), eq(memberships.userId, platform.user.id)));
    await scim(dir, 'PATCH', `/Users/${created.json.id}`, { Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(await membershipOf(dir.tenantId, platform.user.email)).toMatchObject({ status: 'active' });
    expect((await v1('GET', '/v1/me', platform.cookie)).status).toBe(200);
    expect((await scim(dir, 'DELETE', `/Users/${created.json.id}`)).status).toBe(204);
    expect(await membershipOf(dir.tenantId, platform.user.email)).toMatchObject({ status: 'active' });
  });

  it("an email outside the organization's verified domains becomes an invited membership, not an active one", async () => {
    const dir = await directoryOf();
    const created = await scim(dir, 'POST', '/Users', { userName: 'someone@unverified-elsewhere.example' });
    expect(created.status).toBe(201);
    expect(await membershipOf(dir.tenantId, 'someone@unverified-elsewhere.example')).toMatchObject({ status: 'invited' });
  });

  it('the request log keeps method, path and status, never the token or body; rotation stops the old token', async () => {
    const dir = await directoryOf();
    await scim(dir, 'GET', `/Users?filter=${q('userName eq "secret-looking@x.y"')}`);
    await scim(dir, 'POST', '/Users', { userName: 'nope' });
    const log = await v1('GET', `/v1/directories/${dir.id}/requests`, dir.adminCookie);
    expect(log.status).toBe(200);
    expect(log.json.data.slice(0, 2)).toEqual([
      expect.objectContaining({ method: 'POST', path: '/Users', status: 400 }),
      expect.objectContaining({ method: 'GET', path: '/Users', status: 200 }),
    ]);
    expect(JSON.stringify(log.json)).not.toContain('secret-looking');
    const rotated = await v1('POST', `/v1/directories/${dir.id}/rotate-token`, dir.adminCookie, {});
    expect(rotated.status).toBe(200);
    expectScimError(await scim(dir, 'GET', '/Users'), 401);
    expect((await scim({ base: dir.base, token: rotated.json.token }, 'GET', '/Users')).status).toBe(200);
    const listed = await v1('GET', `/v1/directories?organization_slug=${dir.slug}`, dir.adminCookie);
    expect(JSON.stringify(listed.json)).not.toContain(rotated.json.token);
    expect(await eventTypes(dir.tenantId)).toContain('directory.token_rotated');
  });
});
