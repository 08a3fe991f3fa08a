import { EVENT_TYPES } from '@svc/contracts/events';
import { organizations } from '@svc/db/schema/organizations';
import { roles } from '@svc/db/schema/roles';
import { webhookDeliveries, webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { seedThirdPartyGrant } from '../connected-apps/connected-apps.matrix.ts';
import { seedWebhookEndpoint } from './webhooks.fixtures.ts';

/**
 * Issue 5 item 2: every catalogued mutation that exists records exactly one event in its own
 * transaction, and one pending delivery per enabled endpoint subscribed to the type: none for a
 * disabled endpoint, one subscribed to other types, or one of another organization. Each
 * mutation is made through its real route.
 */

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await server?.close();
});

type Json = Record<string, any>;

async function call(method: string, path: string, opts: { cookie?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(opts.body ?? {}),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as Json, text };
}

function expectOk(res: { status: number; text: string }, what: string): void {
  expect(res.status >= 200 && res.status < 300, `${what}: ${res.status} ${res.text}`).toBe(true);
}

async function eventIdsOf(tenantId: string): Promise<Set<string>> {
  const rows = await server.services.db.select({ id: webhookEvents.id }).from(webhookEvents).where(eq(webhookEvents.tenantId, tenantId));
  return new Set(rows.map((r) => r.id));
}

describe('catalogued mutations emit one event and one delivery per subscribed, enabled endpoint', () => {
  it('through every route that exists today', async () => {
    const db = server.services.db;
    const box = server.services.secretBox;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const all = [...EVENT_TYPES];
    const subscribed = [
      (await seedWebhookEndpoint(db, box, { tenantId: org.id, eventTypes: all })).id,
      (await seedWebhookEndpoint(db, box, { tenantId: org.id, eventTypes: all })).id,
    ];
    const disabled = await seedWebhookEndpoint(db, box, { tenantId: org.id, eventTypes: all, enabled: false });
    const unsubscribed = await seedWebhookEndpoint(db, box, { tenantId: org.id, eventTypes: ['export.completed'] });
    const elsewhere = await seedWebhookEndpoint(db, box, { tenantId: other.id, eventTypes: all });

    const seen = new Set<string>();
    let known = await eventIdsOf(org.id);

    /** Runs one mutation and checks the events it recorded: exactly `types`, in any order. */
    async function expectEvents<T>(types: string[], mutation: () => Promise<T>): Promise<T> {
      const result = await mutation();
      const now = await eventIdsOf(org.id);
      const fresh = [...now].filter((id) => !known.has(id));
      known = now;
      const events = fresh.length
        ? await db.select().from(webhookEvents).where(inArray(webhookEvents.id, fresh))
        : ([] as (typeof webhookEvents.$inferSelect)[]);
      expect(events.map((e) => e.type).sort(), `events of ${types.join(', ')}`).toEqual([...types].sort());
      for (const event of events) {
        seen.add(event.type);
        const deliveries = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, event.id));
        expect(deliveries.map((d) => d.endpointId).sort(), event.type).toEqual([...subscribed].sort());
        expect(deliveries.every((d) => d.status === 'pending' && d.eventType === event.type && d.tenantId === org.id)).toBe(true);
        expect(event.data).toMatchObject({ organizationId: org.id, actor: expect.any(Object) });
        // Payload data never carries a secret, token, hash or request facts.
        expect(JSON.stringify(event.data), event.type).not.toMatch(/sk_live_|whsec_|svc_inv_|ipAddress|userAgent/);
      }
      return result;
    }

    // Invitations: created, revoked; another created and accepted (accepted + member.added).
    const inv = await expectEvents(['invitation.created'], () =>
      call('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email: 'first@example.com' } }),
    );
    expectOk(inv, 'invitation create');
    expectOk(
      await expectEvents(['invitation.revoked'], () =>
        call('POST', `/v1/invitations/${inv.json.invitation.id}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie }),
      ),
      'invitation revoke',
    );
    const invitee = await seedSignedIn(db, { email: 'invitee@example.com' });
    const second = await expectEvents(['invitation.created'], () =>
      call('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email: 'invitee@example.com' } }),
    );
    expectOk(
      await expectEvents(['invitation.accepted', 'member.added'], () =>
        call('POST', '/v1/invitations/accept', { cookie: invitee.cookie, body: { token: second.json.invitationToken } }),
      ),
      'invitation accept',
    );

    // Users.
    const user = await expectEvents(['user.created'], () =>
      call('POST', '/v1/users', { cookie: admin.cookie, body: { organization_slug: org.slug, email: 'made@example.com', name: 'Made' } }),
    );
    expectOk(user, 'user create');
    expectOk(
      await expectEvents(['user.updated'], () =>
        call('PATCH', `/v1/users/${user.json.id}`, { cookie: admin.cookie, body: { organization_slug: org.slug, roleKey: 'org_admin' } }),
      ),
      'user update',
    );

    // Sessions.
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expectOk(
      await expectEvents(['session.revoked'], () =>
        call('POST', `/v1/sessions/${member.sessionId}/revoke?organization_slug=${org.slug}`, { cookie: admin.cookie }),
      ),
      'session revoke',
    );

    // Roles.
    const role = await expectEvents(['role.created'], () =>
      call('POST', '/v1/roles', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, key: 'auditor', name: 'Auditor', permissions: ['audit.read'] },
      }),
    );
    expectOk(role, 'role create');
    expectOk(
      await expectEvents(['role.updated'], () =>
        call('PATCH', `/v1/roles/${role.json.id}`, { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Auditors' } }),
      ),
      'role update',
    );
    expectOk(
      await expectEvents(['role.deleted'], () =>
        call('DELETE', `/v1/roles/${role.json.id}?organization_slug=${org.slug}`, { cookie: admin.cookie }),
      ),
      'role delete',
    );

    // API keys.
    const key = await expectEvents(['api_key.created'], () =>
      call('POST', `/v1/tenants/${org.id}/api-keys`, { cookie: admin.cookie, body: { name: 'Events', scopes: ['tenant.read'] } }),
    );
    expectOk(key, 'api key create');
    expectOk(
      await expectEvents(['api_key.rotated'], () => call('POST', `/v1/api-keys/${key.json.apiKey.id}/rotate`, { cookie: admin.cookie })),
      'api key rotate',
    );
    expectOk(
      await expectEvents(['api_key.revoked'], () => call('POST', `/v1/api-keys/${key.json.apiKey.id}/revoke`, { cookie: admin.cookie })),
      'api key revoke',
    );

    // Applications.
    const app = await expectEvents(['application.created'], () =>
      call('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, name: 'Events app' } }),
    );
    expectOk(app, 'application create');
    expectOk(
      await expectEvents(['application.updated'], () =>
        call('PATCH', `/v1/applications/${app.json.application.id}`, {
          cookie: admin.cookie,
          body: { organization_slug: org.slug, name: 'Events app 2' },
        }),
      ),
      'application update',
    );
    expectOk(
      await expectEvents(['application.secret_rotated'], () =>
        call('POST', `/v1/applications/${app.json.application.id}/rotate-secret`, {
          cookie: admin.cookie,
          body: { organization_slug: org.slug },
        }),
      ),
      'application secret rotation',
    );

    // The organization itself.
    expectOk(
      await expectEvents(['tenant.updated'], () =>
        call('PATCH', `/v1/tenants/${org.id}`, { cookie: admin.cookie, body: { name: 'Renamed' } }),
      ),
      'tenant update',
    );

    const domain = await expectEvents(['domain.created'], () =>
      call('POST', '/v1/domains', { cookie: admin.cookie, body: { organization_slug: org.slug, domain: 'events.example.net' } }),
    );
    expectOk(domain, 'domain create');
    expectOk(
      await expectEvents(['domain.updated'], () =>
        call('PATCH', `/v1/domains/${domain.json.id}`, { cookie: admin.cookie, body: { policy: 'require_sso' } }),
      ),
      'domain update',
    );
    expectOk(
      await expectEvents(['domain.deleted'], () => call('DELETE', `/v1/domains/${domain.json.id}`, { cookie: admin.cookie })),
      'domain delete',
    );
    expectOk(
      await expectEvents(['third_party_access.updated'], () =>
        call('PATCH', '/v1/third-party-access', { cookie: admin.cookie, body: { organization_slug: org.slug, mode: 'off' } }),
      ),
      'third-party access',
    );
    const grantId = await seedThirdPartyGrant(server.services.db, { tenantId: org.id, slug: org.slug, userId: admin.user.id });
    expectOk(
      await expectEvents(['connected_app.revoked'], () =>
        call('DELETE', `/v1/connected-apps/${grantId}?organization_slug=${org.slug}`, { cookie: admin.cookie }),
      ),
      'connected app revoke',
    );

    const link = await expectEvents(['setup_link.created'], () =>
      call('POST', '/v1/setup-links', { cookie: admin.cookie, body: { organization_slug: org.slug, purpose: 'domain' } }),
    );
    expectOk(link, 'setup link create');
    expectOk(
      await expectEvents(['setup_link.revoked'], () => call('POST', `/v1/setup-links/${link.json.id}/revoke`, { cookie: admin.cookie })),
      'setup link revoke',
    );

    expect([...seen].sort()).toEqual(
      [
        'setup_link.created',
        'setup_link.revoked',
        'domain.created',
        'domain.updated',
        'domain.deleted',
        'third_party_access.updated',
        'connected_app.revoked',
        'invitation.created',
        'invitation.revoked',
        'invitation.accepted',
        'member.added',
        'user.created',
        'user.updated',
        'session.revoked',
        'role.created',
        'role.updated',
        'role.deleted',
        'api_key.created',
        'api_key.rotated',
        'api_key.revoked',
        'application.created',
        'application.updated',
        'application.secret_rotated',
        'tenant.updated',
      ].sort(),
    );
    // Nothing reached the disabled, the unsubscribed or the other organization's endpoint.
    const stray = await db
      .select()
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.endpointId, [disabled.id, unsubscribed.id, elsewhere.id]));
    expect(stray).toEqual([]);
    // And svc's own webhook management is not in the catalog: creating an endpoint emits nothing.
    await expectEvents([], () =>
      call('POST', '/v1/webhook-endpoints', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, url: 'http://127.0.0.1:9/x', eventTypes: ['user.created'] },
      }),
    );
  });
});

describe('a mutation that fails leaves no event', () => {
  it('refused before writing (409): no event, no delivery', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id, eventTypes: [...EVENT_TYPES] });
    const body = { organization_slug: org.slug, key: 'taken', name: 'Taken', permissions: ['audit.read'] };
    expectOk(await call('POST', '/v1/roles', { cookie: admin.cookie, body }), 'role create');
    const before = await eventIdsOf(org.id);
    const again = await call('POST', '/v1/roles', { cookie: admin.cookie, body });
    expect(again.status).toBe(409);
    expect(await eventIdsOf(org.id)).toEqual(before);
  });

  it('rolled back after its event was recorded (a delivery insert fails): no role, no audit entry, no event', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const poisoned = await seedWebhookEndpoint(db, server.services.secretBox, { tenantId: org.id, eventTypes: ['role.created'] });
    // A trigger of this test's own database makes the delivery insert of this one endpoint fail:
    // the event is already written in the same transaction when it does.
    await db.execute(
      sql.raw(`
      create function test_poison_delivery() returns trigger language plpgsql as $$
      begin
        if new.endpoint_id = '${poisoned.id}' then
          raise exception 'poisoned delivery';
        end if;
        return new;
      end $$;
      create trigger test_poison_delivery before insert on webhook_deliveries
        for each row execute function test_poison_delivery();`),
    );
    await db.execute(sql`select graphile_worker.remove_job('webhooks:dispatch')`);
    try {
      const res = await call('POST', '/v1/roles', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, key: 'doomed', name: 'Doomed', permissions: ['audit.read'] },
      });
      expect(res.status, res.text).toBe(500);
      expect(await eventIdsOf(org.id)).toEqual(new Set());
      expect(
        await db
          .select()
          .from(roles)
          .where(and(eq(roles.tenantId, org.id), eq(roles.key, 'doomed'))),
      ).toEqual([]);
      const audit = (await db.execute(
        sql`select count(*)::int as n from audit_logs where tenant_id = ${org.id} and action = 'role.created'`,
      )) as unknown as { n: number }[];
      expect(audit[0]?.n).toBe(0);
      const jobs = (await db.execute(
        sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'webhooks:dispatch'`,
      )) as unknown as { n: number }[];
      expect(jobs[0]?.n).toBe(0);
    } finally {
      await db.execute(sql.raw('drop trigger test_poison_delivery on webhook_deliveries; drop function test_poison_delivery();'));
    }
  });
});

describe("the platform's catalog changes are events of the platform workspace", () => {
  it('each change of an API resource or product role emits one event there, and none in any organization', async () => {
    const db = server.services.db;
    const box = server.services.secretBox;
    const platform = await seedSignedIn(db, { platformAdmin: true });
    const [workspace] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.kind, 'platform'));
    const platformId = workspace?.id as string;
    const all = [...EVENT_TYPES];
    const endpoint = await seedWebhookEndpoint(db, box, { tenantId: platformId, eventTypes: all });
    const tenant = await seedOrganization(db);
    const tenantEndpoint = await seedWebhookEndpoint(db, box, { tenantId: tenant.id, eventTypes: all });
    let known = await eventIdsOf(platformId);
    const tenantBefore = await eventIdsOf(tenant.id);

    async function expectEvents<T extends { status: number; text: string }>(types: string[], mutation: () => Promise<T>): Promise<T> {
      const result = await mutation();
      expectOk(result, types.join(', '));
      const now = await eventIdsOf(platformId);
      const fresh = [...now].filter((id) => !known.has(id));
      known = now;
      const events = fresh.length ? await db.select().from(webhookEvents).where(inArray(webhookEvents.id, fresh)) : [];
      expect(events.map((e) => e.type).sort()).toEqual([...types].sort());
      for (const event of events) {
        const deliveries = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, event.id));
        expect(deliveries.map((d) => d.endpointId)).toEqual([endpoint.id]);
        expect(event.data).toMatchObject({ organizationId: platformId, actor: { type: 'user', id: platform.user.id } });
      }
      return result;
    }

    const resource = await expectEvents(['api_resource.created'], () =>
      call('POST', '/v1/api-resources', {
        cookie: platform.cookie,
        body: { identifier: 'https://events.example.com', name: 'Events API', permissions: [{ name: 'events.read' }] },
      }),
    );
    const id = resource.json.id as string;
    await expectEvents(['api_resource.updated'], () =>
      call('PATCH', `/v1/api-resources/${id}`, { cookie: platform.cookie, body: { name: 'Events' } }),
    );
    await expectEvents(['api_resource.updated'], () =>
      call('POST', `/v1/api-resources/${id}/permissions`, { cookie: platform.cookie, body: { name: 'events.write' } }),
    );
    await expectEvents(['api_resource.updated'], () =>
      call('PATCH', `/v1/api-resources/${id}/permissions/events.write`, { cookie: platform.cookie, body: { description: 'Write' } }),
    );
    await expectEvents(['api_resource.updated'], () =>
      call('DELETE', `/v1/api-resources/${id}/permissions/events.write`, { cookie: platform.cookie }),
    );
    const role = await expectEvents(['product_role.created'], () =>
      call('POST', '/v1/product-roles', {
        cookie: platform.cookie,
        body: { key: 'events_reader', name: 'Reader', permissions: ['events.read'] },
      }),
    );
    await expectEvents(['product_role.updated'], () =>
      call('PATCH', `/v1/product-roles/${role.json.id}`, { cookie: platform.cookie, body: { permissions: [] } }),
    );
    await expectEvents(['product_role.updated'], () =>
      call('PATCH', '/v1/product-roles/prl_org_member', { cookie: platform.cookie, body: { permissions: ['events.read'] } }),
    );
    await expectEvents(['product_role.deleted'], () => call('DELETE', `/v1/product-roles/${role.json.id}`, { cookie: platform.cookie }));
    await expectEvents(['api_resource.deleted'], () => call('DELETE', `/v1/api-resources/${id}`, { cookie: platform.cookie }));
    // A refused change (a taken identifier) emits nothing.
    await call('POST', '/v1/api-resources', { cookie: platform.cookie, body: { identifier: 'https://taken.example.com', name: 'Taken' } });
    known = await eventIdsOf(platformId);
    const refused = await call('POST', '/v1/api-resources', {
      cookie: platform.cookie,
      body: { identifier: 'https://taken.example.com', name: 'Again' },
    });
    expect(refused.status).toBe(409);
    expect(await eventIdsOf(platformId)).toEqual(known);

    expect(await eventIdsOf(tenant.id)).toEqual(tenantBefore);
    expect(await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, tenantEndpoint.id))).toEqual([]);
  });
});
