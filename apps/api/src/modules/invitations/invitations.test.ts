import { createHash } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import { INVITATION_TOKEN_PATTERN } from '@svc/contracts/invitations';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { emailDeliveries } from '@svc/db/schema/email-deliveries';
import { memberships, users } from '@svc/db/schema/identity';
import { invitations } from '@svc/db/schema/invitations';
import { roles } from '@svc/db/schema/roles';
import { sessions } from '@svc/db/schema/sessions';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { type SmtpCapture, startSmtpCapture } from '../../../../../test/support/mail.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { ConfigError, loadConfig } from '../../env.ts';
import { MATRIX } from './invitations.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
/** With email delivery enabled (SMTP to a capture server): invitations queue their email. */
let mailServer: Awaited<ReturnType<typeof startTestServer>>;
let smtp: SmtpCapture;

/** Low enough to reach in a test; every other test uses its own email addresses. */
const SENDS_PER_MINUTE = 3;
const TTL_HOURS = 48;

beforeAll(async () => {
  server = await startTestServer({
    env: { RATE_LIMIT_INVITATIONS_PER_MINUTE: String(SENDS_PER_MINUTE), INVITATION_TTL_HOURS: String(TTL_HOURS) },
  });
  smtp = await startSmtpCapture();
  mailServer = await startTestServer({
    env: { EMAIL_ENABLED: 'true', EMAIL_PROVIDER: 'smtp', SMTP_URL: smtp.url, EMAIL_FROM: 'svc <invites@svc.example>' },
  });
});
afterAll(async () => {
  await server?.close();
  await mailServer?.close();
  await smtp?.close();
});

type Json = Record<string, any>;
type Reply = { status: number; body: Json; text: string; headers: Headers };

async function call(
  method: string,
  path: string,
  opts: { cookie?: string; authorization?: string; body?: unknown; origin?: string | null; on?: typeof server } = {},
): Promise<Reply> {
  const target = opts.on ?? server;
  const origin = opts.origin === undefined ? target.services.config.publicUrl : opts.origin;
  const res = await fetch(`${target.url}${path}`, {
    method,
    redirect: 'manual',
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}),
      ...(method !== 'GET' && origin ? { origin } : {}),
    },
    body: method !== 'GET' ? JSON.stringify(opts.body ?? {}) : undefined,
  });
  const text = await res.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    // HTML pages and redirects.
  }
  return { status: res.status, body, text, headers: res.headers };
}

let counter = 0;
const freshEmail = (label = 'invitee') => `${label}-${++counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

async function adminOfNewOrg(name?: string): Promise<{ org: OrganizationRow; admin: SignedIn }> {
  const db = server.services.db;
  const org = await seedOrganization(db, name ? { name } : {});
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { org, admin };
}

async function invite(admin: SignedIn, org: OrganizationRow, body: Json = {}): Promise<Json> {
  const res = await call('POST', '/v1/invitations', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, email: freshEmail(), ...body },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

function auditOf(tenantId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, action)));
}

function membersOf(tenantId: string, userId: string) {
  return server.services.db
    .select()
    .from(memberships)
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
}

/** Puts an invitation past its expiry (the clock is the database row's, not the test's). */
async function expire(id: string): Promise<void> {
  await server.services.db
    .update(invitations)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(eq(invitations.id, id));
}

describeAuthMatrix('invitations', () => server, MATRIX);

describe('POST /v1/invitations', () => {
  it('answers 201 with the invitation, and the token and link once; only the SHA-256 is stored; one audit entry', async () => {
    const { org, admin } = await adminOfNewOrg();
    const before = Date.now();
    const res = await call('POST', '/v1/invitations', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: '  New.Person@Example.COM ' },
    });
    expect(res.status).toBe(201);
    const { invitation, invitationToken, inviteLink } = res.body;
    expect(invitationToken).toMatch(INVITATION_TOKEN_PATTERN);
    expect(inviteLink).toBe(`${server.services.config.publicUrl}/invitations/accept?token=${invitationToken}`);
    expect(invitation).toMatchObject({
      email: 'new.person@example.com',
      roleKey: 'org_member',
      status: 'pending',
      requireEmailMatch: true,
      invitedByUserId: admin.user.id,
      acceptedAt: null,
      revokedAt: null,
    });
    expect(invitation.id).toMatch(/^inv_[0-9A-Za-z]{20}$/);
    expect(JSON.stringify(invitation)).not.toContain(invitationToken);
    const ttl = Date.parse(invitation.expiresAt) - before;
    expect(ttl).toBeGreaterThan(TTL_HOURS * 3_600_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(TTL_HOURS * 3_600_000 + 60_000);

    const [row] = await server.services.db.select().from(invitations).where(eq(invitations.id, invitation.id));
    expect(row?.tokenHash).toBe(sha256(invitationToken));
    expect(JSON.stringify(row)).not.toContain(invitationToken);

    const entries = await auditOf(org.id, 'invitation.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorId: admin.user.id, targetType: 'invitation', targetId: invitation.id });
    expect(entries[0]?.summary).toMatchObject({ email: 'new.person@example.com', roleKey: 'org_member' });
    const audited = JSON.stringify(entries[0]);
    expect(audited).not.toContain(invitationToken);
    expect(audited).not.toContain(sha256(invitationToken));
  });

  it('validates the role now: system and custom roles pass, an unknown role is 400 unknown_role', async () => {
    const { org, admin } = await adminOfNewOrg();
    await server.services.db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: [] });
    expect((await invite(admin, org, { roleKey: 'org_admin' })).invitation.roleKey).toBe('org_admin');
    expect((await invite(admin, org, { roleKey: 'support', requireEmailMatch: false })).invitation).toMatchObject({
      roleKey: 'support',
      requireEmailMatch: false,
    });
    // Another organization's custom role is not this one's.
    const { org: other } = await adminOfNewOrg();
    await server.services.db.insert(roles).values({ id: newId('role'), tenantId: other.id, key: 'elsewhere', name: 'E', permissions: [] });
    for (const roleKey of ['ghost', 'elsewhere']) {
      const res = await call('POST', '/v1/invitations', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, email: freshEmail(), roleKey },
      });
      expect(res.status, roleKey).toBe(400);
      expect(res.body.error.code).toBe('unknown_role');
    }
    expect(await auditOf(org.id, 'invitation.created')).toHaveLength(2);
  });

  it('refuses malformed emails, role keys and flags with 400', async () => {
    const { org, admin } = await adminOfNewOrg();
    const cases: Json[] = [
      { email: 'not-an-email' },
      { email: 'a@' },
      { email: '' },
      { email: `${'x'.repeat(250)}@example.com` },
      { email: 'two@example.com, three@example.com' },
      { email: undefined },
      { roleKey: 'Org_Admin' },
      { roleKey: '' },
      { requireEmailMatch: 'no' },
      { organization_slug: 'Bad Slug' },
    ];
    for (const patch of cases) {
      const res = await call('POST', '/v1/invitations', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, email: freshEmail(), ...patch },
      });
      expect(res.status, JSON.stringify(patch)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect(await auditOf(org.id, 'invitation.created')).toHaveLength(0);
  });

  it('one pending invitation per email: a second is 409 invitation_already_pending, also when two race; after a revoke a new one is fine', async () => {
    const { org, admin } = await adminOfNewOrg();
    const email = freshEmail('dup');
    const body = { organization_slug: org.slug, email };
    const [a, b] = await Promise.all([
      call('POST', '/v1/invitations', { cookie: admin.cookie, body }),
      call('POST', '/v1/invitations', { cookie: admin.cookie, body }),
    ]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const loser = a.status === 409 ? a : b;
    expect(loser.body.error.code).toBe('invitation_already_pending');
    const winner = a.status === 201 ? a : b;
    // The pending one is named, so the caller can resend or revoke it.
    expect(loser.body.error.invitationId).toBe(winner.body.invitation.id);
    const revoked = await call('POST', `/v1/invitations/${winner.body.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(revoked.status).toBe(200);
    expect((await call('POST', '/v1/invitations', { cookie: admin.cookie, body })).status).toBe(201);
    // Another organization may invite the same person at the same time.
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    expect(
      (await call('POST', '/v1/invitations', { cookie: otherAdmin.cookie, body: { ...body, organization_slug: other.slug } })).status,
    ).toBe(201);
  });

  it('an expired invitation does not block a new one', async () => {
    const { org, admin } = await adminOfNewOrg();
    const email = freshEmail('expired');
    const first = await invite(admin, org, { email });
    await expire(first.invitation.id);
    expect((await invite(admin, org, { email })).invitation.status).toBe('pending');
  });

  it('an API key cannot invite into a role above its own scopes', async () => {
    const { org } = await adminOfNewOrg();
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['invitations.manage', 'tenant.read'] });
    const asAdmin = await call('POST', '/v1/invitations', {
      authorization: key.authorization,
      body: { organization_slug: org.slug, email: freshEmail(), roleKey: 'org_admin' },
    });
    expect(asAdmin.status).toBe(403);
    expect(asAdmin.body.error.code).toBe('forbidden');
    await server.services.db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'reader', name: 'R', permissions: ['tenant.read'] });
    const within = await call('POST', '/v1/invitations', {
      authorization: key.authorization,
      body: { email: freshEmail(), roleKey: 'reader' },
    });
    expect(within.status).toBe(201);
    expect(within.body.invitation.invitedByUserId).toBeNull();
  });

  it(`sends at most ${SENDS_PER_MINUTE} invitations per email per minute, across organizations: then 429 with Retry-After`, async () => {
    const { org, admin } = await adminOfNewOrg();
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    const email = freshEmail('limited');
    for (let i = 0; i < SENDS_PER_MINUTE; i++) {
      const [who, where] = i % 2 === 0 ? [admin, org] : [otherAdmin, other];
      const created = await invite(who, where, { email });
      await call('POST', `/v1/invitations/${created.invitation.id}/revoke`, {
        cookie: who.cookie,
        body: { organization_slug: where.slug },
      });
    }
    const limited = await call('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email } });
    // The minute may have turned between the sends and this one: then the budget is fresh again.
    if (limited.status !== 201) {
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    } else {
      expect(new Date().getSeconds()).toBeLessThan(5);
    }
    // Another address has its own budget.
    expect((await invite(admin, org)).invitation.status).toBe('pending');
  });
});

describe('GET /v1/invitations', () => {
  it('derives every status, filters by it, pages newest first and never shows a token or its hash', async () => {
    const { org, admin } = await adminOfNewOrg();
    const pending = await invite(admin, org);
    const revoked = await invite(admin, org);
    await call('POST', `/v1/invitations/${revoked.invitation.id}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie });
    const expired = await invite(admin, org);
    await expire(expired.invitation.id);
    const acceptedEmail = freshEmail('accepted');
    const accepted = await invite(admin, org, { email: acceptedEmail });
    const invitee = await seedSignedIn(server.services.db, { email: acceptedEmail });
    expect(
      (await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: accepted.invitationToken } })).status,
    ).toBe(200);

    const all = await call('GET', `/v1/invitations?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(all.status).toBe(200);
    expect(all.body.data.map((i: Json) => [i.id, i.status])).toEqual([
      [accepted.invitation.id, 'accepted'],
      [expired.invitation.id, 'expired'],
      [revoked.invitation.id, 'revoked'],
      [pending.invitation.id, 'pending'],
    ]);
    expect(all.body.data[0]).toMatchObject({ acceptedByUserId: invitee.user.id });
    for (const created of [pending, revoked, expired, accepted]) {
      expect(all.text).not.toContain(created.invitationToken);
      expect(all.text).not.toContain(sha256(created.invitationToken));
    }
    expect(all.text).not.toMatch(/token/i);

    for (const [status, expected] of [
      ['pending', pending],
      ['revoked', revoked],
      ['expired', expired],
      ['accepted', accepted],
    ] as const) {
      const filtered = await call('GET', `/v1/invitations?organization_slug=${org.slug}&status=${status}`, { cookie: admin.cookie });
      expect(
        filtered.body.data.map((i: Json) => i.id),
        status,
      ).toEqual([expected.invitation.id]);
    }
    expect((await call('GET', `/v1/invitations?organization_slug=${org.slug}&status=lost`, { cookie: admin.cookie })).status).toBe(400);

    const page1 = await call('GET', `/v1/invitations?organization_slug=${org.slug}&limit=3`, { cookie: admin.cookie });
    expect(page1.body.data).toHaveLength(3);
    const page2 = await call('GET', `/v1/invitations?organization_slug=${org.slug}&limit=3&cursor=${page1.body.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(page2.body.data.map((i: Json) => i.id)).toEqual([pending.invitation.id]);
    expect(page2.body.nextCursor).toBeNull();
    // A cursor belongs to its list and filter.
    const stale = await call('GET', `/v1/invitations?organization_slug=${org.slug}&status=pending&cursor=${page1.body.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(stale.status).toBe(400);
    expect(stale.body.error.code).toBe('validation_failed');
    expect((await call('GET', `/v1/invitations?organization_slug=${org.slug}&cursor=%%%`, { cookie: admin.cookie })).status).toBe(400);
  });

  it("shows only the organization's own invitations", async () => {
    const { org, admin } = await adminOfNewOrg();
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    const mine = await invite(admin, org);
    await invite(otherAdmin, other);
    const list = await call('GET', `/v1/invitations?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.body.data.map((i: Json) => i.id)).toEqual([mine.invitation.id]);
  });
});

describe('GET /v1/invitations/{id}', () => {
  it("reads one invitation without its token; another organization's is 404, a wrong id shape 400", async () => {
    const { org, admin } = await adminOfNewOrg();
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    const mine = await invite(admin, org);
    const res = await call('GET', `/v1/invitations/${mine.invitation.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(mine.invitation);
    expect(res.text).not.toContain(mine.invitationToken);
    // Asked in its own organization, or with the other organization's slug: the same 404.
    for (const slug of [other.slug, org.slug]) {
      const foreign = await call('GET', `/v1/invitations/${mine.invitation.id}?organization_slug=${slug}`, { cookie: otherAdmin.cookie });
      expect(foreign.status, slug).toBe(404);
    }
    expect(
      (await call('GET', `/v1/invitations/usr_00000000000000000000?organization_slug=${org.slug}`, { cookie: admin.cookie })).status,
    ).toBe(400);
  });
});

describe('POST /v1/invitations/{id}/revoke', () => {
  it('revokes with one audit entry; the link stops working; again is 409 invitation_revoked', async () => {
    const { org, admin } = await adminOfNewOrg();
    const email = freshEmail('revoked');
    const created = await invite(admin, org, { email });
    const res = await call('POST', `/v1/invitations/${created.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.invitation.id, status: 'revoked' });
    expect(res.body.revokedAt).toEqual(expect.any(String));
    expect(await auditOf(org.id, 'invitation.revoked')).toHaveLength(1);

    const again = await call('POST', `/v1/invitations/${created.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invitation_revoked');

    const invitee = await seedSignedIn(server.services.db, { email });
    const accept = await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: created.invitationToken } });
    expect(accept.status).toBe(409);
    expect(accept.body.error.code).toBe('invitation_revoked');
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(0);
    expect(await auditOf(org.id, 'invitation.revoked')).toHaveLength(1);
  });

  it('an accepted invitation cannot be revoked (409 invitation_already_accepted); an expired one can', async () => {
    const { org, admin } = await adminOfNewOrg();
    const email = freshEmail('taken');
    const created = await invite(admin, org, { email });
    const invitee = await seedSignedIn(server.services.db, { email });
    await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: created.invitationToken } });
    const res = await call('POST', `/v1/invitations/${created.invitation.id}/revoke`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invitation_already_accepted');

    const old = await invite(admin, org);
    await expire(old.invitation.id);
    const revokedOld = await call('POST', `/v1/invitations/${old.invitation.id}/revoke`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(revokedOld.status).toBe(200);
    expect(revokedOld.body.status).toBe('revoked');
  });

  it("another organization's invitation is 404; ids of the wrong shape are 400; query and body slugs must agree", async () => {
    const { org, admin } = await adminOfNewOrg();
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    const foreign = await invite(otherAdmin, other);
    const res = await call('POST', `/v1/invitations/${foreign.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('invitation_not_found');
    const [row] = await server.services.db.select().from(invitations).where(eq(invitations.id, foreign.invitation.id));
    expect(row?.revokedAt).toBeNull();
    // Naming the other organization instead: the caller is not in it.
    expect(
      (await call('POST', `/v1/invitations/${foreign.invitation.id}/revoke?organization_slug=${other.slug}`, { cookie: admin.cookie }))
        .status,
    ).toBe(404);
    for (const id of [newId('role'), 'inv_123', 'inv_!!!!!!!!!!!!!!!!!!!!']) {
      expect(
        (await call('POST', `/v1/invitations/${encodeURIComponent(id)}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie }))
          .status,
        id,
      ).toBe(400);
    }
    const mine = await invite(admin, org);
    const disagree = await call('POST', `/v1/invitations/${mine.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
      body: { organization_slug: other.slug },
    });
    expect(disagree.status).toBe(400);
    expect(await auditOf(org.id, 'invitation.revoked')).toHaveLength(0);
  });
});

describe('POST /v1/invitations/{id}/resend', () => {
  const resend = (admin: { cookie?: string; authorization?: string }, org: OrganizationRow, id: string) =>
    call('POST', `/v1/invitations/${id}/resend?organization_slug=${org.slug}`, admin);

  async function statusOf(id: string): Promise<string | undefined> {
    const [row] = await server.services.db.select().from(invitations).where(eq(invitations.id, id));
    return row ? (row.acceptedAt ? 'accepted' : row.revokedAt ? 'revoked' : 'pending') : undefined;
  }

  async function invitationCount(tenantId: string): Promise<number> {
    return (await server.services.db.select().from(invitations).where(eq(invitations.tenantId, tenantId))).length;
  }

  it('revokes the pending invitation and issues a new link with the same email, role and rule, once; the old link is refused, the new one works', async () => {
    const { org, admin } = await adminOfNewOrg();
    await server.services.db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'support', name: 'Support', permissions: ['tenant.read'] });
    const email = freshEmail('resent');
    const old = await invite(admin, org, { email, roleKey: 'support', requireEmailMatch: false });
    const before = Date.now();
    const res = await resend(admin, org, old.invitation.id);
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['emailDelivery', 'invitation', 'invitationToken', 'inviteLink']);
    const { invitation, invitationToken, inviteLink } = res.body;
    expect(invitation.id).not.toBe(old.invitation.id);
    expect(invitation).toMatchObject({
      email,
      roleKey: 'support',
      requireEmailMatch: false,
      status: 'pending',
      invitedByUserId: admin.user.id,
      revokedAt: null,
    });
    expect(invitationToken).toMatch(INVITATION_TOKEN_PATTERN);
    expect(invitationToken).not.toBe(old.invitationToken);
    expect(inviteLink).toBe(`${server.services.config.publicUrl}/invitations/accept?token=${invitationToken}`);
    expect(res.body.emailDelivery).toBeNull();
    const ttl = Date.parse(invitation.expiresAt) - before;
    expect(ttl).toBeGreaterThan(TTL_HOURS * 3_600_000 - 60_000);
    const [row] = await server.services.db.select().from(invitations).where(eq(invitations.id, invitation.id));
    expect(row?.tokenHash).toBe(sha256(invitationToken));

    const list = await call('GET', `/v1/invitations?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.body.data.map((i: Json) => [i.id, i.status])).toEqual([
      [invitation.id, 'pending'],
      [old.invitation.id, 'revoked'],
    ]);
    expect(list.text).not.toContain(invitationToken);

    // The audit trail reads as a revoke and a create, in the same request.
    const revoked = await auditOf(org.id, 'invitation.revoked');
    const created = await auditOf(org.id, 'invitation.created');
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ actorId: admin.user.id, targetId: old.invitation.id });
    expect(revoked[0]?.summary).toMatchObject({ email, roleKey: 'support', resent: true });
    expect(created).toHaveLength(2);
    const resentEntry = created.find((e) => e.targetId === invitation.id);
    expect(resentEntry?.summary).toMatchObject({ email, roleKey: 'support', resentFrom: old.invitation.id });
    expect(resentEntry?.requestId).toBe(revoked[0]?.requestId);
    expect(JSON.stringify(resentEntry)).not.toContain(invitationToken);

    const someone = await seedSignedIn(server.services.db);
    const stale = await call('POST', '/v1/invitations/accept', { cookie: someone.cookie, body: { token: old.invitationToken } });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('invitation_revoked');
    const fresh = await call('POST', '/v1/invitations/accept', { cookie: someone.cookie, body: { token: invitationToken } });
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ roleKey: 'support', invitation: { id: invitation.id, status: 'accepted' } });
    expect(await membersOf(org.id, someone.user.id)).toMatchObject([{ roleKey: 'support' }]);
  });

  it('queues exactly one new invitation email, for the new invitation, in its transaction', async () => {
    const db = mailServer.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const created = await call('POST', '/v1/invitations', {
      on: mailServer,
      cookie: admin.cookie,
      body: { organization_slug: org.slug, email: freshEmail('mailed') },
    });
    expect(created.status, created.text).toBe(201);
    const res = await call('POST', `/v1/invitations/${created.body.invitation.id}/resend?organization_slug=${org.slug}`, {
      on: mailServer,
      cookie: admin.cookie,
    });
    expect(res.status, res.text).toBe(201);
    const rows = await db.select().from(emailDeliveries).where(eq(emailDeliveries.tenantId, org.id));
    expect(rows.map((r) => r.invitationId).sort()).toEqual([created.body.invitation.id, res.body.invitation.id].sort());
    const queued = rows.find((r) => r.invitationId === res.body.invitation.id);
    expect(res.body.emailDelivery).toEqual({ id: queued?.id, status: 'pending' });
    expect(queued).toMatchObject({ recipient: created.body.invitation.email, status: 'pending' });
    expect(queued?.bodyCiphertext).not.toContain(res.body.invitationToken);

    // A refused resend queues nothing.
    const again = await call('POST', `/v1/invitations/${created.body.invitation.id}/resend?organization_slug=${org.slug}`, {
      on: mailServer,
      cookie: admin.cookie,
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invitation_already_pending');
    expect(await db.select().from(emailDeliveries).where(eq(emailDeliveries.tenantId, org.id))).toHaveLength(2);
  });

  it('a revoked or expired invitation gets a new link too (nothing to revoke); an accepted one is 409 invitation_already_accepted', async () => {
    const { org, admin } = await adminOfNewOrg();
    const revokedOne = await invite(admin, org);
    await call('POST', `/v1/invitations/${revokedOne.invitation.id}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie });
    const fromRevoked = await resend(admin, org, revokedOne.invitation.id);
    expect(fromRevoked.status, fromRevoked.text).toBe(201);
    expect(fromRevoked.body.invitation).toMatchObject({ email: revokedOne.invitation.email, status: 'pending' });

    const expiredOne = await invite(admin, org);
    await expire(expiredOne.invitation.id);
    const fromExpired = await resend(admin, org, expiredOne.invitation.id);
    expect(fromExpired.status, fromExpired.text).toBe(201);
    const [expiredRow] = await server.services.db.select().from(invitations).where(eq(invitations.id, expiredOne.invitation.id));
    expect(expiredRow?.revokedAt).toBeNull();
    // One revoke entry: the explicit one; resending revoked or expired invitations revoked nothing.
    expect(await auditOf(org.id, 'invitation.revoked')).toHaveLength(1);

    const email = freshEmail('joined');
    const accepted = await invite(admin, org, { email });
    const invitee = await seedSignedIn(server.services.db, { email });
    await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: accepted.invitationToken } });
    const before = await invitationCount(org.id);
    const refused = await resend(admin, org, accepted.invitation.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invitation_already_accepted');
    expect(await invitationCount(org.id)).toBe(before);
  });

  it("another organization's invitation is 404 and stays pending; ids of the wrong shape are 400", async () => {
    const { org, admin } = await adminOfNewOrg();
    const { org: other, admin: otherAdmin } = await adminOfNewOrg();
    const foreign = await invite(otherAdmin, other);
    const res = await resend(admin, org, foreign.invitation.id);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('invitation_not_found');
    expect((await resend(admin, other, foreign.invitation.id)).status).toBe(404);
    expect(await statusOf(foreign.invitation.id)).toBe('pending');
    expect(await invitationCount(org.id)).toBe(0);
    expect(await invitationCount(other.id)).toBe(1);
    for (const id of [newId('role'), 'inv_123']) {
      expect((await resend(admin, org, id)).status, id).toBe(400);
    }
  });

  it('needs invitations.manage: a member with only invitations.read, or an org_member, gets 403 and nothing changes', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    await db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'viewer', name: 'Viewer', permissions: ['tenant.read', 'invitations.read'] });
    const viewer = await seedSignedIn(db, { organization: org, roleKey: 'viewer' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const created = await invite(admin, org);
    for (const who of [viewer, member]) {
      const res = await resend(who, org, created.invitation.id);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    expect(await statusOf(created.invitation.id)).toBe('pending');
    expect(await invitationCount(org.id)).toBe(1);
  });

  it('a refusal after the old invitation was revoked rolls everything back: the old link keeps working', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const check = async (old: Json, count: number) => {
      expect(await statusOf(old.invitation.id)).toBe('pending');
      expect(await invitationCount(org.id)).toBe(count);
      expect(await auditOf(org.id, 'invitation.revoked')).toHaveLength(0);
    };

    // An API key may resend, but not into a role above its own scopes (checked after the revoke).
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['invitations.manage', 'tenant.read'] });
    const adminInvite = await invite(admin, org, { roleKey: 'org_admin' });
    const above = await resend({ authorization: key.authorization }, org, adminInvite.invitation.id);
    expect(above.status).toBe(403);
    expect(above.body.error.code).toBe('forbidden');
    await check(adminInvite, 1);

    // The role was removed since the invitation was sent.
    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'gone', name: 'Gone', permissions: [] });
    const email = freshEmail('orphan');
    const orphan = await invite(admin, org, { email, roleKey: 'gone' });
    await db.delete(roles).where(and(eq(roles.tenantId, org.id), eq(roles.key, 'gone')));
    const unknown = await resend(admin, org, orphan.invitation.id);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('unknown_role');
    await check(orphan, 2);

    // The email's send budget is spent: 429, and the current link is still the one that works.
    const limitedEmail = freshEmail('budget');
    let current = await invite(admin, org, { email: limitedEmail });
    for (let i = 1; i < SENDS_PER_MINUTE; i++) {
      const next = await resend(admin, org, current.invitation.id);
      expect(next.status, next.text).toBe(201);
      current = next.body;
    }
    const limited = await resend(admin, org, current.invitation.id);
    // The minute may have turned between the sends and this one: then the budget is fresh again.
    if (limited.status !== 201) {
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('rate_limited');
      expect(await statusOf(current.invitation.id)).toBe('pending');
      const invitee = await seedSignedIn(db, { email: limitedEmail });
      const accepted = await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: current.invitationToken } });
      expect(accepted.status).toBe(200);
    } else {
      expect(new Date().getSeconds()).toBeLessThan(5);
    }
  });
});

describe('POST /v1/invitations/accept', () => {
  it('adds the member with the invited role, marks it accepted, writes invitation.accepted and member.added', async () => {
    const { org, admin } = await adminOfNewOrg();
    await server.services.db
      .insert(roles)
      .values({ id: newId('role'), tenantId: org.id, key: 'viewer', name: 'Viewer', permissions: ['tenant.read', 'invitations.read'] });
    const email = freshEmail('joiner');
    const created = await invite(admin, org, { email, roleKey: 'viewer' });
    const invitee = await seedSignedIn(server.services.db, { email });
    expect((await call('GET', `/v1/invitations?organization_slug=${org.slug}`, { cookie: invitee.cookie })).status).toBe(404);

    const res = await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: created.invitationToken } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      organization: { id: org.id, slug: org.slug, name: org.name },
      roleKey: 'viewer',
      invitation: { id: created.invitation.id, status: 'accepted', acceptedByUserId: invitee.user.id },
    });
    expect(await membersOf(org.id, invitee.user.id)).toMatchObject([{ roleKey: 'viewer' }]);
    // The role's permissions apply at once.
    expect((await call('GET', `/v1/invitations?organization_slug=${org.slug}`, { cookie: invitee.cookie })).status).toBe(200);
    const acceptedEntries = await auditOf(org.id, 'invitation.accepted');
    const added = await auditOf(org.id, 'member.added');
    expect(acceptedEntries).toHaveLength(1);
    expect(added).toHaveLength(1);
    expect(acceptedEntries[0]).toMatchObject({ actorId: invitee.user.id, targetId: created.invitation.id });
    expect(added[0]).toMatchObject({ actorId: invitee.user.id, targetType: 'user', targetId: invitee.user.id });
    expect(acceptedEntries[0]?.requestId).toBe(added[0]?.requestId);
    // The API leaves the session's workspace alone (only the hosted page opens the new one).
    const [session] = await server.services.db.select().from(sessions).where(eq(sessions.id, invitee.sessionId));
    expect(session?.activeTenantId).toBe(invitee.ownWorkspace.id);

    const twice = await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: created.invitationToken } });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('invitation_already_accepted');
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(1);
  });

  it('two accepts racing give exactly one membership: one 200, one invitation_already_accepted', async () => {
    const { org, admin } = await adminOfNewOrg();
    const email = freshEmail('racer');
    const created = await invite(admin, org, { email });
    const invitee = await seedSignedIn(server.services.db, { email });
    const replies = await Promise.all(
      [1, 2, 3].map(() => call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: created.invitationToken } })),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    expect(replies.filter((r) => r.status === 409).map((r) => r.body.error.code)).toEqual([
      'invitation_already_accepted',
      'invitation_already_accepted',
    ]);
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(1);
    expect(await auditOf(org.id, 'member.added')).toHaveLength(1);

    // Two different people racing for a link that needs no email match: still one winner.
    const open = await invite(admin, org, { requireEmailMatch: false });
    const [p, q] = await Promise.all([seedSignedIn(server.services.db), seedSignedIn(server.services.db)]);
    const race = await Promise.all(
      [p, q].map((u) => call('POST', '/v1/invitations/accept', { cookie: u.cookie, body: { token: open.invitationToken } })),
    );
    expect(race.map((r) => r.status).sort()).toEqual([200, 409]);
    const joined = (await membersOf(org.id, p.user.id)).length + (await membersOf(org.id, q.user.id)).length;
    expect(joined).toBe(1);
  });

  it('clear codes: unknown token 404, malformed 400, expired 409 invitation_expired, another email 403, already a member 409', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const someone = await seedSignedIn(db);
    const unknown = await call('POST', '/v1/invitations/accept', { cookie: someone.cookie, body: { token: `svc_inv_${'A'.repeat(40)}` } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('invitation_not_found');
    for (const token of ['', 'svc_inv_short', `sk_live_${'A'.repeat(40)}`, 42]) {
      expect((await call('POST', '/v1/invitations/accept', { cookie: someone.cookie, body: { token } })).status, String(token)).toBe(400);
    }

    const lateEmail = freshEmail('late');
    const late = await invite(admin, org, { email: lateEmail });
    await expire(late.invitation.id);
    const lateUser = await seedSignedIn(db, { email: lateEmail });
    const expired = await call('POST', '/v1/invitations/accept', { cookie: lateUser.cookie, body: { token: late.invitationToken } });
    expect(expired.status).toBe(409);
    expect(expired.body.error.code).toBe('invitation_expired');

    const forOther = await invite(admin, org);
    const mismatch = await call('POST', '/v1/invitations/accept', { cookie: someone.cookie, body: { token: forOther.invitationToken } });
    expect(mismatch.status).toBe(403);
    expect(mismatch.body.error.code).toBe('invitation_email_mismatch');

    const memberEmail = freshEmail('member');
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member', email: memberEmail });
    const already = await invite(admin, org, { email: memberEmail });
    const dup = await call('POST', '/v1/invitations/accept', { cookie: member.cookie, body: { token: already.invitationToken } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('already_member');
    expect(await membersOf(org.id, member.user.id)).toMatchObject([{ roleKey: 'org_member' }]);
    const [stillPending] = await db.select().from(invitations).where(eq(invitations.id, already.invitation.id));
    expect(stillPending?.acceptedAt).toBeNull();
    expect(await auditOf(org.id, 'invitation.accepted')).toHaveLength(0);
  });

  it('needs the engine-verified email unless the admin waived the match', async () => {
    const db = server.services.db;
    const { org, admin } = await adminOfNewOrg();
    const email = freshEmail('unverified');
    const invitee = await seedSignedIn(db, { email });
    await db.update(users).set({ emailVerified: false }).where(eq(users.id, invitee.user.id));
    const strict = await invite(admin, org, { email });
    const refused = await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: strict.invitationToken } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('invitation_email_mismatch');
    expect(refused.body.error.message).toMatch(/verify/);
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(0);

    const anyone = await invite(admin, org, { requireEmailMatch: false });
    const ok = await call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: anyone.invitationToken } });
    expect(ok.status).toBe(200);
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(1);
  });

  it('needs a signed-in user: anonymous 401, an API key 403, a cross-site request 403', async () => {
    const { org, admin } = await adminOfNewOrg();
    const created = await invite(admin, org);
    const body = { token: created.invitationToken };
    expect((await call('POST', '/v1/invitations/accept', { body })).status).toBe(401);
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['invitations.manage'] });
    expect((await call('POST', '/v1/invitations/accept', { authorization: key.authorization, body })).status).toBe(403);
    const someone = await seedSignedIn(server.services.db);
    const csrf = await call('POST', '/v1/invitations/accept', { cookie: someone.cookie, body, origin: 'https://evil.example' });
    expect(csrf.status).toBe(403);
    expect(csrf.body.error.code).toBe('csrf_rejected');
    const [row] = await server.services.db.select().from(invitations).where(eq(invitations.id, created.invitation.id));
    expect(row?.acceptedAt).toBeNull();
  });
});

describe('hosted accept page /invitations/accept', () => {
  const cookieOf = (reply: Reply) => {
    const set = reply.headers.getSetCookie().find((c) => c.startsWith('svc_invitation='));
    return set?.split(';')[0] ?? '';
  };

  it('keeps the token in an HttpOnly cookie, offers sign-in to anonymous visitors, accepts by same-origin form and opens the console there', async () => {
    const { org, admin } = await adminOfNewOrg('Acme <Rockets>');
    const email = freshEmail('hosted');
    const created = await invite(admin, org, { email });
    const link = new URL(created.inviteLink);

    const opened = await call('GET', `${link.pathname}${link.search}`);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe('/invitations/accept');
    const setCookie = opened.headers.getSetCookie().find((c) => c.startsWith('svc_invitation=')) ?? '';
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    const pending = cookieOf(opened);
    expect(pending).toBe(`svc_invitation=${created.invitationToken}`);

    const anonymous = await call('GET', '/invitations/accept', { cookie: pending });
    expect(anonymous.status).toBe(200);
    expect(anonymous.text).toContain('href="/signin?return_to=%2Finvitations%2Faccept"');
    expect(anonymous.text).toContain('href="/signup?return_to=%2Finvitations%2Faccept"');
    // Nothing about the organization before sign-in, and never the token.
    expect(anonymous.text).not.toContain('Acme');
    expect(anonymous.text).not.toContain(created.invitationToken);

    const invitee = await seedSignedIn(server.services.db, { email });
    const both = `${invitee.cookie}; ${pending}`;
    const page = await call('GET', '/invitations/accept', { cookie: both });
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.text).toContain('Acme &#60;Rockets&#62;');
    expect(page.text).not.toContain('Acme <Rockets>');
    expect(page.text).toContain('Organization member');
    expect(page.text).toContain('action="/invitations/accept"');
    expect(page.text).not.toContain(created.invitationToken);
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(0);

    const crossSite = await fetch(`${server.url}/invitations/accept`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: both, origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(crossSite.status).toBe(403);
    expect(await membersOf(org.id, invitee.user.id)).toHaveLength(0);

    const accepted = await fetch(`${server.url}/invitations/accept`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: both, origin: server.services.config.publicUrl, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get('location')).toBe('/auth/console/');
    expect(accepted.headers.getSetCookie().find((c) => c.startsWith('svc_invitation='))).toContain('Max-Age=0');
    expect(await membersOf(org.id, invitee.user.id)).toMatchObject([{ roleKey: 'org_member' }]);
    const [session] = await server.services.db.select().from(sessions).where(eq(sessions.id, invitee.sessionId));
    expect(session?.activeTenantId).toBe(org.id);

    const reopened = await call('GET', '/invitations/accept', { cookie: both });
    expect(reopened.status).toBe(409);
    expect(reopened.text).toContain('invitation_already_accepted');
  });

  it('shows why a link cannot be used, with the code; malformed links and missing invitations are 400', async () => {
    const { org, admin } = await adminOfNewOrg();
    const created = await invite(admin, org);
    await call('POST', `/v1/invitations/${created.invitation.id}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie });
    const someone = await seedSignedIn(server.services.db);
    const revoked = await call('GET', '/invitations/accept', { cookie: `${someone.cookie}; svc_invitation=${created.invitationToken}` });
    expect(revoked.status).toBe(409);
    expect(revoked.text).toContain('data-testid="invitation-error-code">invitation_revoked<');

    const other = await invite(admin, org);
    const mismatch = await call('GET', '/invitations/accept', { cookie: `${someone.cookie}; svc_invitation=${other.invitationToken}` });
    expect(mismatch.status).toBe(403);
    expect(mismatch.text).toContain('invitation_email_mismatch');

    expect((await call('GET', '/invitations/accept?token=not-a-token')).status).toBe(400);
    expect((await call('GET', '/invitations/accept', { cookie: someone.cookie })).status).toBe(400);
    const anonymousPost = await fetch(`${server.url}/invitations/accept`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: `svc_invitation=${other.invitationToken}`, origin: server.services.config.publicUrl },
    });
    expect(anonymousPost.status).toBe(303);
    expect(anonymousPost.headers.get('location')).toMatch(/^\/signin\?return_to=/);
  });
});

describe('settings', () => {
  it('INVITATION_TTL_HOURS defaults to a week and must be 1 hour to 1 year; the send limit defaults to 5 per minute', () => {
    const defaults = loadConfig({});
    expect(defaults.invitationTtlMs).toBe(168 * 3_600_000);
    expect(defaults.rateLimit.invitationsPerMinute).toBe(5);
    expect(loadConfig({ INVITATION_TTL_HOURS: '1' }).invitationTtlMs).toBe(3_600_000);
    for (const value of ['0', '-5', '1.5', 'week', String(24 * 365 + 1)]) {
      expect(() => loadConfig({ INVITATION_TTL_HOURS: value }), value).toThrow(ConfigError);
      expect(() => loadConfig({ INVITATION_TTL_HOURS: value }), value).toThrow(/INVITATION_TTL_HOURS/);
    }
    expect(() => loadConfig({ RATE_LIMIT_INVITATIONS_PER_MINUTE: '0' })).toThrow(/RATE_LIMIT_INVITATIONS_PER_MINUTE/);
  });
});
