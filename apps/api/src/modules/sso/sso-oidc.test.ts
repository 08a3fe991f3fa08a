import { users } from '@svc/db/schema/identity';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { CookieJar } from '../../../../dev-engine/src/cookie-jar.ts';
import { seedDomain } from '../domains/domains.fixtures.ts';
import { startOp, type TestOp } from './oidc-idp.fixtures.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

let op: TestOp;

beforeAll(async () => {
  op = await startOp();
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await server?.close();
  await op?.close();
});

async function setup(issuer = op.issuer) {
  const db = server.services.db;
  const org = await seedOrganization(db);
  const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
  const domain = await seedDomain(db, { tenantId: org.id, verified: true });
  const res = await fetch(`${server.url}/v1/sso-connections`, {
    method: 'POST',
    headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
    body: JSON.stringify({
      organization_slug: org.slug,
      protocol: 'oidc',
      name: 'Customer OIDC',
      oidc: { issuer, clientId: 'svc', clientSecret: 'svc-secret-svc-secret-svc-secret' },
    }),
  });
  const connection = (await res.json()) as Record<string, any>;
  expect(res.status, JSON.stringify(connection)).toBe(201);
  expect(JSON.stringify(connection)).not.toContain('svc-secret');
  op.setClient(connection.oidc.redirectUri);
  return { db, org, domain, connection };
}

const codeOf = (html: string) => /data-testid="sso-error">([a-z_]+)</.exec(html)?.[1];

/** The browser, from svc's start URL through the IdP until svc answers something other than a redirect to the IdP. */
async function signIn(connectionId: string) {
  const jar = new CookieJar();
  let current = `${server.url}/sso/${connectionId}/start?return_to=/user`;
  for (let hop = 0; hop < 20; hop++) {
    const res = await jar.fetch(current);
    const location = res.headers.get('location');
    const here = new URL(current);
    if (here.origin === server.url && here.pathname.includes('/callback')) {
      return { status: res.status, location, text: await res.text(), jar };
    }
    if (!location) {
      return { status: res.status, location, text: await res.text(), jar };
    }
    current = new URL(location, current).href;
  }
  throw new Error('too many hops');
}

describe('OIDC connection to a bare oidc-provider', () => {
  it('code flow with PKCE: the ID token makes a member and a svc session', async () => {
    const s = await setup();
    op.person = { sub: 'oidc-1', email: `Oli@${s.domain.domain}`, email_verified: true, name: 'Oli', groups: [] };
    const done = await signIn(s.connection.id);
    expect(done.status, codeOf(done.text)).toBe(303);
    expect(done.location).toBe('/user');
    const me = (await (await done.jar.fetch(`${server.url}/v1/me`)).json()) as Record<string, any>;
    expect(me.user.email).toBe(`oli@${s.domain.domain}`);
    expect(me.activeWorkspace.id).toBe(s.org.id);
  });

  it('email_verified false is refused, nobody made', async () => {
    const s = await setup();
    op.person = { sub: 'oidc-2', email: `unv@${s.domain.domain}`, email_verified: false, name: 'U', groups: [] };
    const done = await signIn(s.connection.id);
    expect(done.status).toBe(400);
    expect(codeOf(done.text)).toBe('sso_email_not_verified');
    expect(
      await s.db
        .select()
        .from(users)
        .where(eq(users.email, `unv@${s.domain.domain}`)),
    ).toEqual([]);
  });

  it('an ID token whose signature does not verify with the IdP JWKS is refused', async () => {
    const s = await setup();
    op.person = { sub: 'oidc-3', email: `sig@${s.domain.domain}`, email_verified: true, name: 'S', groups: [] };
    op.wrongJwks = true;
    try {
      const done = await signIn(s.connection.id);
      expect(done.status).toBe(400);
      expect(codeOf(done.text)).toBe('sso_signature_invalid');
    } finally {
      op.wrongJwks = false;
    }
  });

  it('a connection naming another issuer than the IdP says it is: refused before the IdP is asked', async () => {
    const s = await setup(op.issuer.replace('127.0.0.1', 'localhost'));
    const res = await fetch(`${server.url}/sso/${s.connection.id}/start`, { redirect: 'manual' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(codeOf(await res.text())).toBe('sso_issuer_mismatch');
  });

  it('a replayed callback is refused', async () => {
    const s = await setup();
    op.person = { sub: 'oidc-4', email: `rep@${s.domain.domain}`, email_verified: true, name: 'R', groups: [] };
    const jar = new CookieJar();
    let current = `${server.url}/sso/${s.connection.id}/start`;
    let callback = '';
    for (let hop = 0; hop < 20 && !callback; hop++) {
      const res = await jar.fetch(current);
      current = new URL(res.headers.get('location') ?? '', current).href;
      if (current.startsWith(`${server.url}/sso/oidc/`)) {
        callback = current;
      }
    }
    expect((await jar.fetch(callback)).status).toBe(303);
    const again = await jar.fetch(callback);
    expect(again.status).toBe(400);
    expect(codeOf(await again.text())).toBe('sso_assertion_replayed');
  });
});
