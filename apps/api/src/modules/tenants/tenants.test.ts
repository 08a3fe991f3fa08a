import { auditLogs } from '@svc/db/schema/audit-logs';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX } from './tenants.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

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

describeAuthMatrix('tenants', () => server, MATRIX);

describe('tenants', () => {
  it('reads an organization; a malformed id is a 400, an unknown one a 404', async () => {
    const org = await seedOrganization(server.services.db, { name: 'Acme' });
    const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
    const res = await call('GET', `/v1/tenants/${org.id}`, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: org.id, slug: org.slug, name: 'Acme', kind: 'tenant' });
    expect((await call('GET', '/v1/tenants/usr_00000000000000000000', { cookie: admin.cookie })).status).toBe(400);
    expect((await call('GET', '/v1/tenants/ten_00000000000000000000', { cookie: admin.cookie })).status).toBe(404);
  });

  it('renames and re-slugs with one audit entry; a taken slug is 409; bad names are 400', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const taken = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const res = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body: { name: 'New name', slug: `${org.slug}-x` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'New name', slug: `${org.slug}-x` });
    const entries = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'tenant.updated')));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: admin.user.id, targetId: org.id });

    const clash = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body: { slug: taken.slug } });
    expect(clash.status).toBe(409);
    expect(((await clash.json()) as any).error.code).toBe('conflict');
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 'a\u0000b' }, { slug: 'Not A Slug' }]) {
      const bad = await call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
  });
});
