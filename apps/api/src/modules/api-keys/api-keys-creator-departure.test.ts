import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships } from '@svc/db/schema/identity';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { signInFromEngine } from '../identity/service.ts';
import { createSession } from '../session-store/service.ts';

/**
 * A tenant API key is bounded by its creator on every request, so a key whose creator was removed
 * or suspended is void. Void must stay void: the key is revoked when its creator's standing ends,
 * so re-inviting or reactivating the person never brings it back, and the key list says so at once.
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

type Json = Record<string, any>;
type Auth = { cookie: string } | { authorization: string };

async function call(method: string, path: string, opts: { auth?: Auth; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.auth ?? {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : method !== 'GET' && method !== 'DELETE' ? '{}' : undefined,
  });
  const text = await res.text();
  return { status: res.status, text, json: (text ? JSON.parse(text) : {}) as Json };
}

/** An account at the (dev) engine, as a person who signed up there has one. */
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

type Person = SignedIn & { subject: string; signInAgain: (groups?: string[]) => Promise<void> };

/**
 * A person with an engine account who signed in with their email verified (in the platform admin
 * group when `platformAdmin`): whom POST /v1/users finds again when an organization re-invites them.
 */
async function person(opts: { platformAdmin?: boolean } = {}): Promise<Person> {
  const db = server.services.db;
  const email = `person-${unique()}@example.com`;
  const name = `Person ${unique()}`;
  const subject = await engineAccount(email, name);
  const identity = { subject, email, emailVerified: true, name };
  const outcome = await signInFromEngine(db, { ...identity, groups: opts.platformAdmin ? ['platform-admins'] : [] }, GROUP);
  const { token, session } = await createSession(db, SESSION, {
    userId: outcome.user.id,
    activeTenantId: outcome.workspace.id,
    isPlatformAdmin: outcome.isPlatformAdmin,
  });
  const workspace = { id: outcome.workspace.id, slug: outcome.workspace.slug, name: outcome.workspace.name, kind: outcome.workspace.kind };
  return {
    user: { id: outcome.user.id, email, name },
    organization: workspace,
    ownWorkspace: workspace,
    token,
    cookie: `svc_session=${token}`,
    sessionId: session.id,
    subject,
    signInAgain: async (groups = []) => {
      await signInFromEngine(db, { ...identity, groups }, GROUP);
    },
  };
}

/** An organization and its signed-in org admin. */
async function orgWithAdmin() {
  const org = await seedOrganization(server.services.db);
  const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
  return { org, admin, asAdmin: { cookie: admin.cookie } };
}

/** `who` joins `org` the consent way: the org admin adds them, they accept. */
async function join(org: { id: string; slug: string }, asAdmin: Auth, who: Person, roleKey = 'org_admin') {
  const added = await call('POST', '/v1/users', { auth: asAdmin, body: { organization_slug: org.slug, email: who.user.email, roleKey } });
  expect(added.status, added.text).toBe(201);
  expect(added.json.id).toBe(who.user.id);
  const accepted = await call('POST', `/v1/me/memberships/${org.id}/accept`, { auth: { cookie: who.cookie } });
  expect(accepted.status, accepted.text).toBe(200);
}

/** A key `who` mints over the API, in `orgId`. */
async function mintKey(who: { cookie: string }, orgId: string) {
  const res = await call('POST', `/v1/tenants/${orgId}/api-keys`, {
    auth: { cookie: who.cookie },
    body: { name: `key ${unique()}`, scopes: ['tenant.read'] },
  });
  expect(res.status, res.text).toBe(201);
  return { id: res.json.apiKey.id as string, bearer: { authorization: `Bearer ${res.json.secretKey}` } };
}

const useKey = (key: { bearer: Auth }, orgId: string) => call('GET', `/v1/tenants/${orgId}`, { auth: key.bearer });

/** The key as its organization's key list shows it. */
async function listed(asAdmin: Auth, orgId: string, keyId: string): Promise<Json | undefined> {
  const res = await call('GET', `/v1/tenants/${orgId}/api-keys`, { auth: asAdmin });
  expect(res.status, res.text).toBe(200);
  return (res.json.data as Json[]).find((k) => k.id === keyId);
}

/** The key is refused at use, listed revoked, and its revocation was audited and announced exactly once. */
async function expectRevoked(key: { id: string; bearer: Auth }, org: { id: string }, asAdmin: Auth, reason: string) {
  const used = await useKey(key, org.id);
  expect(used.status, used.text).toBe(401);
  expect(used.json.error.code).toBe('invalid_secret_key');
  expect(await listed(asAdmin, org.id, key.id)).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
  const entries = await server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.targetId, key.id), eq(auditLogs.action, 'api_key.revoked')));
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({ tenantId: org.id, targetType: 'api_key', summary: expect.objectContaining({ reason }) });
  const events = await server.services.sql<{ data: Json }[]>`
    select data from webhook_events where tenant_id = ${org.id} and type = 'api_key.revoked' and data->>'id' = ${key.id}`;
  expect(events).toHaveLength(1);
  expect(events[0]?.data).toMatchObject({ object: 'api_key', id: key.id, reason });
}

describe('a key whose creator leaves the organization stays void when they come back', () => {
  it('removed, then re-invited and accepted: the key is revoked at the removal (listed so at once) and stays 401', async () => {
    const { org, asAdmin } = await orgWithAdmin();
    const member = await person();
    await join(org, asAdmin, member);
    const key = await mintKey(member, org.id);
    expect((await useKey(key, org.id)).status).toBe(200);
    expect(await listed(asAdmin, org.id, key.id)).toMatchObject({ status: 'active' });

    const removed = await call('DELETE', `/v1/users/${member.user.id}?organization_slug=${org.slug}`, { auth: asAdmin });
    expect(removed.status, removed.text).toBe(200);
    await expectRevoked(key, org, asAdmin, 'membership_removed');

    await join(org, asAdmin, member);
    expect((await useKey(key, org.id)).status).toBe(401);
    expect(await listed(asAdmin, org.id, key.id)).toMatchObject({ status: 'revoked' });
    // What the person creates after coming back works: only the old keys stay void.
    const fresh = await mintKey(member, org.id);
    expect((await useKey(fresh, org.id)).status).toBe(200);
  });

  it('suspended in the organization, then reactivated: revoked at the suspension, still 401 after', async () => {
    const { org, asAdmin } = await orgWithAdmin();
    const member = await person();
    await join(org, asAdmin, member);
    const key = await mintKey(member, org.id);
    // The person's keys elsewhere are theirs to keep: a suspension here says nothing of there.
    const elsewhere = await mintKey(member, member.ownWorkspace.id);
    expect((await useKey(key, org.id)).status).toBe(200);

    const patch = (status: string) =>
      call('PATCH', `/v1/users/${member.user.id}`, { auth: asAdmin, body: { organization_slug: org.slug, status } });
    const suspended = await patch('suspended');
    expect(suspended.status, suspended.text).toBe(200);
    await expectRevoked(key, org, asAdmin, 'membership_suspended');

    const reactivated = await patch('active');
    expect(reactivated.status, reactivated.text).toBe(200);
    expect((await useKey(key, org.id)).status).toBe(401);
    expect(await listed(asAdmin, org.id, key.id)).toMatchObject({ status: 'revoked' });
    expect((await useKey(elsewhere, member.ownWorkspace.id)).status).toBe(200);
  });

  it("a platform admin suspends the person's account: their keys in every organization are revoked, and stay so after reactivation", async () => {
    const { org, asAdmin } = await orgWithAdmin();
    const member = await person();
    await join(org, asAdmin, member);
    const here = await mintKey(member, org.id);
    const own = await mintKey(member, member.ownWorkspace.id);
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const patch = (accountStatus: string) =>
      call('PATCH', `/v1/users/${member.user.id}`, {
        auth: { cookie: platform.cookie },
        body: { organization_slug: org.slug, accountStatus },
      });
    const suspended = await patch('suspended');
    expect(suspended.status, suspended.text).toBe(200);
    await expectRevoked(here, org, asAdmin, 'account_suspended');
    await expectRevoked(own, member.ownWorkspace, { cookie: platform.cookie }, 'account_suspended');

    const reactivated = await patch('active');
    expect(reactivated.status, reactivated.text).toBe(200);
    expect((await useKey(here, org.id)).status).toBe(401);
    expect((await useKey(own, member.ownWorkspace.id)).status).toBe(401);
  });

  it('a platform admin leaves the group: keys they made where they are no member are revoked and stay so when they return', async () => {
    const db = server.services.db;
    const { org, asAdmin } = await orgWithAdmin();
    const staff = await person({ platformAdmin: true });
    // Where they are an active member, the key stays: it is bounded by their role there, as for a demotion.
    const memberOrg = await orgWithAdmin();
    await db.insert(memberships).values({ tenantId: memberOrg.org.id, userId: staff.user.id, roleKey: 'org_member' });
    const outsider = await mintKey(staff, org.id);
    const inPlatform = await mintKey(staff, staff.ownWorkspace.id);
    const asMember = await mintKey(staff, memberOrg.org.id);
    for (const [key, orgId] of [
      [outsider, org.id],
      [inPlatform, staff.ownWorkspace.id],
      [asMember, memberOrg.org.id],
    ] as const) {
      expect((await useKey(key, orgId)).status).toBe(200);
    }

    await staff.signInAgain([]);
    await expectRevoked(outsider, org, asAdmin, 'platform_admin_left');
    const [platformKey] = await server.services.sql<{ revoked_at: Date | null }[]>`
      select revoked_at from api_keys where id = ${inPlatform.id}`;
    expect(platformKey?.revoked_at).not.toBeNull();
    expect((await useKey(asMember, memberOrg.org.id)).status).toBe(200);
    expect(await listed(memberOrg.asAdmin, memberOrg.org.id, asMember.id)).toMatchObject({ status: 'active' });

    await staff.signInAgain(['platform-admins']);
    expect((await useKey(outsider, org.id)).status).toBe(401);
    expect((await useKey(inPlatform, staff.ownWorkspace.id)).status).toBe(401);
    // Leaving the group again revokes nothing where they are a member.
    await staff.signInAgain([]);
    expect((await useKey(asMember, memberOrg.org.id)).status).toBe(200);
  });

  it('a key minted while its creator is being removed is refused, never left behind unrevoked', async () => {
    const { org, asAdmin } = await orgWithAdmin();
    const member = await person();
    await join(org, asAdmin, member);
    const sql = server.services.sql;
    // A removal that has deleted the membership and not committed yet.
    let deleted!: () => void;
    let commit!: () => void;
    const hasDeleted = new Promise<void>((resolve) => {
      deleted = resolve;
    });
    const mayCommit = new Promise<void>((resolve) => {
      commit = resolve;
    });
    const removal = sql.begin(async (tx) => {
      await tx`delete from memberships where tenant_id = ${org.id} and user_id = ${member.user.id}`;
      deleted();
      await mayCommit;
    });
    await hasDeleted;
    const minting = call('POST', `/v1/tenants/${org.id}/api-keys`, {
      auth: { cookie: member.cookie },
      body: { name: 'racing', scopes: ['tenant.read'] },
    });
    // The key's transaction waits for the removal (or, were it not to, finishes first).
    for (let i = 0; i < 100; i++) {
      const [waiting] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
      if ((waiting?.n ?? 0) > 0) {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    commit();
    await removal;
    const minted = await minting;
    expect(minted.status, minted.text).toBe(404);
    expect(minted.json.error.code).toBe('not_found');
    const live = await sql`
      select id from api_keys where tenant_id = ${org.id} and created_by_user_id = ${member.user.id} and revoked_at is null`;
    expect(live).toEqual([]);
  });
});
