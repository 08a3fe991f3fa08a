import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { newId } from '@svc/contracts/ids';
import type { TUser, TUserPage } from '@svc/contracts/users';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { roles } from '@svc/db/schema/roles';
import { sessions } from '@svc/db/schema/sessions';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import type { EngineAdminApi } from '../../env.ts';
import { type Access, authorize } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';
import { signInFromEngine } from '../identity/service.ts';
import { createSession } from '../session-store/service.ts';
import { createUser } from './service.ts';
import { MATRIX } from './users.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let n = 0;
const unique = () => `${++n}-${Math.random().toString(36).slice(2, 8)}`;
const REQUEST = { ipAddress: '127.0.0.1', userAgent: 'users.test', requestId: 'req_users_test' };
const SESSION = { idleMs: 3_600_000, absoluteMs: 7_200_000 };

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

function call(method: string, path: string, opts: { cookie?: string; body?: unknown } = {}) {
  return fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      // Mutations go as a browser sends them: JSON from our origin (docs/api.md).
      ...(opts.body !== undefined || method !== 'GET'
        ? { 'content-type': 'application/json', origin: server.services.config.publicUrl }
        : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

/** An organization with its (only) org admin signed in. */
async function orgWithAdmin() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { org, admin };
}

async function principalOf(signedIn: SignedIn): Promise<Principal> {
  const found = await server.services.sessions.validate(signedIn.token);
  if (!found) {
    throw new Error('seeded session is not live');
  }
  return { kind: 'user', ...found };
}

/** What POST /v1/users resolves for this person in `slug` (users.manage, org admins only). */
async function manageAccessOf(signedIn: SignedIn, slug: string): Promise<Access> {
  return authorize(server.services.db, await principalOf(signedIn), {
    organization: { slug },
    permission: 'users.manage',
    adminOnly: true,
  });
}

function engineAdmin(): EngineAdminApi {
  const admin = server.services.config.engine.admin;
  if (!admin) {
    throw new Error('the test server has the dev engine admin API');
  }
  return admin;
}

/** Reads the dev engine's admin API the way svc does. */
async function engineUsersByEmail(email: string): Promise<{ uid: string; email: string }[]> {
  const admin = engineAdmin();
  const res = await fetch(new URL(`core/users/?email=${encodeURIComponent(email)}`, admin.url), {
    headers: { authorization: `Bearer ${admin.token}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { results: { uid: string; email: string }[] }).results;
}

async function auditEntries(tenantId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, action)));
}

describeAuthMatrix('users', () => server, MATRIX);

describe('GET /v1/users', () => {
  it('lists the members as users, newest first, in cursor pages; filters by status and email prefix', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const other = await orgWithAdmin();
    const created: TUser[] = [];
    for (const email of ['ann@acme.test', 'bob@acme.test', 'a_b@acme.test']) {
      const res = await call('POST', '/v1/users', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, email, name: email.split('@')[0] },
      });
      expect(res.status).toBe(201);
      created.push((await res.json()) as TUser);
    }
    // bob accepted and was then suspended here; ann and a_b have not accepted yet.
    await db
      .update(memberships)
      .set({ status: 'suspended' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, created[1]?.id ?? '')));

    const first = await call('GET', `/v1/users?organization_slug=${org.slug}&limit=2`, { cookie: admin.cookie });
    expect(first.status).toBe(200);
    const page1 = (await first.json()) as TUserPage;
    expect(page1.data.map((u) => u.email)).toEqual(['a_b@acme.test', 'bob@acme.test']);
    expect(page1.data[0]).toMatchObject({
      name: 'a_b',
      status: 'invited',
      roleKey: 'org_member',
      emailVerified: false,
      lastSignInAt: null,
    });
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&limit=2&cursor=${page1.nextCursor}`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    // The admin joined first: the last page ends with them. Nobody of the other organization shows.
    expect(page2.data.map((u) => u.email)).toEqual(['ann@acme.test', admin.user.email]);
    expect(page2.nextCursor).toBeNull();
    expect(JSON.stringify([page1, page2])).not.toContain(other.admin.user.email);

    const suspended = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&status=suspended`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    expect(suspended.data.map((u) => u.email)).toEqual(['bob@acme.test']);
    const invited = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&status=invited`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    expect(invited.data.map((u) => u.email)).toEqual(['a_b@acme.test', 'ann@acme.test']);
    const active = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&status=active`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    expect(active.data.map((u) => u.email)).toEqual([admin.user.email]);
    // The prefix is matched literally: `_` is not a wildcard, case does not matter.
    const prefixed = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&email=A_`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    expect(prefixed.data.map((u) => u.email)).toEqual(['a_b@acme.test']);
    const percent = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&email=%25`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    expect(percent.data).toEqual([]);
  });

  it('refuses a malformed cursor and a cursor of other filters (400); an unknown organization is a 404', async () => {
    const { org, admin } = await orgWithAdmin();
    for (let i = 0; i < 2; i++) {
      await call('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email: `page-${unique()}@acme.test` } });
    }
    const page = (await (
      await call('GET', `/v1/users?organization_slug=${org.slug}&limit=1`, { cookie: admin.cookie })
    ).json()) as TUserPage;
    expect(page.nextCursor).toEqual(expect.any(String));
    const stale = await call('GET', `/v1/users?organization_slug=${org.slug}&limit=1&status=active&cursor=${page.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(stale.status).toBe(400);
    expect(await errorCode(stale)).toBe('validation_failed');
    const malformed = await call('GET', `/v1/users?organization_slug=${org.slug}&cursor=not-a-cursor`, { cookie: admin.cookie });
    expect(malformed.status).toBe(400);
    for (const query of ['limit=0', 'limit=201', 'status=banned', `email=${'x'.repeat(255)}`]) {
      expect((await call('GET', `/v1/users?organization_slug=${org.slug}&${query}`, { cookie: admin.cookie })).status, query).toBe(400);
    }
    const unknown = await call('GET', '/v1/users?organization_slug=no-such-org-here', { cookie: admin.cookie });
    expect(unknown.status).toBe(404);
  });
});

describe('GET /v1/users/{id}', () => {
  it("reads one member as the list shows them; another organization's member, an unknown id and a malformed one are refused", async () => {
    const { org, admin } = await orgWithAdmin();
    const other = await orgWithAdmin();
    const created = await call('POST', '/v1/users', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: `reader-${unique()}@acme.test`, name: 'Rea Der', roleKey: 'org_member' },
    });
    expect(created.status).toBe(201);
    const user = (await created.json()) as TUser;

    const res = await call('GET', `/v1/users/${user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    const listed = (await (await call('GET', `/v1/users?organization_slug=${org.slug}`, { cookie: admin.cookie })).json()) as TUserPage;
    expect(await res.json()).toEqual(listed.data.find((u) => u.id === user.id));

    // The same person read through another organization: not its member, so not found there.
    const foreign = await call('GET', `/v1/users/${user.id}?organization_slug=${other.org.slug}`, { cookie: other.admin.cookie });
    expect(foreign.status).toBe(404);
    expect(await errorCode(foreign)).toBe('not_found');
    // Another organization's admin cannot read it through this one either (the organization is hidden).
    const outsider = await call('GET', `/v1/users/${user.id}?organization_slug=${org.slug}`, { cookie: other.admin.cookie });
    expect(outsider.status).toBe(404);
    const unknown = await call('GET', `/v1/users/${newId('user')}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(unknown.status).toBe(404);
    const malformed = await call('GET', `/v1/users/usr_short?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(malformed.status).toBe(400);
  });
});

describe('POST /v1/users', () => {
  it('adds a person (201) as an invited membership: in the engine, linked to its engine subject, with the role, one audit entry', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: ['users.read'] });
    const email = `New.Person-${unique()}@Acme.test`;
    const res = await call('POST', '/v1/users', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email, name: 'New Person', roleKey: 'support' },
    });
    expect(res.status).toBe(201);
    const user = (await res.json()) as TUser;
    expect(user).toMatchObject({
      email: email.toLowerCase(),
      name: 'New Person',
      roleKey: 'support',
      status: 'invited',
      lastSignInAt: null,
    });
    expect(user.id).toMatch(/^usr_/);

    const inEngine = await engineUsersByEmail(email.toLowerCase());
    expect(inEngine).toHaveLength(1);
    const [row] = await db.select().from(users).where(eq(users.id, user.id));
    expect(row?.engineSubject).toBe(inEngine[0]?.uid);

    const entries = await auditEntries(org.id, 'user.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actorType: 'user',
      actorId: admin.user.id,
      targetType: 'user',
      targetId: user.id,
      requestId: expect.any(String),
    });
    // Only what the organization typed: nothing about whether svc or the engine knew the email.
    expect(entries[0]?.summary).toEqual({ email: email.toLowerCase(), roleKey: 'support', status: 'invited', name: 'New Person' });
    const [membership] = await db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, user.id)));
    expect(membership).toMatchObject({ status: 'invited', invitedEmail: email.toLowerCase(), invitedName: 'New Person' });
  });

  it('refuses malformed emails, oversized names, unknown roles (400) and an existing member (409 already_member)', async () => {
    const { org, admin } = await orgWithAdmin();
    const other = await orgWithAdmin();
    await server.services.db
      .insert(roles)
      .values({ id: newId('role'), tenantId: other.org.id, key: 'elsewhere', name: 'Elsewhere', permissions: [] });
    const bodies: [unknown, string][] = [
      [{ organization_slug: org.slug }, 'validation_failed'],
      [{ organization_slug: org.slug, email: 'not-an-email' }, 'validation_failed'],
      [{ organization_slug: org.slug, email: 'a@b' }, 'validation_failed'],
      [{ organization_slug: org.slug, email: `${'x'.repeat(250)}@acme.test` }, 'validation_failed'],
      [{ organization_slug: org.slug, email: `ok-${unique()}@acme.test`, name: 'x'.repeat(101) }, 'validation_failed'],
      [{ organization_slug: org.slug, email: `ok-${unique()}@acme.test`, name: 'a\u0000b' }, 'validation_failed'],
      [{ organization_slug: org.slug, email: `ok-${unique()}@acme.test`, roleKey: 'Not A Key' }, 'validation_failed'],
      [{ organization_slug: org.slug, email: `ok-${unique()}@acme.test`, roleKey: 'no_such_role' }, 'unknown_role'],
      // Another organization's custom role does not exist here.
      [{ organization_slug: org.slug, email: `ok-${unique()}@acme.test`, roleKey: 'elsewhere' }, 'unknown_role'],
    ];
    for (const [body, code] of bodies) {
      const res = await call('POST', '/v1/users', { cookie: admin.cookie, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await errorCode(res)).toBe(code);
    }
    const again = await call('POST', '/v1/users', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: admin.user.email.toUpperCase() },
    });
    expect(again.status).toBe(409);
    expect(await errorCode(again)).toBe('already_member');
    const email = `twice-${unique()}@acme.test`;
    expect((await call('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email } })).status).toBe(201);
    const twice = await call('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email } });
    expect(twice.status).toBe(409);
    expect(await errorCode(twice)).toBe('already_member');
    // Nothing of the refused requests was written.
    expect(await auditEntries(org.id, 'user.created')).toHaveLength(1);
  });

  it('two organizations pre-provisioning one email share one user, until someone signs in with it unverified', async () => {
    const a = await orgWithAdmin();
    const b = await orgWithAdmin();
    const email = `shared-${unique()}@acme.test`;
    const ua = (await (
      await call('POST', '/v1/users', { cookie: a.admin.cookie, body: { organization_slug: a.org.slug, email } })
    ).json()) as TUser;
    const ub = (await (
      await call('POST', '/v1/users', { cookie: b.admin.cookie, body: { organization_slug: b.org.slug, email } })
    ).json()) as TUser;
    expect(ub.id).toBe(ua.id);
    const rows = await server.services.db.select().from(memberships).where(eq(memberships.userId, ua.id));
    expect(rows.map((r) => r.tenantId).sort()).toEqual([a.org.id, b.org.id].sort());

    // Once someone has signed in with that engine account and the engine does not vouch for the
    // email, a third organization's user is not handed to them: a separate pre-provisioned user.
    const [account] = await engineUsersByEmail(email);
    const db = server.services.db;
    await signInFromEngine(
      db,
      { subject: account?.uid ?? '', email, emailVerified: false, name: 'Signed in', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    const c = await orgWithAdmin();
    const uc = (await (
      await call('POST', '/v1/users', { cookie: c.admin.cookie, body: { organization_slug: c.org.slug, email } })
    ).json()) as TUser;
    expect(uc.id).not.toBe(ua.id);
    const [placeholder] = await db.select().from(users).where(eq(users.id, uc.id));
    expect(placeholder?.engineSubject).toBeNull();
  });

  it('an engine failure (unreachable, error answer, timeout) writes nothing in svc', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const access = await manageAccessOf(admin, org.slug);
    const failing = http.createServer((req, res) => {
      if (req.url?.includes('slow')) {
        return; // never answers
      }
      res.writeHead(500, { 'content-type': 'text/plain' }).end('Traceback: engine internals');
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const port = (failing.address() as AddressInfo).port;
    try {
      const cases: [EngineAdminApi, string][] = [
        [{ url: 'http://127.0.0.1:9/api/v3/', token: 't', timeoutMs: 2_000, devEngine: false }, 'engine_unreachable'],
        [{ url: `http://127.0.0.1:${port}/api/v3/`, token: 't', timeoutMs: 2_000, devEngine: false }, 'engine_bad_response'],
        [{ url: `http://127.0.0.1:${port}/slow/api/v3/`, token: 't', timeoutMs: 200, devEngine: false }, 'engine_timeout'],
      ];
      for (const [engine, code] of cases) {
        const email = `engine-down-${unique()}@acme.test`;
        const failure = await createUser({ db, engineAdmin: engine }, access, REQUEST, { organization_slug: org.slug, email }).catch(
          (e: unknown) => e,
        );
        expect(failure).toMatchObject({ code });
        expect((failure as Error).message).not.toContain('Traceback');
        expect(await db.select().from(users).where(eq(users.email, email))).toEqual([]);
      }
      expect(await auditEntries(org.id, 'user.created')).toEqual([]);
      expect(await db.select().from(memberships).where(eq(memberships.tenantId, org.id))).toHaveLength(1);
    } finally {
      failing.closeAllConnections();
      await new Promise((resolve) => failing.close(resolve));
    }
  });

  it('without an engine admin API: a user with no engine subject, linked later only by an engine-verified email, still only invited', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const access = await manageAccessOf(admin, org.slug);
    const email = `placeholder-${unique()}@acme.test`;
    const created = await createUser({ db, engineAdmin: null }, access, REQUEST, {
      organization_slug: org.slug,
      email,
      roleKey: 'org_admin',
    });
    const [row] = await db.select().from(users).where(eq(users.id, created.id));
    expect(row?.engineSubject).toBeNull();

    // Someone signs up at the engine with this address but has not verified it: no link.
    const claimer = await signInFromEngine(
      db,
      { subject: `sub-claim-${unique()}`, email, emailVerified: false, name: 'Claimer', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    expect(claimer.user.id).not.toBe(created.id);
    expect(claimer.workspace.id).not.toBe(org.id);
    expect(
      await db
        .select()
        .from(memberships)
        .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, claimer.user.id))),
    ).toEqual([]);
    const [still] = await db.select().from(users).where(eq(users.id, created.id));
    expect(still?.engineSubject).toBeNull();

    // The owner of the mailbox signs in with the email verified: the pre-provisioned user is theirs.
    const subject = `sub-owner-${unique()}`;
    const owner = await signInFromEngine(
      db,
      { subject, email: email.toUpperCase(), emailVerified: true, name: 'Owner', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    expect(owner.user.id).toBe(created.id);
    expect(owner.user.engineSubject).toBe(subject);
    // Linking is not joining: the organization's membership waits for the owner's answer, and
    // they open a workspace of their own meanwhile.
    expect(owner.workspace.id).not.toBe(org.id);
    const [waiting] = await db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, created.id)));
    expect(waiting?.status).toBe('invited');
  });

  it('a person who signed in before with an unverified email gets the pre-provisioned memberships once the engine verifies it', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const access = await manageAccessOf(admin, org.slug);
    const email = `late-verify-${unique()}@acme.test`;
    const subject = `sub-late-${unique()}`;
    const identity = { subject, email, name: 'Late', groups: [] };
    const before = await signInFromEngine(db, { ...identity, emailVerified: false }, { platformAdminGroup: 'platform-admins' });
    const created = await createUser({ db, engineAdmin: null }, access, REQUEST, {
      organization_slug: org.slug,
      email,
      roleKey: 'org_admin',
    });
    // An unverified user is never picked as the one to add: a placeholder is created instead.
    expect(created.id).not.toBe(before.user.id);
    const unverified = await signInFromEngine(db, { ...identity, emailVerified: false }, { platformAdminGroup: 'platform-admins' });
    expect(unverified.user.id).toBe(before.user.id);
    expect(
      await db
        .select()
        .from(memberships)
        .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, before.user.id))),
    ).toEqual([]);

    await signInFromEngine(db, { ...identity, emailVerified: true }, { platformAdminGroup: 'platform-admins' });
    const [membership] = await db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, before.user.id)));
    expect(membership).toMatchObject({ roleKey: 'org_admin', status: 'invited' });
    expect(await db.select().from(users).where(eq(users.id, created.id))).toEqual([]);
  });

  it('an existing engine account whose email is not verified is not trusted as the user; one svc created is', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const engine = engineAdmin();
    const email = `engine-existing-${unique()}@acme.test`;
    const made = await fetch(new URL('core/users/', engine.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${engine.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ username: email, email, name: 'Signed up elsewhere' }),
    });
    expect(made.status).toBe(201);
    const squatter = ((await made.json()) as { uid: string }).uid;

    const res = await call('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email } });
    expect(res.status).toBe(201);
    const created = (await res.json()) as TUser;
    const [row] = await db.select().from(users).where(eq(users.id, created.id));
    expect(row?.engineSubject).toBeNull();
    expect(await engineUsersByEmail(email)).toHaveLength(1);
    const signedIn = await signInFromEngine(
      db,
      { subject: squatter, email, emailVerified: false, name: 'Squatter', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    expect(signedIn.user.id).not.toBe(created.id);
    expect(signedIn.workspace.id).not.toBe(org.id);

    // An account svc created itself is linked by its subject at the first sign-in.
    const fresh = `engine-fresh-${unique()}@acme.test`;
    const freshUser = (await (
      await call('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email: fresh } })
    ).json()) as TUser;
    const [account] = await engineUsersByEmail(fresh);
    const linked = await signInFromEngine(
      db,
      { subject: account?.uid ?? '', email: fresh, emailVerified: false, name: 'Fresh', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    expect(linked.user.id).toBe(freshUser.id);
    expect(linked.workspace.id).not.toBe(org.id);
  });
});

describe('PATCH /v1/users/{id}', () => {
  async function member(orgSlug: string, cookie: string, roleKey = 'org_member'): Promise<TUser> {
    const res = await call('POST', '/v1/users', {
      cookie,
      body: { organization_slug: orgSlug, email: `member-${unique()}@acme.test`, roleKey },
    });
    expect(res.status).toBe(201);
    const user = (await res.json()) as TUser;
    // As if the person had accepted: an invited membership's status is theirs to change.
    const [org] = await server.services.db
      .update(memberships)
      .set({ status: 'active' })
      .where(eq(memberships.userId, user.id))
      .returning({ tenantId: memberships.tenantId });
    expect(org).toBeDefined();
    return { ...user, status: 'active' };
  }

  it('changes the role with one user.updated entry; a name is 403 user_profile_forbidden; bad input is 400; a foreign or unknown id is 404', async () => {
    const { org, admin } = await orgWithAdmin();
    const other = await orgWithAdmin();
    const user = await member(org.slug, admin.cookie);
    const renamed = await call('PATCH', `/v1/users/${user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Renamed', roleKey: 'org_admin' },
    });
    expect(renamed.status).toBe(403);
    expect(await errorCode(renamed)).toBe('user_profile_forbidden');
    const res = await call('PATCH', `/v1/users/${user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'org_admin' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: user.id, name: '', roleKey: 'org_admin', status: 'active' });
    const entries = await auditEntries(org.id, 'user.updated');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorId: admin.user.id, targetId: user.id });
    expect(entries[0]?.summary).toEqual({ changes: { roleKey: { from: 'org_member', to: 'org_admin' } } });

    const bad: unknown[] = [
      { organization_slug: org.slug },
      { organization_slug: org.slug, name: '' },
      { organization_slug: org.slug, name: 'x'.repeat(101) },
      { organization_slug: org.slug, status: 'banned' },
      { organization_slug: org.slug, status: 'invited' },
      { organization_slug: org.slug, roleKey: 'BAD KEY' },
    ];
    for (const body of bad) {
      expect((await call('PATCH', `/v1/users/${user.id}`, { cookie: admin.cookie, body })).status, JSON.stringify(body)).toBe(400);
    }
    const unknownRole = await call('PATCH', `/v1/users/${user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'nope' },
    });
    expect(unknownRole.status).toBe(400);
    expect(await errorCode(unknownRole)).toBe('unknown_role');
    const wrongPrefix = await call('PATCH', `/v1/users/ses_00000000000000000000`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'x' },
    });
    expect(wrongPrefix.status).toBe(400);
    // Another organization's user, addressed through this organization: not found, untouched.
    const foreign = await call('PATCH', `/v1/users/${other.admin.user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'org_member' },
    });
    expect(foreign.status).toBe(404);
    expect(await errorCode(foreign)).toBe('not_found');
    const unknown = await call('PATCH', '/v1/users/usr_00000000000000000000', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'org_member' },
    });
    expect(unknown.status).toBe(404);
    const [kept] = await server.services.db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, other.org.id), eq(memberships.userId, other.admin.user.id)));
    expect(kept?.roleKey).toBe('org_admin');
  });

  it('a users.manage API key cannot raise anyone above its scopes nor act on an admin (403)', async () => {
    const { org, admin } = await orgWithAdmin();
    const db = server.services.db;
    // org_member's permissions plus users.manage: enough to act on a member, not on an admin.
    const key = await seedApiKey(db, {
      tenantId: org.id,
      scopes: ['users.read', 'users.manage', 'tenant.read', 'members.read', 'usage.read', 'subscription.read'],
    });
    const asKey = (method: string, path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: key.authorization, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const user = await member(org.slug, admin.cookie);
    // Promoting a member, or creating an admin outright, would hand the key's holder a way up.
    const promote = await asKey('PATCH', `/v1/users/${user.id}`, { organization_slug: org.slug, roleKey: 'org_admin' });
    expect(promote.status).toBe(403);
    const create = await asKey('POST', '/v1/users', {
      organization_slug: org.slug,
      email: `k-${unique()}@acme.test`,
      roleKey: 'org_admin',
    });
    expect(create.status).toBe(403);
    // Suspending the organization's admin would lock its owners out.
    const suspend = await asKey('PATCH', `/v1/users/${admin.user.id}`, { organization_slug: org.slug, status: 'suspended' });
    expect(suspend.status).toBe(403);
    // Within its reach it works: org_member holds tenant.read, which this key lacks, so even
    // a plain member is above it; a key holding the member permissions may manage members.
    const wider = await seedApiKey(db, {
      tenantId: org.id,
      scopes: ['users.read', 'users.manage', 'tenant.read', 'members.read', 'usage.read', 'subscription.read'],
    });
    const byWider = (body: unknown) =>
      fetch(`${server.url}/v1/users/${user.id}`, {
        method: 'PATCH',
        headers: { authorization: wider.authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ organization_slug: org.slug, ...(body as object) }),
      });
    expect((await byWider({ status: 'suspended' })).status).toBe(200);
    // A person's name is nobody's but theirs (and a platform admin's), whatever the key holds.
    const rename = await byWider({ name: 'Renamed by key' });
    expect(rename.status).toBe(403);
    expect(await errorCode(rename)).toBe('user_profile_forbidden');
  });

  it('refuses to demote or suspend the last active org admin (409 last_org_admin); fine once another admin exists', async () => {
    const { org, admin } = await orgWithAdmin();
    for (const body of [{ roleKey: 'org_member' }, { status: 'suspended' }]) {
      const res = await call('PATCH', `/v1/users/${admin.user.id}`, {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, ...body },
      });
      expect(res.status, JSON.stringify(body)).toBe(409);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('last_org_admin');
      expect(error.message).toContain('last active org admin');
    }
    // A suspended org_admin does not count as the one who stays.
    const dormant = await member(org.slug, admin.cookie, 'org_admin');
    await server.services.db
      .update(memberships)
      .set({ status: 'suspended' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, dormant.id)));
    const still = await call('PATCH', `/v1/users/${admin.user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'org_member' },
    });
    expect(still.status).toBe(409);

    await member(org.slug, admin.cookie, 'org_admin');
    const demoted = await call('PATCH', `/v1/users/${admin.user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, roleKey: 'org_member' },
    });
    expect(demoted.status).toBe(200);
    expect(((await demoted.json()) as TUser).roleKey).toBe('org_member');
  });

  it('two admins demoting each other at once: exactly one succeeds, the organization keeps an admin', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const a = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const b = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const [ra, rb] = await Promise.all([
      call('PATCH', `/v1/users/${b.user.id}`, { cookie: a.cookie, body: { organization_slug: org.slug, roleKey: 'org_member' } }),
      call('PATCH', `/v1/users/${a.user.id}`, { cookie: b.cookie, body: { organization_slug: org.slug, roleKey: 'org_member' } }),
    ]);
    expect([ra.status, rb.status].sort()).toEqual([200, 409]);
    const admins = await db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.roleKey, 'org_admin')));
    expect(admins).toHaveLength(1);
  });

  it('suspending suspends the membership only: sessions acting here move out at once; sign-in and other organizations stay', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const elsewhere = await orgWithAdmin();
    const person = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    await db.insert(memberships).values({ tenantId: elsewhere.org.id, userId: person.user.id, roleKey: 'org_member' });
    expect((await call('GET', `/v1/tenants/${org.id}`, { cookie: person.cookie })).status).toBe(200);

    const res = await call('PATCH', `/v1/users/${person.user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, status: 'suspended' },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as TUser).status).toBe('suspended');
    const me = await call('GET', '/v1/me', { cookie: person.cookie });
    expect(me.status).toBe(200);
    const body = (await me.json()) as { activeWorkspace: { id: string } | null; memberships: { organization: { id: string } }[] };
    expect(body.memberships.map((m) => m.organization.id)).not.toContain(org.id);
    expect(body.memberships.map((m) => m.organization.id)).toContain(elsewhere.org.id);
    expect(body.activeWorkspace?.id).not.toBe(org.id);
    for (const path of [`/v1/tenants/${org.id}`, `/v1/users?organization_slug=${org.slug}`]) {
      expect((await call('GET', path, { cookie: person.cookie })).status, path).toBe(404);
    }
    expect((await call('GET', `/v1/tenants/${elsewhere.org.id}`, { cookie: person.cookie })).status).toBe(200);
    const [account] = await db.select().from(users).where(eq(users.id, person.user.id));
    expect(account?.status).toBe('active');
    const [entry] = await auditEntries(org.id, 'user.updated');
    expect(entry?.summary).toEqual({ changes: { status: { from: 'active', to: 'suspended' } }, sessionsMoved: 1 });

    const back = await call('PATCH', `/v1/users/${person.user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, status: 'active' },
    });
    expect(((await back.json()) as TUser).status).toBe('active');
    expect((await call('GET', `/v1/tenants/${org.id}`, { cookie: person.cookie })).status).toBe(200);
  });

  it("a platform admin suspends a person's account (accountStatus): every session ends, sign-in is refused; renames them", async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const user = await member(org.slug, admin.cookie);
    const [account] = await engineUsersByEmail(user.email);
    const identity = { subject: account?.uid ?? '', email: user.email, emailVerified: false, name: 'Sue', groups: [] };
    const outcome = await signInFromEngine(db, identity, { platformAdminGroup: 'platform-admins' });
    expect(outcome.user.id).toBe(user.id);
    const cookies: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { token } = await createSession(db, SESSION, { userId: user.id, activeTenantId: org.id, isPlatformAdmin: false });
      cookies.push(`svc_session=${token}`);
    }
    for (const cookie of cookies) {
      expect((await call('GET', '/v1/me', { cookie })).status).toBe(200);
    }
    const refused = await call('PATCH', `/v1/users/${user.id}`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, accountStatus: 'suspended' },
    });
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe('user_profile_forbidden');

    const platform = await seedSignedIn(db, { platformAdmin: true });
    const res = await call('PATCH', `/v1/users/${user.id}`, {
      cookie: platform.cookie,
      body: { organization_slug: org.slug, accountStatus: 'suspended', name: 'Sue Renamed' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'active', name: 'Sue Renamed' });
    for (const cookie of cookies) {
      const me = await call('GET', '/v1/me', { cookie });
      expect(me.status).toBe(401);
      expect(await errorCode(me)).toBe('unauthenticated');
    }
    const rows = await db.select().from(sessions).where(eq(sessions.userId, user.id));
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.revokedAt !== null)).toBe(true);
    const [entry] = await auditEntries(org.id, 'user.updated');
    expect(entry?.summary).toEqual({
      changes: { name: { from: 'Sue', to: 'Sue Renamed' }, accountStatus: { from: 'active', to: 'suspended' } },
      sessionsEnded: 2,
    });
    await expect(signInFromEngine(db, identity, { platformAdminGroup: 'platform-admins' })).rejects.toMatchObject({
      code: 'user_suspended',
    });

    // Reactivated: they may sign in again; the ended sessions stay ended.
    const back = await call('PATCH', `/v1/users/${user.id}`, {
      cookie: platform.cookie,
      body: { organization_slug: org.slug, accountStatus: 'active' },
    });
    expect(back.status).toBe(200);
    expect((await call('GET', '/v1/me', { cookie: cookies[0] })).status).toBe(401);
    expect((await signInFromEngine(db, identity, { platformAdminGroup: 'platform-admins' })).user.id).toBe(user.id);
  });
});

describe('DELETE /v1/users/{id}', () => {
  it('removes the membership only: one member.removed entry and event; the person and their other organizations stay; their session moves out', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const leaver = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect(
      ((await (await call('GET', '/v1/me', { cookie: leaver.cookie })).json()) as { activeWorkspace: { id: string } }).activeWorkspace.id,
    ).toBe(org.id);

    const res = await call('DELETE', `/v1/users/${leaver.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: leaver.user.id, removed: true, sessionsMoved: 1 });

    const left = await db.select().from(memberships).where(eq(memberships.userId, leaver.user.id));
    expect(left.map((m) => m.tenantId)).toEqual([leaver.ownWorkspace.id]);
    expect(await db.select().from(users).where(eq(users.id, leaver.user.id))).toHaveLength(1);
    const me = await call('GET', '/v1/me', { cookie: leaver.cookie });
    expect(me.status).toBe(200);
    const body = (await me.json()) as { activeWorkspace: { id: string }; memberships: { organization: { id: string } }[] };
    expect(body.activeWorkspace.id).toBe(leaver.ownWorkspace.id);
    expect(body.memberships.map((m) => m.organization.id)).not.toContain(org.id);

    const entries = await auditEntries(org.id, 'member.removed');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actorId: admin.user.id,
      targetId: leaver.user.id,
      summary: { email: leaver.user.email, roleKey: 'org_member' },
    });
    const events =
      (await db.$client`select type, data from webhook_events where tenant_id = ${org.id} and type = 'member.removed'`) as unknown as {
        data: { id: string; object: string };
      }[];
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ object: 'user', id: leaver.user.id });

    // Gone now: a second removal is a 404, like an id from another organization.
    expect(
      await errorCode(await call('DELETE', `/v1/users/${leaver.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie })),
    ).toBe('not_found');
    const stranger = await orgWithAdmin();
    const res404 = await call('DELETE', `/v1/users/${stranger.admin.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res404.status).toBe(404);
    expect(await db.select().from(memberships).where(eq(memberships.userId, stranger.admin.user.id))).not.toHaveLength(0);
  });

  it('refuses the last active org admin (409 last_org_admin), and lets an admin leave once another admin exists', async () => {
    const db = server.services.db;
    const { org, admin } = await orgWithAdmin();
    const refused = await call('DELETE', `/v1/users/${admin.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(refused.status).toBe(409);
    expect(await errorCode(refused)).toBe('last_org_admin');
    expect(await auditEntries(org.id, 'member.removed')).toHaveLength(0);

    await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const left = await call('DELETE', `/v1/users/${admin.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(left.status).toBe(200);
    // No longer a member: the same admin's next call on this organization is a 404.
    expect((await call('GET', `/v1/users?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(404);
  });

  it('an API key with users.manage removes a member but not an org admin (above its scopes)', async () => {
    const db = server.services.db;
    const { org } = await orgWithAdmin();
    const otherAdmin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const plain = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    // org_member's permissions plus users.manage: enough to act on a member, not on an admin.
    const key = await seedApiKey(db, {
      tenantId: org.id,
      scopes: ['users.read', 'users.manage', 'tenant.read', 'members.read', 'usage.read', 'subscription.read'],
    });
    const byKey = (id: string) =>
      fetch(`${server.url}/v1/users/${id}?organization_slug=${org.slug}`, {
        method: 'DELETE',
        headers: { authorization: key.authorization },
      });
    const refused = await byKey(otherAdmin.user.id);
    expect(refused.status).toBe(403);
    expect((await refused.json()) as unknown).toMatchObject({ error: { code: 'forbidden' } });
    const removed = await byKey(plain.user.id);
    expect(removed.status, JSON.stringify(await removed.clone().json())).toBe(200);
  });
});
