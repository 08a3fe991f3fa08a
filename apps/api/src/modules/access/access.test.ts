import type { IncomingMessage } from 'node:http';
import { newId } from '@svc/contracts/ids';
import { PERMISSIONS, type Permission } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import { decodeCursor, encodeCursor } from '@svc/db/pagination';
import { findApiKey, findApiKeyTenant } from '@svc/db/queries/api-keys';
import { apiKeys } from '@svc/db/schema/api-keys';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { roles } from '@svc/db/schema/roles';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { accessOf, recordIn } from './access-rule.ts';
import { recordAudit, redact } from './audit.ts';
import { authorize, isPlatformAdmin, PLATFORM_ONLY_MESSAGE } from './authorize.ts';
import { type Principal, principalOf } from './principal.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** A bare request carrying these headers, as principalOf reads it. */
function request(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

async function principalWithCookie(cookie: string): Promise<Principal> {
  const principal = await principalOf(server.services, request({ cookie }));
  if (!principal) {
    throw new Error('no principal');
  }
  return principal;
}

function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: { code?: string }) => error.code,
  );
}

describe('authorize', () => {
  it('members get their role permissions; outsiders learn nothing (404), members without the permission get 403', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await principalWithCookie((await seedSignedIn(db, { organization: org, roleKey: 'org_admin' })).cookie);
    const member = await principalWithCookie((await seedSignedIn(db, { organization: org, roleKey: 'org_member' })).cookie);
    const outsider = await principalWithCookie((await seedSignedIn(db)).cookie);

    const access = await authorize(db, admin, { organization: { id: org.id }, permission: 'users.manage', adminOnly: true });
    expect(access.organization.id).toBe(org.id);
    expect(access.isOrgAdmin).toBe(true);
    expect(await codeOf(authorize(db, member, { organization: { slug: org.slug }, permission: 'tenant.read' }))).toBeUndefined();
    expect(await codeOf(authorize(db, member, { organization: { slug: org.slug }, permission: 'users.read' }))).toBe('forbidden');
    // An outsider cannot tell an organization that exists from one that does not.
    expect(await codeOf(authorize(db, outsider, { organization: { id: org.id }, permission: 'tenant.read' }))).toBe('not_found');
    expect(await codeOf(authorize(db, outsider, { organization: { id: newId('organization') }, permission: 'tenant.read' }))).toBe(
      'not_found',
    );
    expect(await codeOf(authorize(db, outsider, { organization: { slug: org.slug }, permission: 'users.manage' }))).toBe('not_found');
  });

  it('a custom role grants exactly its permissions, and adminOnly still needs org_admin', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    await db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: ['users.manage', 'users.read'] });
    const support = await principalWithCookie((await seedSignedIn(db, { organization: org, roleKey: 'support' })).cookie);
    expect(await codeOf(authorize(db, support, { organization: { id: org.id }, permission: 'users.read' }))).toBeUndefined();
    expect(await codeOf(authorize(db, support, { organization: { id: org.id }, permission: 'tenant.read' }))).toBe('forbidden');
    expect(await codeOf(authorize(db, support, { organization: { id: org.id }, permission: 'users.manage', adminOnly: true }))).toBe(
      'forbidden',
    );
  });

  it('platform admins act in every tenant organization; nobody acts in the keyless workspace', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const platform = await principalWithCookie((await seedSignedIn(db, { platformAdmin: true })).cookie);
    const access = await authorize(db, platform, { organization: { id: org.id }, permission: 'tenant.delete', adminOnly: true });
    expect(access.isOrgAdmin).toBe(true);
    const keyless = await fetch(`${server.url}/v1/client/config?keyless=1`).then((r) => r.json() as Promise<any>);
    expect(await codeOf(authorize(db, platform, { organization: { slug: keyless.organization.slug }, permission: 'tenant.read' }))).toBe(
      'not_found',
    );
  });

  it("a procedure's organizationGuard judges the organization authorize resolved: after the 404s, before the 403s", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const judged: string[] = [];
    const guarded = (principal: Principal): Principal => ({
      ...principal,
      organizationGuard: async (_db, organization) => {
        judged.push(organization.id);
      },
    });
    const member = guarded(await principalWithCookie((await seedSignedIn(db, { organization: org, roleKey: 'org_member' })).cookie));
    await authorize(db, member, { organization: { slug: org.slug }, permission: 'tenant.read' });
    await authorize(db, member, { organization: {}, permission: 'tenant.read' });
    expect(judged).toEqual([org.id, org.id]);
    // A member without the permission: judged first, so the subscription's 402 comes before the 403.
    expect(await codeOf(authorize(db, member, { organization: { id: org.id }, permission: 'users.manage' }))).toBe('forbidden');
    expect(judged).toEqual([org.id, org.id, org.id]);
    // An organization the caller cannot see, named by slug or id: 404, never judged.
    expect(await codeOf(authorize(db, member, { organization: { slug: other.slug }, permission: 'tenant.read' }))).toBe('not_found');
    expect(await codeOf(authorize(db, member, { organization: { id: other.id }, permission: 'tenant.read' }))).toBe('not_found');
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const asKey = guarded((await principalOf(server.services, request({ authorization: key.authorization }))) as Principal);
    expect(await codeOf(authorize(db, asKey, { organization: { slug: other.slug }, permission: 'tenant.read' }))).toBe('not_found');
    expect(judged).toEqual([org.id, org.id, org.id]);
    // A refusal from the guard is the answer.
    const refusing: Principal = { ...member, organizationGuard: async () => Promise.reject(new Error('refused')) };
    await expect(authorize(db, refusing, { organization: { id: org.id }, permission: 'tenant.read' })).rejects.toThrow('refused');
  });

  it('without an organization named, a user acts in the session workspace', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const member = await principalWithCookie((await seedSignedIn(db, { organization: org, roleKey: 'org_member' })).cookie);
    const access = await authorize(db, member, { organization: {}, permission: 'tenant.read' });
    expect(access.organization.id).toBe(org.id);
  });
});

/** The code and message a call was refused with (undefined when it was not). */
function refusalOf(promise: Promise<unknown>): Promise<{ code?: string; message?: string } | undefined> {
  return promise.then(
    () => undefined,
    (error: { code?: string; message?: string }) => ({ code: error.code, message: error.message }),
  );
}

/** A record route's access and its record, as `resolveAccess` and the service get them. */
async function authorizeRecord<T>(
  db: DbOrTx,
  principal: Principal,
  r: {
    untrustedId: string;
    organizationSlug?: string;
    tenantOf: (db: DbOrTx, opts: { untrustedId: string }) => Promise<string | undefined>;
    read: (db: DbOrTx, opts: { tenantId: string; id: string }) => Promise<T | undefined>;
    notFound: string;
    permission: Permission;
  },
) {
  const rule = { permission: r.permission, organization: { tenantOf: r.tenantOf, notFound: r.notFound } };
  const access = await accessOf(db, principal, rule, { id: r.untrustedId, organization_slug: r.organizationSlug });
  return { access, record: await recordIn(db, access, r.read, r.untrustedId, r.notFound) };
}

describe('a record route: accessOf, then recordIn', () => {
  // Tenant API keys stand for any tenant-owned record: looked up by id, then read with the tenant.
  const KEY_NOT_FOUND = 'record not found';
  const record = (untrustedId: string, opts: { organizationSlug?: string; permission?: 'api_keys.read' | 'api_keys.manage' } = {}) => ({
    untrustedId,
    organizationSlug: opts.organizationSlug,
    tenantOf: findApiKeyTenant,
    read: findApiKey,
    notFound: KEY_NOT_FOUND,
    permission: opts.permission ?? 'api_keys.read',
  });
  const unknown = { code: 'not_found', message: KEY_NOT_FOUND };

  async function twoOrganizations() {
    const db = server.services.db;
    const mine = await seedOrganization(db);
    const theirs = await seedOrganization(db);
    const myRecord = await seedApiKey(db, { tenantId: mine.id, scopes: ['users.read'] });
    const theirRecord = await seedApiKey(db, { tenantId: theirs.id, scopes: ['users.read'] });
    return { db, mine, theirs, myRecord, theirRecord };
  }

  it("loads a record of the caller's organization, read under that organization", async () => {
    const { db, mine, myRecord } = await twoOrganizations();
    const admin = await principalWithCookie((await seedSignedIn(db, { organization: mine, roleKey: 'org_admin' })).cookie);
    const { access, record: row } = await authorizeRecord(db, admin, record(myRecord.id));
    expect(access.organization.id).toBe(mine.id);
    expect(row.id).toBe(myRecord.id);
    expect((await authorizeRecord(db, admin, record(myRecord.id, { organizationSlug: mine.slug }))).record.id).toBe(myRecord.id);
  });

  it("another organization's record id answers exactly like an unknown id, by id or under the caller's own slug", async () => {
    const { db, mine, theirRecord } = await twoOrganizations();
    const admin = await principalWithCookie((await seedSignedIn(db, { organization: mine, roleKey: 'org_admin' })).cookie);
    expect(await refusalOf(authorizeRecord(db, admin, record(newId('apiKey'))))).toEqual(unknown);
    expect(await refusalOf(authorizeRecord(db, admin, record(theirRecord.id)))).toEqual(unknown);
    // Naming an organization the caller may act in does not reach a record outside it.
    expect(await refusalOf(authorizeRecord(db, admin, record(theirRecord.id, { organizationSlug: mine.slug })))).toEqual(unknown);
    // Even a permission the caller lacks everywhere answers 404 there, never a 403 that would confirm it.
    const member = await principalWithCookie((await seedSignedIn(db, { organization: mine, roleKey: 'org_member' })).cookie);
    expect(await refusalOf(authorizeRecord(db, member, record(theirRecord.id, { permission: 'api_keys.manage' })))).toEqual(unknown);
  });

  it('a tenant API key reaches no record of another organization, and none of its own beyond its scopes', async () => {
    const { db, mine, theirs, myRecord, theirRecord } = await twoOrganizations();
    const key = await seedApiKey(db, { tenantId: mine.id, scopes: ['api_keys.read'] });
    const asKey = (await principalOf(server.services, request({ authorization: key.authorization }))) as Principal;
    expect((await authorizeRecord(db, asKey, record(myRecord.id))).record.id).toBe(myRecord.id);
    expect(await refusalOf(authorizeRecord(db, asKey, record(theirRecord.id)))).toEqual(unknown);
    expect(await refusalOf(authorizeRecord(db, asKey, record(theirRecord.id, { organizationSlug: theirs.slug })))).toEqual(unknown);
    expect(await refusalOf(authorizeRecord(db, asKey, record(theirRecord.id, { organizationSlug: mine.slug })))).toEqual(unknown);
    expect((await refusalOf(authorizeRecord(db, asKey, record(myRecord.id, { permission: 'api_keys.manage' }))))?.code).toBe('forbidden');
    const narrow = await seedApiKey(db, { tenantId: mine.id, scopes: ['users.read'] });
    const asNarrow = (await principalOf(server.services, request({ authorization: narrow.authorization }))) as Principal;
    expect(await refusalOf(authorizeRecord(db, asNarrow, record(myRecord.id)))).toEqual({
      code: 'forbidden',
      message: 'missing permission api_keys.read',
    });
  });

  it('a member without the permission is refused (403) on a record of their own organization', async () => {
    const { db, mine, myRecord } = await twoOrganizations();
    const member = await principalWithCookie((await seedSignedIn(db, { organization: mine, roleKey: 'org_member' })).cookie);
    expect(await refusalOf(authorizeRecord(db, member, record(myRecord.id)))).toEqual({
      code: 'forbidden',
      message: 'missing permission api_keys.read',
    });
    expect(await refusalOf(authorizeRecord(db, member, record(myRecord.id, { organizationSlug: mine.slug })))).toMatchObject({
      code: 'forbidden',
    });
  });

  it("a platform admin reaches a record in any tenant organization, but only under that record's own organization", async () => {
    const { db, mine, theirs, theirRecord } = await twoOrganizations();
    const platform = await principalWithCookie((await seedSignedIn(db, { platformAdmin: true })).cookie);
    const { access, record: row } = await authorizeRecord(db, platform, record(theirRecord.id, { permission: 'api_keys.manage' }));
    expect(access.organization.id).toBe(theirs.id);
    expect(row.id).toBe(theirRecord.id);
    expect(await refusalOf(authorizeRecord(db, platform, record(theirRecord.id, { organizationSlug: mine.slug })))).toEqual(unknown);
    expect(await refusalOf(authorizeRecord(db, platform, record(newId('apiKey'))))).toEqual(unknown);
  });
});

describe('platform-only routes', () => {
  /** Every route only platform admins may use: the procedures (platformProcedure) and the engine proxy. */
  const ROUTES = [
    { method: 'GET', path: () => '/v1/platform/jobs' },
    { method: 'GET', path: () => '/v1/platform/registered-clients' },
    { method: 'POST', path: () => '/v1/subscription-plans', body: { key: 'plan-x', name: 'X', seatLimit: 1, usageLimits: {} } },
    { method: 'PATCH', path: () => `/v1/subscription-plans/${newId('subscriptionPlan')}`, body: { name: 'X' } },
    { method: 'PATCH', path: (slug: string) => `/v1/subscription?organization_slug=${slug}`, body: { seats: 3 } },
  ] as const;

  async function send(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...headers,
        ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } };
  }

  it('the rule: a session opened in the platform admin group; never an API key, even one a platform admin created', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const platform = await principalWithCookie((await seedSignedIn(db, { platformAdmin: true })).cookie);
    const orgAdmin = await principalWithCookie((await seedSignedIn(db, { organization: org, roleKey: 'org_admin' })).cookie);
    // seedApiKey's default creator is a platform admin.
    const key = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    const asKey = (await principalOf(server.services, request({ authorization: key.authorization }))) as Principal;
    expect(isPlatformAdmin(platform)).toBe(true);
    expect(isPlatformAdmin(orgAdmin)).toBe(false);
    expect(isPlatformAdmin(asKey)).toBe(false);
  });

  it('refuses a signed-in non-admin with one 403 on every platform route, before its input is looked at', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const orgAdmin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const plain = await seedSignedIn(db);
    for (const who of [orgAdmin, plain]) {
      for (const route of ROUTES) {
        const res = await send(route.method, route.path(org.slug), { cookie: who.cookie }, 'body' in route ? route.body : undefined);
        expect(res, `${route.method} ${route.path(org.slug)}`).toMatchObject({
          status: 403,
          body: { error: { code: 'forbidden', message: PLATFORM_ONLY_MESSAGE } },
        });
        if (route.method !== 'GET') {
          // A malformed body is still a 403: a non-admin learns nothing of what the route takes.
          const malformed = await send(route.method, route.path(org.slug), { cookie: who.cookie }, { seatLimit: 'many' });
          expect(malformed.status, `${route.method} ${route.path(org.slug)} malformed`).toBe(403);
        }
      }
      const trpc = await fetch(`${server.url}/trpc/jobQueue.overview`, { headers: { cookie: who.cookie } });
      expect(trpc.status).toBe(403);
      // The engine proxy (plain Express) applies the same rule, with its one bare 403 for every path.
      const engine = await send('GET', '/v1/platform/engine/core/users/', { cookie: who.cookie });
      expect(engine).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: 'Forbidden' } } });
    }
  });

  it('refuses a tenant API key with every scope, created by a platform admin, on every platform route', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    for (const route of ROUTES) {
      const res = await send(
        route.method,
        route.path(org.slug),
        { authorization: key.authorization },
        'body' in route ? route.body : undefined,
      );
      expect(res, `${route.method} ${route.path(org.slug)}`).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
    }
    // The engine proxy takes only a session cookie: a key is no session (401), never the engine.
    const engine = await send('GET', '/v1/platform/engine/core/users/', { authorization: key.authorization });
    expect(engine).toMatchObject({ status: 401, body: { error: { code: 'unauthenticated' } } });
  });

  it('lets a platform admin through', async () => {
    const db = server.services.db;
    const platform = await seedSignedIn(db, { platformAdmin: true });
    expect((await send('GET', '/v1/platform/jobs', { cookie: platform.cookie })).status).toBe(200);
    const plan = await send(
      'POST',
      '/v1/subscription-plans',
      { cookie: platform.cookie },
      { key: `p-${Date.now()}`, name: 'P', seatLimit: 2, usageLimits: {} },
    );
    expect(plan.status).toBe(201);
  });
});

describe('tenant API keys', () => {
  it('authenticate as their organization, within their scopes', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'] });
    const principal = await principalOf(server.services, request({ authorization: key.authorization }));
    expect(principal).toMatchObject({ kind: 'api_key', apiKey: { tenantId: org.id, scopes: ['users.read'] } });
    const p = principal as Principal;
    expect((await authorize(db, p, { organization: {}, permission: 'users.read' })).organization.id).toBe(org.id);
    expect(await codeOf(authorize(db, p, { organization: { id: org.id }, permission: 'users.manage' }))).toBe('forbidden');
    expect(await codeOf(authorize(db, p, { organization: { id: other.id }, permission: 'users.read' }))).toBe('not_found');
  });

  it('adminOnly holds for keys too: met only while the creator is an org admin, and admin-only permissions need it even unasked', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    await db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: ['users.manage', 'users.read'] });
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const support = await seedSignedIn(db, { organization: org, roleKey: 'support' });
    const asKey = async (createdBy: string) => {
      const key = await seedApiKey(db, { tenantId: org.id, scopes: ['exports.create', 'users.manage', 'users.read'], createdBy });
      return (await principalOf(server.services, request({ authorization: key.authorization }))) as Principal;
    };
    const byAdmin = await asKey(admin.user.id);
    const bySupport = await asKey(support.user.id);
    const usersManage = { organization: { id: org.id }, permission: 'users.manage', adminOnly: true } as const;
    expect((await authorize(db, byAdmin, usersManage)).isOrgAdmin).toBe(true);
    expect(await codeOf(authorize(db, bySupport, usersManage))).toBe('forbidden');
    // exports.create is admin-only whether or not the route says so; its creator never held it.
    expect(await codeOf(authorize(db, bySupport, { organization: { id: org.id }, permission: 'exports.create' }))).toBe('forbidden');
    const supportSession = await principalWithCookie(support.cookie);
    expect(await codeOf(authorize(db, supportSession, { organization: { id: org.id }, permission: 'users.manage' }))).toBe('forbidden');
    // What the key may use: its scopes within its creator's, admin-only ones only for an org admin.
    const access = await authorize(db, bySupport, { organization: { id: org.id }, permission: 'users.read' });
    expect([...access.permissions]).toEqual(['users.read']);
  });

  it('a revoked, expired, unknown or malformed key is 401; an application secret key is pointed elsewhere', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const revoked = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'], revoked: true });
    const expired = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'], expiresAt: new Date(Date.now() - 1000) });
    const app = await seedApplication(db);
    const attempt = (authorization: string) => codeOf(principalOf(server.services, request({ authorization })));
    expect(await attempt(revoked.authorization)).toBe('invalid_secret_key');
    expect(await attempt(expired.authorization)).toBe('invalid_secret_key');
    expect(await attempt(`Bearer sk_live_${'x'.repeat(40)}`)).toBe('invalid_secret_key');
    expect(await attempt('Bearer nope')).toBe('invalid_secret_key');
    expect(await attempt('Basic abc')).toBe('invalid_secret_key');
    expect(await attempt(`Bearer ${app.secretKey}`)).toBe('forbidden');
  });

  it('a bad Authorization header is refused even beside a valid session cookie', async () => {
    const signedIn = await seedSignedIn(server.services.db);
    const code = await codeOf(principalOf(server.services, request({ cookie: signedIn.cookie, authorization: 'Bearer nope' })));
    expect(code).toBe('invalid_secret_key');
  });

  it('last use is recorded in a batch, not per request, and never moves backwards', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'] });
    await principalOf(server.services, request({ authorization: key.authorization }));
    const [before] = await db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    expect(before?.lastUsedAt).toBeNull();
    await server.services.apiKeyUsage.flush();
    const [after] = await db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    expect(after?.lastUsedAt).toBeInstanceOf(Date);
    server.services.apiKeyUsage.note(key.id, new Date(0));
    await server.services.apiKeyUsage.flush();
    const [still] = await db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    expect(still?.lastUsedAt?.getTime()).toBe(after?.lastUsedAt?.getTime());
  });
});

describe('audit log', () => {
  it('is append-only: UPDATE, DELETE and TRUNCATE are refused by the database', async () => {
    const db = server.services.db;
    await recordAudit(
      db,
      null,
      { ipAddress: '127.0.0.1', userAgent: 'test', requestId: 'req_x' },
      {
        tenantId: null,
        action: 'test.created',
        target: { type: 'test', id: null },
      },
    );
    const refused = { cause: { message: expect.stringMatching(/append-only/) } };
    await expect(db.update(auditLogs).set({ action: 'test.rewritten' })).rejects.toMatchObject(refused);
    await expect(db.delete(auditLogs)).rejects.toMatchObject(refused);
    await expect(db.execute(sql`truncate audit_logs`)).rejects.toMatchObject(refused);
    const [count] = await db.select({ n: sql<number>`count(*)::int` }).from(auditLogs).where(eq(auditLogs.action, 'test.created'));
    expect(count?.n).toBeGreaterThan(0);
  });

  it('summaries never carry secrets, whatever a caller puts in them', () => {
    const secret = `sk_live_${'A'.repeat(40)}`;
    const out = JSON.stringify(
      redact({
        name: 'ok',
        secretKey: secret,
        nested: { token: 'abc', note: `leaked ${secret} and whsec_${'b'.repeat(32)}`, passwordHash: 'x' },
        list: [{ authorization: 'Bearer x' }],
      }),
    );
    expect(out).not.toContain(secret);
    expect(out).not.toContain('whsec_bbbb');
    expect(out).not.toContain('abc');
    // A real webhook secret is base64: masked whole, not cut at the first + or /.
    const whsec = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/rt7bE1Q0E=';
    const masked = JSON.stringify(redact({ note: `rotated to ${whsec} today` }));
    expect(masked).toBe('{"note":"rotated to whsec_[redacted] today"}');
    expect(out).toContain('"name":"ok"');
  });
});

describe('cursors', () => {
  it('round-trip, and refuse a malformed cursor or one from another list', () => {
    const last = { createdAt: new Date('2026-01-02T03:04:05.678Z'), id: newId('auditLog') };
    const cursor = encodeCursor('audit:ten_a', last);
    expect(decodeCursor('audit:ten_a', cursor)).toEqual(last);
    expect(() => decodeCursor('audit:ten_b', cursor)).toThrow(/another list/);
    expect(() => decodeCursor('audit:ten_a', 'not-a-cursor')).toThrow(/malformed/);
    expect(() => decodeCursor('audit:ten_a', Buffer.from('["audit:ten_a","yesterday","x"]').toString('base64url'))).toThrow(/malformed/);
  });
});
