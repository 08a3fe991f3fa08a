import { PERMISSIONS } from '@svc/contracts/permissions';
import type { TUser, TUserPage } from '@svc/contracts/users';
import { EXPORT_SECTIONS } from '@svc/db/queries/exports';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { organizations } from '@svc/db/schema/organizations';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { signInFromEngine } from '../identity/service.ts';
import { createSession } from '../session-store/service.ts';

/**
 * People join organizations by their own consent: POST /v1/users adds an `invited` membership the
 * person accepts or declines; until then the organization sees only what it typed. An
 * organization changes the membership (role, status here), never the person, and never a
 * platform admin.
 */
let server: Awaited<ReturnType<typeof startTestServer>>;
let n = 0;
const unique = () => `${++n}-${Math.random().toString(36).slice(2, 8)}`;
const SESSION = { idleMs: 3_600_000, absoluteMs: 7_200_000 };
const GROUP = { platformAdminGroup: 'platform-admins' };

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

type Auth = { cookie: string } | { authorization: string };

async function call(method: string, path: string, opts: { auth?: Auth; body?: unknown; origin?: string } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.auth ?? {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: opts.origin ?? server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : method !== 'GET' && method !== 'DELETE' ? '{}' : undefined,
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const codeOf = (r: { json: Record<string, unknown> }) => (r.json.error as { code?: string } | undefined)?.code;

/** A fresh sign-up, the way anyone on the internet gets one: the org admin of a workspace of their own. */
async function signUp(name = `Attacker ${unique()}`): Promise<SignedIn> {
  return seedSignedIn(server.services.db, { name });
}

/** Creates an account at the (dev) engine's admin API, as a person signing up there would have one. */
async function engineAccount(email: string, name: string): Promise<string> {
  const admin = server.services.config.engine.admin;
  if (!admin) {
    throw new Error('the test server has the dev engine admin API');
  }
  const res = await fetch(new URL('core/users/', admin.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ username: email, email, name }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { uid: string }).uid;
}

type Person = SignedIn & { subject: string };

/**
 * A person with an engine account who signed in with their email verified (the platform admin
 * group when `platformAdmin`): what POST /v1/users finds when an organization types their email.
 */
async function person(opts: { name: string; platformAdmin?: boolean }): Promise<Person> {
  const db = server.services.db;
  const email = `person-${unique()}@example.com`;
  const subject = await engineAccount(email, opts.name);
  const outcome = await signInFromEngine(
    db,
    { subject, email, emailVerified: true, name: opts.name, groups: opts.platformAdmin ? ['platform-admins'] : [] },
    GROUP,
  );
  const { token, session } = await createSession(db, SESSION, {
    userId: outcome.user.id,
    activeTenantId: outcome.workspace.id,
    isPlatformAdmin: outcome.isPlatformAdmin,
  });
  const workspace = { id: outcome.workspace.id, slug: outcome.workspace.slug, name: outcome.workspace.name, kind: outcome.workspace.kind };
  return {
    user: { id: outcome.user.id, email, name: opts.name },
    organization: workspace,
    ownWorkspace: workspace,
    token,
    cookie: `svc_session=${token}`,
    sessionId: session.id,
    subject,
  };
}

/** The members section of an organization's export, as the export build selects it. */
async function exportedMembers(tenantId: string): Promise<Record<string, unknown>[]> {
  const section = EXPORT_SECTIONS.find((x) => x.key === 'members');
  if (!section) {
    throw new Error('no members section in exports');
  }
  const columns = section.fields.map((f) => `${f.sql} as "${f.name}"`).join(', ');
  return server.services.db.$client.unsafe(`select ${columns} from ${section.from} where ${section.tenantColumn} = $1`, [tenantId]);
}

async function membershipOf(tenantId: string, userId: string) {
  const [row] = await server.services.db
    .select()
    .from(memberships)
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
  return row;
}

async function me(cookie: string) {
  const res = await call('GET', '/v1/me', { auth: { cookie } });
  return res as typeof res & {
    json: {
      user: { name: string };
      memberships: { organization: { id: string } }[];
      pendingMemberships: { organization: { id: string; slug: string; name: string }; roleKey: string; invitedAt: string }[];
      activeWorkspace: { id: string } | null;
    };
  };
}

describe('the attack: a fresh sign-up adds the platform admin and tries to lock them out', () => {
  it('never touches the platform admin: they sign in and act as before; the attacker sees only what it typed, as for anyone', async () => {
    const db = server.services.db;
    const platform = await person({ platformAdmin: true, name: 'Paula Platform' });
    const [before] = await db.select().from(users).where(eq(users.id, platform.user.id));
    const attacker = await signUp();
    const slug = attacker.ownWorkspace.slug;
    const asAttacker = { cookie: attacker.cookie };

    const added = await call('POST', '/v1/users', { auth: asAttacker, body: { organization_slug: slug, email: platform.user.email } });
    expect(added.status, added.text).toBe(201);
    const shown = added.json as TUser;
    expect(shown).toMatchObject({
      id: platform.user.id,
      email: platform.user.email,
      name: '',
      emailVerified: false,
      status: 'invited',
      roleKey: 'org_member',
      lastSignInAt: null,
    });
    // Not the account's age either: the membership's.
    expect(shown.createdAt).toBe(shown.joinedAt);
    expect(added.text).not.toContain('Paula Platform');
    const listed = await call('GET', `/v1/users?organization_slug=${slug}`, { auth: asAttacker });
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain('Paula Platform');
    expect((listed.json as TUserPage).data.find((u) => u.id === platform.user.id)).toEqual(shown);
    const members = await call('GET', `/v1/tenants/${attacker.ownWorkspace.id}/members`, { auth: asAttacker });
    expect(members.status).toBe(200);
    expect(members.text).not.toContain('Paula Platform');
    // Nor in an export of the organization: its members section says what the list says.
    const exported = await exportedMembers(attacker.ownWorkspace.id);
    expect(exported.find((m) => m.id === platform.user.id)).toEqual({
      id: platform.user.id,
      email: platform.user.email,
      name: '',
      emailVerified: false,
      status: 'invited',
      roleKey: 'org_member',
      lastSignInAt: null,
      joinedAt: shown.joinedAt,
      createdAt: shown.joinedAt,
    });

    // An invitation: the organization cannot act on the person through it (their name and account
    // are not its, the status is theirs to accept), and it answers as it would for anyone, so it
    // learns nothing of who the person is.
    const attempts: [unknown, number, string][] = [
      [{ status: 'suspended' }, 409, 'membership_pending'],
      [{ name: 'Pwned' }, 403, 'user_profile_forbidden'],
      [{ accountStatus: 'suspended' }, 403, 'user_profile_forbidden'],
    ];
    for (const [body, status, code] of attempts) {
      const res = await call('PATCH', `/v1/users/${platform.user.id}`, {
        auth: asAttacker,
        body: { organization_slug: slug, ...(body as object) },
      });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(codeOf(res)).toBe(code);
    }
    // The role offered is the organization's to choose, as for anyone: it grants nothing until accepted.
    const offered = await call('PATCH', `/v1/users/${platform.user.id}`, {
      auth: asAttacker,
      body: { organization_slug: slug, roleKey: 'org_admin' },
    });
    expect(offered.status, offered.text).toBe(200);
    expect(offered.json).toMatchObject({ status: 'invited', roleKey: 'org_admin', name: '' });

    // The platform admin: untouched, signed in, acting in the platform workspace, and able to sign in again.
    const [after] = await db.select().from(users).where(eq(users.id, platform.user.id));
    expect(after).toMatchObject({ name: 'Paula Platform', status: 'active', email: before?.email, updatedAt: before?.updatedAt });
    const them = await me(platform.cookie);
    expect(them.status).toBe(200);
    expect(them.json.activeWorkspace?.id).toBe(platform.organization.id);
    expect(them.json.pendingMemberships.map((m) => m.organization.id)).toEqual([attacker.ownWorkspace.id]);
    expect((await call('GET', '/v1/tenants', { auth: { cookie: platform.cookie } })).status).toBe(200);
    const again = await signInFromEngine(
      db,
      { subject: platform.subject, email: platform.user.email, emailVerified: true, name: 'Paula Platform', groups: ['platform-admins'] },
      GROUP,
    );
    expect(again.user.id).toBe(platform.user.id);
    expect(again.workspace.kind).toBe('platform');
    // The invitation granted the attacker's workspace nothing of the platform admin.
    expect((await membershipOf(attacker.ownWorkspace.id, platform.user.id))?.status).toBe('invited');

    // Withdrawing it, as for anyone, ends only the invitation.
    const withdrawn = await call('DELETE', `/v1/users/${platform.user.id}?organization_slug=${slug}`, { auth: asAttacker });
    expect(withdrawn.status, withdrawn.text).toBe(200);
    expect(withdrawn.json).toEqual({ id: platform.user.id, removed: true, sessionsMoved: 0 });
    const afterwards = await me(platform.cookie);
    expect(afterwards.status).toBe(200);
    expect(afterwards.json.activeWorkspace?.id).toBe(platform.organization.id);
    expect(afterwards.json.pendingMemberships).toEqual([]);
  });

  it('the same attack with a tenant API key holding users.manage (every scope) gains nothing either', async () => {
    const db = server.services.db;
    const platform = await person({ platformAdmin: true, name: 'Pat Platform' });
    const attacker = await signUp();
    const key = await seedApiKey(db, { tenantId: attacker.ownWorkspace.id, scopes: [...PERMISSIONS] });
    const asKey = { authorization: key.authorization };
    const slug = attacker.ownWorkspace.slug;
    const added = await call('POST', '/v1/users', {
      auth: asKey,
      body: { organization_slug: slug, email: platform.user.email, name: 'Typed' },
    });
    expect(added.status).toBe(201);
    expect(added.json).toMatchObject({ name: 'Typed', status: 'invited', lastSignInAt: null, emailVerified: false });
    expect(added.text).not.toContain('Pat Platform');
    for (const [body, status, code] of [
      [{ status: 'suspended' }, 409, 'membership_pending'],
      [{ name: 'Pwned' }, 403, 'user_profile_forbidden'],
    ] as const) {
      const res = await call('PATCH', `/v1/users/${platform.user.id}`, { auth: asKey, body: { organization_slug: slug, ...body } });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(codeOf(res)).toBe(code);
    }
    const offered = await call('PATCH', `/v1/users/${platform.user.id}`, {
      auth: asKey,
      body: { organization_slug: slug, roleKey: 'org_admin' },
    });
    expect(offered.status, offered.text).toBe(200);
    const withdrawn = await call('DELETE', `/v1/users/${platform.user.id}?organization_slug=${slug}`, { auth: asKey });
    expect(withdrawn.status, withdrawn.text).toBe(200);
    expect(await membershipOf(attacker.ownWorkspace.id, platform.user.id)).toBeUndefined();
    const [after] = await db.select().from(users).where(eq(users.id, platform.user.id));
    expect(after).toMatchObject({ name: 'Pat Platform', status: 'active' });
    expect((await me(platform.cookie)).status).toBe(200);
  });
});

describe('a platform admin who is an active member of a tenant', () => {
  it('is suspended, demoted or removed by nobody of the tenant, by cookie or by API key; a platform admin still may', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const platform = await seedSignedIn(db, { platformAdmin: true });
    await db.insert(memberships).values({ tenantId: org.id, userId: platform.user.id, roleKey: 'org_admin' });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    for (const auth of [{ cookie: admin.cookie }, { authorization: key.authorization }]) {
      for (const body of [{ status: 'suspended' }, { roleKey: 'org_member' }]) {
        const res = await call('PATCH', `/v1/users/${platform.user.id}`, { auth, body: { organization_slug: org.slug, ...body } });
        expect(res.status, `${JSON.stringify(auth).slice(2, 8)} ${JSON.stringify(body)}`).toBe(403);
        expect(codeOf(res)).toBe('platform_admin_protected');
      }
      const removed = await call('DELETE', `/v1/users/${platform.user.id}?organization_slug=${org.slug}`, { auth });
      expect(removed.status).toBe(403);
      expect(codeOf(removed)).toBe('platform_admin_protected');
    }
    expect(await membershipOf(org.id, platform.user.id)).toMatchObject({ status: 'active', roleKey: 'org_admin' });
    // Another platform admin may (the engine's group is theirs to manage).
    const other = await seedSignedIn(db, { platformAdmin: true });
    const demoted = await call('PATCH', `/v1/users/${platform.user.id}`, {
      auth: { cookie: other.cookie },
      body: { organization_slug: org.slug, roleKey: 'org_member' },
    });
    expect(demoted.status, demoted.text).toBe(200);
  });

  it("the platform workspace's members follow the engine's group: no add, role, status or removal there (409)", async () => {
    const db = server.services.db;
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const other = await seedSignedIn(db, { platformAdmin: true });
    const slug = platform.organization.slug;
    const auth = { cookie: other.cookie };
    const add = await call('POST', '/v1/users', { auth, body: { organization_slug: slug, email: `p-${unique()}@example.com` } });
    expect(add.status).toBe(409);
    expect(codeOf(add)).toBe('platform_workspace_managed');
    for (const body of [{ status: 'suspended' }, { roleKey: 'org_member' }]) {
      const res = await call('PATCH', `/v1/users/${platform.user.id}`, { auth, body: { organization_slug: slug, ...body } });
      expect(res.status).toBe(409);
      expect(codeOf(res)).toBe('platform_workspace_managed');
    }
    const removed = await call('DELETE', `/v1/users/${platform.user.id}?organization_slug=${slug}`, { auth });
    expect(removed.status).toBe(409);
    expect(codeOf(removed)).toBe('platform_workspace_managed');
    // Nor an invite link into it: accepting one would make a platform admin outside the group.
    const invited = await call('POST', '/v1/invitations', { auth, body: { organization_slug: slug, email: `p-${unique()}@example.com` } });
    expect(invited.status, invited.text).toBe(409);
    expect(codeOf(invited)).toBe('platform_workspace_managed');
    // A tenant admin cannot even see it.
    const tenantAdmin = await signUp();
    const outsider = await call('PATCH', `/v1/users/${platform.user.id}`, {
      auth: { cookie: tenantAdmin.cookie },
      body: { organization_slug: slug, status: 'suspended' },
    });
    expect(outsider.status).toBe(404);
    expect(await membershipOf(platform.organization.id, platform.user.id)).toMatchObject({ status: 'active', roleKey: 'org_admin' });
  });
});

describe('accepting and declining', () => {
  it('a person who signed in before: masked until they accept in GET /v1/me; accepting makes them a member (member.added, event)', async () => {
    const db = server.services.db;
    const victoria = await person({ name: 'Victoria Real' });
    const { org, admin } = await (async () => {
      const o = await seedOrganization(db);
      return { org: o, admin: await seedSignedIn(db, { organization: o, roleKey: 'org_admin' }) };
    })();
    const added = await call('POST', '/v1/users', {
      auth: { cookie: admin.cookie },
      body: { organization_slug: org.slug, email: victoria.user.email, name: 'Vicky', roleKey: 'org_admin' },
    });
    expect(added.status).toBe(201);
    expect(added.json).toMatchObject({ name: 'Vicky', status: 'invited', lastSignInAt: null, emailVerified: false });
    // Nothing is the organization's to change before they accept.
    const suspend = await call('PATCH', `/v1/users/${victoria.user.id}`, {
      auth: { cookie: admin.cookie },
      body: { organization_slug: org.slug, status: 'suspended' },
    });
    expect(suspend.status).toBe(409);
    expect(codeOf(suspend)).toBe('membership_pending');
    // ...and it grants nothing: the person cannot act in the organization yet.
    expect((await call('GET', `/v1/tenants/${org.id}`, { auth: { cookie: victoria.cookie } })).status).toBe(404);
    const switched = await call('POST', '/v1/me/workspace', { auth: { cookie: victoria.cookie }, body: { organization_slug: org.slug } });
    expect(switched.status).toBe(404);

    const pending = await me(victoria.cookie);
    expect(pending.json.memberships.map((m) => m.organization.id)).not.toContain(org.id);
    expect(pending.json.pendingMemberships).toEqual([
      { organization: { id: org.id, slug: org.slug, name: org.name }, roleKey: 'org_admin', invitedAt: expect.any(String) },
    ]);
    const page = await fetch(`${server.url}/user`, { headers: { cookie: victoria.cookie } });
    expect(await page.text()).toContain('account-pending-memberships');

    const accepted = await call('POST', `/v1/me/memberships/${org.id}/accept`, { auth: { cookie: victoria.cookie } });
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.json).toEqual({ organization: { id: org.id, slug: org.slug, name: org.name }, roleKey: 'org_admin', status: 'active' });
    const now = await me(victoria.cookie);
    expect(now.json.memberships.map((m) => m.organization.id)).toContain(org.id);
    expect(now.json.pendingMemberships).toEqual([]);
    expect((await call('GET', `/v1/tenants/${org.id}`, { auth: { cookie: victoria.cookie } })).status).toBe(200);
    const listed = (await call('GET', `/v1/users?organization_slug=${org.slug}&status=active`, { auth: { cookie: admin.cookie } }))
      .json as TUserPage;
    expect(listed.data.find((u) => u.id === victoria.user.id)).toMatchObject({
      name: 'Victoria Real',
      emailVerified: true,
      lastSignInAt: expect.any(String),
    });
    const entries = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'member.added')));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actorId: victoria.user.id,
      targetId: victoria.user.id,
      summary: { roleKey: 'org_admin', via: 'membership_accepted' },
    });
    const events = await db.$client`select type from webhook_events where tenant_id = ${org.id} and type = 'member.added'`;
    expect(events).toHaveLength(1);
    // Once is all: a second accept finds nothing pending.
    const twice = await call('POST', `/v1/me/memberships/${org.id}/accept`, { auth: { cookie: victoria.cookie } });
    expect(twice.status).toBe(404);
  });

  it('declining deletes the invited membership (membership.declined); an active one cannot be declined', async () => {
    const db = server.services.db;
    const victoria = await person({ name: 'Vera' });
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await call('POST', '/v1/users', { auth: { cookie: admin.cookie }, body: { organization_slug: org.slug, email: victoria.user.email } });
    const declined = await call('POST', `/v1/me/memberships/${org.id}/decline`, { auth: { cookie: victoria.cookie } });
    expect(declined.status, declined.text).toBe(200);
    expect(declined.json).toMatchObject({ status: 'declined', roleKey: 'org_member' });
    expect(await membershipOf(org.id, victoria.user.id)).toBeUndefined();
    const [entry] = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'membership.declined')));
    expect(entry).toMatchObject({ actorId: victoria.user.id, targetId: victoria.user.id });
    // Declining is no way to leave an organization one is active in.
    const own = await call('POST', `/v1/me/memberships/${victoria.ownWorkspace.id}/decline`, { auth: { cookie: victoria.cookie } });
    expect(own.status).toBe(404);
    expect(await membershipOf(victoria.ownWorkspace.id, victoria.user.id)).toMatchObject({ status: 'active' });
  });

  it('accepting after the organization was deleted, or the invitation withdrawn, is a 404 that changes nothing', async () => {
    const db = server.services.db;
    const victoria = await person({ name: 'Vera' });
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await call('POST', '/v1/users', { auth: { cookie: admin.cookie }, body: { organization_slug: org.slug, email: victoria.user.email } });
    const withdrawn = await call('DELETE', `/v1/users/${victoria.user.id}?organization_slug=${org.slug}`, {
      auth: { cookie: admin.cookie },
    });
    expect(withdrawn.status, withdrawn.text).toBe(200);
    const [entry] = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'membership.withdrawn')));
    expect(entry?.summary).toMatchObject({ email: victoria.user.email, status: 'invited' });
    const late = await call('POST', `/v1/me/memberships/${org.id}/accept`, { auth: { cookie: victoria.cookie } });
    expect(late.status).toBe(404);
    expect(codeOf(late)).toBe('not_found');
    expect(await membershipOf(org.id, victoria.user.id)).toBeUndefined();

    const gone = await seedOrganization(db);
    const goneAdmin = await seedSignedIn(db, { organization: gone, roleKey: 'org_admin' });
    await call('POST', '/v1/users', {
      auth: { cookie: goneAdmin.cookie },
      body: { organization_slug: gone.slug, email: victoria.user.email },
    });
    expect((await me(victoria.cookie)).json.pendingMemberships.map((m) => m.organization.id)).toContain(gone.id);
    await db.delete(organizations).where(eq(organizations.id, gone.id));
    expect((await me(victoria.cookie)).json.pendingMemberships).toEqual([]);
    for (const action of ['accept', 'decline']) {
      const res = await call('POST', `/v1/me/memberships/${gone.id}/${action}`, { auth: { cookie: victoria.cookie } });
      expect(res.status, action).toBe(404);
    }
    expect(await db.select().from(memberships).where(eq(memberships.tenantId, gone.id))).toEqual([]);
  });

  it('needs the signed-in person: anonymous 401, an API key 403, a cross-site request 403, a malformed id 400', async () => {
    const db = server.services.db;
    const victoria = await person({ name: 'Vera' });
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await call('POST', '/v1/users', { auth: { cookie: admin.cookie }, body: { organization_slug: org.slug, email: victoria.user.email } });
    const key = await seedApiKey(db, { tenantId: org.id, scopes: [...PERMISSIONS] });
    for (const action of ['accept', 'decline']) {
      const path = `/v1/me/memberships/${org.id}/${action}`;
      expect((await call('POST', path)).status).toBe(401);
      expect((await call('POST', path, { auth: { authorization: key.authorization } })).status).toBe(403);
      const csrf = await call('POST', path, { auth: { cookie: victoria.cookie }, origin: 'https://evil.example' });
      expect(csrf.status).toBe(403);
      expect(codeOf(csrf)).toBe('csrf_rejected');
      expect((await call('POST', `/v1/me/memberships/not-an-id/${action}`, { auth: { cookie: victoria.cookie } })).status).toBe(400);
      // Somebody else's pending membership is not theirs to answer.
      expect((await call('POST', path, { auth: { cookie: admin.cookie } })).status).toBe(404);
    }
    expect(await membershipOf(org.id, victoria.user.id)).toMatchObject({ status: 'invited' });
  });
});

describe('both ways of inviting at once', () => {
  it('an invite link accepted by a person the organization also added accepts that membership, with the link role', async () => {
    const db = server.services.db;
    const victoria = await person({ name: 'Lena Link' });
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await call('POST', '/v1/users', { auth: { cookie: admin.cookie }, body: { organization_slug: org.slug, email: victoria.user.email } });
    const link = await call('POST', '/v1/invitations', {
      auth: { cookie: admin.cookie },
      body: { organization_slug: org.slug, email: victoria.user.email, roleKey: 'org_admin' },
    });
    expect(link.status, link.text).toBe(201);
    const accepted = await call('POST', '/v1/invitations/accept', {
      auth: { cookie: victoria.cookie },
      body: { token: link.json.invitationToken },
    });
    expect(accepted.status, accepted.text).toBe(200);
    expect(await membershipOf(org.id, victoria.user.id)).toMatchObject({ status: 'active', roleKey: 'org_admin' });
    expect((await me(victoria.cookie)).json.pendingMemberships).toEqual([]);
    expect((await call('GET', `/v1/users?organization_slug=${org.slug}`, { auth: { cookie: victoria.cookie } })).status).toBe(200);
  });
});

describe('an email svc has never seen', () => {
  it('stays invited through the first sign-in: the person opens a workspace of their own and decides', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const email = `victim-${unique()}@example.com`;
    // A rogue organization pre-provisions someone's email before they ever sign up.
    const added = await call('POST', '/v1/users', {
      auth: { cookie: admin.cookie },
      body: { organization_slug: org.slug, email, roleKey: 'org_admin' },
    });
    expect(added.status).toBe(201);
    const placeholder = added.json as TUser;
    // The engine account svc created for it is the one the person signs in with.
    const admin_ = server.services.config.engine.admin;
    const found = await fetch(new URL(`core/users/?email=${encodeURIComponent(email)}`, admin_?.url ?? ''), {
      headers: { authorization: `Bearer ${admin_?.token}` },
    });
    const [account] = ((await found.json()) as { results: { uid: string }[] }).results;
    const outcome = await signInFromEngine(
      db,
      { subject: account?.uid ?? '', email, emailVerified: true, name: 'Victim', groups: [] },
      GROUP,
    );
    expect(outcome.user.id).toBe(placeholder.id);
    expect(outcome.workspace.id).not.toBe(org.id);
    expect(outcome.workspace.kind).toBe('tenant');
    expect((await membershipOf(org.id, outcome.user.id))?.status).toBe('invited');
    const { token } = await createSession(db, SESSION, {
      userId: outcome.user.id,
      activeTenantId: outcome.workspace.id,
      isPlatformAdmin: false,
    });
    const cookie = `svc_session=${token}`;
    expect((await call('GET', `/v1/tenants/${org.id}`, { auth: { cookie } })).status).toBe(404);
    const tenants = await call('GET', '/v1/tenants', { auth: { cookie } });
    expect(tenants.text).not.toContain(org.id);
    // Still masked to the organization after the sign-in.
    const listed = (await call('GET', `/v1/users?organization_slug=${org.slug}&status=invited`, { auth: { cookie: admin.cookie } }))
      .json as TUserPage;
    expect(listed.data).toEqual([expect.objectContaining({ id: placeholder.id, name: '', lastSignInAt: null, emailVerified: false })]);
    expect((await call('POST', `/v1/me/memberships/${org.id}/accept`, { auth: { cookie } })).status).toBe(200);
    expect((await call('GET', `/v1/tenants/${org.id}`, { auth: { cookie } })).status).toBe(200);
  });
});

describe('an org admin cannot tell a platform admin from anyone else', () => {
  /**
   * Everything an org admin sees of a person it added by email, through every route that shows or
   * acts on that person, with what differs between any two people (ids, emails, times, request
   * ids) replaced by placeholders.
   */
  async function transcript(target: Person): Promise<string[]> {
    const attacker = await signUp();
    const auth = { cookie: attacker.cookie };
    const slug = attacker.ownWorkspace.slug;
    const orgId = attacker.ownWorkspace.id;
    const masked = (text: string) =>
      text
        .replaceAll(target.user.id, '<user>')
        .replaceAll(target.user.email, '<email>')
        .replaceAll(target.sessionId, '<session>')
        .replaceAll(orgId, '<org>')
        .replaceAll(slug, '<slug>')
        .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
        .replace(/"requestId":"[^"]*"/g, '"requestId":"<request>"');
    const lines: string[] = [];
    const note = (label: string, res: { status: number; json: unknown }, body: unknown = res.json) =>
      lines.push(`${label} ${res.status} ${masked(JSON.stringify(body))}`);
    type Listed = { data: { id?: string; userId?: string; user?: { id: string } }[] };
    const theirs = (res: { json: Record<string, unknown> }) =>
      (res.json as Listed).data.filter((x) => x.id === target.user.id || x.userId === target.user.id || x.user?.id === target.user.id);

    const added = await call('POST', '/v1/users', { auth, body: { organization_slug: slug, email: target.user.email, name: 'Typed' } });
    note('create', added);
    // The person may look at the organization meanwhile: a platform admin can open any workspace.
    await call('POST', '/v1/me/workspace', { auth: { cookie: target.cookie }, body: { organization_slug: slug } });

    const users = await call('GET', `/v1/users?organization_slug=${slug}`, { auth });
    note('users', users, theirs(users));
    const invited = await call('GET', `/v1/users?organization_slug=${slug}&status=invited`, { auth });
    note('users invited', invited, theirs(invited));
    const members = await call('GET', `/v1/tenants/${orgId}/members`, { auth });
    note('members', members, theirs(members));
    const sessions = await call('GET', `/v1/sessions?organization_slug=${slug}&state=all`, { auth });
    note('sessions', sessions, theirs(sessions));
    const sessionsOf = await call('GET', `/v1/sessions?organization_slug=${slug}&state=all&user_id=${target.user.id}`, { auth });
    note('sessions of', sessionsOf);
    const overview = await call('GET', `/v1/tenants/${orgId}/overview`, { auth });
    note('overview', overview, (overview.json as { counts?: unknown }).counts);
    const revokeSession = await call('POST', `/v1/sessions/${target.sessionId}/revoke`, { auth, body: { organization_slug: slug } });
    note('revoke session', revokeSession);
    for (const body of [
      { roleKey: 'org_admin' },
      { status: 'suspended' },
      { status: 'active' },
      { name: 'Renamed' },
      { accountStatus: 'suspended' },
      { roleKey: 'org_member' },
    ]) {
      const res = await call('PATCH', `/v1/users/${target.user.id}`, { auth, body: { organization_slug: slug, ...body } });
      note(`patch ${JSON.stringify(body)}`, res);
    }
    const removed = await call('DELETE', `/v1/users/${target.user.id}?organization_slug=${slug}`, { auth });
    note('remove', removed);
    const again = await call('DELETE', `/v1/users/${target.user.id}?organization_slug=${slug}`, { auth });
    note('remove again', again);
    const readded = await call('POST', '/v1/users', { auth, body: { organization_slug: slug, email: target.user.email } });
    note('create again', readded);
    return lines;
  }

  it('every answer about a person added by email is the same whether or not they are a platform admin', async () => {
    const platform = await person({ platformAdmin: true, name: 'Pia Platform' });
    const plain = await person({ name: 'Pete Plain' });
    const [ofPlatform, ofPlain] = [await transcript(platform), await transcript(plain)];
    expect(ofPlatform).toEqual(ofPlain);
    // And the protection is unchanged once a platform admin has accepted a membership.
    expect((await me(platform.cookie)).status).toBe(200);
  });
});
