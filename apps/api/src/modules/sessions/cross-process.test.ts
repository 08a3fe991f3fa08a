import { createDatabase, type Database } from '@svc/db/client';
import { memberships } from '@svc/db/schema/identity';
import { sessions } from '@svc/db/schema/sessions';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { type SpawnedServer, spawnServer } from '../../../../../test/support/spawn.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { createSession } from '../session-store/service.ts';

/**
 * An admin's revocation or suspension must hold on every API process at once (docs/architecture.md
 * section 1: nothing of one process is needed by another): two real `svc serve` processes on one
 * database, the admin acts on A, and the very next request on B is refused, with no wait or retry.
 */
describe('revoking and suspending from the admin API hold on every API process at once', () => {
  let a: SpawnedServer;
  let b: SpawnedServer;
  let database: Database;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    [a, b] = await Promise.all([spawnServer({ DATABASE_URL: databaseUrl }), spawnServer({ DATABASE_URL: databaseUrl })]);
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-test-admin' });
  }, 120_000);

  afterAll(async () => {
    await database?.close();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const me = (s: SpawnedServer, cookie: string) => fetch(`${s.url}/v1/me`, { headers: { cookie } });

  function adminCall(method: 'POST' | 'PATCH', path: string, cookie: string, body: unknown) {
    return fetch(`${a.url}${path}`, {
      method,
      headers: { cookie, origin: a.url, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  it('POST /v1/sessions/{id}/revoke on A: the very next request with that cookie is 401 on B', async () => {
    const org = await seedOrganization(database.db);
    const admin = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(database.db, { organization: org, roleKey: 'org_member' });
    expect((await me(b, member.cookie)).status).toBe(200);
    expect((await me(a, member.cookie)).status).toBe(200);

    const res = await adminCall('POST', `/v1/sessions/${member.sessionId}/revoke?organization_slug=${org.slug}`, admin.cookie, {});
    expect(res.status, await res.clone().text()).toBe(200);
    const onB = await me(b, member.cookie);
    expect(onB.status).toBe(401);
    expect(((await onB.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
    expect((await me(a, member.cookie)).status).toBe(401);
    expect((await me(b, admin.cookie)).status).toBe(200);
  });

  it('PATCH /v1/users/{id} status suspended on A: the membership is gone on B at the very next request; the rest stays', async () => {
    const org = await seedOrganization(database.db);
    const other = await seedOrganization(database.db);
    const admin = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
    const member = await seedSignedIn(database.db, { organization: org, roleKey: 'org_member' });
    await database.db.insert(memberships).values({ tenantId: other.id, userId: member.user.id, roleKey: 'org_member' });
    const second = await createSession(
      database.db,
      { idleMs: 3_600_000, absoluteMs: 7_200_000 },
      { userId: member.user.id, activeTenantId: member.ownWorkspace.id, isPlatformAdmin: false },
    );
    const cookies = [member.cookie, `svc_session=${second.token}`];
    const tenant = (s: SpawnedServer, id: string, cookie: string) => fetch(`${s.url}/v1/tenants/${id}`, { headers: { cookie } });
    for (const cookie of cookies) {
      // Both processes have the member's memberships cached from these reads.
      expect((await me(b, cookie)).status).toBe(200);
      expect((await tenant(b, org.id, cookie)).status).toBe(200);
      expect((await tenant(a, org.id, cookie)).status).toBe(200);
    }

    const res = await adminCall('PATCH', `/v1/users/${member.user.id}`, admin.cookie, { organization_slug: org.slug, status: 'suspended' });
    expect(res.status, await res.clone().text()).toBe(200);
    for (const cookie of cookies) {
      for (const s of [b, a]) {
        expect((await tenant(s, org.id, cookie)).status).toBe(404);
        // Signed in still, in their other organizations.
        expect((await tenant(s, other.id, cookie)).status).toBe(200);
        const body = (await (await me(s, cookie)).json()) as {
          activeWorkspace: { id: string } | null;
          memberships: { organization: { id: string } }[];
        };
        expect(body.memberships.map((m) => m.organization.id)).not.toContain(org.id);
        expect(body.activeWorkspace?.id).not.toBe(org.id);
      }
    }
    // No session keeps the organization open, whatever reads it next.
    const open = await database.db
      .select()
      .from(sessions)
      .where(and(eq(sessions.userId, member.user.id), eq(sessions.activeTenantId, org.id)));
    expect(open).toEqual([]);
  });

  it("PATCH /v1/users/{id} accountStatus suspended by a platform admin on A: every one of the user's sessions is 401 on B", async () => {
    const org = await seedOrganization(database.db);
    const platform = await seedSignedIn(database.db, { platformAdmin: true });
    const member = await seedSignedIn(database.db, { organization: org, roleKey: 'org_member' });
    const second = await createSession(
      database.db,
      { idleMs: 3_600_000, absoluteMs: 7_200_000 },
      { userId: member.user.id, activeTenantId: member.ownWorkspace.id, isPlatformAdmin: false },
    );
    const cookies = [member.cookie, `svc_session=${second.token}`];
    for (const cookie of cookies) {
      expect((await me(b, cookie)).status).toBe(200);
    }

    const res = await adminCall('PATCH', `/v1/users/${member.user.id}`, platform.cookie, {
      organization_slug: org.slug,
      accountStatus: 'suspended',
    });
    expect(res.status, await res.clone().text()).toBe(200);
    for (const cookie of cookies) {
      expect((await me(b, cookie)).status).toBe(401);
      expect((await me(a, cookie)).status).toBe(401);
    }
  });
});
