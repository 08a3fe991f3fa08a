import { auditLogs } from '@svc/db/schema/audit-logs';
import { thirdPartyAccess } from '@svc/db/schema/connected-apps';
import { oidcPayloads } from '@svc/db/schema/oidc-provider';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX, seedThirdPartyGrant } from './connected-apps.matrix.ts';

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

describe('connected apps', () => {
  it("lists the organization's third-party grants and revokes one with everything issued under it", async () => {
    const { db, org, admin } = await adminOf();
    const grantId = await seedThirdPartyGrant(db, { tenantId: org.id, slug: org.slug, userId: admin.user.id });
    // A refresh token issued under it, as oidc-provider stores one.
    await db.insert(oidcPayloads).values({ model: 'RefreshToken', id: `rt-${grantId}`, payload: { grantId }, grantId });
    // Neither an application's grant (first-party) nor another organization's is listed.
    const other = await adminOf();
    const foreign = await seedThirdPartyGrant(db, { tenantId: other.org.id, slug: other.org.slug, userId: other.admin.user.id });
    await db.insert(oidcPayloads).values({
      model: 'Grant',
      id: `first-party-${grantId}`,
      payload: {
        kind: 'Grant',
        accountId: admin.user.id,
        clientId: 'app_aaaaaaaaaaaaaaaaaaaa',
        organization: { id: org.id, slug: org.slug },
        iat: 1,
      },
    });

    const listed = await call('GET', `/v1/connected-apps?organization_slug=${org.slug}`, admin.cookie);
    expect(listed.status).toBe(200);
    expect(listed.json.data).toEqual([
      expect.objectContaining({
        id: grantId,
        clientId: 'https://agent.example/client.json',
        clientHost: 'agent.example',
        user: { id: admin.user.id, email: admin.user.email },
        scopes: ['openid', 'offline_access'],
        permissions: { 'https://mcp.example/mcp': ['notes.read'] },
      }),
    ]);

    // Another organization's admin cannot revoke it (404), nor can this one revoke the other's.
    expect((await call('DELETE', `/v1/connected-apps/${grantId}?organization_slug=${other.org.slug}`, other.admin.cookie)).status).toBe(
      404,
    );
    expect((await call('DELETE', `/v1/connected-apps/${foreign}?organization_slug=${org.slug}`, admin.cookie)).status).toBe(404);
    expect((await call('DELETE', `/v1/connected-apps/first-party-${grantId}?organization_slug=${org.slug}`, admin.cookie)).status).toBe(
      404,
    );

    const revoked = await call('DELETE', `/v1/connected-apps/${grantId}?organization_slug=${org.slug}`, admin.cookie);
    expect(revoked).toEqual({ status: 200, json: { id: grantId, revoked: true } });
    expect(await db.select().from(oidcPayloads).where(eq(oidcPayloads.grantId, grantId))).toEqual([]);
    expect(
      await db
        .select()
        .from(oidcPayloads)
        .where(and(eq(oidcPayloads.model, 'Grant'), eq(oidcPayloads.id, grantId))),
    ).toEqual([]);
    expect(
      await db
        .select()
        .from(oidcPayloads)
        .where(and(eq(oidcPayloads.model, 'Grant'), eq(oidcPayloads.id, foreign))),
    ).toHaveLength(1);
    expect((await call('DELETE', `/v1/connected-apps/${grantId}?organization_slug=${org.slug}`, admin.cookie)).status).toBe(404);
    const audits = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'connected_app.revoked')));
    expect(audits.map((a) => a.summary)).toEqual([{ clientId: 'https://agent.example/client.json', userId: admin.user.id }]);
    expect((await call('DELETE', '/v1/connected-apps/not%20an%20id', admin.cookie)).status).toBe(400);
  });
});
