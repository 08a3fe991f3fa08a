import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships } from '@svc/db/schema/identity';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

function switchTo(
  cookie: string | undefined,
  organization_slug: unknown,
  origin = server.services.config.publicUrl,
  authorization?: string,
) {
  return fetch(`${server.url}/v1/me/workspace`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin, ...(cookie ? { cookie } : {}), ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ organization_slug }),
  });
}

function openedEntries(tenantId: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, 'workspace.opened')));
}

async function activeSlug(cookie: string): Promise<string | undefined> {
  const res = await fetch(`${server.url}/v1/me`, { headers: { cookie } });
  return ((await res.json()) as { activeWorkspace?: { slug: string } }).activeWorkspace?.slug;
}

describe('POST /v1/me/workspace', () => {
  it("moves the session among the user's organizations; the next request acts there", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect(await activeSlug(member.cookie)).toBe(org.slug);

    const res = await switchTo(member.cookie, member.ownWorkspace.slug);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).activeWorkspace).toMatchObject({ id: member.ownWorkspace.id, kind: 'tenant' });
    expect(await activeSlug(member.cookie)).toBe(member.ownWorkspace.slug);
    // Routes without organization_slug now act in the new workspace.
    const tenant = await fetch(`${server.url}/v1/tenants/${member.ownWorkspace.id}`, { headers: { cookie: member.cookie } });
    expect(tenant.status).toBe(200);
  });

  it('an organization the user is not in is 404, exactly like one that does not exist', async () => {
    const db = server.services.db;
    const stranger = await seedOrganization(db, { name: 'Secret Org' });
    const user = await seedSignedIn(db);
    const foreign = await switchTo(user.cookie, stranger.slug);
    const missing = await switchTo(user.cookie, 'no-such-org');
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    const a = (await foreign.json()) as any;
    const b = (await missing.json()) as any;
    expect(a.error.code).toBe('not_found');
    expect(a.error.message).toBe(b.error.message);
    expect(await activeSlug(user.cookie)).toBe(user.ownWorkspace.slug);
  });

  it('a platform admin may open any tenant organization, never the keyless workspace', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { platformAdmin: true });
    expect((await switchTo(admin.cookie, org.slug)).status).toBe(200);
    expect(await activeSlug(admin.cookie)).toBe(org.slug);
    const keyless = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as any;
    expect((await switchTo(admin.cookie, keyless.organization.slug)).status).toBe(404);
    expect(await activeSlug(admin.cookie)).toBe(org.slug);
  });

  it("a platform admin's opening is in the organization's audit log, and every page then reads the organization", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const orgAdmin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const platform = await seedSignedIn(db, { platformAdmin: true });

    const res = await switchTo(platform.cookie, org.slug);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).activeWorkspace).toEqual({ id: org.id, slug: org.slug, name: org.name, kind: 'tenant' });
    const entries = await openedEntries(org.id);
    expect(entries).toEqual([
      expect.objectContaining({
        actorType: 'user',
        actorId: platform.user.id,
        targetType: 'tenant',
        targetId: org.id,
        summary: { slug: org.slug, as: 'platform_admin' },
      }),
    ]);

    // The console's pages name no organization: they act in the session's workspace.
    const read = async (path: string) => {
      const answer = await fetch(`${server.url}${path}`, { headers: { cookie: platform.cookie } });
      expect(answer.status, path).toBe(200);
      return (await answer.json()) as any;
    };
    expect((await read('/v1/users')).data.map((u: { id: string }) => u.id)).toEqual([orgAdmin.user.id]);
    expect((await read('/v1/audit-logs')).data.map((e: { action: string }) => e.action)).toContain('workspace.opened');
    expect((await read('/v1/subscription')).organization.id).toBe(org.id);
    expect((await read(`/v1/tenants/${org.id}/overview`)).counts.members).toBe(1);
    // The organization's own admins see who from the platform looked.
    const seen = await fetch(`${server.url}/v1/audit-logs?organization_slug=${org.slug}&action=workspace.opened`, {
      headers: { cookie: orgAdmin.cookie },
    });
    expect(((await seen.json()) as any).data).toEqual([
      expect.objectContaining({ actor: expect.objectContaining({ id: platform.user.id }) }),
    ]);

    // Back to the platform workspace, of which they are a member: session state only.
    expect((await switchTo(platform.cookie, platform.organization.slug)).status).toBe(200);
    expect(await openedEntries(platform.organization.id)).toEqual([]);
    expect(await openedEntries(org.id)).toHaveLength(1);
  });

  it('a member moving among their own organizations records nothing', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    expect((await switchTo(member.cookie, member.ownWorkspace.slug)).status).toBe(200);
    expect((await switchTo(member.cookie, org.slug)).status).toBe(200);
    expect(await openedEntries(org.id)).toEqual([]);
    expect(await openedEntries(member.ownWorkspace.id)).toEqual([]);
  });

  it('a suspended, removed or not yet accepted member gets the 404 of an unknown organization', async () => {
    const db = server.services.db;
    const missing = (await (await switchTo((await seedSignedIn(db)).cookie, 'no-such-org')).json()) as any;
    for (const how of ['suspended', 'removed', 'invited'] as const) {
      const org = await seedOrganization(db);
      const user = await seedSignedIn(db);
      await db.insert(memberships).values({ tenantId: org.id, userId: user.user.id, roleKey: 'org_admin' });
      expect((await switchTo(user.cookie, org.slug)).status, how).toBe(200);
      expect((await switchTo(user.cookie, user.ownWorkspace.slug)).status, how).toBe(200);
      const mine = and(eq(memberships.tenantId, org.id), eq(memberships.userId, user.user.id));
      if (how === 'removed') {
        await db.delete(memberships).where(mine);
      } else {
        await db.update(memberships).set({ status: how }).where(mine);
      }
      const res = await switchTo(user.cookie, org.slug);
      expect(res.status, how).toBe(404);
      expect(((await res.json()) as any).error).toEqual({ ...missing.error, requestId: expect.any(String) });
      expect(await activeSlug(user.cookie), how).toBe(user.ownWorkspace.slug);
    }
  });

  it("a tenant API key cannot move anyone's session (403), even sent beside a platform admin's cookie", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const target = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read', 'tenant.update'] });
    const platform = await seedSignedIn(db, { platformAdmin: true });
    for (const cookie of [undefined, platform.cookie]) {
      const res = await switchTo(cookie, target.slug, server.services.config.publicUrl, key.authorization);
      expect(res.status).toBe(403);
      expect(((await res.json()) as any).error.code).toBe('forbidden');
    }
    expect(await activeSlug(platform.cookie)).toBe(platform.organization.slug);
    expect(await openedEntries(target.id)).toEqual([]);
  });

  it('anonymous 401, bad body 400, cross-site 403', async () => {
    const user = await seedSignedIn(server.services.db);
    expect((await switchTo(undefined, user.ownWorkspace.slug)).status).toBe(401);
    expect((await switchTo(user.cookie, 42)).status).toBe(400);
    expect((await switchTo(user.cookie, '')).status).toBe(400);
    expect((await switchTo(user.cookie, user.ownWorkspace.slug, 'https://evil.example')).status).toBe(403);
  });
});
