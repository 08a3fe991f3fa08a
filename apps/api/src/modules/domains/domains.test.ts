import { newId } from '@svc/contracts/ids';
import { addJob } from '@svc/db/jobs';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { organizationDomains } from '@svc/db/schema/domains';
import { memberships } from '@svc/db/schema/identity';
import { roles } from '@svc/db/schema/roles';
import { webhookEvents } from '@svc/db/schema/webhooks';
import type { JobContext } from '@svc/jobs/context';
import { recheckDomains } from '@svc/jobs/tasks/domains-recheck';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { CookieJar } from '../../../../dev-engine/src/cookie-jar.ts';
import { signInFromEngine } from '../identity/service.ts';
import { startDnsServer, type TestDnsServer } from './dns-server.fixtures.ts';
import { seedDomain } from './domains.fixtures.ts';
import { MATRIX } from './domains.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { DNS_RESOLVER: dns.address, DNS_TIMEOUT_MS: '300' } });
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

type Json = Record<string, any>;

async function call(
  method: string,
  path: string,
  opts: { cookie?: string; bearer?: string; body?: unknown } = {},
): Promise<{ status: number; json: Json; text: string }> {
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
  return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text };
}

let seq = 0;
/** A domain name no other test uses. */
const fresh = (label = 'acme') => `${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}.test`;

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function addDomain(cookie: string, slug: string, domain: string) {
  return call('POST', '/v1/domains', { cookie, body: { organization_slug: slug, domain } });
}

/** Publishes the TXT record a domain's answer names, as its owner would at their DNS host. */
function publish(answer: Json): void {
  dns.records.set(answer.verification.name, [answer.verification.value]);
}

async function eventsOf(tenantId: string, type: string) {
  return server.services.db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.tenantId, tenantId), eq(webhookEvents.type, type)));
}

async function auditOf(targetId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.targetId, targetId), eq(auditLogs.action, action)));
}

async function rowsOf(tenantId: string) {
  return server.services.db.select().from(organizationDomains).where(eq(organizationDomains.tenantId, tenantId));
}

/** A verified domain of a fresh organization, through the real routes. */
async function verifiedDomain(label = 'acme') {
  const { db, org, admin } = await adminOf();
  const created = await addDomain(admin.cookie, org.slug, fresh(label));
  expect(created.status, created.text).toBe(201);
  publish(created.json);
  const verified = await call('POST', `/v1/domains/${created.json.id}/verify`, { cookie: admin.cookie });
  expect(verified.json.status, verified.text).toBe('verified');
  return { db, org, admin, domain: verified.json };
}

describeAuthMatrix('domains', () => server, MATRIX);

describe('POST /v1/domains', () => {
  it('stores the normalized name, pending, and names the TXT record; audited and announced as domain.created', async () => {
    const { org, admin } = await adminOf();
    const name = fresh();
    const res = await addDomain(admin.cookie, org.slug, `  ${name.toUpperCase()}. `);
    expect(res.status, res.text).toBe(201);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^dom_[0-9A-Za-z]{20}$/),
      domain: name,
      status: 'pending',
      verification: {
        type: 'TXT',
        name: `_svc-verification.${name}`,
        value: expect.stringMatching(/^svc-domain-verification=[0-9A-Za-z]{32}$/),
      },
      verifiedAt: null,
      lastCheckedAt: null,
      lastCheckError: null,
      policy: 'none',
      autoJoinRoleKey: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(await auditOf(res.json.id, 'domain.created')).toHaveLength(1);
    const [event] = await eventsOf(org.id, 'domain.created');
    expect(event?.data).toMatchObject({ domain: name, object: 'domain', id: res.json.id, organizationId: org.id });

    const listed = await call('GET', `/v1/domains?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(listed.json).toEqual({ data: [res.json], nextCursor: null });
    const got = await call('GET', `/v1/domains/${res.json.id}`, { cookie: admin.cookie });
    expect(got.json).toEqual(res.json);
  });

  it('turns an internationalized name into punycode; every spelling of one domain is the same domain (409 domain_already_added)', async () => {
    const { org, admin } = await adminOf();
    const label = `bücher${++seq}`;
    const created = await addDomain(admin.cookie, org.slug, `${label}.Example`);
    expect(created.status, created.text).toBe(201);
    const ascii = new URL(`http://${label}.example`).hostname;
    expect(ascii.startsWith('xn--')).toBe(true);
    expect(created.json.domain).toBe(ascii);
    for (const spelling of [ascii, `${ascii.toUpperCase()}.`, `${label.toUpperCase()}.EXAMPLE`, ` ${label}.example. `]) {
      const again = await addDomain(admin.cookie, org.slug, spelling);
      expect(again.status, spelling).toBe(409);
      expect(again.json.error.code).toBe('domain_already_added');
    }
    expect(await rowsOf(org.id)).toHaveLength(1);
  });

  it.each([
    ['', 'validation_failed'],
    ['   ', 'domain_invalid'],
    ['acme', 'domain_invalid'],
    ['com', 'domain_invalid'],
    ['co.uk', 'domain_public_suffix'],
    ['CO.UK.', 'domain_public_suffix'],
    ['github.io', 'domain_public_suffix'],
    ['192.168.1.10', 'domain_invalid'],
    ['0x7f.1', 'domain_invalid'],
    ['2130706433', 'domain_invalid'],
    ['[::1]', 'domain_invalid'],
    ['::1', 'domain_invalid'],
    ['http://acme.com', 'domain_invalid'],
    ['acme.com/path', 'domain_invalid'],
    ['acme.com:443', 'domain_invalid'],
    ['user@acme.com', 'domain_invalid'],
    ['*.acme.com', 'domain_invalid'],
    ['ac me.com', 'domain_invalid'],
    ['acme..com', 'domain_invalid'],
    ['.acme.com', 'domain_invalid'],
    ['-acme.com', 'domain_invalid'],
    ['acme-.com', 'domain_invalid'],
    ['acme_x.com', 'domain_invalid'],
    ['acme.123', 'domain_invalid'],
    [`${'a'.repeat(64)}.com`, 'domain_invalid'],
    [`${Array.from({ length: 60 }, () => 'abcd').join('.')}.com`, 'domain_invalid'],
    ['x'.repeat(1001), 'validation_failed'],
  ])('refuses %j with 400 %s and stores nothing', async (input, code) => {
    const { org, admin } = await adminOf();
    const res = await addDomain(admin.cookie, org.slug, input);
    expect(res.status, res.text).toBe(400);
    expect(res.json.error.code).toBe(code);
    expect(await rowsOf(org.id)).toEqual([]);
    expect(await eventsOf(org.id, 'domain.created')).toEqual([]);
  });

  it('a 253-character name is accepted, one more is refused', async () => {
    const { org, admin } = await adminOf();
    const name = [`${seq++}`.padEnd(63, 'a'), 'a'.repeat(63), 'a'.repeat(63), 'b'.repeat(57), 'com'].join('.');
    expect(name).toHaveLength(253);
    const ok = await addDomain(admin.cookie, org.slug, name);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.domain).toBe(name);
    const tooLong = await addDomain(admin.cookie, org.slug, `b.${name}`);
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error.code).toBe('domain_invalid');
  });
});

describe('POST /v1/domains/{id}/verify', () => {
  it('pending while the record is missing; verified once the TXT record is published (domain.verified once)', async () => {
    const { org, admin } = await adminOf();
    const created = await addDomain(admin.cookie, org.slug, fresh());
    const id = created.json.id as string;
    const missing = await call('POST', `/v1/domains/${id}/verify`, { cookie: admin.cookie });
    expect(missing.status, missing.text).toBe(200);
    expect(missing.json).toMatchObject({ status: 'pending', lastCheckError: 'record_not_found', verifiedAt: null });
    expect(missing.json.lastCheckedAt).toEqual(expect.any(String));
    expect(dns.asked).toContain(created.json.verification.name);

    publish(created.json);
    const verified = await call('POST', `/v1/domains/${id}/verify`, { cookie: admin.cookie });
    expect(verified.json).toMatchObject({ status: 'verified', lastCheckError: null });
    const again = await call('POST', `/v1/domains/${id}/verify`, { cookie: admin.cookie });
    expect(again.json.verifiedAt).toBe(verified.json.verifiedAt);
    expect(await eventsOf(org.id, 'domain.verified')).toHaveLength(1);
    expect(await auditOf(id, 'domain.verified')).toHaveLength(1);
  });

  it('the TXT record of another organization’s token does not verify: token_mismatch', async () => {
    const name = fresh();
    const a = await adminOf();
    const b = await adminOf();
    const ofA = await addDomain(a.admin.cookie, a.org.slug, name);
    const ofB = await addDomain(b.admin.cookie, b.org.slug, name);
    expect(ofB.status, ofB.text).toBe(201);
    expect(ofB.json.verification.value).not.toBe(ofA.json.verification.value);
    publish(ofA.json);
    const res = await call('POST', `/v1/domains/${ofB.json.id}/verify`, { cookie: b.admin.cookie });
    expect(res.json).toMatchObject({ status: 'pending', lastCheckError: 'token_mismatch' });
    expect(await eventsOf(b.org.id, 'domain.verified')).toEqual([]);
  });

  it('a domain verified elsewhere: 409 domain_verified_elsewhere, to add or to verify, in any spelling', async () => {
    const name = fresh();
    const a = await adminOf();
    const b = await adminOf();
    const ofB = await addDomain(b.admin.cookie, b.org.slug, name);
    const ofA = await addDomain(a.admin.cookie, a.org.slug, name);
    publish(ofA.json);
    expect((await call('POST', `/v1/domains/${ofA.json.id}/verify`, { cookie: a.admin.cookie })).json.status).toBe('verified');
    // B publishes its own token too: still refused, A holds the domain.
    dns.records.set(ofB.json.verification.name, [ofA.json.verification.value, ofB.json.verification.value]);
    const refused = await call('POST', `/v1/domains/${ofB.json.id}/verify`, { cookie: b.admin.cookie });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.error.code).toBe('domain_verified_elsewhere');
    expect((await rowsOf(b.org.id))[0]?.verifiedAt).toBeNull();

    const c = await adminOf();
    for (const spelling of [name, `${name.toUpperCase()}.`, ` ${name} `]) {
      const added = await addDomain(c.admin.cookie, c.org.slug, spelling);
      expect(added.status, spelling).toBe(409);
      expect(added.json.error.code).toBe('domain_verified_elsewhere');
    }
    expect(await rowsOf(c.org.id)).toEqual([]);

    // A deletes it: the name is free, and B's record now verifies it.
    expect((await call('DELETE', `/v1/domains/${ofA.json.id}`, { cookie: a.admin.cookie })).status).toBe(200);
    const now = await call('POST', `/v1/domains/${ofB.json.id}/verify`, { cookie: b.admin.cookie });
    expect(now.json.status).toBe('verified');
  });

  it('two organizations verifying one domain at the same moment: exactly one wins, the other gets 409', async () => {
    const name = fresh('race');
    const a = await adminOf();
    const b = await adminOf();
    const ofA = await addDomain(a.admin.cookie, a.org.slug, name);
    const ofB = await addDomain(b.admin.cookie, b.org.slug, name);
    dns.records.set(ofA.json.verification.name, [ofA.json.verification.value, ofB.json.verification.value]);
    const answers = await Promise.all([
      call('POST', `/v1/domains/${ofA.json.id}/verify`, { cookie: a.admin.cookie }),
      call('POST', `/v1/domains/${ofB.json.id}/verify`, { cookie: b.admin.cookie }),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(answers.find((r) => r.status === 409)?.json.error.code).toBe('domain_verified_elsewhere');
    const verified = await server.services.db.select().from(organizationDomains).where(eq(organizationDomains.domain, name));
    expect(verified.filter((r) => r.verifiedAt !== null)).toHaveLength(1);
  });

  it('the database holds one verified row per name whatever the service does (partial unique index)', async () => {
    const db = server.services.db;
    const name = fresh();
    const one = await seedOrganization(db);
    const two = await seedOrganization(db);
    await seedDomain(db, { tenantId: one.id, domain: name, verified: true });
    await seedDomain(db, { tenantId: two.id, domain: name, verified: false });
    await expect(seedDomain(db, { tenantId: (await seedOrganization(db)).id, domain: name, verified: true })).rejects.toThrow();
  });

  it('a resolver that does not answer is dns_timeout, never a 500; a verified domain stays verified', async () => {
    const { domain, admin } = await verifiedDomain();
    dns.silent.add(domain.verification.name);
    try {
      const res = await call('POST', `/v1/domains/${domain.id}/verify`, { cookie: admin.cookie });
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({ status: 'verified', lastCheckError: 'dns_timeout' });
    } finally {
      dns.silent.delete(domain.verification.name);
    }
  });

  it('a verified domain whose record is gone becomes pending when checked (domain.unverified)', async () => {
    const { org, domain, admin } = await verifiedDomain();
    dns.records.delete(domain.verification.name);
    const res = await call('POST', `/v1/domains/${domain.id}/verify`, { cookie: admin.cookie });
    expect(res.json).toMatchObject({ status: 'pending', lastCheckError: 'record_not_found', verifiedAt: null });
    const [event] = await eventsOf(org.id, 'domain.unverified');
    expect(event?.data).toMatchObject({ domain: domain.domain, reason: 'record_not_found', actor: { type: 'user' } });
  });
});

describe('who may see and change a domain', () => {
  it("another organization's domain ids are 404 on every route, with or without its own organization_slug", async () => {
    const { domain } = await verifiedDomain();
    const outsider = await adminOf();
    const routes: [string, string, unknown?][] = [
      ['GET', `/v1/domains/${domain.id}`],
      ['PATCH', `/v1/domains/${domain.id}`, { policy: 'none' }],
      ['POST', `/v1/domains/${domain.id}/verify`, {}],
      ['DELETE', `/v1/domains/${domain.id}`],
      ['GET', `/v1/domains/${domain.id}?organization_slug=${outsider.org.slug}`],
      ['PATCH', `/v1/domains/${domain.id}`, { policy: 'none', organization_slug: outsider.org.slug }],
      ['POST', `/v1/domains/${domain.id}/verify?organization_slug=${outsider.org.slug}`, {}],
      ['DELETE', `/v1/domains/${domain.id}?organization_slug=${outsider.org.slug}`],
    ];
    const unknown = await call('GET', `/v1/domains/dom_${'0'.repeat(20)}`, { cookie: outsider.admin.cookie });
    for (const [method, path, body] of routes) {
      const res = await call(method, path, { cookie: outsider.admin.cookie, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.json.error.message).toBe(unknown.json.error.message);
    }
    const key = await seedApiKey(server.services.db, { tenantId: outsider.org.id, scopes: ['domains.read', 'domains.manage'] });
    expect((await call('GET', `/v1/domains/${domain.id}`, { bearer: key.authorization })).status).toBe(404);
    expect((await call('DELETE', `/v1/domains/${domain.id}`, { bearer: key.authorization })).status).toBe(404);
    const [row] = await server.services.db.select().from(organizationDomains).where(eq(organizationDomains.id, domain.id));
    expect(row?.verifiedAt).not.toBeNull();
  });

  it('a member without domains.manage gets 403 and changes nothing; org_member cannot even read', async () => {
    const { db, org, domain } = await verifiedDomain();
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'reader', name: 'Reader', permissions: ['domains.read'] });
    const reader = await seedSignedIn(db, { organization: org, roleKey: 'reader' });
    expect((await call('GET', `/v1/domains/${domain.id}`, { cookie: reader.cookie })).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/v1/domains', { domain: fresh() }],
      ['PATCH', `/v1/domains/${domain.id}`, { policy: 'auto_join', autoJoinRoleKey: 'org_member' }],
      ['POST', `/v1/domains/${domain.id}/verify`, {}],
      ['DELETE', `/v1/domains/${domain.id}`],
    ] as const) {
      const res = await call(method, path, { cookie: reader.cookie, body });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect((await call('GET', `/v1/domains?organization_slug=${org.slug}`, { cookie: member.cookie })).status).toBe(403);
    expect(await rowsOf(org.id)).toHaveLength(1);
    expect((await rowsOf(org.id))[0]?.policy).toBe('none');
  });
});

describe('PATCH /v1/domains/{id}: the policy', () => {
  it('auto_join needs a role of the organization, one the caller could grant; require_sso and none clear the role', async () => {
    const { db, org, admin, domain } = await verifiedDomain();
    const missingRole = await call('PATCH', `/v1/domains/${domain.id}`, { cookie: admin.cookie, body: { policy: 'auto_join' } });
    expect(missingRole.status).toBe(400);
    const unknown = await call('PATCH', `/v1/domains/${domain.id}`, {
      cookie: admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'nobody_has_this' },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe('unknown_role');
    // Another organization's custom role is not a role here.
    const other = await seedOrganization(db);
    await db.insert(roles).values({ id: newId('role'), tenantId: other.id, key: 'elsewhere', name: 'Elsewhere', permissions: [] });
    const foreign = await call('PATCH', `/v1/domains/${domain.id}`, {
      cookie: admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'elsewhere' },
    });
    expect(foreign.json.error?.code).toBe('unknown_role');

    // A key holding domains.manage but not what org_admin holds cannot hand org_admin out.
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['domains.read', 'domains.manage'] });
    const beyond = await call('PATCH', `/v1/domains/${domain.id}`, {
      bearer: key.authorization,
      body: { policy: 'auto_join', autoJoinRoleKey: 'org_admin' },
    });
    expect(beyond.status, beyond.text).toBe(403);
    expect(beyond.json.error.message).toContain('you cannot let people join with a role');

    const set = await call('PATCH', `/v1/domains/${domain.id}`, {
      cookie: admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'org_member' },
    });
    expect(set.json).toMatchObject({ policy: 'auto_join', autoJoinRoleKey: 'org_member' });
    const [event] = await eventsOf(org.id, 'domain.updated');
    expect(event?.data).toMatchObject({ policy: 'auto_join', autoJoinRoleKey: 'org_member', previous: { policy: 'none' } });

    // The platform workspace's members are the engine's group: no auto-join there.
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const platformDomain = await addDomain(platform.cookie, 'platform', fresh('staff'));
    expect(platformDomain.status, platformDomain.text).toBe(201);
    const managed = await call('PATCH', `/v1/domains/${platformDomain.json.id}`, {
      cookie: platform.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'org_member' },
    });
    expect(managed.status, managed.text).toBe(409);
    expect(managed.json.error.code).toBe('platform_workspace_managed');

    const sso = await call('PATCH', `/v1/domains/${domain.id}`, { cookie: admin.cookie, body: { policy: 'require_sso' } });
    expect(sso.json).toMatchObject({ policy: 'require_sso', autoJoinRoleKey: null });
    const roleWithSso = await call('PATCH', `/v1/domains/${domain.id}`, {
      cookie: admin.cookie,
      body: { policy: 'require_sso', autoJoinRoleKey: 'org_member' },
    });
    expect(roleWithSso.status).toBe(400);
    expect(await eventsOf(org.id, 'domain.updated')).toHaveLength(2);
  });
});

describe('auto-join at sign-in', () => {
  let subject = 0;
  const signIn = (email: string, emailVerified = true, groups: string[] = []) =>
    signInFromEngine(
      server.services.db,
      { subject: `auto-join-${++subject}`, email, emailVerified, name: 'Person', groups },
      { platformAdminGroup: 'platform-admins' },
    );

  async function membershipOf(tenantId: string, userId: string) {
    const [row] = await server.services.db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
    return row;
  }

  async function autoJoining(roleKey = 'support') {
    const fixture = await verifiedDomain('corp');
    if (roleKey === 'support') {
      await fixture.db
        .insert(roles)
        .values({ id: newId('role'), tenantId: fixture.org.id, key: 'support', name: 'Support', permissions: ['tenant.read'] });
    }
    const set = await call('PATCH', `/v1/domains/${fixture.domain.id}`, {
      cookie: fixture.admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: roleKey },
    });
    expect(set.status, set.text).toBe(200);
    return fixture;
  }

  it('a verified email of a verified auto_join domain joins with the role, once, audited and announced as member.added', async () => {
    const { org, domain } = await autoJoining();
    const ann = { subject: `ann-${domain.id}`, email: `Ann@${domain.domain.toUpperCase()}`, emailVerified: true, name: 'Ann', groups: [] };
    const outcome = await signInFromEngine(server.services.db, ann, { platformAdminGroup: 'platform-admins' });
    expect(await membershipOf(org.id, outcome.user.id)).toMatchObject({ roleKey: 'support', status: 'active' });
    // A first sign-in lands in the organization, not in a new workspace of its own.
    expect(outcome.workspace.id).toBe(org.id);
    // Signing in again changes nothing.
    await signInFromEngine(server.services.db, ann, { platformAdminGroup: 'platform-admins' });
    expect(await membershipOf(org.id, outcome.user.id)).toMatchObject({ roleKey: 'support', status: 'active' });
    const entries = await auditOf(outcome.user.id, 'member.added');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ tenantId: org.id, actorType: 'system' });
    expect(entries[0]?.summary).toMatchObject({ via: 'domain_auto_join', domainId: domain.id, roleKey: 'support' });
    const events = (await eventsOf(org.id, 'member.added')).filter((e) => e.data.id === outcome.user.id);
    expect(events).toHaveLength(1);
  });

  it('never for an unverified email, a pending domain, another policy, a platform admin, or someone already a member', async () => {
    const { db, org, admin, domain } = await autoJoining('org_member');
    const unverifiedEmail = await signIn(`bob@${domain.domain}`, false);
    expect(await membershipOf(org.id, unverifiedEmail.user.id)).toBeUndefined();

    // Another organization's pending domain with auto_join: nothing.
    const pendingOrg = await adminOf();
    const pendingName = fresh('pending');
    const pending = await addDomain(pendingOrg.admin.cookie, pendingOrg.org.slug, pendingName);
    await call('PATCH', `/v1/domains/${pending.json.id}`, {
      cookie: pendingOrg.admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'org_member' },
    });
    const atPending = await signIn(`carol@${pendingName}`);
    expect(await membershipOf(pendingOrg.org.id, atPending.user.id)).toBeUndefined();

    const platformAdmin = await signIn(`root@${domain.domain}`, true, ['platform-admins']);
    expect(await membershipOf(org.id, platformAdmin.user.id)).toBeUndefined();

    // Joined, then suspended by the organization: signing in again does not bring them back.
    const dave = { subject: `dave-${domain.id}`, email: `dave@${domain.domain}`, emailVerified: true, name: 'Dave', groups: [] };
    const joined = await signInFromEngine(db, dave, { platformAdminGroup: 'platform-admins' });
    expect((await membershipOf(org.id, joined.user.id))?.status).toBe('active');
    await db
      .update(memberships)
      .set({ status: 'suspended' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, joined.user.id)));
    await signInFromEngine(db, dave, { platformAdminGroup: 'platform-admins' });
    expect((await membershipOf(org.id, joined.user.id))?.status).toBe('suspended');
    expect(await auditOf(joined.user.id, 'member.added')).toHaveLength(1);

    await call('PATCH', `/v1/domains/${domain.id}`, { cookie: admin.cookie, body: { policy: 'require_sso' } });
    const underSso = await signIn(`erin@${domain.domain}`);
    expect(await membershipOf(org.id, underSso.user.id)).toBeUndefined();
  });

  it('the auto-join role cannot be deleted while a domain gives it (409 role_in_use); after the policy changes it can', async () => {
    const { org, admin, domain } = await autoJoining('support');
    const [role] = await server.services.db
      .select()
      .from(roles)
      .where(and(eq(roles.tenantId, org.id), eq(roles.key, 'support')));
    const refused = await call('DELETE', `/v1/roles/${role?.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'role_in_use' });
    expect(refused.json.error.message).toContain('auto-join role of 1 domain');
    await call('PATCH', `/v1/domains/${domain.id}`, { cookie: admin.cookie, body: { policy: 'none' } });
    const deleted = await call('DELETE', `/v1/roles/${role?.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(deleted.status, deleted.text).toBe(200);
  });

  it('Unicode, punycode, case and trailing-dot spellings of a verified domain are one domain: to add elsewhere, and at sign-in', async () => {
    const { db, org, admin } = await adminOf();
    const unicode = `bücher-${++seq}.test`;
    const ascii = new URL(`http://${unicode}`).hostname;
    const created = await addDomain(admin.cookie, org.slug, unicode.toUpperCase());
    expect(created.json.domain).toBe(ascii);
    publish(created.json);
    expect((await call('POST', `/v1/domains/${created.json.id}/verify`, { cookie: admin.cookie })).json.status).toBe('verified');
    await call('PATCH', `/v1/domains/${created.json.id}`, {
      cookie: admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'org_member' },
    });

    const other = await adminOf();
    for (const spelling of [ascii, unicode, `${unicode.toUpperCase()}.`, `${ascii}.`]) {
      const res = await addDomain(other.admin.cookie, other.org.slug, spelling);
      expect(res.status, spelling).toBe(409);
      expect(res.json.error.code).toBe('domain_verified_elsewhere');
    }
    for (const email of [`ivy@${unicode.toUpperCase()}`, `jack@${ascii}`]) {
      const outcome = await signIn(email);
      const [row] = await db
        .select()
        .from(memberships)
        .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, outcome.user.id)));
      expect(row?.status, email).toBe('active');
    }
  });

  it('an organization with no seat free skips the join; the sign-in itself goes on', async () => {
    const { org, domain } = await autoJoining('org_member');
    await server.services.sql`update subscriptions set seats = 1 where tenant_id = ${org.id}`;
    const outcome = await signIn(`hank@${domain.domain}`);
    expect(outcome.user.id).toMatch(/^usr_/);
    expect(await membershipOf(org.id, outcome.user.id)).toBeUndefined();
    expect(outcome.workspace.id).not.toBe(org.id);
    await server.services.sql`update subscriptions set seats = 10 where tenant_id = ${org.id}`;
    await signInFromEngine(
      server.services.db,
      { subject: `auto-join-${subject}`, email: `hank@${domain.domain}`, emailVerified: true, name: 'Hank', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    expect((await membershipOf(org.id, outcome.user.id))?.status).toBe('active');
  });

  it('stops once the domain is unverified', async () => {
    const { org, admin, domain } = await autoJoining('org_member');
    const before = await signIn(`gina@${domain.domain}`);
    expect((await membershipOf(org.id, before.user.id))?.status).toBe('active');
    dns.records.delete(domain.verification.name);
    await call('POST', `/v1/domains/${domain.id}/verify`, { cookie: admin.cookie });
    const after = await signIn(`frank@${domain.domain}`);
    expect(await membershipOf(org.id, after.user.id)).toBeUndefined();
  });

  it('a real sign-in through the development engine joins the organization that verified the email domain', async () => {
    const { db, org, admin } = await adminOf();
    const created = await addDomain(admin.cookie, org.slug, 'SVC.local');
    publish(created.json);
    expect((await call('POST', `/v1/domains/${created.json.id}/verify`, { cookie: admin.cookie })).json.status).toBe('verified');
    await call('PATCH', `/v1/domains/${created.json.id}`, {
      cookie: admin.cookie,
      body: { policy: 'auto_join', autoJoinRoleKey: 'org_member' },
    });

    const jar = new CookieJar();
    const atCallback = (location: string) => location.includes('/auth/callback');
    const started = await jar.fetch(`${server.url}/auth/login?login_hint=${encodeURIComponent('user@svc.local')}`);
    const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
    let callback = page.url;
    if (!atCallback(callback)) {
      const submitted = await jar.post(page.url, { email: 'user@svc.local', password: 'user-password' });
      callback = (await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback)).url;
    }
    expect((await jar.fetch(callback)).status).toBe(303);
    const me = await jar.fetch(`${server.url}/v1/me`);
    const body = (await me.json()) as Json;
    expect(body.memberships.map((m: Json) => m.organization.id)).toContain(org.id);
    const [row] = await db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, body.user.id)));
    expect(row).toMatchObject({ roleKey: 'org_member', status: 'active' });
  });
});

describe('domains:recheck (daily)', () => {
  function jobContext(resolver: string): JobContext {
    return {
      db: server.services.db,
      logger: { info: () => {}, error: () => {}, debug: () => {}, warn: () => {} } as unknown as JobContext['logger'],
      dns: { resolver, timeoutMs: 300 },
      stopping: new AbortController().signal,
    } as unknown as JobContext;
  }

  it('a lost record unverifies the domain (domain.unverified by svc); a found one or a silent resolver keeps it verified', async () => {
    const kept = await verifiedDomain();
    const lost = await verifiedDomain();
    const silent = await verifiedDomain();
    dns.records.delete(lost.domain.verification.name);
    dns.silent.add(silent.domain.verification.name);
    try {
      await recheckDomains({}, jobContext(dns.address));
    } finally {
      dns.silent.delete(silent.domain.verification.name);
    }
    const [keptRow] = await rowsOf(kept.org.id);
    const [lostRow] = await rowsOf(lost.org.id);
    const [silentRow] = await rowsOf(silent.org.id);
    expect(keptRow).toMatchObject({ lastCheckError: null });
    expect(keptRow?.verifiedAt).not.toBeNull();
    expect(lostRow).toMatchObject({ verifiedAt: null, lastCheckError: 'record_not_found' });
    expect(silentRow).toMatchObject({ lastCheckError: 'dns_timeout' });
    expect(silentRow?.verifiedAt).not.toBeNull();

    const [event] = await eventsOf(lost.org.id, 'domain.unverified');
    expect(event?.data).toMatchObject({ id: lost.domain.id, domain: lost.domain.domain, actor: { type: 'system', id: null } });
    expect(await eventsOf(kept.org.id, 'domain.unverified')).toEqual([]);
    expect(await auditOf(lost.domain.id, 'domain.unverified')).toHaveLength(1);
    // A re-run (at-least-once) records nothing twice.
    await recheckDomains({}, jobContext(dns.address));
    expect(await eventsOf(lost.org.id, 'domain.unverified')).toHaveLength(1);
  });

  it("runs in svc's own worker, asking DNS_RESOLVER: a record only that server has keeps its domain verified, a gone one unverifies", async () => {
    const kept = await verifiedDomain();
    const lost = await verifiedDomain();
    dns.records.delete(lost.domain.verification.name);
    const withWorker = await startTestServer({
      databaseUrl: server.databaseUrl,
      env: { WORKER_ENABLED: 'true', DNS_RESOLVER: dns.address, DNS_TIMEOUT_MS: '300' },
    });
    try {
      await addJob(withWorker.services.db, 'domains:recheck', {});
      const deadline = Date.now() + 20_000;
      const checkedBefore = new Date(kept.domain.lastCheckedAt).getTime();
      // Until the task has been through both: the kept one checked again, the lost one unverified.
      while (Date.now() < deadline) {
        const [keptNow] = await rowsOf(kept.org.id);
        const [lostNow] = await rowsOf(lost.org.id);
        if ((keptNow?.lastCheckedAt?.getTime() ?? 0) > checkedBefore && lostNow?.verifiedAt === null) {
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const [keptRow] = await rowsOf(kept.org.id);
      expect(keptRow?.lastCheckError).toBeNull();
      expect(keptRow?.verifiedAt).not.toBeNull();
      expect(keptRow?.lastCheckedAt?.getTime()).toBeGreaterThan(checkedBefore);
      expect((await rowsOf(lost.org.id))[0]).toMatchObject({ verifiedAt: null, lastCheckError: 'record_not_found' });
      expect(await eventsOf(lost.org.id, 'domain.unverified')).toHaveLength(1);
    } finally {
      await withWorker.close();
    }
  });

  it('is in the crontab: once a day, every day (packages/jobs tests that the crontab parses)', async () => {
    const { CRONTAB } = await import('@svc/jobs/runner');
    const line = CRONTAB.split('\n').find((l) => l.includes(' domains:recheck'));
    const [min, hour, date, month, dow] = line?.split(/\s+/) ?? [];
    expect([date, month, dow]).toEqual(['*', '*', '*']);
    expect(min).toMatch(/^\d{1,2}$/);
    expect(hour).toMatch(/^\d{1,2}$/);
  });
});
