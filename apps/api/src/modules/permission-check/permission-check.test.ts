import { newId } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { ZSubscriptionPlanForm } from '@svc/contracts/subscriptions';
import { createDatabase, type Db } from '@svc/db/client';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { apiPermissions, apiResources, productRoles } from '@svc/db/schema/authorization';
import { memberships, users } from '@svc/db/schema/identity';
import { roles } from '@svc/db/schema/roles';
import { sessionApplications } from '@svc/db/schema/sessions';
import { subscriptions } from '@svc/db/schema/subscriptions';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { AccessCache } from './cache.ts';
import { MATRIX } from './permission-check.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let db: Db;
let platform: SignedIn;

beforeAll(async () => {
  // A TTL far beyond any test: only the NOTIFY-driven invalidation can make a change visible.
  server = await startTestServer({ env: { ACCESS_CACHE_TTL_MS: '600000' } });
  db = server.services.db;
  platform = await seedSignedIn(db, { platformAdmin: true });
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;
type Auth = { cookie?: string; authorization?: string };

async function post(path: string, body: unknown, auth: Auth = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(auth.cookie ? { cookie: auth.cookie, origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
      ...(auth.authorization ? { authorization: auth.authorization } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const check = (body: Json, auth: Auth) => post('/v1/permissions/check', body, auth);

async function call(method: string, path: string, auth: Auth, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(auth.cookie ? { cookie: auth.cookie } : {}),
      ...(auth.authorization ? { authorization: auth.authorization } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

let n = 0;
const unique = () => `${++n}${Math.random().toString(36).slice(2, 7)}`;

/** An API resource declaring `actions` as `<prefix>.<action>`; the names returned. */
async function seedProductPermissions(...actions: string[]): Promise<string[]> {
  const prefix = `inv${unique()}`;
  const resourceId = newId('apiResource');
  await db.insert(apiResources).values({ id: resourceId, identifier: `https://${prefix}.example.com`, name: `Invoices ${prefix}` });
  const names = actions.map((a) => `${prefix}.${a}`);
  await db.insert(apiPermissions).values(names.map((name) => ({ id: newId('apiPermission'), resourceId, name })));
  return names;
}

async function seedCustomRole(
  org: OrganizationRow,
  opts: { control?: string[]; product?: string[] },
): Promise<{ id: string; key: string }> {
  const key = `custom_${unique()}`;
  const id = newId('role');
  await db.insert(roles).values({
    id,
    tenantId: org.id,
    key,
    name: `Custom ${key}`,
    permissions: [...(opts.control ?? [])].sort(),
    productPermissions: [...(opts.product ?? [])].sort(),
  });
  return { id, key };
}

async function seedProductRole(permissions: string[]): Promise<string> {
  const key = `product_${unique()}`;
  await db.insert(productRoles).values({ id: newId('productRole'), key, name: `Product ${key}`, permissions: [...permissions].sort() });
  return key;
}

/** An organization with its org admin (who asks, in most tests) and `member` holding `roleKey`. */
async function orgWith(roleKey = 'org_member') {
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  const member = await seedSignedIn(db, { organization: org, roleKey });
  return { org, admin, member };
}

/** Polls `probe` until it gives `want` (a change reaches the cache by NOTIFY), at most a second. */
async function within1s<T>(probe: () => Promise<T>, want: T): Promise<number> {
  const started = Date.now();
  let got: T = await probe();
  while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() - started < 1_000) {
    await new Promise((r) => setTimeout(r, 10));
    got = await probe();
  }
  expect(got).toEqual(want);
  return Date.now() - started;
}

describeAuthMatrix('permission check', () => server, MATRIX);

describe('POST /v1/permissions/check: what a person may do', () => {
  it('a custom role with a product permission: true for it, false for another product permission; the answer names the role', async () => {
    const [create, remove] = await seedProductPermissions('create', 'delete');
    const { org, admin } = await orgWith();
    const role = await seedCustomRole(org, { product: [create as string] });
    const person = await seedSignedIn(db, { organization: org, roleKey: role.key });
    const yes = await check({ organizationId: org.id, userId: person.user.id, permission: create }, { cookie: admin.cookie });
    expect(yes.status, JSON.stringify(yes.body)).toBe(200);
    expect(yes.body).toEqual({ allowed: true, organizationId: org.id, userId: person.user.id, permission: create, role: role.key });
    const no = await check({ organizationId: org.id, userId: person.user.id, permission: remove }, { cookie: admin.cookie });
    expect(no.body).toMatchObject({ allowed: false, role: role.key });
    // A custom role's control-plane list is its own: it holds nothing there.
    const control = await check({ organizationId: org.id, userId: person.user.id, permission: 'members.read' }, { cookie: admin.cookie });
    expect(control.body.allowed).toBe(false);
  });

  it("a product role of the platform: its product permissions, and org_member's control-plane ones, nothing more", async () => {
    const [read, approve] = await seedProductPermissions('read', 'approve');
    const key = await seedProductRole([read as string]);
    const { org, admin, member } = await orgWith(key);
    const ask = (permission: string) => check({ organizationId: org.id, userId: member.user.id, permission }, { cookie: admin.cookie });
    expect((await ask(read as string)).body).toMatchObject({ allowed: true, role: key });
    expect((await ask(approve as string)).body.allowed).toBe(false);
    expect((await ask('members.read')).body.allowed).toBe(true);
    expect((await ask('members.manage')).body.allowed).toBe(false);
    expect((await ask('roles.manage')).body.allowed).toBe(false);
  });

  it("the built-in roles' product rows: what org_admin and org_member carry in the product", async () => {
    const [adminOnly, everyone] = await seedProductPermissions('admin', 'view');
    await db
      .update(productRoles)
      .set({ permissions: [adminOnly as string, everyone as string].sort() })
      .where(eq(productRoles.key, 'org_admin'));
    await db
      .update(productRoles)
      .set({ permissions: [everyone as string] })
      .where(eq(productRoles.key, 'org_member'));
    try {
      const { org, admin, member } = await orgWith('org_member');
      const ask = (who: SignedIn, permission: string) =>
        check({ organizationId: org.id, userId: who.user.id, permission }, { cookie: admin.cookie });
      expect((await ask(admin, adminOnly as string)).body).toMatchObject({ allowed: true, role: 'org_admin' });
      expect((await ask(member, everyone as string)).body).toMatchObject({ allowed: true, role: 'org_member' });
      expect((await ask(member, adminOnly as string)).body.allowed).toBe(false);
    } finally {
      await db.update(productRoles).set({ permissions: [] }).where(eq(productRoles.builtin, true));
    }
  });

  it('an admin-only control-plane permission in a custom role counts only for org_admin; its other permissions count', async () => {
    const { org, admin } = await orgWith();
    const role = await seedCustomRole(org, {
      control: ['webhooks.manage', 'users.manage', 'exports.create', 'roles.manage', 'members.read'],
    });
    const holder = await seedSignedIn(db, { organization: org, roleKey: role.key });
    const ask = (who: SignedIn, permission: string) =>
      check({ organizationId: org.id, userId: who.user.id, permission }, { cookie: admin.cookie });
    for (const permission of ['webhooks.manage', 'users.manage', 'exports.create', 'roles.manage']) {
      expect((await ask(holder, permission)).body, permission).toMatchObject({ allowed: false, role: role.key });
      expect((await ask(admin, permission)).body, permission).toMatchObject({ allowed: true, role: 'org_admin' });
    }
    expect((await ask(holder, 'members.read')).body.allowed).toBe(true);
    // org_admin holds the whole control-plane catalog.
    for (const permission of PERMISSIONS) {
      expect((await ask(admin, permission)).body.allowed, permission).toBe(true);
    }
  });

  it('a removed member is false at once, a suspended membership and a suspended user too, and back when restored', async () => {
    const [create] = await seedProductPermissions('create');
    const { org, admin } = await orgWith();
    const role = await seedCustomRole(org, { product: [create as string] });
    const person = await seedSignedIn(db, { organization: org, roleKey: role.key });
    const ask = async () => {
      const res = await check({ organizationId: org.id, userId: person.user.id, permission: create }, { cookie: admin.cookie });
      return { allowed: res.body.allowed, role: res.body.role };
    };
    // Warm: the answer is cached from here on (the TTL is ten minutes).
    expect(await ask()).toEqual({ allowed: true, role: role.key });
    expect(await ask()).toEqual({ allowed: true, role: role.key });

    await db
      .update(memberships)
      .set({ status: 'suspended' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, person.user.id)));
    await within1s(ask, { allowed: false, role: null });
    await db
      .update(memberships)
      .set({ status: 'active' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, person.user.id)));
    await within1s(ask, { allowed: true, role: role.key });

    await db.update(users).set({ status: 'suspended' }).where(eq(users.id, person.user.id));
    await within1s(ask, { allowed: false, role: null });
    await db.update(users).set({ status: 'active' }).where(eq(users.id, person.user.id));
    await within1s(ask, { allowed: true, role: role.key });

    // Removed through the API, as an org admin does it.
    const removed = await call('DELETE', `/v1/users/${person.user.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(removed.status, JSON.stringify(removed.body)).toBeLessThan(300);
    const ms = await within1s(ask, { allowed: false, role: null });
    expect(ms).toBeLessThan(1_000);
  });

  it("a change of the role's permissions, or of the member's role, shows in the next check", async () => {
    const [create] = await seedProductPermissions('create');
    const { org, admin } = await orgWith();
    const role = await seedCustomRole(org, { control: ['members.read'] });
    const person = await seedSignedIn(db, { organization: org, roleKey: role.key });
    const ask = async (permission: string) =>
      (await check({ organizationId: org.id, userId: person.user.id, permission }, { cookie: admin.cookie })).body.allowed;
    expect(await ask(create as string)).toBe(false);
    expect(await ask('members.read')).toBe(true);
    await db
      .update(roles)
      .set({ productPermissions: [create as string], permissions: [] })
      .where(eq(roles.id, role.id));
    await within1s(() => ask(create as string), true);
    expect(await ask('members.read')).toBe(false);
    const changed = await call(
      'PATCH',
      `/v1/users/${person.user.id}`,
      { cookie: admin.cookie },
      { organization_slug: org.slug, roleKey: 'org_member' },
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await within1s(() => ask(create as string), false);
    expect(await ask('members.read')).toBe(true);
  });

  it('a product permission removed from the catalog is 400 unknown_permission at once; a name in neither catalog too', async () => {
    const [gone] = await seedProductPermissions('gone');
    const { org, admin, member } = await orgWith();
    const ask = (permission: string) => check({ organizationId: org.id, userId: member.user.id, permission }, { cookie: admin.cookie });
    expect((await ask(gone as string)).status).toBe(200);
    await db.delete(apiPermissions).where(eq(apiPermissions.name, gone as string));
    await within1s(async () => (await ask(gone as string)).body.error?.code, 'unknown_permission');
    for (const name of ['no.such-permission', 'Members.Read', 'members.read ', 'tenant.reаd']) {
      const res = await ask(name);
      expect(res.status, name).toBe(400);
      expect(res.body.error.code, name).toBe('unknown_permission');
    }
  });

  it('a platform admin is not special: false where not a member, like anyone; a stranger or an unknown user is false with role null', async () => {
    const { org, admin } = await orgWith();
    const stranger = await seedSignedIn(db);
    for (const userId of [platform.user.id, stranger.user.id, 'usr_00000000000000000000']) {
      const res = await check({ organizationId: org.id, userId, permission: 'tenant.read' }, { cookie: admin.cookie });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ allowed: false, role: null });
    }
  });

  it('an invited (not yet accepted) membership counts for nothing', async () => {
    const { org, admin } = await orgWith();
    const invitee = await seedSignedIn(db);
    await db.insert(memberships).values({ tenantId: org.id, userId: invitee.user.id, roleKey: 'org_admin', status: 'invited' });
    const res = await check({ organizationId: org.id, userId: invitee.user.id, permission: 'tenant.read' }, { cookie: admin.cookie });
    expect(res.body).toMatchObject({ allowed: false, role: null });
  });

  it('refuses malformed requests with 400 validation_failed', async () => {
    const { org, admin } = await orgWith();
    for (const body of [
      { organizationId: org.id, permission: 'tenant.read' },
      { organizationId: org.id, userId: admin.user.id },
      { organizationId: org.id, userId: admin.user.id, permission: 'tenant.read', feature: 'sso' },
      { organizationId: org.id, organization_slug: org.slug, userId: admin.user.id, permission: 'tenant.read' },
      { organizationId: 'not-an-id', userId: admin.user.id, permission: 'tenant.read' },
      { organizationId: org.id, userId: admin.user.id, permission: 'x'.repeat(101) },
      { organizationId: org.id, feature: 'Not A Feature' },
    ]) {
      const res = await check(body, { cookie: admin.cookie });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });
});

describe('POST /v1/permissions/check: who may ask about whom', () => {
  it('a tenant API key: its own organization (by id, slug or neither); another organization is 404, like one that does not exist', async () => {
    const { org, member } = await orgWith();
    const other = await orgWith();
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['members.read'] });
    const auth = { authorization: key.authorization };
    for (const where of [{ organizationId: org.id }, { organization_slug: org.slug }, {}]) {
      const res = await check({ ...where, userId: member.user.id, permission: 'tenant.read' }, auth);
      expect(res.status, JSON.stringify(where)).toBe(200);
      expect(res.body).toMatchObject({ allowed: true, organizationId: org.id, role: 'org_member' });
    }
    const outside = [
      { organizationId: other.org.id },
      { organization_slug: other.org.slug },
      { organizationId: 'ten_00000000000000000000' },
      { organization_slug: 'no-such-organization' },
    ];
    const answers = [];
    for (const where of outside) {
      const res = await check({ ...where, userId: other.member.user.id, permission: 'tenant.read' }, auth);
      expect(res.status, JSON.stringify(where)).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      answers.push(res.body.error.message);
    }
    // The same words whether the organization exists or not.
    expect(new Set(answers).size).toBe(1);
    // Feature checks: the same rule, with subscription.read.
    expect((await check({ organizationId: other.org.id, feature: 'sso' }, auth)).status).toBe(404);
    expect((await check({ feature: 'sso' }, auth)).status).toBe(403);
    const reader = await seedApiKey(db, { tenantId: org.id, scopes: ['subscription.read'] });
    expect((await check({ feature: 'sso' }, { authorization: reader.authorization })).status).toBe(200);
    expect((await check({ userId: member.user.id, permission: 'tenant.read' }, { authorization: reader.authorization })).status).toBe(403);
  });

  it('a signed-in person: an organization they are a member of (any member may ask, as the member list shows the same), elsewhere 404', async () => {
    const { org, member } = await orgWith();
    const other = await orgWith();
    expect(
      (await check({ organizationId: org.id, userId: member.user.id, permission: 'tenant.read' }, { cookie: member.cookie })).status,
    ).toBe(200);
    const res = await check(
      { organizationId: other.org.id, userId: other.member.user.id, permission: 'tenant.read' },
      { cookie: member.cookie },
    );
    expect(res.status).toBe(404);
    // A cross-site form cannot ask with the cookie.
    const forged = await fetch(`${server.url}/v1/permissions/check`, {
      method: 'POST',
      headers: { cookie: member.cookie, 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ organizationId: org.id, userId: member.user.id, permission: 'tenant.read' }),
    });
    expect(forged.status).toBe(403);
    // A platform admin may ask about any organization (the console's platform pages read them all).
    expect(
      (await check({ organizationId: other.org.id, userId: other.member.user.id, permission: 'tenant.read' }, { cookie: platform.cookie }))
        .status,
    ).toBe(200);
  });

  it('anonymous 401; an unknown or revoked key 401; a disabled application 409', async () => {
    const { org, member } = await orgWith();
    const body = { organizationId: org.id, userId: member.user.id, permission: 'tenant.read' };
    expect((await check(body, {})).status).toBe(401);
    expect((await check(body, { authorization: `Bearer sk_live_${'Q'.repeat(40)}` })).body.error.code).toBe('invalid_secret_key');
    expect((await check(body, { authorization: 'Bearer nope' })).status).toBe(401);
    const revoked = await seedApiKey(db, { tenantId: org.id, scopes: ['members.read'], revoked: true });
    expect((await check(body, { authorization: revoked.authorization })).status).toBe(401);
    const disabled = await seedApplication(db, { org: org.slug, status: 'disabled' });
    const res = await check(body, { authorization: `Bearer ${disabled.secretKey}` });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('application_disabled');
  });

  it('an application secret key of a members-only application: its own organization, any person there; every other organization 404', async () => {
    const [create] = await seedProductPermissions('create');
    const { org } = await orgWith();
    const role = await seedCustomRole(org, { product: [create as string] });
    const person = await seedSignedIn(db, { organization: org, roleKey: role.key });
    const app = await seedApplication(db, { org: org.slug, signInAudience: 'members' });
    const auth = { authorization: `Bearer ${app.secretKey}` };
    for (const where of [{}, { organizationId: org.id }, { organization_slug: org.slug }]) {
      const res = await check({ ...where, userId: person.user.id, permission: create }, auth);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ allowed: true, organizationId: org.id, role: role.key });
    }
    expect((await check({ feature: 'sso' }, auth)).status).toBe(200);

    // Another organization the person belongs to, even one they signed in to this application for: 404.
    const other = await seedOrganization(db);
    await db.insert(memberships).values({ tenantId: other.id, userId: person.user.id, roleKey: 'org_admin' });
    await db
      .insert(sessionApplications)
      .values({ sessionId: person.sessionId, applicationId: app.application.id, organizationId: other.id });
    for (const where of [{ organizationId: other.id }, { organization_slug: other.slug }, { organizationId: 'ten_00000000000000000000' }]) {
      const res = await check({ ...where, userId: person.user.id, permission: 'tenant.read' }, auth);
      expect(res.status, JSON.stringify(where)).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await check({ organizationId: other.id, userId: person.user.id, feature: 'sso' }, auth)).status).toBe(404);
  });

  it('an application anyone may sign in to: another organization only about a person who signed in to it for that organization', async () => {
    const [create] = await seedProductPermissions('create');
    // The application belongs to a tenant of its own; the customer organization is someone else's.
    const app = await seedApplication(db, { signInAudience: 'anyone' });
    const auth = { authorization: `Bearer ${app.secretKey}` };
    const customer = await seedOrganization(db);
    const role = await seedCustomRole(customer, { product: [create as string] });
    const signedIn = await seedSignedIn(db, { organization: customer, roleKey: role.key });
    const colleague = await seedSignedIn(db, { organization: customer, roleKey: role.key });
    const elsewhere = await seedOrganization(db);
    await db.insert(memberships).values({ tenantId: elsewhere.id, userId: signedIn.user.id, roleKey: 'org_admin' });
    const ask = (userId: string | undefined, organization: OrganizationRow, extra: Json = { permission: create }) =>
      check({ organizationId: organization.id, ...(userId ? { userId } : {}), ...extra }, auth);

    // Nobody has signed in yet: the key learns nothing, not even that the organization exists.
    expect((await ask(signedIn.user.id, customer)).status).toBe(404);

    await db
      .insert(sessionApplications)
      .values({ sessionId: signedIn.sessionId, applicationId: app.application.id, organizationId: customer.id });
    const yes = await ask(signedIn.user.id, customer);
    expect(yes.status, JSON.stringify(yes.body)).toBe(200);
    expect(yes.body).toMatchObject({ allowed: true, organizationId: customer.id, role: role.key });
    expect((await check({ organization_slug: customer.slug, userId: signedIn.user.id, permission: create }, auth)).status).toBe(200);
    // A feature of that organization, named with the person who signed in for it.
    expect((await ask(signedIn.user.id, customer, { feature: 'sso' })).status).toBe(200);
    expect((await ask(undefined, customer, { feature: 'sso' })).status).toBe(404);

    // A colleague who never signed in to it, and the same person's other organization: 404.
    expect((await ask(colleague.user.id, customer)).status).toBe(404);
    expect((await ask(signedIn.user.id, elsewhere, { permission: 'tenant.read' })).status).toBe(404);

    // Once they leave the organization, the answer is false (their sign-in does not keep them in).
    await db.delete(memberships).where(and(eq(memberships.tenantId, customer.id), eq(memberships.userId, signedIn.user.id)));
    await within1s(async () => (await ask(signedIn.user.id, customer)).body.allowed, false);

    // Another tenant's application, with the same kind of key: nothing about this organization.
    const foreign = await seedApplication(db, { signInAudience: 'anyone' });
    const res = await check(
      { organizationId: customer.id, userId: colleague.user.id, permission: create },
      { authorization: `Bearer ${foreign.secretKey}` },
    );
    expect(res.status).toBe(404);
  });

  it('over /trpc the same procedure answers the same', async () => {
    const { org, member } = await orgWith();
    const app = await seedApplication(db, { org: org.slug });
    const input = encodeURIComponent(JSON.stringify({ userId: member.user.id, permission: 'tenant.read' }));
    const res = await fetch(`${server.url}/trpc/permissions.check?input=${input}`, {
      headers: { authorization: `Bearer ${app.secretKey}` },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Json;
    expect(body.result.data).toMatchObject({ allowed: true, organizationId: org.id, role: 'org_member' });
  });
});

describe('POST /v1/permissions/check: features', () => {
  async function plan(body: Json): Promise<Json> {
    const res = await call(
      'POST',
      '/v1/subscription-plans',
      { cookie: platform.cookie },
      { key: `plan-${unique()}`, name: 'Plan', seatLimit: null, ...body },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }
  async function subscribe(org: OrganizationRow, body: Json) {
    const res = await call('PATCH', `/v1/subscription?organization_slug=${org.slug}`, { cookie: platform.cookie }, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }

  it('the plan includes it and the subscription is active or trialing: true; inactive, cancelled, expired or not included: false', async () => {
    const pro = await plan({ features: ['sso', 'audit_export', 'sso'] });
    expect(pro.features).toEqual(['audit_export', 'sso']);
    const { org, admin } = await orgWith();
    const ask = async (feature: string) => (await check({ organizationId: org.id, feature }, { cookie: admin.cookie })).body;
    // The default plan has no features.
    expect(await ask('sso')).toEqual({
      allowed: false,
      organizationId: org.id,
      feature: 'sso',
      plan: 'free',
      status: 'active',
      remaining: null,
    });
    await subscribe(org, { planKey: pro.key });
    expect(await ask('sso')).toEqual({
      allowed: true,
      organizationId: org.id,
      feature: 'sso',
      plan: pro.key,
      status: 'active',
      remaining: null,
    });
    expect((await ask('scim')).allowed).toBe(false);
    await subscribe(org, { status: 'trialing' });
    expect(await ask('sso')).toMatchObject({ allowed: true, status: 'trialing' });
    for (const status of ['inactive', 'cancelled', 'expired']) {
      await subscribe(org, { status });
      expect(await ask('sso'), status).toMatchObject({ allowed: false, plan: pro.key, status });
    }
  });

  it('plans refuse feature keys that are not lower-case words (400, nothing stored); the console form reads a comma list', async () => {
    for (const features of [
      ['SSO'],
      ['sso '],
      ['1sso'],
      ['s-so'],
      ['ѕso'],
      ['x'.repeat(65)],
      'sso',
      Array.from({ length: 101 }, (_, i) => `f${i}`),
    ]) {
      const res = await call(
        'POST',
        '/v1/subscription-plans',
        { cookie: platform.cookie },
        { key: `bad-${unique()}`, name: 'Bad', seatLimit: null, features },
      );
      expect(res.status, JSON.stringify(features)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    const form = ZSubscriptionPlanForm.safeParse({
      key: 'team',
      name: 'Team',
      seatLimit: '',
      usageLimits: '',
      usageThresholds: '',
      features: ' sso, audit_export\nsso ',
      isDefault: false,
    });
    expect(form.success && form.data.features).toEqual(['audit_export', 'sso']);
    const bad = ZSubscriptionPlanForm.safeParse({
      key: 'team',
      name: 'Team',
      seatLimit: '',
      usageLimits: '',
      usageThresholds: '',
      features: 'SSO',
      isDefault: false,
    });
    expect(bad.success).toBe(false);
  });

  it("a feature that is also a usage-limited event type: usable while this month's quantity is below the limit (remaining > 0)", async () => {
    const metered = await plan({ features: ['api_call'], usageLimits: { api_call: 3 } });
    const { org, admin } = await orgWith();
    await subscribe(org, { planKey: metered.key });
    const app = await seedApplication(db, { org: org.slug });
    const ask = async () => (await check({ organizationId: org.id, feature: 'api_call' }, { cookie: admin.cookie })).body;
    expect(await ask()).toMatchObject({ allowed: true, remaining: 3, plan: metered.key });
    const record = async (quantity: number) => {
      const res = await post(
        '/v1/usage/events',
        { idempotencyKey: `k-${unique()}`, eventType: 'api_call', quantity },
        { authorization: `Bearer ${app.secretKey}` },
      );
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    };
    await record(2);
    // Usage is never cached: the next check counts it.
    expect(await ask()).toMatchObject({ allowed: true, remaining: 1 });
    await record(1);
    expect(await ask()).toEqual({
      allowed: false,
      organizationId: org.id,
      feature: 'api_call',
      plan: metered.key,
      status: 'active',
      remaining: 0,
    });
    await record(5).catch(() => undefined);
    expect(await ask()).toMatchObject({ allowed: false, remaining: 0 });
  });

  it("a plan's features change, or the organization's plan: the next check says so, and each organization on it gets subscription.updated with what changed", async () => {
    const team = await plan({ features: ['sso'] });
    const { org, admin } = await orgWith();
    const second = await seedOrganization(db);
    await subscribe(org, { planKey: team.key });
    await subscribe(second, { planKey: team.key });
    const ask = async (feature: string) => (await check({ organizationId: org.id, feature }, { cookie: admin.cookie })).body.allowed;
    expect(await ask('sso')).toBe(true);
    expect(await ask('scim')).toBe(false);
    const changed = await call(
      'PATCH',
      `/v1/subscription-plans/${team.id}`,
      { cookie: platform.cookie },
      { features: ['scim', 'audit_export'] },
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await within1s(() => ask('scim'), true);
    expect(await ask('sso')).toBe(false);

    const events = await server.services.sql<{ tenant_id: string; data: Json }[]>`
      select tenant_id, data from webhook_events where type = 'subscription.updated' and tenant_id in (${org.id}, ${second.id})
      and data->>'cause' = 'plan_updated'`;
    expect(events.map((e) => e.tenant_id).sort()).toEqual([org.id, second.id].sort());
    expect(events[0]?.data).toMatchObject({
      object: 'subscription',
      cause: 'plan_updated',
      plan: team.key,
      changes: { features: { before: ['sso'], after: ['audit_export', 'scim'], added: ['audit_export', 'scim'], removed: ['sso'] } },
      actor: { type: 'user', id: platform.user.id },
    });

    // Moving the organization to another plan: the event names the features that changed.
    const basic = await plan({ features: ['scim'] });
    await subscribe(org, { planKey: basic.key });
    const [moved] = await server.services.sql<{ data: Json }[]>`
      select data from webhook_events where type = 'subscription.updated' and tenant_id = ${org.id} and data->'changes' ? 'planKey'
      order by created_at desc limit 1`;
    expect(moved?.data.changes).toMatchObject({
      planKey: { before: team.key, after: basic.key },
      features: { before: ['audit_export', 'scim'], after: ['scim'], added: [], removed: ['audit_export'] },
    });
    expect(await ask('audit_export')).toBe(false);
  });

  it('the platform workspace has no subscription: every feature is false, with no plan', async () => {
    const [workspace] = await server.services.sql<{ id: string }[]>`select id from organizations where kind = 'platform'`;
    const res = await check({ organizationId: workspace?.id, feature: 'sso' }, { cookie: platform.cookie });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ allowed: false, organizationId: workspace?.id, feature: 'sso', remaining: null });
    // And a deleted subscription row (never happens to a tenant) is read as none, at once.
    const { org, admin } = await orgWith();
    await db.delete(subscriptions).where(eq(subscriptions.tenantId, org.id));
    const none = await check({ organizationId: org.id, feature: 'sso' }, { cookie: admin.cookie });
    expect(none.body).toEqual({ allowed: false, organizationId: org.id, feature: 'sso', remaining: null });
  });
});

describe('AccessCache', () => {
  /** A cache of its own, listening on a connection of its own (named, so a test can cut it). */
  async function ownCache(maxEntries?: number) {
    const applicationName = `svc-access-test-${unique()}`;
    const pool = createDatabase({ url: server.databaseUrl, max: 2, applicationName });
    const cache = new AccessCache(pool.db, { ttlMs: 600_000, maxEntries });
    await cache.listen(pool.sql);
    const close = async () => {
      await cache.close();
      await pool.close();
    };
    return { cache, applicationName, close };
  }

  it('does not keep a read that raced an invalidation of its user, nor of everything', async () => {
    const { org, member } = await orgWith();
    const { cache, close } = await ownCache();
    try {
      const racing = cache.standing(org.id, member.user.id);
      cache.invalidateUser(member.user.id);
      expect((await racing)?.roleKey).toBe('org_member');
      expect(cache.size).toBe(0);
      const cleared = cache.standing(org.id, member.user.id);
      cache.clear();
      await cleared;
      expect(cache.size).toBe(0);
      await cache.standing(org.id, member.user.id);
      expect(cache.size).toBe(1);
    } finally {
      await close();
    }
  });

  it('holds at most maxEntries, dropping the oldest', async () => {
    const { org, admin, member } = await orgWith();
    const { cache, close } = await ownCache(2);
    try {
      await cache.standing(org.id, admin.user.id);
      await cache.standing(org.id, member.user.id);
      await cache.subscriptionTerms(org.id);
      expect(cache.size).toBe(2);
    } finally {
      await close();
    }
  });

  it('drops everything when its LISTEN connection is re-established (notifications may have been missed)', async () => {
    const { org, member } = await orgWith();
    const { cache, applicationName, close } = await ownCache();
    try {
      await cache.standing(org.id, member.user.id);
      await cache.subscriptionTerms(org.id);
      expect(cache.size).toBe(2);
      const cut = await server.services.sql<{ cut: boolean }[]>`
        select pg_terminate_backend(pid) as cut from pg_stat_activity
        where application_name = ${applicationName} and query ilike 'listen%'`;
      expect(cut.length).toBeGreaterThan(0);
      const deadline = Date.now() + 10_000;
      while (cache.size > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(cache.size).toBe(0);
    } finally {
      await close();
    }
  });

  it("drops a user's entries on u:<id>, everything on * or an unknown payload, only what an organization change names on the application channel", async () => {
    const { org, admin, member } = await orgWith();
    const { cache, close } = await ownCache();
    const settle = async (want: number) => {
      const deadline = Date.now() + 2_000;
      while (cache.size !== want && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(cache.size).toBe(want);
    };
    const warm = async () => {
      await cache.standing(org.id, admin.user.id);
      await cache.standing(org.id, member.user.id);
      await cache.subscriptionTerms(org.id);
      expect(cache.size).toBe(3);
    };
    try {
      await warm();
      await server.services.sql`select pg_notify('svc_access_changed', ${`u:${member.user.id}`})`;
      await settle(2);
      await server.services.sql`select pg_notify('svc_access_changed', '*')`;
      await settle(0);
      await warm();
      await server.services.sql`select pg_notify('svc_access_changed', 'something new')`;
      await settle(0);
      await warm();
      // An application's own change is the application cache's business.
      await server.services.sql`select pg_notify('svc_application_changed', 'app_00000000000000000000')`;
      await new Promise((r) => setTimeout(r, 100));
      expect(cache.size).toBe(3);
      // An organization renamed: its slug may now name another one.
      await server.services.sql`update organizations set name = ${`Renamed ${unique()}`} where id = ${org.id}`;
      await settle(0);
    } finally {
      await close();
    }
  });
});
