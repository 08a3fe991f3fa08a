import { createHash } from 'node:crypto';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { scimDirectories } from '@svc/db/schema/directories';
import { organizationDomains as domains } from '@svc/db/schema/domains';
import { memberships } from '@svc/db/schema/identity';
import { setupLinks } from '@svc/db/schema/setup-links';
import { ssoConnections } from '@svc/db/schema/sso';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { startSamlIdp, type TestIdp } from '../sso/saml-idp.fixtures.ts';
import { seedSetupLink } from './setup-links.fixtures.ts';
import { MATRIX } from './setup-links.matrix.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let idp: TestIdp;

beforeAll(async () => {
  idp = await startSamlIdp();
  // WEBHOOK_ALLOW_PRIVATE: the test IdP's metadata URL is on 127.0.0.1.
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await server?.close();
  await idp?.close();
});

type Json = Record<string, any>;

describeAuthMatrix('setup links', () => server, MATRIX);

async function call(method: string, path: string, opts: { cookie?: string; body?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json', origin: server.services.config.publicUrl } : {}),
    },
    body: method === 'GET' ? undefined : JSON.stringify(opts.body ?? {}),
  });
  const text = await res.text();
  return { status: res.status, json: (text.startsWith('{') ? JSON.parse(text) : {}) as Json };
}

/** GET of the hosted page (a link opened in a browser), with the browser's cookie if any. */
async function page(url: string, cookie?: string) {
  const res = await fetch(url.replace(server.services.config.publicUrl, server.url), {
    headers: { accept: 'text/html', ...(cookie ? { cookie } : {}) },
    redirect: 'manual',
  });
  return { status: res.status, html: await res.text(), headers: res.headers };
}

/** A form POST of the hosted page, same-origin unless `origin` says otherwise. */
async function post(path: string, cookie: string | undefined, fields: Record<string, string>, origin = server.services.config.publicUrl) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin, ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  return { status: res.status, html: await res.text(), headers: res.headers };
}

const codeOf = (html: string) => /data-testid="(?:setup-refusal-code|setup-error-code)">([^<]+)</.exec(html)?.[1];
const cookieOf = (headers: Headers) => headers.getSetCookie().find((c) => c.startsWith('svc_setup='));

async function adminOf() {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  return { db, org, admin };
}

async function createLink(cookie: string, slug: string, body: Json) {
  const created = await call('POST', '/v1/setup-links', { cookie, body: { organization_slug: slug, ...body } });
  expect(created.status).toBe(201);
  return created.json;
}

/** Opens a link as the IT admin's browser: the page, and the cookie it is bound to. */
async function open(url: string) {
  const opened = await page(url);
  expect(opened.status, opened.html).toBe(200);
  const setCookie = cookieOf(opened.headers);
  expect(setCookie).toBeDefined();
  return { ...opened, setCookie: setCookie as string, cookie: (setCookie as string).split(';')[0] as string };
}

describe('/v1/setup-links', () => {
  it('creates a link whose URL (and token) is shown once and stored only as SHA-256; lists it; audited and evented', async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'directory', label: 'Acme IT', expiresInHours: 2 });
    expect(link).toMatchObject({ purpose: 'directory', label: 'Acme IT', status: 'unused', openedAt: null, createdBy: admin.user.email });
    const token = new URL(link.url).searchParams.get('token') ?? '';
    expect(new URL(link.url).pathname).toBe(`/setup/${link.id}`);
    const hours = (Date.parse(link.expiresAt) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(1.9);
    expect(hours).toBeLessThanOrEqual(2);
    const [row] = await db.select().from(setupLinks).where(eq(setupLinks.id, link.id));
    expect(row?.tokenHash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(token);
    const listed = await call('GET', `/v1/setup-links?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(listed.json.data).toEqual([expect.objectContaining({ id: link.id, status: 'unused' })]);
    expect(listed.json.data[0].url).toBeUndefined();
    const audit = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'setup_link.created')));
    expect(audit).toHaveLength(1);
    expect(JSON.stringify(audit)).not.toContain(token);
    const events = await db.select().from(webhookEvents).where(eq(webhookEvents.tenantId, org.id));
    expect(events.map((e) => e.type)).toContain('setup_link.created');
  });

  it('defaults to 24 hours, and refuses a longer life, an unknown purpose or a malformed id with a 400', async () => {
    const { org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'sso' });
    expect(Math.round((Date.parse(link.expiresAt) - Date.now()) / 3_600_000)).toBe(24);
    for (const body of [{ purpose: 'domain', expiresInHours: 25 }, { purpose: 'domain', expiresInHours: 0 }, { purpose: 'billing' }, {}]) {
      const refused = await call('POST', '/v1/setup-links', { cookie: admin.cookie, body: { organization_slug: org.slug, ...body } });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.json.error.code).toBe('validation_failed');
    }
    const malformed = await call('POST', '/v1/setup-links/setl_nope/revoke', { cookie: admin.cookie });
    expect(malformed.status).toBe(400);
  });

  it('opens once: the first browser gets an HttpOnly, SameSite=Strict cookie scoped to the link; a second browser is refused', async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'directory' });
    const first = await open(link.url);
    expect(first.setCookie).toMatch(new RegExp(`Path=/setup/${link.id}(;|$)`));
    expect(first.setCookie).toContain('HttpOnly');
    expect(first.setCookie).toContain('SameSite=Strict');
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(first.html).toContain('data-testid="setup-purpose" data-purpose="directory"');
    expect(first.html).toContain(org.name);

    // The same browser comes back (the link again, or the bare page): still its page.
    expect((await page(link.url, first.cookie)).status).toBe(200);
    expect((await page(`${server.url}/setup/${link.id}`, first.cookie)).status).toBe(200);

    const second = await page(link.url);
    expect(second.status).toBe(409);
    expect(codeOf(second.html)).toBe('setup_link_used');
    expect(cookieOf(second.headers)).toBeUndefined();
    expect(second.html).toContain('This setup link was opened already');

    const listed = await call('GET', `/v1/setup-links?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(listed.json.data[0]).toMatchObject({ status: 'opened', openedAt: expect.any(String) });
    const [opened] = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'setup_link.opened')));
    expect(opened).toMatchObject({ actorType: 'setup_link', actorId: link.id });
  });

  it('refuses an expired link, and a link opened before that has expired since', async () => {
    const { db, org, admin } = await adminOf();
    const expired = await seedSetupLink(db, { tenantId: org.id, createdByUserId: admin.user.id, expiresAt: new Date(Date.now() - 1000) });
    const refused = await page(`${server.url}/setup/${expired.id}?token=${expired.token}`);
    expect(refused.status).toBe(410);
    expect(codeOf(refused.html)).toBe('setup_link_expired');

    const link = await createLink(admin.cookie, org.slug, { purpose: 'domain' });
    const first = await open(link.url);
    await db
      .update(setupLinks)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(setupLinks.id, link.id));
    const later = await page(`${server.url}/setup/${link.id}`, first.cookie);
    expect(later.status).toBe(410);
    expect(codeOf(later.html)).toBe('setup_link_expired');
    expect((await post(`/setup/${link.id}/domain`, first.cookie, { domain: 'acme.example' })).status).toBe(410);
    const listed = await call('GET', `/v1/setup-links?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(listed.json.data.find((l: Json) => l.id === link.id).status).toBe('expired');
  });

  it('refuses a revoked link, before and after it was opened; a second revoke is a 409', async () => {
    const { db, org, admin } = await adminOf();
    const unused = await createLink(admin.cookie, org.slug, { purpose: 'domain' });
    const revoked = await call('POST', `/v1/setup-links/${unused.id}/revoke`, { cookie: admin.cookie });
    expect(revoked.json).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    const refused = await page(unused.url);
    expect(refused.status).toBe(410);
    expect(codeOf(refused.html)).toBe('setup_link_revoked');
    const again = await call('POST', `/v1/setup-links/${unused.id}/revoke`, { cookie: admin.cookie });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('setup_link_already_revoked');

    const used = await createLink(admin.cookie, org.slug, { purpose: 'domain' });
    const first = await open(used.url);
    await call('POST', `/v1/setup-links/${used.id}/revoke`, { cookie: admin.cookie });
    const after = await post(`/setup/${used.id}/domain`, first.cookie, { domain: 'revoked.example' });
    expect(after.status).toBe(410);
    expect(codeOf(after.html)).toBe('setup_link_revoked');
    expect(await db.select().from(domains).where(eq(domains.tenantId, org.id))).toEqual([]);
    const audit = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'setup_link.revoked')));
    expect(audit).toHaveLength(2);
  });

  it('stops when its creator is no longer an org admin of the organization', async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'domain' });
    await db
      .update(memberships)
      .set({ roleKey: 'org_member' })
      .where(and(eq(memberships.tenantId, org.id), eq(memberships.userId, admin.user.id)));
    const refused = await page(link.url);
    expect(refused.status).toBe(410);
    expect(codeOf(refused.html)).toBe('setup_link_revoked');
  });
});

describe('the setup page', () => {
  it('directory link: creates the directory through the directories service, shows its SCIM URL and token once; the link is the actor', async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'directory' });
    const { cookie } = await open(link.url);
    const created = await post(`/setup/${link.id}/directory`, cookie, { name: 'Okta' });
    expect(created.status, created.html).toBe(200);
    const [directory] = await db.select().from(scimDirectories).where(eq(scimDirectories.tenantId, org.id));
    expect(directory?.name).toBe('Okta');
    const token = /data-testid="setup-scim-token">([^<]+)</.exec(created.html)?.[1] ?? '';
    expect(createHash('sha256').update(token).digest('hex')).toBe(directory?.tokenHash);
    expect(created.html).toContain(`/scim/v2/${directory?.id}`);
    expect(created.html).toContain('data-copy="setup-scim-token"');
    // The token works at the SCIM endpoint.
    const scim = await fetch(`${server.url}/scim/v2/${directory?.id}/Users`, { headers: { authorization: `Bearer ${token}` } });
    expect(scim.status).toBe(200);
    // Shown once: the page again shows only its prefix.
    const again = await page(`${server.url}/setup/${link.id}`, cookie);
    expect(again.html).not.toContain(token);
    expect(again.html).toContain('data-testid="setup-scim-token-prefix"');
    // One record per link.
    const second = await post(`/setup/${link.id}/directory`, cookie, { name: 'Another' });
    expect(second.status).toBe(409);
    expect(await db.select().from(scimDirectories).where(eq(scimDirectories.tenantId, org.id))).toHaveLength(1);
    // A new token: the old one stops.
    const rotated = await post(`/setup/${link.id}/directory/rotate`, cookie, {});
    expect(rotated.status).toBe(200);
    expect((await fetch(`${server.url}/scim/v2/${directory?.id}/Users`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      401,
    );
    const audit = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.targetId, directory?.id ?? '')));
    expect(audit.map((a) => [a.action, a.actorType, a.actorId])).toEqual(
      expect.arrayContaining([
        ['directory.created', 'setup_link', link.id],
        ['directory.token_rotated', 'setup_link', link.id],
      ]),
    );
    const listed = await call('GET', `/v1/setup-links?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(listed.json.data[0].targetId).toBe(directory?.id);
    // The audit log finds what the link did by its id.
    const byLink = await call('GET', `/v1/audit-logs?organization_slug=${org.slug}&actor=${link.id}`, { cookie: admin.cookie });
    expect(byLink.status).toBe(200);
    expect(byLink.json.data.map((e: Json) => e.action).sort()).toEqual([
      'directory.created',
      'directory.token_rotated',
      'setup_link.opened',
    ]);
    expect(byLink.json.data.every((e: Json) => e.actor.type === 'setup_link' && e.actor.label === 'Directory sync')).toBe(true);
  });

  it('domain link: adds the domain and shows its TXT record; it cannot touch SSO or directories', async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'domain' });
    const { cookie } = await open(link.url);
    const added = await post(`/setup/${link.id}/domain`, cookie, { domain: 'Setup-Link.Example' });
    expect(added.status, added.html).toBe(200);
    const [domain] = await db.select().from(domains).where(eq(domains.tenantId, org.id));
    expect(domain?.domain).toBe('setup-link.example');
    expect(added.html).toContain(`svc-domain-verification=${domain?.verificationToken}`);

    const sso = await post(`/setup/${link.id}/sso`, cookie, { name: 'Evil', protocol: 'saml', metadata_xml: idp.metadata });
    expect(sso.status).toBe(403);
    expect(codeOf(sso.html)).toBe('forbidden');
    const directory = await post(`/setup/${link.id}/directory`, cookie, { name: 'Evil' });
    expect(directory.status).toBe(403);
    const test = await page(`${server.url}/setup/${link.id}/sso/test`, cookie);
    expect(test.status).toBe(403);
    expect(await db.select().from(ssoConnections).where(eq(ssoConnections.tenantId, org.id))).toEqual([]);
    expect(await db.select().from(scimDirectories).where(eq(scimDirectories.tenantId, org.id))).toEqual([]);
  });

  it("sso link: shows the SP URLs before anything exists, saves the IdP's metadata as a connection with those URLs, and starts a test", async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'sso' });
    const first = await open(link.url);
    const acs = /data-testid="setup-sp-acs-url">([^<]+)</.exec(first.html)?.[1];
    expect(acs).toMatch(/\/sso\/saml\/ssoc_[0-9A-Za-z]{20}\/acs$/);
    const saved = await post(`/setup/${link.id}/sso`, first.cookie, { name: 'Okta', protocol: 'saml', metadata_url: idp.metadataUrl });
    expect(saved.status, saved.html).toBe(200);
    const [connection] = await db.select().from(ssoConnections).where(eq(ssoConnections.tenantId, org.id));
    expect(connection?.samlIdpEntityId).toBe(idp.entityId);
    expect(acs).toBe(`${server.services.config.publicUrl}/sso/saml/${connection?.id}/acs`);
    // Saving again changes that one connection.
    const renamed = await post(`/setup/${link.id}/sso`, first.cookie, { name: 'Okta prod', protocol: 'saml', metadata_xml: idp.metadata });
    expect(renamed.status, renamed.html).toBe(200);
    const rows = await db.select().from(ssoConnections).where(eq(ssoConnections.tenantId, org.id));
    expect(rows.map((r) => r.name)).toEqual(['Okta prod']);
    const test = await page(`${server.url}/setup/${link.id}/sso/test`, first.cookie);
    expect(test.status).toBe(303);
    expect(test.headers.get('location')).toContain(idp.url);
    const audit = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, org.id), eq(auditLogs.action, 'sso.connection_created')));
    expect(audit[0]).toMatchObject({ actorType: 'setup_link', actorId: link.id });
  });

  it("never reaches another organization: a link's cookie opens no other link, and no form names a record", async () => {
    const { db, org, admin } = await adminOf();
    const other = await adminOf();
    const mine = await createLink(admin.cookie, org.slug, { purpose: 'directory' });
    const theirs = await createLink(other.admin.cookie, other.org.slug, { purpose: 'directory' });
    const { cookie } = await open(mine.url);
    const [name, value] = cookie.split('=') as [string, string];
    // The cookie is scoped to /setup/<mine>, but a client can send it anywhere: it still opens nothing else.
    const elsewhere = await post(`/setup/${theirs.id}/directory`, `${name}=${value}`, { name: 'Hijack' });
    expect(elsewhere.status).toBe(404);
    expect((await page(`${server.url}/setup/${theirs.id}`, cookie)).status).toBe(404);
    // A form field naming another organization's record is ignored (the link's own record only).
    await post(`/setup/${mine.id}/directory`, cookie, { name: 'Mine', id: 'dir_aaaaaaaaaaaaaaaaaaaa', organization_slug: other.org.slug });
    expect(await db.select().from(scimDirectories).where(eq(scimDirectories.tenantId, other.org.id))).toEqual([]);
    expect(await db.select().from(scimDirectories).where(eq(scimDirectories.tenantId, org.id))).toHaveLength(1);
    // Another organization's admin cannot revoke it.
    const revoke = await call('POST', `/v1/setup-links/${mine.id}/revoke`, { cookie: other.admin.cookie });
    expect(revoke.status).toBe(404);
  });

  it('the same SSO form sent twice at once makes one connection, and neither answer is a 500', async () => {
    const { db, org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'sso' });
    const { cookie } = await open(link.url);
    const fields = { name: 'Twice', protocol: 'saml', metadata_xml: idp.metadata };
    const answers = await Promise.all([post(`/setup/${link.id}/sso`, cookie, fields), post(`/setup/${link.id}/sso`, cookie, fields)]);
    for (const answer of answers) {
      expect([200, 409], answer.html).toContain(answer.status);
    }
    expect(await db.select().from(ssoConnections).where(eq(ssoConnections.tenantId, org.id))).toHaveLength(1);
  });

  it('bad input is a 4xx page with a stable code, never a 500; a cross-site form is refused', async () => {
    const { org, admin } = await adminOf();
    const link = await createLink(admin.cookie, org.slug, { purpose: 'domain' });
    const { cookie } = await open(link.url);
    const invalid = await post(`/setup/${link.id}/domain`, cookie, { domain: 'not a domain' });
    expect(invalid.status).toBe(400);
    expect(codeOf(invalid.html)).toBe('domain_invalid');
    const empty = await post(`/setup/${link.id}/domain`, cookie, {});
    expect(empty.status).toBe(400);
    expect(codeOf(empty.html)).toBe('validation_failed');
    const control = await post(`/setup/${link.id}/domain`, cookie, { domain: 'a\u0000b.example' });
    expect(control.status).toBe(400);
    const verifyNothing = await post(`/setup/${link.id}/domain/verify`, cookie, {});
    expect(verifyNothing.status).toBe(400);
    const crossSite = await post(`/setup/${link.id}/domain`, cookie, { domain: 'x.example' }, 'https://evil.example');
    expect(crossSite.status).toBe(403);
    expect(codeOf(crossSite.html)).toBe('csrf_rejected');
    const noCookie = await post(`/setup/${link.id}/domain`, undefined, { domain: 'x.example' });
    expect(noCookie.status).toBe(409);
    for (const url of [
      `${server.url}/setup/setl_short?token=x`,
      `${server.url}/setup/${link.id}?token=short`,
      `${server.url}/setup/${link.id}?token=${'A'.repeat(43)}`,
    ]) {
      const res = await page(url);
      expect(res.status, url).toBe(404);
    }
    const ssoLink = await createLink(admin.cookie, org.slug, { purpose: 'sso' });
    const sso = await open(ssoLink.url);
    const bad: Record<string, string>[] = [
      { name: '', protocol: 'saml' },
      { name: 'x', protocol: 'ldap' },
      { name: 'x', protocol: 'saml', metadata_xml: '<not-xml' },
      { name: 'x', protocol: 'oidc', issuer: 'not a url', client_id: 'c' },
    ];
    for (const fields of bad) {
      const res = await post(`/setup/${ssoLink.id}/sso`, sso.cookie, fields);
      expect(res.status, JSON.stringify(fields)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(fields)).toBeLessThan(500);
    }
    const untested = await page(`${server.url}/setup/${ssoLink.id}/sso/test`, sso.cookie);
    expect(untested.status).toBe(400);
  });
});
