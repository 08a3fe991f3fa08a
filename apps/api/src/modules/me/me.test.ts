import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

function switchTo(cookie: string | undefined, organization_slug: unknown, origin = server.services.config.publicUrl) {
  return fetch(`${server.url}/v1/me/workspace`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin, ...(cookie ? { cookie } : {}) },
    body: JSON.stringify({ organization_slug }),
  });
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
  });

  it('anonymous 401, bad body 400, cross-site 403', async () => {
    const user = await seedSignedIn(server.services.db);
    expect((await switchTo(undefined, user.ownWorkspace.slug)).status).toBe(401);
    expect((await switchTo(user.cookie, 42)).status).toBe(400);
    expect((await switchTo(user.cookie, '')).status).toBe(400);
    expect((await switchTo(user.cookie, user.ownWorkspace.slug, 'https://evil.example')).status).toBe(403);
  });
});
