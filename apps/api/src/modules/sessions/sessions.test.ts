import type { TSession, TSessionPage } from '@svc/contracts/sessions';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { sessions } from '@svc/db/schema/sessions';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { createSession } from '../session-store/service.ts';
import { deviceLabel } from './device.ts';
import { MATRIX } from './sessions.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
const SESSION = { idleMs: 3_600_000, absoluteMs: 7_200_000 };
const CHROME_MAC = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

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
      ...(opts.body !== undefined ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

async function list(path: string, cookie: string): Promise<TSessionPage> {
  const res = await call('GET', path, { cookie });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as TSessionPage;
}

describeAuthMatrix('sessions', () => server, MATRIX);

describe('GET /v1/sessions', () => {
  it("lists the live sessions of the organization's members with device, IP, times and the current flag", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    // Newest first: seeded back to back they can share a millisecond (and then come in id order).
    await db
      .update(sessions)
      .set({ createdAt: new Date(Date.now() - 2_000) })
      .where(eq(sessions.id, admin.sessionId));
    await db
      .update(sessions)
      .set({ createdAt: new Date(Date.now() - 1_000) })
      .where(eq(sessions.id, member.sessionId));
    const { session: laptop } = await createSession(db, SESSION, {
      userId: member.user.id,
      activeTenantId: org.id,
      isPlatformAdmin: false,
      ipAddress: '203.0.113.7',
      userAgent: CHROME_MAC,
    });
    // Not listed: a session in the member's own workspace, another organization's, a revoked and an expired one.
    await createSession(db, SESSION, { userId: member.user.id, activeTenantId: member.ownWorkspace.id, isPlatformAdmin: false });
    const outsider = await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });
    const { session: revoked } = await createSession(db, SESSION, {
      userId: member.user.id,
      activeTenantId: org.id,
      isPlatformAdmin: false,
    });
    await db.update(sessions).set({ revokedAt: new Date() }).where(eq(sessions.id, revoked.id));
    const { session: expired } = await createSession(
      db,
      SESSION,
      { userId: member.user.id, activeTenantId: org.id, isPlatformAdmin: false },
      new Date(Date.now() - 2 * 3_600_000),
    );

    const page = await list(`/v1/sessions?organization_slug=${org.slug}`, admin.cookie);
    expect(page.data.map((s) => s.id)).toEqual([laptop.id, member.sessionId, admin.sessionId]);
    expect(page.nextCursor).toBeNull();
    expect(page.data[0]).toEqual({
      id: laptop.id,
      user: { id: member.user.id, email: member.user.email, name: member.user.name },
      status: 'active',
      device: 'Chrome on macOS',
      userAgent: CHROME_MAC,
      ipAddress: '203.0.113.7',
      createdAt: laptop.createdAt.toISOString(),
      lastSeenAt: laptop.lastSeenAt.toISOString(),
      expiresAt: laptop.expiresAt.toISOString(),
      revokedAt: null,
      current: false,
      applications: [],
    });
    expect(page.data.find((s) => s.id === admin.sessionId)?.current).toBe(true);
    expect(JSON.stringify(page)).not.toContain(outsider.sessionId);
    expect(JSON.stringify(page)).not.toMatch(/token|hash/i);

    const all = await list(`/v1/sessions?organization_slug=${org.slug}&state=all`, admin.cookie);
    const byId = new Map(all.data.map((s) => [s.id, s]));
    expect(byId.get(revoked.id)?.status).toBe('revoked');
    expect(byId.get(expired.id)?.status).toBe('expired');
    expect(all.data).toHaveLength(5);

    const ofMember = await list(`/v1/sessions?organization_slug=${org.slug}&user_id=${member.user.id}`, admin.cookie);
    expect(ofMember.data.map((s) => s.id)).toEqual([laptop.id, member.sessionId]);
  });

  it('pages with cursors; a malformed cursor or one of other filters is a 400', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    for (let i = 0; i < 4; i++) {
      await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: TSessionPage = await list(
        `/v1/sessions?organization_slug=${org.slug}&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        admin.cookie,
      );
      seen.push(...page.data.map((s) => s.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(5);
    expect(seen).toContain(admin.sessionId);

    const first = await list(`/v1/sessions?organization_slug=${org.slug}&limit=1`, admin.cookie);
    const otherFilter = await call('GET', `/v1/sessions?organization_slug=${org.slug}&state=all&cursor=${first.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(otherFilter.status).toBe(400);
    expect(await errorCode(otherFilter)).toBe('validation_failed');
    for (const query of ['cursor=garbage', 'state=revoked', 'user_id=ses_00000000000000000000', 'limit=500']) {
      expect((await call('GET', `/v1/sessions?organization_slug=${org.slug}&${query}`, { cookie: admin.cookie })).status, query).toBe(400);
    }
  });
});

describe('GET /v1/sessions/{id}', () => {
  it("reads one member's session with its device; another organization's session is 404", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const res = await call('GET', `/v1/sessions/${member.sessionId}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    const session = (await res.json()) as TSession;
    expect(session).toMatchObject({ id: member.sessionId, status: 'active', current: false, user: { id: member.user.id } });
    const own = (await (
      await call('GET', `/v1/sessions/${admin.sessionId}?organization_slug=${org.slug}`, { cookie: admin.cookie })
    ).json()) as TSession;
    expect(own.current).toBe(true);

    const other = await seedOrganization(db);
    const stranger = await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });
    for (const slug of [other.slug, org.slug]) {
      const foreign = await call('GET', `/v1/sessions/${member.sessionId}?organization_slug=${slug}`, { cookie: stranger.cookie });
      expect(foreign.status, slug).toBe(404);
    }
    expect(
      (await call('GET', `/v1/sessions/usr_00000000000000000000?organization_slug=${org.slug}`, { cookie: admin.cookie })).status,
    ).toBe(400);
  });
});

describe('POST /v1/sessions/{id}/revoke', () => {
  it('revokes a session of the organization with one session.revoked entry: its cookie is refused at once', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect((await call('GET', '/v1/me', { cookie: member.cookie })).status).toBe(200);

    const res = await call('POST', `/v1/sessions/${member.sessionId}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
      body: {},
    });
    expect(res.status).toBe(200);
    const revoked = (await res.json()) as TSession;
    expect(revoked).toMatchObject({ id: member.sessionId, status: 'revoked', revokedAt: expect.any(String), current: false });
    const me = await call('GET', '/v1/me', { cookie: member.cookie });
    expect(me.status).toBe(401);
    expect(await errorCode(me)).toBe('unauthenticated');
    // The admin's own session is untouched.
    expect((await call('GET', '/v1/me', { cookie: admin.cookie })).status).toBe(200);

    // Again: the same answer, no second audit entry.
    const again = await call('POST', `/v1/sessions/${member.sessionId}/revoke`, {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as TSession).revokedAt).toBe(revoked.revokedAt);
    // As the curl of docs/api.md sends it: the slug in the query and no body at all.
    const bodiless = await fetch(`${server.url}/v1/sessions/${member.sessionId}/revoke?organization_slug=${org.slug}`, {
      method: 'POST',
      headers: { cookie: admin.cookie, origin: server.services.config.publicUrl, 'content-type': 'application/json' },
    });
    expect(bodiless.status, await bodiless.clone().text()).toBe(200);
    const entries = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'session.revoked')));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorId: admin.user.id, targetType: 'session', targetId: member.sessionId });
    expect(entries[0]?.summary).toEqual({ userId: member.user.id, email: member.user.email, device: 'Unknown device' });
  });

  it('a session outside the organization is 404 and stays live; a wrong-prefix id is 400; slugs that disagree are 400', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const outsider = await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });
    // A member whose session is active in their own workspace: not this organization's session.
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const { token, session: elsewhere } = await createSession(db, SESSION, {
      userId: member.user.id,
      activeTenantId: member.ownWorkspace.id,
      isPlatformAdmin: false,
    });
    for (const id of [outsider.sessionId, elsewhere.id, 'ses_00000000000000000000']) {
      const res = await call('POST', `/v1/sessions/${id}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie, body: {} });
      expect(res.status, id).toBe(404);
      expect(await errorCode(res)).toBe('not_found');
    }
    expect((await call('GET', '/v1/me', { cookie: outsider.cookie })).status).toBe(200);
    expect((await call('GET', '/v1/me', { cookie: `svc_session=${token}` })).status).toBe(200);

    const wrongPrefix = await call('POST', `/v1/sessions/usr_00000000000000000000/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
      body: {},
    });
    expect(wrongPrefix.status).toBe(400);
    const disagree = await call('POST', `/v1/sessions/${member.sessionId}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
      body: { organization_slug: other.slug },
    });
    expect(disagree.status).toBe(400);
    expect((await call('GET', '/v1/me', { cookie: member.cookie })).status).toBe(200);
  });
});

describe('deviceLabel', () => {
  it('names common browsers and systems, and never guesses', () => {
    expect(deviceLabel(CHROME_MAC)).toBe('Chrome on macOS');
    expect(
      deviceLabel('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36 Edg/124.0'),
    ).toBe('Edge on Windows');
    expect(deviceLabel('Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0')).toBe('Firefox on Linux');
    expect(
      deviceLabel(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari on iOS');
    expect(
      deviceLabel('Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0 Safari/537.36'),
    ).toBe('Chrome on Linux');
    expect(deviceLabel('curl/8.5.0')).toBe('curl');
    expect(deviceLabel(null)).toBe('Unknown device');
    expect(deviceLabel('something else')).toBe('Unknown device');
  });
});
