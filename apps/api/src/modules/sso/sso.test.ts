import { newId } from '@svc/contracts/ids';
import { auditLogs } from '@svc/db/schema/audit-logs';
import { memberships, users } from '@svc/db/schema/identity';
import { ssoConnections } from '@svc/db/schema/sso';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import { and, eq } from 'drizzle-orm';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { CookieJar } from '../../../../dev-engine/src/cookie-jar.ts';
import { seedDomain } from '../domains/domains.fixtures.ts';
import { formOf, type ResponseOverrides, requestIdOf, startSamlIdp, type TestIdp } from './saml-idp.fixtures.ts';
import { MATRIX } from './sso.matrix.ts';

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

describeAuthMatrix('sso connections', () => server, MATRIX);

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
  return { status: res.status, json: (text.startsWith('{') ? JSON.parse(text) : {}) as Json, text };
}

/** An organization with a verified domain, its admin, and a SAML connection to the test IdP. */
async function setup(opts: { allowIdpInitiated?: boolean } = {}) {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  const domain = await seedDomain(db, { tenantId: org.id, verified: true });
  const created = await call('POST', '/v1/sso-connections', {
    cookie: admin.cookie,
    body: {
      organization_slug: org.slug,
      protocol: 'saml',
      name: 'Test IdP',
      saml: { metadataUrl: idp.metadataUrl, allowIdpInitiated: opts.allowIdpInitiated ?? false },
      groupRoles: [{ group: 'admins', roleKey: 'org_admin' }],
    },
  });
  expect(created.status, created.text).toBe(201);
  const connection = created.json;
  const spMetadata = await (await fetch(connection.saml.spMetadataUrl)).text();
  return { db, org, admin, domain, connection, spMetadata };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** Starts a sign-in at svc: the IdP URL's AuthnRequest id and relay state. */
async function start(s: Setup, jar = new CookieJar(), returnTo = '/user') {
  const res = await jar.fetch(`${server.url}/sso/${s.connection.id}/start?return_to=${encodeURIComponent(returnTo)}`);
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get('location') ?? '');
  expect(location.origin).toBe(idp.url);
  return {
    jar,
    location,
    requestId: requestIdOf(location.searchParams.get('SAMLRequest') ?? ''),
    relayState: location.searchParams.get('RelayState') ?? '',
  };
}

async function post(s: Setup, fields: Record<string, string>, jar = new CookieJar()) {
  const res = await jar.fetch(s.connection.saml.acsUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: idp.url },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

const codeOf = (html: string) => /data-testid="sso-error">([a-z_]+)</.exec(html)?.[1];

/** An SP-initiated answer crafted by the IdP with `overrides`, posted to the ACS. */
async function answer(s: Setup, overrides: ResponseOverrides = {}, user = { email: `pat@${s.domain.domain}`, name: 'Pat' }) {
  const started = await start(s);
  const response = await idp.respond({ spMetadata: s.spMetadata, inResponseTo: started.requestId, user, overrides });
  return post(s, { SAMLResponse: response, RelayState: started.relayState }, started.jar);
}

describe('SAML sign-in through a real IdP (samlify)', () => {
  it('SP-initiated: the IdP parses the AuthnRequest, the ACS makes a member and a svc session', async () => {
    const s = await setup();
    idp.user = { email: `Alex@${s.domain.domain}`, name: 'Alex Example', groups: ['staff', 'admins'] };
    const started = await start(s);
    const idpPage = await (await fetch(started.location)).text();
    const form = formOf(idpPage);
    expect(form.action).toBe(s.connection.saml.acsUrl);
    const done = await post(s, form.fields, started.jar);
    expect(done.status, codeOf(done.text)).toBe(303);
    expect(done.location).toBe('/user');

    const me = await started.jar.fetch(`${server.url}/v1/me`);
    const body = (await me.json()) as Json;
    expect(body.user.email).toBe(`alex@${s.domain.domain}`);
    expect(body.user.name).toBe('Alex Example');
    expect(body.isPlatformAdmin).toBe(false);
    expect(body.activeWorkspace.id).toBe(s.org.id);
    expect(body.memberships).toEqual([expect.objectContaining({ roleKey: 'org_admin' })]);

    const added = await s.db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.tenantId, s.org.id), eq(auditLogs.action, 'member.added')));
    expect(added.map((a) => a.summary)).toContainEqual(expect.objectContaining({ via: 'sso', connectionId: s.connection.id }));
    const events = await s.db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.tenantId, s.org.id), eq(webhookEvents.type, 'sso.signed_in')));
    expect(events).toHaveLength(1);

    // A later sign-in follows the IdP: new name, no admin group, the default role.
    idp.user = { email: `alex@${s.domain.domain}`, name: 'Alex Renamed', groups: ['staff'] };
    const again = await start(s);
    const second = await post(s, formOf(await (await fetch(again.location)).text()).fields, again.jar);
    expect(second.status, codeOf(second.text)).toBe(303);
    const [user] = await s.db
      .select()
      .from(users)
      .where(eq(users.email, `alex@${s.domain.domain}`));
    expect(user?.name).toBe('Alex Renamed');
    const [membership] = await s.db
      .select()
      .from(memberships)
      .where(and(eq(memberships.tenantId, s.org.id), eq(memberships.userId, user?.id ?? '')));
    expect(membership?.roleKey).toBe('org_member');
    expect(membership?.status).toBe('active');
  });

  it("the connection's list and detail show its last sign-in and its sign-ins of the last 30 days; the last sign-in is written at most once a minute", async () => {
    const s = await setup();
    const before = await call('GET', `/v1/sso-connections/${s.connection.id}`, { cookie: s.admin.cookie });
    expect(before.json).toMatchObject({ lastSignInAt: null, signInsLast30Days: 0 });
    expect((await answer(s)).status).toBe(303);
    const first = await call('GET', `/v1/sso-connections/${s.connection.id}`, { cookie: s.admin.cookie });
    expect(first.json.signInsLast30Days).toBe(1);
    expect(first.json.lastSignInAt).not.toBeNull();
    expect((await answer(s, {}, { email: `sam@${s.domain.domain}`, name: 'Sam' })).status).toBe(303);
    const listed = await call('GET', `/v1/sso-connections?organization_slug=${s.org.slug}`, { cookie: s.admin.cookie });
    // Two sign-ins counted; the second, within the minute, left the last sign-in as it was.
    expect(listed.json.data).toEqual([
      expect.objectContaining({ id: s.connection.id, signInsLast30Days: 2, lastSignInAt: first.json.lastSignInAt }),
    ]);
    // A sign-in older than 30 days does not count (the audit log is append-only: one is written as of then).
    await s.db.insert(auditLogs).values({
      id: newId('auditLog'),
      tenantId: s.org.id,
      actorType: 'system',
      action: 'sso.signed_in',
      targetType: 'user',
      summary: { connectionId: s.connection.id },
      createdAt: new Date(Date.now() - 31 * 24 * 3_600_000),
    });
    const later = await call('GET', `/v1/sso-connections/${s.connection.id}`, { cookie: s.admin.cookie });
    expect(later.json.signInsLast30Days).toBe(2);
  });

  it('SP metadata names the per-connection entity and the HTTP-POST ACS', async () => {
    const s = await setup();
    expect(s.spMetadata).toContain(`entityID="${s.connection.saml.spEntityId}"`);
    expect(s.spMetadata).toContain(`Location="${s.connection.saml.acsUrl}"`);
    expect(s.spMetadata).toContain('urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
  });
});

describe('SAML responses svc refuses, each with its own code', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup();
  });

  it('a valid answer passes (the baseline of the cases below)', async () => {
    const res = await answer(s);
    expect(res.status, codeOf(res.text)).toBe(303);
  });

  it('unsigned', async () => {
    const started = await start(s);
    const signed = Buffer.from(
      await idp.respond({ spMetadata: s.spMetadata, inResponseTo: started.requestId, user: { email: `u@${s.domain.domain}` } }),
      'base64',
    ).toString();
    const unsigned = signed.replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/g, '');
    expect(unsigned).not.toContain('Signature');
    const res = await post(s, { SAMLResponse: Buffer.from(unsigned).toString('base64'), RelayState: started.relayState });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_response_unsigned');
  });

  it('signed by another key', async () => {
    const other = await startSamlIdp();
    try {
      const started = await start(s);
      const forged = await other.respond({
        spMetadata: s.spMetadata,
        inResponseTo: started.requestId,
        user: { email: `u@${s.domain.domain}` },
        overrides: { Issuer: idp.entityId },
      });
      const res = await post(s, { SAMLResponse: forged, RelayState: started.relayState });
      expect(codeOf(res.text)).toBe('sso_signature_invalid');
    } finally {
      await other.close();
    }
  });

  it('wrong audience', async () => {
    const res = await answer(s, { Audience: 'https://other-sp.example/saml' });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_audience_mismatch');
  });

  it('wrong recipient', async () => {
    const res = await answer(s, { SubjectRecipient: 'https://other-sp.example/acs' });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_recipient_mismatch');
  });

  it('wrong destination', async () => {
    const res = await answer(s, { Destination: 'https://other-sp.example/acs' });
    expect(codeOf(res.text)).toBe('sso_recipient_mismatch');
  });

  it('expired (beyond the skew)', async () => {
    const past = new Date(Date.now() - 10 * 60_000).toISOString();
    const res = await answer(s, { ConditionsNotOnOrAfter: past, SubjectConfirmationDataNotOnOrAfter: past });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_assertion_expired');
  });

  it('not yet valid (beyond the skew)', async () => {
    const res = await answer(s, { ConditionsNotBefore: new Date(Date.now() + 10 * 60_000).toISOString() });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_assertion_not_yet_valid');
  });

  it('within the skew passes', async () => {
    const res = await answer(s, { ConditionsNotBefore: new Date(Date.now() + 20_000).toISOString() });
    expect(res.status, codeOf(res.text)).toBe(303);
  });

  it('replayed: the same response posted twice', async () => {
    const started = await start(s);
    const response = await idp.respond({
      spMetadata: s.spMetadata,
      inResponseTo: started.requestId,
      user: { email: `r@${s.domain.domain}` },
    });
    const first = await post(s, { SAMLResponse: response, RelayState: started.relayState });
    expect(first.status, codeOf(first.text)).toBe(303);
    const second = await post(s, { SAMLResponse: response, RelayState: started.relayState });
    expect(second.status).toBe(400);
    expect(codeOf(second.text)).toBe('sso_assertion_replayed');
  });

  it("InResponseTo of another request (another browser's, still pending)", async () => {
    const mine = await start(s);
    const theirs = await start(s);
    const response = await idp.respond({
      spMetadata: s.spMetadata,
      inResponseTo: theirs.requestId,
      user: { email: `x@${s.domain.domain}` },
    });
    const res = await post(s, { SAMLResponse: response, RelayState: mine.relayState });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_in_response_to_mismatch');
  });

  it('IdP-initiated while the connection does not allow it', async () => {
    const response = await idp.respond({ spMetadata: s.spMetadata, user: { email: `i@${s.domain.domain}` } });
    const res = await post(s, { SAMLResponse: response });
    expect(res.status).toBe(400);
    expect(codeOf(res.text)).toBe('sso_idp_initiated_disabled');
  });

  it('IdP-initiated where the connection allows it', async () => {
    const allowing = await setup({ allowIdpInitiated: true });
    const response = await idp.respond({ spMetadata: allowing.spMetadata, user: { email: `i@${allowing.domain.domain}` } });
    const res = await post(allowing, { SAMLResponse: response });
    expect(res.status, codeOf(res.text)).toBe(303);
  });

  it('an email at a domain the organization has not verified (pending here, or verified by another)', async () => {
    const pending = await seedDomain(s.db, { tenantId: s.org.id, verified: false });
    const res = await answer(s, {}, { email: `p@${pending.domain}`, name: 'P' });
    expect(codeOf(res.text)).toBe('sso_domain_not_verified');
    const elsewhere = await seedDomain(s.db, { tenantId: (await seedOrganization(s.db)).id, verified: true });
    const other = await answer(s, {}, { email: `p@${elsewhere.domain}`, name: 'P' });
    expect(codeOf(other.text)).toBe('sso_domain_not_verified');
    const [nobody] = await s.db
      .select()
      .from(users)
      .where(eq(users.email, `p@${elsewhere.domain}`));
    expect(nobody).toBeUndefined();
  });

  it('signature wrapping: an evil assertion beside (and around) the signed one', async () => {
    const started = await start(s);
    const victim = `w@${s.domain.domain}`;
    const signed = Buffer.from(
      await idp.respond({ spMetadata: s.spMetadata, inResponseTo: started.requestId, user: { email: victim } }),
      'base64',
    ).toString();
    const variants: string[] = [];
    // XSW1-like: the signed response kept under an Extensions-like wrapper, an evil unsigned response outside.
    const doc = new DOMParser().parseFromString(signed, 'text/xml');
    const assertion = doc.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Assertion').item(0);
    if (!assertion) {
      throw new Error('no assertion');
    }
    const evil = assertion.cloneNode(true) as typeof assertion;
    evil.setAttribute('ID', '_evil');
    for (const sig of Array.from(evil.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature'))) {
      sig.parentNode?.removeChild(sig);
    }
    const nameId = evil.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'NameID').item(0);
    if (nameId?.firstChild) {
      nameId.firstChild.nodeValue = `evil@${s.domain.domain}`;
    }
    // Variant A: evil assertion before the signed one (two assertions).
    const a = new DOMParser().parseFromString(signed, 'text/xml');
    const aAssertion = a.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Assertion').item(0);
    aAssertion?.parentNode?.insertBefore(a.importNode(evil, true), aAssertion);
    variants.push(new XMLSerializer().serializeToString(a));
    // Variant B: the signed assertion moved inside the evil one (the reference still resolves).
    const b = new DOMParser().parseFromString(signed, 'text/xml');
    const bAssertion = b.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Assertion').item(0);
    const bEvil = b.importNode(evil, true);
    if (bAssertion?.parentNode) {
      bAssertion.parentNode.replaceChild(bEvil, bAssertion);
      bEvil.appendChild(bAssertion);
    }
    variants.push(new XMLSerializer().serializeToString(b));
    // Variant C: the evil assertion in place of the signed one, the signed one inside the Response's Signature Object.
    const c = new DOMParser().parseFromString(signed, 'text/xml');
    const cAssertion = c.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Assertion').item(0);
    const cSig = c.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature').item(0);
    if (cAssertion?.parentNode && cSig) {
      const object = c.createElementNS('http://www.w3.org/2000/09/xmldsig#', 'ds:Object');
      cAssertion.parentNode.replaceChild(c.importNode(evil, true), cAssertion);
      object.appendChild(cAssertion);
      cSig.appendChild(object);
    }
    variants.push(new XMLSerializer().serializeToString(c));
    for (const variant of variants) {
      const again = await start(s);
      const rewritten = variant.replaceAll(started.requestId, again.requestId);
      const res = await post(s, { SAMLResponse: Buffer.from(rewritten).toString('base64'), RelayState: again.relayState });
      expect(res.status, rewritten).toBe(400);
      expect(['sso_signature_invalid', 'sso_response_malformed']).toContain(codeOf(res.text));
    }
    const [evilUser] = await s.db
      .select()
      .from(users)
      .where(eq(users.email, `evil@${s.domain.domain}`));
    expect(evilUser).toBeUndefined();
  });

  it('malformed, DOCTYPE and oversized responses: 4xx, never a 500', async () => {
    const started = await start(s);
    const cases = [
      'not base64 !!!',
      Buffer.from('<samlp:Response').toString('base64'),
      Buffer.from('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>').toString('base64'),
      Buffer.from(`<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><r>&b;</r>`).toString('base64'),
      'A'.repeat(600 * 1024),
    ];
    for (const SAMLResponse of cases) {
      const res = await post(s, { SAMLResponse, RelayState: started.relayState });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
  });

  it('an unknown or malformed connection id is 404', async () => {
    const res = await fetch(`${server.url}/sso/saml/ssoc_00000000000000000000/acs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'SAMLResponse=x',
    });
    expect(res.status).toBe(404);
    expect((await fetch(`${server.url}/sso/nope/start`)).status).toBe(404);
  });
});

describe('connection input svc refuses', () => {
  it('malformed XML, XXE, entity expansion, no IdP descriptor, 10 MB: 4xx and nothing stored', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    const bodies = [
      '<EntityDescriptor',
      `<?xml version="1.0"?><!DOCTYPE md [<!ENTITY x SYSTEM "file:///etc/passwd">]><md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="&x;"/>`,
      `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>`,
      '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"/>',
    ];
    for (const metadataXml of bodies) {
      const res = await call('POST', '/v1/sso-connections', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, protocol: 'saml', name: 'bad', saml: { metadataXml } },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error?.code ?? res.json.code).toBe('sso_metadata_invalid');
    }
    const huge = await call('POST', '/v1/sso-connections', {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        protocol: 'saml',
        name: 'huge',
        saml: { metadataXml: `<x>${'a'.repeat(10 * 1024 * 1024)}</x>` },
      },
    });
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
    const refusedUrl = await call('POST', '/v1/sso-connections', {
      cookie: admin.cookie,
      body: {
        organization_slug: org.slug,
        protocol: 'saml',
        name: 'meta',
        saml: { metadataUrl: 'http://169.254.169.254/latest/meta-data' },
      },
    });
    expect(refusedUrl.status).toBe(400);
    expect(await db.select().from(ssoConnections).where(eq(ssoConnections.tenantId, org.id))).toEqual([]);
  });

  it("another organization's connection is 404; a member without sso.manage is refused", async () => {
    const s = await setup();
    const stranger = await seedSignedIn(s.db, { organization: await seedOrganization(s.db), roleKey: 'org_admin' });
    expect((await call('GET', `/v1/sso-connections/${s.connection.id}`, { cookie: stranger.cookie })).status).toBe(404);
    expect((await call('DELETE', `/v1/sso-connections/${s.connection.id}`, { cookie: stranger.cookie })).status).toBe(404);
    const member = await seedSignedIn(s.db, { organization: s.org, roleKey: 'org_member' });
    expect((await call('PATCH', `/v1/sso-connections/${s.connection.id}`, { cookie: member.cookie, body: { name: 'x' } })).status).toBe(
      403,
    );
    const read = await call('GET', `/v1/sso-connections?organization_slug=${s.org.slug}`, { cookie: s.admin.cookie });
    expect(read.json.data).toHaveLength(1);
    expect(JSON.stringify(read.json)).not.toContain('BEGIN CERTIFICATE');
  });
});

describe('who goes where', () => {
  it('an email at a verified domain with a connection goes to the IdP; at an unverified domain, to the engine', async () => {
    const s = await setup();
    const jar = new CookieJar();
    const routed = await jar.fetch(`${server.url}/auth/login?login_hint=kim@${s.domain.domain}&return_to=/user`);
    expect(routed.status).toBe(303);
    expect(routed.headers.get('location')).toBe(`/sso/${s.connection.id}/start?return_to=%2Fuser`);
    // Another organization adds the same name as a pending domain, with a connection of its own: nothing changes for it.
    const pending = await seedDomain(s.db, { tenantId: s.org.id, verified: false });
    const engine = await jar.fetch(`${server.url}/auth/login?login_hint=kim@${pending.domain}`);
    expect(engine.status).toBe(303);
    expect(engine.headers.get('location')).not.toContain('/sso/');
  });

  it('"require SSO" refuses an engine sign-in of the domain\'s people; platform admins pass', async () => {
    const s = await setup();
    // The development engine's people are at svc.local: this server's organization verifies it.
    const svcLocal = await seedDomain(s.db, { tenantId: s.org.id, domain: 'svc.local', verified: true });
    const patched = await call('PATCH', `/v1/domains/${svcLocal.id}`, { cookie: s.admin.cookie, body: { policy: 'require_sso' } });
    expect(patched.status, patched.text).toBe(200);
    /** Straight to the engine (no login_hint: svc cannot route), as someone bypassing the email step would. */
    async function engineSignIn(email: string, password: string) {
      const jar = new CookieJar();
      const started = await jar.fetch(`${server.url}/auth/login`);
      const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, (l) => l.includes('/auth/callback'));
      const submitted = await jar.post(page.url, { email, password });
      const done = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, (l) => l.includes('/auth/callback'));
      const res = await jar.fetch(done.url);
      return { status: res.status, text: await res.text(), jar };
    }
    const refused = await engineSignIn('user@svc.local', 'user-password');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('sso_required');
    expect(refused.jar.cookiesFor(server.url).svc_session).toBeUndefined();
    const admin = await engineSignIn('admin@svc.local', 'admin-password');
    expect(admin.status).toBe(303);
  });

  it("organization=<slug> on an authorization request goes to that organization's IdP; the application gets its claims", async () => {
    const s = await setup();
    idp.user = { email: `app-user@${s.domain.domain}`, name: 'App User', groups: [] };
    const redirectUri = 'http://127.0.0.1:53119/callback';
    const app = await seedApplication(s.db, { clientType: 'public', redirectUrls: [redirectUri] });
    const config = await oidc.discovery(new URL(server.url), app.application.id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile organization',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      organization: s.org.slug,
    });
    const jar = new CookieJar();
    let current = url.href;
    const visited: string[] = [];
    for (let hop = 0; hop < 30 && !current.startsWith(redirectUri); hop++) {
      visited.push(new URL(current).pathname);
      const res = await jar.fetch(current);
      const location = res.headers.get('location');
      if (location) {
        current = new URL(location, current).href;
        continue;
      }
      const html = await res.text();
      expect(new URL(current).origin, html.slice(0, 300)).toBe(idp.url);
      const form = formOf(html);
      const posted = await post(s, form.fields, jar);
      expect(posted.status, codeOf(posted.text)).toBe(303);
      current = new URL(posted.location ?? '', server.url).href;
    }
    expect(visited).toContain(`/sso/${s.connection.id}/start`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(current), { pkceCodeVerifier: verifier, expectedState: state });
    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri as string));
    const at = await jwtVerify(tokens.access_token, jwks, { issuer: server.url, audience: app.application.id });
    expect(at.payload).toMatchObject({ org_id: s.org.id, org_slug: s.org.slug, org_role: 'org_member' });
    const id = await jwtVerify(tokens.id_token as string, jwks, { issuer: server.url, audience: app.application.id });
    expect(id.payload.email).toBe(`app-user@${s.domain.domain}`);
  });
});
