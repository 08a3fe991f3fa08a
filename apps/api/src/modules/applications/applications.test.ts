import { createHash } from 'node:crypto';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { applications } from '@svc/db/schema/applications';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships } from '@svc/db/schema/identity';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { MATRIX } from './applications.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
});
afterAll(async () => {
  await server?.close();
});

type Json = any;

async function call(
  method: string,
  path: string,
  opts: { cookie?: string; authorization?: string; body?: unknown; origin?: string } = {},
): Promise<{ status: number; body: Json; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json', origin: opts.origin ?? server.services.config.publicUrl } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

/** A fresh organization and its signed-in org admin. */
async function adminOfNewOrg(): Promise<{ org: Awaited<ReturnType<typeof seedOrganization>>; admin: SignedIn }> {
  const org = await seedOrganization(server.services.db);
  const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
  return { org, admin };
}

async function create(admin: SignedIn, org: { slug: string }, body: Record<string, unknown> = {}) {
  const res = await call('POST', '/v1/applications', {
    cookie: admin.cookie,
    body: { organization_slug: org.slug, name: 'Web App', ...body },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { application: Json; secretKey: string };
}

async function auditOf(tenantId: string, action: string) {
  return server.services.db
    .select()
    .from(auditLogs)
    .where(and(eq(auditLogs.tenantId, tenantId), eq(auditLogs.action, action)));
}

const clientConfig = (publishableKey: string) => call('GET', `/v1/client/config?publishable_key=${publishableKey}`);
const backend = (secretKey: string) => call('GET', '/v1/backend/application', { authorization: `Bearer ${secretKey}` });

describeAuthMatrix('applications', () => server, MATRIX);

describe('POST /v1/applications', () => {
  it('answers 201 with keys; the secret is shown once, works as a backend key, and is stored only as its hash', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        name: 'Web App',
        redirectUrls: ['https://app.example.com/callback'],
        allowedOrigins: ['https://app.example.com'],
        oauth: { productionProvider: 'github' },
      },
    });
    expect(res.status, res.text).toBe(201);
    const { application, secretKey } = res.body;
    expect(Object.keys(res.body).sort()).toEqual(['application', 'secretKey']);
    expect(application).toEqual({
      id: expect.stringMatching(/^app_[0-9A-Za-z]{20}$/),
      slug: 'web-app',
      name: 'Web App',
      logoUrl: null,
      status: 'active',
      publishableKey: expect.stringMatching(/^pk_live_[0-9A-Za-z]{24}$/),
      secretKeyPrefix: secretKey.slice(0, 12),
      redirectUrls: ['https://app.example.com/callback'],
      allowedOrigins: ['https://app.example.com'],
      postLogoutRedirectUrls: [],
      backchannelLogoutUrl: null,
      clientType: 'confidential',
      signInAudience: 'anyone',
      oauth: { productionProvider: 'github' },
      // Machine client settings, none for a confidential client.
      tokenEndpointAuthMethod: null,
      jwks: null,
      jwksUri: null,
      permissions: [],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);

    // The keys are live: the secret key on the backend route, the publishable key on client config.
    const checked = await backend(secretKey);
    expect(checked.status).toBe(200);
    expect(checked.body.application.id).toBe(application.id);
    const config = await clientConfig(application.publishableKey);
    expect(config.status).toBe(200);
    expect(config.body.organization.slug).toBe(org.slug);
    expect(config.body.oauth.production).toEqual({ mode: 'customer_owned', provider: 'github', credentialsRequired: true });

    // Never again: not in a read, a list, the database or the audit entry.
    const [row] = await server.services.db.select().from(applications).where(eq(applications.id, application.id));
    expect(row?.secretKeyHash).toBe(sha256(secretKey));
    const read = await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie });
    const list = await call('GET', `/v1/applications?organization_slug=${org.slug}`, { cookie: admin.cookie });
    for (const text of [read.text, list.text]) {
      expect(text).not.toContain(secretKey);
      expect(text).not.toContain(sha256(secretKey));
      expect(text).not.toMatch(/secretKeyHash|isKeyless|tenantId/);
    }
    expect(read.body).toEqual(application);
    const entries = await auditOf(org.id, 'application.created');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actorType: 'user', actorId: admin.user.id, targetType: 'application', targetId: application.id });
    expect(entries[0]?.summary).toMatchObject({ name: 'Web App', slug: 'web-app' });
    expect(JSON.stringify(entries[0])).not.toContain(secretKey.slice(8));
    expect(JSON.stringify(entries[0])).not.toContain(sha256(secretKey));
  });

  it('derives slugs from the name (-2 when taken); an explicit taken slug is 409; another organization may reuse it', async () => {
    const { org, admin } = await adminOfNewOrg();
    expect((await create(admin, org, { name: 'Shop' })).application.slug).toBe('shop');
    expect((await create(admin, org, { name: 'Shop' })).application.slug).toBe('shop-2');
    expect((await create(admin, org, { name: 'Other', slug: 'storefront' })).application.slug).toBe('storefront');

    const clash = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Again', slug: 'storefront' },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
    expect(await auditOf(org.id, 'application.created')).toHaveLength(3);

    const other = await adminOfNewOrg();
    expect((await create(other.admin, other.org, { name: 'Again', slug: 'storefront' })).application.slug).toBe('storefront');
  });

  it('a tenant API key with applications.manage creates in its own organization; without organization_slug too', async () => {
    const { org } = await adminOfNewOrg();
    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['applications.manage', 'applications.read'] });
    const res = await call('POST', '/v1/applications', { authorization: key.authorization, body: { name: 'From CI' } });
    expect(res.status, res.text).toBe(201);
    const list = await call('GET', '/v1/applications', { authorization: key.authorization });
    expect(list.body.data.map((a: Json) => a.id)).toEqual([res.body.application.id]);
    const [entry] = await auditOf(org.id, 'application.created');
    expect(entry).toMatchObject({ actorType: 'api_key', actorId: key.id });
  });

  it('refuses bad input with 400 and creates nothing; an unknown organization is 404', async () => {
    const { org, admin } = await adminOfNewOrg();
    const bad = [
      {},
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'a\u0000b' },
      { name: 'App', slug: 'Not A Slug' },
      { name: 'App', redirectUrls: ['http://app.example.com/callback'] },
      { name: 'App', allowedOrigins: ['https://app.example.com/'] },
      { name: 'App', oauth: { productionProvider: 'Not a provider' } },
      { name: 'App', status: 'disabled', secretKey: 'sk_live_chosen' },
    ];
    for (const body of bad.slice(0, -1)) {
      const res = await call('POST', '/v1/applications', { cookie: admin.cookie, body: { organization_slug: org.slug, ...body } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    // Unknown fields are ignored, never applied: a caller cannot choose its secret or status.
    const sneaky = await create(admin, org, bad.at(-1) as Record<string, unknown>);
    expect(sneaky.application.status).toBe('active');
    expect(sneaky.secretKey).not.toBe('sk_live_chosen');
    expect(await auditOf(org.id, 'application.created')).toHaveLength(1);

    const unknown = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: 'no-such-org', name: 'App' },
    });
    expect(unknown.status).toBe(404);
  });

  it('a cross-site request with the session cookie is refused and creates nothing (CSRF)', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      origin: 'https://evil.example',
      body: { organization_slug: org.slug, name: 'Forged' },
    });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('csrf_rejected');
    const list = await call('GET', `/v1/applications?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.body.data).toEqual([]);
  });

  it('an application secret key cannot manage applications (it is not a tenant API key)', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { secretKey } = await create(admin, org);
    const res = await call('POST', '/v1/applications', { authorization: `Bearer ${secretKey}`, body: { name: 'Escalated' } });
    expect(res.status).toBe(403);
    expect((await call('GET', '/v1/applications', { authorization: `Bearer ${secretKey}` })).status).toBe(403);
  });
});

describe('GET /v1/applications', () => {
  it('pages newest first with a cursor bound to the organization and filters', async () => {
    const { org, admin } = await adminOfNewOrg();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.unshift((await create(admin, org, { name: `App ${i}` })).application.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const q: string = `/v1/applications?organization_slug=${org.slug}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await call('GET', q, { cookie: admin.cookie });
      expect(page.status, page.text).toBe(200);
      sizes.push(page.body.data.length);
      seen.push(...page.body.data.map((a: Json) => a.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(ids);

    // Another organization's applications never appear.
    const other = await adminOfNewOrg();
    await create(other.admin, other.org);
    const all = await call('GET', `/v1/applications?organization_slug=${org.slug}&limit=200`, { cookie: admin.cookie });
    expect(all.body.data.map((a: Json) => a.id)).toEqual(ids);

    // A status filter, and a cursor replayed with another filter or organization is refused.
    await call('POST', `/v1/applications/${ids[1]}/status`, { cookie: admin.cookie, body: { status: 'disabled' } });
    const disabled = await call('GET', `/v1/applications?organization_slug=${org.slug}&status=disabled`, { cookie: admin.cookie });
    expect(disabled.body.data.map((a: Json) => a.id)).toEqual([ids[1]]);
    const first = await call('GET', `/v1/applications?organization_slug=${org.slug}&limit=1`, { cookie: admin.cookie });
    const replayed = await call(
      'GET',
      `/v1/applications?organization_slug=${org.slug}&limit=1&status=active&cursor=${first.body.nextCursor}`,
      {
        cookie: admin.cookie,
      },
    );
    expect(replayed.status).toBe(400);
    for (const q of ['limit=0', 'limit=201', 'cursor=not-a-cursor', 'status=paused']) {
      const res = await call('GET', `/v1/applications?organization_slug=${org.slug}&${q}`, { cookie: admin.cookie });
      expect(res.status, q).toBe(400);
    }
  });

  it("without organization_slug lists the session's active workspace", async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    const res = await call('GET', '/v1/applications', { cookie: admin.cookie });
    expect(res.body.data.map((a: Json) => a.id)).toEqual([application.id]);
  });
});

describe('GET /v1/applications/{id}', () => {
  it('a malformed id is 400; unknown, foreign and out-of-organization ids are the same 404', async () => {
    const { org, admin } = await adminOfNewOrg();
    const mine = (await create(admin, org)).application;
    const other = await adminOfNewOrg();
    const foreign = (await create(other.admin, other.org)).application;

    expect((await call('GET', `/v1/applications/${mine.id}?organization_slug=${org.slug}`, { cookie: admin.cookie })).status).toBe(200);
    expect((await call('GET', '/v1/applications/ten_00000000000000000000', { cookie: admin.cookie })).status).toBe(400);
    const unknown = await call('GET', '/v1/applications/app_00000000000000000000', { cookie: admin.cookie });
    const foreignRead = await call('GET', `/v1/applications/${foreign.id}`, { cookie: admin.cookie });
    const foreignInMine = await call('GET', `/v1/applications/${foreign.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    for (const res of [unknown, foreignRead, foreignInMine]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect(res.body.error.message).toBe(unknown.body.error.message);
      expect(res.text).not.toContain(other.org.name);
    }
    // A member of both organizations still gets 404 for an id named under the wrong one.
    await server.services.db.insert(memberships).values({ tenantId: other.org.id, userId: admin.user.id, roleKey: 'org_admin' });
    const wrongOrg = await call('GET', `/v1/applications/${foreign.id}?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(wrongOrg.status).toBe(404);
    expect((await call('GET', `/v1/applications/${foreign.id}?organization_slug=${other.org.slug}`, { cookie: admin.cookie })).status).toBe(
      200,
    );
  });

  it('the keyless development application is never listed, read or changed, even by a platform admin', async () => {
    const keyless = await call('GET', '/v1/client/config?keyless=1');
    expect(keyless.status).toBe(200);
    const id = keyless.body.application.id as string;
    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const cookie = platform.cookie;
    const attempts = [
      await call('GET', `/v1/applications/${id}`, { cookie }),
      await call('GET', `/v1/applications/${id}?organization_slug=keyless-development`, { cookie }),
      await call('GET', '/v1/applications?organization_slug=keyless-development', { cookie }),
      await call('PATCH', `/v1/applications/${id}`, { cookie, body: { name: 'Mine now', redirectUrls: ['https://evil.example/'] } }),
      await call('POST', `/v1/applications/${id}/status`, { cookie, body: { status: 'disabled' } }),
      await call('POST', `/v1/applications/${id}/rotate-secret`, { cookie, body: {} }),
      await call('POST', '/v1/applications', { cookie, body: { organization_slug: 'keyless-development', name: 'Squatter' } }),
    ];
    for (const res of attempts) {
      expect(res.status, res.text).toBe(404);
    }
    const after = await call('GET', '/v1/client/config?keyless=1');
    expect(after.status).toBe(200);
    expect(after.body.application).toEqual(keyless.body.application);
  });
});

describe('PATCH /v1/applications/{id}', () => {
  it('replaces allowlists, normalized and deduplicated, with one audit entry', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org, { redirectUrls: ['https://old.example.com/cb'] });
    const res = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        name: 'Renamed',
        redirectUrls: [
          ' https://App.Example.com/cb ',
          'https://app.example.com/cb',
          '/after-sign-in',
          'http://localhost:3000/cb',
          'http://127.0.0.1:8080/x?y=1',
        ],
        allowedOrigins: ['https://app.example.com', 'https://app.example.com', 'http://localhost:5173'],
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: application.id,
      name: 'Renamed',
      slug: application.slug,
      redirectUrls: ['https://app.example.com/cb', '/after-sign-in', 'http://localhost:3000/cb', 'http://127.0.0.1:8080/x?y=1'],
      allowedOrigins: ['https://app.example.com', 'http://localhost:5173'],
      publishableKey: application.publishableKey,
      secretKeyPrefix: application.secretKeyPrefix,
    });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(application.updatedAt));
    expect((await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body).toEqual(res.body);
    const entries = await auditOf(org.id, 'application.updated');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.summary).toMatchObject({
      changes: { name: 'Renamed', allowedOrigins: ['https://app.example.com', 'http://localhost:5173'] },
    });

    // Only what is sent changes; an empty list clears.
    const cleared = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { redirectUrls: [] } });
    expect(cleared.body).toMatchObject({
      name: 'Renamed',
      redirectUrls: [],
      allowedOrigins: ['https://app.example.com', 'http://localhost:5173'],
    });
  });

  it.each([
    'http://app.example.com/cb',
    'https://app.example.com/cb#fragment',
    'https://app.example.com/cb#',
    'https://user:password@app.example.com/cb',
    'https://user@app.example.com/cb',
    'javascript:alert(1)',
    'data:text/html,hi',
    'ftp://app.example.com/',
    'https:app.example.com',
    '//evil.example/cb',
    '/\\evil.example',
    '/%2F%2Fevil.example',
    'relative/path',
    'https://app.example.com/a b',
    'https://app.example.com/\u0000',
    '',
  ])('refuses the redirect URL %j with 400 and changes nothing', async (url) => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org, { redirectUrls: ['https://app.example.com/ok'] });
    const res = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { redirectUrls: [url] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const read = await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie });
    expect(read.body.redirectUrls).toEqual(['https://app.example.com/ok']);
    expect(await auditOf(org.id, 'application.updated')).toHaveLength(0);
  });

  it.each([
    'https://app.example.com/',
    'https://app.example.com/path',
    'HTTPS://APP.EXAMPLE.COM',
    'https://app.example.com:443',
    'https://app.example.com?x=1',
    'http://app.example.com',
    'https://user@app.example.com',
    'app.example.com',
    'null',
    '*',
  ])('refuses the origin %j with 400', async (origin) => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    const res = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { allowedOrigins: [origin] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
  });

  it('accepts at most 50 entries per list, and needs at least one field', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    const urls = (n: number) => Array.from({ length: n }, (_, i) => `https://app.example.com/cb/${i}`);
    const origins = (n: number) => Array.from({ length: n }, (_, i) => `https://app${i}.example.com`);
    const patch = (body: unknown) => call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body });
    expect((await patch({ redirectUrls: urls(50), allowedOrigins: origins(50) })).status).toBe(200);
    expect((await patch({ redirectUrls: urls(51) })).status).toBe(400);
    expect((await patch({ allowedOrigins: origins(51) })).status).toBe(400);
    expect((await patch({})).status).toBe(400);
    expect((await patch({ organization_slug: org.slug })).status).toBe(400);
    expect((await patch({ name: ' ' })).status).toBe(400);
  });

  it('the setup context lists the new allowlists at once', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    const context = () => call('GET', `/v1/setup/agent-context?publishable_key=${application.publishableKey}&framework=react`);
    expect((await context()).body.javascriptOriginsSource).toBe('framework_default');
    await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { allowedOrigins: ['https://app.example.com'], redirectUrls: ['https://app.example.com/callback'] },
    });
    const after = (await context()).body;
    expect(after).toMatchObject({
      javascriptOrigins: ['https://app.example.com'],
      javascriptOriginsSource: 'application',
      redirectUrls: ['https://app.example.com/callback'],
      redirectUrlsSource: 'application',
    });
  });

  it('sets and clears the production OAuth provider, as client config shows it', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    const shared = (await clientConfig(application.publishableKey)).body.oauth.sharedDevelopment.provider;
    const set = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { oauth: { productionProvider: 'github' } },
    });
    expect(set.body.oauth).toEqual({ productionProvider: 'github' });
    expect((await clientConfig(application.publishableKey)).body.oauth.production.provider).toBe('github');
    const cleared = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { oauth: { productionProvider: null } },
    });
    expect(cleared.body.oauth).toEqual({ productionProvider: null });
    expect((await clientConfig(application.publishableKey)).body.oauth.production.provider).toBe(shared);
    for (const oauth of [{ productionProvider: 'Git Hub' }, { productionProvider: '' }, { clientSecret: 'x' }, {}]) {
      const res = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { oauth } });
      expect(res.status, JSON.stringify(oauth)).toBe(400);
    }
  });
});

describe('OpenID Connect client settings', () => {
  const patchOf = (admin: SignedIn, id: string) => (body: unknown) =>
    call('PATCH', `/v1/applications/${id}`, { cookie: admin.cookie, body });

  it('a new application is a confidential client anyone may sign in to, with no logout URLs', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    expect(application).toMatchObject({
      clientType: 'confidential',
      signInAudience: 'anyone',
      postLogoutRedirectUrls: [],
      backchannelLogoutUrl: null,
    });
    const chosen = await create(admin, org, {
      name: 'SPA',
      clientType: 'public',
      signInAudience: 'members',
      postLogoutRedirectUrls: ['https://spa.example.com/bye', 'http://localhost:5173/bye'],
      backchannelLogoutUrl: 'https://spa.example.com/backchannel',
    });
    expect(chosen.application).toMatchObject({
      clientType: 'public',
      signInAudience: 'members',
      postLogoutRedirectUrls: ['https://spa.example.com/bye', 'http://localhost:5173/bye'],
      backchannelLogoutUrl: 'https://spa.example.com/backchannel',
    });
    const created = await auditOf(org.id, 'application.created');
    const summary = created.find((e) => e.targetId === chosen.application.id)?.summary as Json;
    expect(summary).toMatchObject({ clientType: 'public', signInAudience: 'members' });
    expect(JSON.stringify(summary)).not.toContain(chosen.secretKey);
  });

  it('PATCH sets every field, normalized and deduplicated; the audit entry and webhook event carry the change and no secret', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application, secretKey } = await create(admin, org);
    const res = await patchOf(
      admin,
      application.id,
    )({
      postLogoutRedirectUrls: [' https://App.Example.com/bye ', 'https://app.example.com/bye', 'http://127.0.0.1:3000/bye'],
      backchannelLogoutUrl: 'https://app.example.com/backchannel-logout',
      clientType: 'public',
      signInAudience: 'members',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      postLogoutRedirectUrls: ['https://app.example.com/bye', 'http://127.0.0.1:3000/bye'],
      backchannelLogoutUrl: 'https://app.example.com/backchannel-logout',
      clientType: 'public',
      signInAudience: 'members',
      name: application.name,
      redirectUrls: application.redirectUrls,
    });
    expect((await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body).toEqual(res.body);
    const changes = {
      postLogoutRedirectUrls: ['https://app.example.com/bye', 'http://127.0.0.1:3000/bye'],
      backchannelLogoutUrl: 'https://app.example.com/backchannel-logout',
      clientType: 'public',
      signInAudience: 'members',
    };
    const entries = await auditOf(org.id, 'application.updated');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.summary).toEqual({ changes });
    const events = await server.services.sql<{ data: Json }[]>`
      select data from webhook_events where tenant_id = ${org.id} and type = 'application.updated'`;
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ changes, id: application.id });
    const [row] = await server.services.db.select().from(applications).where(eq(applications.id, application.id));
    for (const text of [JSON.stringify(entries), JSON.stringify(events), res.text]) {
      expect(text).not.toContain(secretKey);
      expect(text).not.toContain(row?.secretKeyHash);
    }
    // null clears the back-channel URL; back to confidential.
    const cleared = await patchOf(admin, application.id)({ backchannelLogoutUrl: null, clientType: 'confidential' });
    expect(cleared.body).toMatchObject({ backchannelLogoutUrl: null, clientType: 'confidential', signInAudience: 'members' });
  });

  it.each([
    ['postLogoutRedirectUrls', ['javascript:alert(1)']],
    ['postLogoutRedirectUrls', ['https://user:pw@app.example.com/bye']],
    ['postLogoutRedirectUrls', ['https://user@app.example.com/bye']],
    ['postLogoutRedirectUrls', ['https://app.example.com/bye#frag']],
    ['postLogoutRedirectUrls', ['http://app.example.com/bye']],
    ['postLogoutRedirectUrls', ['/bye']],
    ['postLogoutRedirectUrls', ['data:text/html,hi']],
    ['postLogoutRedirectUrls', Array.from({ length: 51 }, (_, i) => `https://app.example.com/bye/${i}`)],
    ['postLogoutRedirectUrls', 'https://app.example.com/bye'],
    ['backchannelLogoutUrl', 'javascript:alert(1)'],
    ['backchannelLogoutUrl', 'http://app.example.com/bc'],
    ['backchannelLogoutUrl', 'https://user:pw@app.example.com/bc'],
    ['backchannelLogoutUrl', 'https://app.example.com/bc#x'],
    ['backchannelLogoutUrl', '/bc'],
    ['backchannelLogoutUrl', ''],
    ['backchannelLogoutUrl', ['https://app.example.com/bc']],
    ['clientType', 'secret'],
    ['clientType', null],
    ['signInAudience', 'everyone'],
  ])('refuses %s = %j with 400 validation_failed and writes nothing', async (field, value) => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org, { postLogoutRedirectUrls: ['https://app.example.com/ok'] });
    const before = (await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body;
    const res = await patchOf(admin, application.id)({ [field]: value });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect((await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body).toEqual(before);
    expect(await auditOf(org.id, 'application.updated')).toHaveLength(0);
    // The same value at creation is refused too, and creates nothing.
    const created = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Refused', [field]: value },
    });
    expect(created.status, created.text).toBe(400);
    expect(created.body.error.code).toBe('validation_failed');
    expect(await auditOf(org.id, 'application.created')).toHaveLength(1);
  });

  it("another organization's application is the same 404, and nothing changes there", async () => {
    const { org, admin } = await adminOfNewOrg();
    await create(admin, org);
    const other = await adminOfNewOrg();
    const foreign = (await create(other.admin, other.org)).application;
    const attack = {
      clientType: 'public',
      postLogoutRedirectUrls: ['https://evil.example/bye'],
      backchannelLogoutUrl: 'https://evil.example/bc',
    };
    for (const res of [
      await patchOf(admin, foreign.id)(attack),
      await patchOf(admin, foreign.id)({ ...attack, organization_slug: org.slug }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const read = await call('GET', `/v1/applications/${foreign.id}`, { cookie: other.admin.cookie });
    expect(read.body).toMatchObject({ clientType: 'confidential', postLogoutRedirectUrls: [], backchannelLogoutUrl: null });
    expect(await auditOf(other.org.id, 'application.updated')).toHaveLength(0);
  });
});

describe('logoUrl', () => {
  const LOGO = 'https://cdn.example.com/brand/logo.svg';
  const BAD = [
    ['plain http', 'http://cdn.example.com/logo.png'],
    ['javascript:', 'javascript:alert(1)'],
    ['data:', 'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4='],
    ['a relative path', '/logo.png'],
    ['a relative name', 'logo.png'],
    ['scheme-relative', '//cdn.example.com/logo.png'],
    ['https without slashes', 'https:cdn.example.com/logo.png'],
    ['userinfo', 'https://user@cdn.example.com/logo.png'],
    ['user and password', 'https://user:secret@cdn.example.com/logo.png'],
    ['over 2,048 characters', `https://cdn.example.com/${'a'.repeat(2048 - 'https://cdn.example.com/'.length + 1)}`],
    ['empty', ''],
    ['no host', 'https://'],
    ['a space', 'https://cdn.example.com/my logo.png'],
    ['a backslash', 'https://cdn.example.com\\evil.example/logo.png'],
  ] as const;

  it.each(BAD)(
    'refuses %s with 400 logo_url_invalid and a message, on create and on update, and stores nothing',
    async (_what, logoUrl) => {
      const { org, admin } = await adminOfNewOrg();
      const created = await call('POST', '/v1/applications', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, name: 'Logo App', logoUrl },
      });
      expect(created.status, created.text).toBe(400);
      expect(created.body.error.code).toBe('logo_url_invalid');
      expect(created.body.error.message).toMatch(/logo URL/);
      expect((await call('GET', `/v1/applications?organization_slug=${org.slug}`, { cookie: admin.cookie })).body.data).toEqual([]);

      const { application } = await create(admin, org, { logoUrl: LOGO });
      const updated = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { logoUrl } });
      expect(updated.status, updated.text).toBe(400);
      expect(updated.body.error.code).toBe('logo_url_invalid');
      expect(updated.body.error.message).toBe(created.body.error.message);
      expect((await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body.logoUrl).toBe(LOGO);
      expect(await auditOf(org.id, 'application.updated')).toHaveLength(0);
    },
  );

  it('round-trips on create, read, list, client config and the backend view; an update replaces it, null clears it', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application, secretKey } = await create(admin, org, { logoUrl: LOGO });
    const everywhere = async () => ({
      read: (await call('GET', `/v1/applications/${application.id}`, { cookie: admin.cookie })).body.logoUrl,
      list: (await call('GET', `/v1/applications?organization_slug=${org.slug}`, { cookie: admin.cookie })).body.data[0].logoUrl,
      config: (await clientConfig(application.publishableKey)).body.application.logoUrl,
      backend: (await backend(secretKey)).body.application.logoUrl,
    });
    expect(application.logoUrl).toBe(LOGO);
    expect(await everywhere()).toEqual({ read: LOGO, list: LOGO, config: LOGO, backend: LOGO });
    const [createdEntry] = await auditOf(org.id, 'application.created');
    expect(createdEntry?.summary).toMatchObject({ logoUrl: LOGO });

    // Stored as a URL parser writes it (scheme and host lower-case), at most 2,048 characters.
    const longest = `https://cdn.example.com/${'b'.repeat(2048 - 'https://cdn.example.com/'.length)}`;
    expect(longest).toHaveLength(2048);
    for (const [sent, stored] of [
      [' HTTPS://CDN.Example.com/Other.PNG?v=2&size=48 ', 'https://cdn.example.com/Other.PNG?v=2&size=48'],
      [longest, longest],
    ] as const) {
      const changed = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { logoUrl: sent } });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body.logoUrl).toBe(stored);
      expect(await everywhere()).toEqual({ read: stored, list: stored, config: stored, backend: stored });
    }
    // Another field alone leaves it.
    await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { name: 'Renamed' } });
    expect((await everywhere()).read).toBe(longest);

    const cleared = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { logoUrl: null } });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.logoUrl).toBeNull();
    expect(await everywhere()).toEqual({ read: null, list: null, config: null, backend: null });
    // The audit log records each change (long values shortened, as every audit summary is).
    const updates = await auditOf(org.id, 'application.updated');
    expect(updates.map((e) => (e.summary as { changes: Record<string, unknown> }).changes.logoUrl)).toEqual(
      expect.arrayContaining(['https://cdn.example.com/Other.PNG?v=2&size=48', null]),
    );
  });

  it('the database itself refuses anything but https, however it is written', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org);
    for (const logoUrl of ['http://cdn.example.com/logo.png', 'javascript:alert(1)', `https://${'c'.repeat(2048)}`]) {
      await expect(
        server.services.db.update(applications).set({ logoUrl }).where(eq(applications.id, application.id)),
      ).rejects.toMatchObject({ cause: { code: '23514' } });
    }
  });
});

describe('backchannelLogoutUrl: refused at save when svc may not send there', () => {
  const REFUSED = [
    'https://169.254.169.254/latest/meta-data/iam/security-credentials/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[::ffff:169.254.169.254]/bc',
    'https://[fd00:ec2::254]/latest/meta-data/',
    'https://metadata.google.internal/computeMetadata/v1/',
    // The same addresses and names however they are written: the URL parser reads decimal,
    // octal, hex and short IPv4 forms and a trailing dot as 169.254.169.254; names ignore case
    // and a trailing dot.
    'https://2852039166/latest/meta-data/',
    'https://0251.0376.0251.0376/',
    'https://0xa9fea9fe/',
    'https://169.254.43518/',
    'https://169.254.169.254./',
    'https://METADATA.Google.Internal./computeMetadata/v1/',
    'https://[64:ff9b::a9fe:a9fe]/',
    // Loopback and private networks: refused unless WEBHOOK_ALLOW_PRIVATE (not set here).
    'https://127.0.0.1/bc',
    'http://127.0.0.1:3000/bc',
    'http://localhost:3000/bc',
    'http://2130706433/bc',
    'https://10.0.0.5/bc',
    'https://[::1]/bc',
  ];

  async function trpc(admin: SignedIn, procedure: string, input: unknown) {
    const res = await fetch(`${server.url}/trpc/${procedure}`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
      body: JSON.stringify(input),
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  it.each(REFUSED)('refuses %s with 400 backchannel_logout_url_not_allowed, on create and update, REST and /trpc', async (url) => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org, { backchannelLogoutUrl: 'https://app.example.com/bc' });
    const created = await call('POST', '/v1/applications', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, name: 'Refused', backchannelLogoutUrl: url },
    });
    expect(created.status, created.text).toBe(400);
    expect(created.body.error.code).toBe('backchannel_logout_url_not_allowed');
    const updated = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { backchannelLogoutUrl: url },
    });
    expect(updated.status, updated.text).toBe(400);
    expect(updated.body.error.code).toBe('backchannel_logout_url_not_allowed');
    const viaTrpc = [
      await trpc(admin, 'applications.create', { organization_slug: org.slug, name: 'Refused', backchannelLogoutUrl: url }),
      await trpc(admin, 'applications.update', { id: application.id, backchannelLogoutUrl: url }),
    ];
    for (const res of viaTrpc) {
      expect(res.status).toBe(400);
      expect(res.body.error.data.code).toBe('backchannel_logout_url_not_allowed');
    }
    // Nothing stored: one application (the first), its URL unchanged, one application.created entry.
    const rows = await server.services.db.select().from(applications).where(eq(applications.tenantId, org.id));
    expect(rows.map((r) => r.backchannelLogoutUrl)).toEqual(['https://app.example.com/bc']);
    expect(await auditOf(org.id, 'application.created')).toHaveLength(1);
    expect(await auditOf(org.id, 'application.updated')).toHaveLength(0);
  });

  it('a public https URL still saves, on create and update; null clears it', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org, { backchannelLogoutUrl: 'https://app.example.com/backchannel' });
    expect(application.backchannelLogoutUrl).toBe('https://app.example.com/backchannel');
    for (const url of ['https://rp.example.org:8443/logout?tenant=1', 'https://8.8.8.8/bc', 'https://[2606:4700:4700::1111]/bc']) {
      const res = await call('PATCH', `/v1/applications/${application.id}`, { cookie: admin.cookie, body: { backchannelLogoutUrl: url } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.backchannelLogoutUrl).toBe(url);
    }
    const cleared = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { backchannelLogoutUrl: null },
    });
    expect(cleared.body.backchannelLogoutUrl).toBeNull();
  });

  describe('with WEBHOOK_ALLOW_PRIVATE (development and tests)', () => {
    let loose: Awaited<ReturnType<typeof startTestServer>>;
    beforeAll(async () => {
      loose = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    });
    afterAll(async () => {
      await loose?.close();
    });

    it('loopback and private addresses save; link-local and metadata ones stay refused', async () => {
      const org = await seedOrganization(loose.services.db);
      const admin = await seedSignedIn(loose.services.db, { organization: org, roleKey: 'org_admin' });
      const save = (backchannelLogoutUrl: string) =>
        fetch(`${loose.url}/v1/applications`, {
          method: 'POST',
          headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: loose.services.config.publicUrl },
          body: JSON.stringify({ organization_slug: org.slug, name: 'Local', backchannelLogoutUrl }),
        }).then(async (res) => ({ status: res.status, body: (await res.json()) as Json }));
      for (const url of ['http://127.0.0.1:3000/bc', 'http://localhost:3000/bc', 'https://10.0.0.5/bc']) {
        const res = await save(url);
        expect(res.status, url).toBe(201);
      }
      for (const url of [
        'https://169.254.169.254/',
        'https://[fd00:ec2::254]/',
        'https://metadata.google.internal/',
        'https://2852039166/',
      ]) {
        const res = await save(url);
        expect(res.status, url).toBe(400);
        expect(res.body.error.code).toBe('backchannel_logout_url_not_allowed');
      }
    });
  });
});

describe('POST /v1/applications/{id}/status', () => {
  it('disabling makes public and backend routes answer 409 application_disabled at once; enabling restores them', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application, secretKey } = await create(admin, org);
    // Warm this process's cache first: the change must evict it, not merely miss it.
    expect((await clientConfig(application.publishableKey)).status).toBe(200);
    expect((await backend(secretKey)).status).toBe(200);

    const off = await call('POST', `/v1/applications/${application.id}/status`, { cookie: admin.cookie, body: { status: 'disabled' } });
    expect(off.status).toBe(200);
    expect(off.body.status).toBe('disabled');
    for (const res of [await clientConfig(application.publishableKey), await backend(secretKey)]) {
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('application_disabled');
    }
    const on = await call('POST', `/v1/applications/${application.id}/status`, { cookie: admin.cookie, body: { status: 'active' } });
    expect(on.body.status).toBe('active');
    expect((await clientConfig(application.publishableKey)).status).toBe(200);
    expect((await backend(secretKey)).status).toBe(200);
    const entries = await auditOf(org.id, 'application.updated');
    expect(entries.map((e) => (e.summary as Json).changes.status).sort()).toEqual(['active', 'disabled']);

    for (const body of [{ status: 'paused' }, {}, { status: 'DISABLED' }]) {
      const res = await call('POST', `/v1/applications/${application.id}/status`, { cookie: admin.cookie, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('POST /v1/applications/{id}/rotate-secret', () => {
  it('returns a new secret once; the old one is refused at once; one audit entry without the secret', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application, secretKey: first } = await create(admin, org);
    expect((await backend(first)).status).toBe(200);

    const rotated = await call('POST', `/v1/applications/${application.id}/rotate-secret`, { cookie: admin.cookie, body: {} });
    expect(rotated.status, rotated.text).toBe(200);
    const second = rotated.body.secretKey as string;
    expect(second).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(second).not.toBe(first);
    expect(rotated.body.application).toMatchObject({
      id: application.id,
      publishableKey: application.publishableKey,
      secretKeyPrefix: second.slice(0, 12),
    });
    const old = await backend(first);
    expect(old.status).toBe(401);
    expect(old.body.error.code).toBe('invalid_secret_key');
    expect((await backend(second)).status).toBe(200);

    const entries = await auditOf(org.id, 'application.secret_rotated');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ targetId: application.id, actorId: admin.user.id });
    expect(JSON.stringify(entries[0])).not.toContain(second.slice(8));
    expect(JSON.stringify(entries[0])).not.toContain(sha256(second));

    // Rotating again retires the second secret too; the publishable key never changes.
    const third = (await call('POST', `/v1/applications/${application.id}/rotate-secret`, { cookie: admin.cookie, body: {} })).body
      .secretKey;
    expect((await backend(second)).status).toBe(401);
    expect((await backend(third)).status).toBe(200);
    expect((await clientConfig(application.publishableKey)).status).toBe(200);
  });
});

describe('/trpc', () => {
  it('the console reads and writes applications over /trpc with the same shapes', async () => {
    const { org, admin } = await adminOfNewOrg();
    const res = await fetch(`${server.url}/trpc/applications.create`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
      body: JSON.stringify({ organization_slug: org.slug, name: 'Console App' }),
    });
    expect(res.status).toBe(200);
    const created = ((await res.json()) as Json).result.data;
    expect(created.secretKey).toMatch(/^sk_live_/);
    const input = encodeURIComponent(JSON.stringify({ organization_slug: org.slug }));
    const list = await fetch(`${server.url}/trpc/applications.list?input=${input}`, { headers: { cookie: admin.cookie } });
    const page = ((await list.json()) as Json).result.data;
    expect(page).toEqual({ data: [created.application], nextCursor: null });
  });
});

describe('hosted sign-in checks return_to against the redirect allowlist', () => {
  const atCallback = (location: string) => location.includes('/auth/callback');

  /** /auth/login as the demo user with `query`; returns where svc's callback sends the browser. */
  async function landing(query: string): Promise<string | null> {
    const jar = new CookieJar();
    const started = await jar.fetch(`${server.url}/auth/login?login_hint=user@svc.local&${query}`);
    expect(started.status).toBe(303);
    let page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
    if (!atCallback(page.url)) {
      const submitted = await jar.post(page.url, { email: 'user@svc.local', password: 'user-password' });
      page = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
    }
    const done = await jar.fetch(page.url);
    expect(done.status).toBe(303);
    return done.headers.get('location');
  }

  it('a URL allowed by PATCH round-trips at once; anything else falls back to the console', async () => {
    const { org, admin } = await adminOfNewOrg();
    const { application } = await create(admin, org, { redirectUrls: ['https://old.example.com/cb'] });
    const pk = application.publishableKey;
    const target = 'https://app.example.com/after-sign-in?from=svc';
    const q = (returnTo: string) => `publishable_key=${pk}&return_to=${encodeURIComponent(returnTo)}`;

    // Not yet allowed (and this warms the cached application the check reads).
    expect(await landing(q(target))).toBe('/auth/console');
    expect(await landing(q('https://old.example.com/cb'))).toBe('https://old.example.com/cb');

    const patched = await call('PATCH', `/v1/applications/${application.id}`, {
      cookie: admin.cookie,
      body: { redirectUrls: [target] },
    });
    expect(patched.status).toBe(200);
    expect(await landing(q(target))).toBe(target);
    // Removed from the list: no longer followed.
    expect(await landing(q('https://old.example.com/cb'))).toBe('/auth/console');
    // Outside the allowlist, even on the same host, or without the application's key.
    expect(await landing(q('https://app.example.com/elsewhere'))).toBe('/auth/console');
    expect(await landing(`return_to=${encodeURIComponent(target)}`)).toBe('/auth/console');

    // A disabled application's allowlist is not honoured.
    await call('POST', `/v1/applications/${application.id}/status`, { cookie: admin.cookie, body: { status: 'disabled' } });
    expect(await landing(q(target))).toBe('/auth/console');
  });
});

it('every permission the routes check is in the catalog', () => {
  expect(PERMISSIONS).toEqual(expect.arrayContaining(['applications.read', 'applications.manage']));
});
