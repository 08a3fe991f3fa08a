import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import { type SpawnedServer, spawnServer } from './support/spawn.ts';
import { seedOrganization, seedSignedIn } from './support/tenancy.ts';

/**
 * A revoked or rotated tenant API key must fail its very next request on every API process,
 * not only on the one that changed it: the admin acts on process A (in this test process), the
 * key is used on process B (a real `svc serve`), with no wait, retry or poll in between. It holds
 * because authentication reads the key row on each request and no process caches keys.
 */
describe('a revoked or rotated API key is refused on every API process at once', () => {
  let a: Awaited<ReturnType<typeof startTestServer>>;
  let b: SpawnedServer;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    [a, b] = await Promise.all([startTestServer({ databaseUrl }), spawnServer({ DATABASE_URL: databaseUrl })]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.stop()]);
  });

  async function setUp(scopes: string[] = ['tenant.read']) {
    const org = await seedOrganization(a.services.db);
    const admin = await seedSignedIn(a.services.db, { organization: org, roleKey: 'org_admin' });
    const post = (path: string, body: unknown) =>
      fetch(`${a.url}${path}`, {
        method: 'POST',
        headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: a.services.config.publicUrl },
        body: JSON.stringify(body),
      });
    const created = await post(`/v1/tenants/${org.id}/api-keys`, { name: 'two processes', scopes });
    expect(created.status).toBe(201);
    const { apiKey, secretKey } = (await created.json()) as { apiKey: { id: string }; secretKey: string };
    return { org, admin, post, id: apiKey.id, secretKey };
  }

  const readOn = (base: string, orgId: string, secret: string) =>
    fetch(`${base}/v1/tenants/${orgId}`, { headers: { authorization: `Bearer ${secret}` } });

  async function expectRefused(base: string, orgId: string, secret: string) {
    const res = await readOn(base, orgId, secret);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_secret_key');
  }

  it('revoked on A: the very next request on B is 401 (and on A)', async () => {
    const { org, post, id, secretKey } = await setUp();
    // B has just authenticated this key.
    expect((await readOn(b.url, org.id, secretKey)).status).toBe(200);
    expect((await readOn(a.url, org.id, secretKey)).status).toBe(200);
    expect((await post(`/v1/api-keys/${id}/revoke`, {})).status).toBe(200);
    await expectRefused(b.url, org.id, secretKey);
    await expectRefused(a.url, org.id, secretKey);
  });

  it('rotated on A: the old secret is 401 on B at once, the new one works there', async () => {
    const { org, post, id, secretKey } = await setUp();
    expect((await readOn(b.url, org.id, secretKey)).status).toBe(200);
    const rotated = await post(`/v1/api-keys/${id}/rotate`, {});
    expect(rotated.status).toBe(200);
    const { secretKey: next } = (await rotated.json()) as { secretKey: string };
    await expectRefused(b.url, org.id, secretKey);
    expect((await readOn(b.url, org.id, next)).status).toBe(200);
  });

  it("its creator demoted on A: the key's next request on B has lost the admin-only routes; removed: 401", async () => {
    const { org, admin, secretKey } = await setUp(['exports.create', 'tenant.read']);
    const exportsOn = (base: string) =>
      fetch(`${base}/v1/exports?organization_slug=${org.slug}`, { headers: { authorization: `Bearer ${secretKey}` } });
    expect((await exportsOn(b.url)).status).toBe(200);
    const sql = a.services.sql;
    await sql`update memberships set role_key = 'org_member' where tenant_id = ${org.id} and user_id = ${admin.user.id}`;
    expect((await exportsOn(b.url)).status).toBe(403);
    expect((await readOn(b.url, org.id, secretKey)).status).toBe(200);
    await sql`delete from memberships where tenant_id = ${org.id} and user_id = ${admin.user.id}`;
    await expectRefused(b.url, org.id, secretKey);
  });
});
