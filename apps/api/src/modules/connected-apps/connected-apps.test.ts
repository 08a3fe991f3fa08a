import { auditLogs } from '@svc/db/schema/audit-logs';
import { thirdPartyAccess } from '@svc/db/schema/connected-apps';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX } from './connected-apps.matrix.ts';

/**
 * Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third
 * parties an organization allows"): the choice through the API, its refusals and its record. Its
 * effect on authorizations and refresh tokens is tested with the consent page
 * (oidc-provider/consent.test.ts).
 */

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describeAuthMatrix('connected apps', () => server, MATRIX);

type Json = Record<string, unknown>;

async function call(method: string, path: string, cookie: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      cookie,
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
  });
  return { status: res.status, json: (await res.json()) as Json };
}

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

describe('third-party access', () => {
  it('is any until the organization chooses; a choice is kept, audited and announced', async () => {
    const { db, org, admin } = await adminOf();
    expect((await call('GET', `/v1/third-party-access?organization_slug=${org.slug}`, admin.cookie)).json).toEqual({
      organizationId: org.id,
      mode: 'any',
      clients: [],
      updatedAt: null,
    });
    const listed = await call('PATCH', '/v1/third-party-access', admin.cookie, {
      organization_slug: org.slug,
      mode: 'listed',
      clients: ['https://agents.example.com/*', 'https://claude.example/oauth/client.json', 'https://agents.example.com/*'],
    });
    expect(listed.status).toBe(200);
    expect(listed.json).toMatchObject({
      mode: 'listed',
      clients: ['https://agents.example.com/*', 'https://claude.example/oauth/client.json'],
    });
    // Off keeps the list for later.
    const off = await call('PATCH', '/v1/third-party-access', admin.cookie, { organization_slug: org.slug, mode: 'off' });
    expect(off.json).toMatchObject({ mode: 'off', clients: ['https://agents.example.com/*', 'https://claude.example/oauth/client.json'] });
    expect((await call('GET', `/v1/third-party-access?organization_slug=${org.slug}`, admin.cookie)).json).toMatchObject({ mode: 'off' });

    const audits = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'third_party_access.updated')));
    expect(audits.map((a) => (a.summary as { mode: unknown }).mode)).toEqual(
      expect.arrayContaining([
        { from: 'any', to: 'listed' },
        { from: 'listed', to: 'off' },
      ]),
    );
    const events = await db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, org.id), eq(webhookEvents.type, 'third_party_access.updated')));
    expect(events).toHaveLength(2);
  });

  it('refuses bad choices with 400 and stores nothing', async () => {
    const { db, org, admin } = await adminOf();
    const bad: unknown[] = [
      { mode: 'sometimes' },
      { mode: 'listed' },
      { mode: 'listed', clients: [] },
      { mode: 'listed', clients: ['http://agents.example.com/client.json'] },
      { mode: 'listed', clients: ['https://*.example.com/client.json'] },
      { mode: 'listed', clients: ['https://agents.example.com*'] },
      { mode: 'listed', clients: ['https://agents.example.com/a*b'] },
      { mode: 'listed', clients: ['https://user:pass@agents.example.com/c.json'] },
      { mode: 'listed', clients: ['https://agents.example.com/c.json#x'] },
      { mode: 'listed', clients: ['agents.example.com'] },
      { mode: 'listed', clients: [`https://agents.example.com/${'x'.repeat(300)}`] },
      { mode: 'listed', clients: Array.from({ length: 51 }, (_, i) => `https://agents.example.com/${i}.json`) },
    ];
    for (const body of bad) {
      const res = await call('PATCH', '/v1/third-party-access', admin.cookie, { organization_slug: org.slug, ...(body as object) });
      expect([JSON.stringify(body).slice(0, 80), res.status]).toEqual([JSON.stringify(body).slice(0, 80), 400]);
    }
    expect(await db.select().from(thirdPartyAccess).where(eq(thirdPartyAccess.tenantId, org.id))).toEqual([]);
  });

  it("another organization's admin can neither read nor change this one's choice", async () => {
    const { org } = await adminOf();
    const other = await adminOf();
    expect((await call('GET', `/v1/third-party-access?organization_slug=${org.slug}`, other.admin.cookie)).status).toBe(404);
    expect((await call('PATCH', '/v1/third-party-access', other.admin.cookie, { organization_slug: org.slug, mode: 'off' })).status).toBe(
      404,
    );
    expect(await server.services.db.select().from(thirdPartyAccess).where(eq(thirdPartyAccess.tenantId, org.id))).toEqual([]);
  });
});
