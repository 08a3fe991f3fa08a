import { newId } from '@svc/contracts/ids';
import { roles } from '@svc/db/schema/roles';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';

/**
 * GET /v1/tenants/{id}/overview against real state: every count and checklist flag is changed
 * through the routes that change it (a sign-in through svc's OpenID Provider included), next to a
 * busy organization whose rows must never be counted.
 */

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
});
afterAll(async () => {
  await server?.close();
});

/** An application's registered redirect URL: the sign-in stops there (nothing listens). */
const REDIRECT = 'http://127.0.0.1:53121/callback';

type Caller = { cookie?: string; authorization?: string };

async function call(method: string, path: string, opts: Caller & { body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function overviewOf(id: string, caller: Caller): Promise<any> {
  const res = await call('GET', `/v1/tenants/${id}/overview`, caller);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function ok(res: Promise<{ status: number; body: any }>, status: number): Promise<any> {
  const done = await res;
  expect(done.status, JSON.stringify(done.body)).toBe(status);
  return done.body;
}

function monthNow(): { periodStart: string; periodEnd: string } {
  const d = new Date();
  return {
    periodStart: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString(),
    periodEnd: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString(),
  };
}

/** A person signs in to the application through svc's OpenID Provider (svc's hosted sign-in, the engine), as a browser would. */
async function signInThrough(application: { id: string }, secretKey: string): Promise<void> {
  const config = await oidc.discovery(new URL(server.url), application.id, undefined, oidc.ClientSecretBasic(secretKey), {
    execute: [oidc.allowInsecureRequests],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid email',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: oidc.randomState(),
  });
  const { callback } = await browseToRedirect(new CookieJar(), url, { svcUrl: server.url, redirectUri: REDIRECT });
  expect(callback.searchParams.get('code')).toEqual(expect.any(String));
}

let n = 0;

/** What an organization's admin does to fill it: an application signed in to, an invitation, a webhook endpoint, usage. */
async function fill(org: { slug: string; id: string }, admin: SignedIn): Promise<void> {
  const created = await ok(
    call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Busy app', redirectUrls: [REDIRECT] },
    }),
    201,
  );
  await signInThrough(created.application, created.secretKey);
  await ok(
    call('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email: `busy-${++n}@example.com` } }),
    201,
  );
  await ok(
    call('POST', '/v1/webhook-endpoints', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created'] },
    }),
    201,
  );
  await ok(
    call('POST', '/v1/usage-events', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, idempotencyKey: `busy-${++n}`, eventType: 'api.call', quantity: 7 },
    }),
    201,
  );
}

describe('GET /v1/tenants/{id}/overview', () => {
  it("every count and checklist item follows the organization's state, never another organization's", async () => {
    const db = server.services.db;
    const platform = await seedSignedIn(db, { platformAdmin: true });
    // A busy organization beside it, on a plan with the same limit: none of its rows may show.
    const busy = await seedOrganization(db);
    const busyAdmin = await seedSignedIn(db, { organization: busy, roleKey: 'org_admin' });
    await fill(busy, busyAdmin);
    const busyBefore = await overviewOf(busy.id, { cookie: busyAdmin.cookie });
    expect(busyBefore).toMatchObject({
      counts: { members: 1, applications: 1, activeSessions: 1 },
      usage: { events: 1 },
      checklist: { applicationCreated: true, signInTried: true, memberInvited: true, webhookAdded: true },
    });

    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const read = () => overviewOf(org.id, { cookie: admin.cookie });
    expect(await read()).toEqual({
      counts: { members: 1, applications: 0, activeSessions: 1 },
      usage: { ...monthNow(), events: 0, limits: [] },
      checklist: { applicationCreated: false, signInTried: false, memberInvited: false, webhookAdded: false },
    });

    // An application.
    const created = await ok(
      call('POST', '/v1/applications', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, name: 'Web', redirectUrls: [REDIRECT] },
      }),
      201,
    );
    let now = await read();
    expect(now.counts.applications).toBe(1);
    expect(now.checklist).toEqual({ applicationCreated: true, signInTried: false, memberInvited: false, webhookAdded: false });

    // Someone signs in to it through svc's OpenID Provider: their svc session is not the organization's.
    await signInThrough(created.application, created.secretKey);
    now = await read();
    expect(now.checklist.signInTried).toBe(true);
    expect(now.counts).toEqual({ members: 1, applications: 1, activeSessions: 1 });

    // An invitation, even once revoked.
    const invited = await ok(
      call('POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email: `invitee-${++n}@example.com` } }),
      201,
    );
    expect((await read()).checklist.memberInvited).toBe(true);
    await ok(
      call('POST', `/v1/invitations/${invited.invitation.id}/revoke`, { cookie: admin.cookie, body: { organization_slug: org.slug } }),
      200,
    );
    now = await read();
    expect(now.checklist.memberInvited).toBe(true);
    expect(now.counts.members).toBe(1);

    // A member with a live session; the session revoked.
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect((await read()).counts).toEqual({ members: 2, applications: 1, activeSessions: 2 });
    await ok(call('POST', `/v1/sessions/${member.sessionId}/revoke`, { cookie: admin.cookie, body: { organization_slug: org.slug } }), 200);
    expect((await read()).counts).toEqual({ members: 2, applications: 1, activeSessions: 1 });

    // A webhook endpoint, then none.
    const endpoint = await ok(
      call('POST', '/v1/webhook-endpoints', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, url: 'http://127.0.0.1:9/hook', eventTypes: ['member.added'] },
      }),
      201,
    );
    expect((await read()).checklist.webhookAdded).toBe(true);
    await ok(call('DELETE', `/v1/webhook-endpoints/${endpoint.endpoint.id}?organization_slug=${org.slug}`, { cookie: admin.cookie }), 200);
    expect((await read()).checklist.webhookAdded).toBe(false);

    // Usage this calendar month (UTC): every type counts; an event of last month does not.
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ['usage.write'] });
    const meter = (body: Record<string, unknown>) =>
      ok(call('POST', '/v1/usage-events', { authorization: key.authorization, body: { idempotencyKey: `u-${++n}`, ...body } }), 201);
    await meter({ eventType: 'api.call', quantity: 3 });
    await meter({ eventType: 'export.run', quantity: 2 });
    await meter({ eventType: 'api.call', occurredAt: new Date(Date.parse(monthNow().periodStart) - 3_600_000).toISOString() });
    expect((await read()).usage).toEqual({ ...monthNow(), events: 2, limits: [] });

    // A plan with a monthly limit: its quantity this month beside it.
    const planKey = `metered-${++n}`;
    await ok(
      call('POST', '/v1/subscription-plans', {
        cookie: platform.cookie,
        body: { key: planKey, name: 'Metered', seatLimit: null, usageLimits: { 'api.call': 1000 } },
      }),
      201,
    );
    for (const organization of [org, busy]) {
      await ok(
        call('PATCH', `/v1/subscription?organization_slug=${organization.slug}`, { cookie: platform.cookie, body: { planKey } }),
        200,
      );
    }
    expect((await read()).usage).toEqual({ ...monthNow(), events: 2, limits: [{ eventType: 'api.call', limit: 1000, quantity: 3 }] });

    // The busy organization saw none of it, nor it of the busy one.
    const busyAfter = await overviewOf(busy.id, { cookie: busyAdmin.cookie });
    expect(busyAfter).toEqual({
      ...busyBefore,
      usage: { ...busyBefore.usage, limits: [{ eventType: 'api.call', limit: 1000, quantity: 7 }] },
    });
  });

  it("another organization's id is the 404 of an unknown one; a member without tenant.read 403; keys by scope", async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await seedSignedIn(db, { organization: other, roleKey: 'org_admin' });

    const foreign = await call('GET', `/v1/tenants/${other.id}/overview`, { cookie: admin.cookie });
    const unknown = await call('GET', `/v1/tenants/${newId('organization')}/overview`, { cookie: admin.cookie });
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(foreign.body.error).toEqual({ ...unknown.body.error, requestId: expect.any(String) });

    await db.insert(roles).values({ id: newId('role'), tenantId: org.id, key: 'metering', name: 'Metering', permissions: ['usage.read'] });
    const metering = await seedSignedIn(db, { organization: org, roleKey: 'metering' });
    const refused = await call('GET', `/v1/tenants/${org.id}/overview`, { cookie: metering.cookie });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    expect((await overviewOf(org.id, { cookie: member.cookie })).counts.members).toBe(3);
    const platform = await seedSignedIn(db, { platformAdmin: true });
    expect((await overviewOf(org.id, { cookie: platform.cookie })).counts.members).toBe(3);

    const reader = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    expect((await overviewOf(org.id, { authorization: reader.authorization })).counts.members).toBe(3);
    expect((await call('GET', `/v1/tenants/${other.id}/overview`, { authorization: reader.authorization })).status).toBe(404);
    const blind = await seedApiKey(db, { tenantId: org.id, scopes: ['usage.read'] });
    expect((await call('GET', `/v1/tenants/${org.id}/overview`, { authorization: blind.authorization })).status).toBe(403);

    expect((await call('GET', `/v1/tenants/${org.id}/overview`)).status).toBe(401);
    expect((await call('GET', `/v1/tenants/usr_${'0'.repeat(20)}/overview`, { cookie: admin.cookie })).status).toBe(400);
  });
});
