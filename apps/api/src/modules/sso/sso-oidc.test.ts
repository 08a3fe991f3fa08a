import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { users } from '@svc/db/schema/identity';
import { eq } from 'drizzle-orm';
import { exportJWK } from 'jose';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { CookieJar } from '../../../../dev-engine/src/cookie-jar.ts';
import { seedDomain } from '../domains/domains.fixtures.ts';

// A customer's OIDC IdP: a bare oidc-provider (code svc did not write), whose interactions sign in
// whoever the test says, and whose JWKS the test may swap for a key that did not sign anything.

let server: Awaited<ReturnType<typeof startTestServer>>;

type Person = { sub: string; email: string; email_verified: boolean; name: string; groups: string[] };

type TestOp = { issuer: string; person: Person; wrongJwks: boolean; close: () => Promise<void>; setClient: (redirectUri: string) => void };

async function startOp(): Promise<TestOp> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const state = {
    person: { sub: 'p1', email: 'nobody@example.com', email_verified: true, name: '', groups: [] } as Person,
    wrongJwks: false,
  };
  let provider: Provider | undefined;
  const other = await exportJWK(generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey);
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (!provider) {
        res.writeHead(503).end();
        return;
      }
      if (state.wrongJwks && req.url === '/jwks') {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ keys: [{ ...other, kid: 'x', use: 'sig', alg: 'RS256' }] }));
        return;
      }
      if (req.url?.startsWith('/interaction/')) {
        const details = await provider.interactionDetails(req, res);
        if (details.prompt.name === 'login') {
          await provider.interactionFinished(req, res, { login: { accountId: state.person.sub } }, { mergeWithLastSubmission: false });
          return;
        }
        const grant = new provider.Grant({ accountId: details.session?.accountId ?? '', clientId: String(details.params.client_id) });
        grant.addOIDCScope('openid email profile');
        await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
        return;
      }
      provider.callback()(req, res);
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  return {
    issuer,
    get person() {
      return state.person;
    },
    set person(p: Person) {
      state.person = p;
    },
    get wrongJwks() {
      return state.wrongJwks;
    },
    set wrongJwks(v: boolean) {
      state.wrongJwks = v;
    },
    setClient(redirectUri: string) {
      provider = new Provider(issuer, {
        clients: [
          {
            client_id: 'svc',
            client_secret: 'svc-secret-svc-secret-svc-secret',
            redirect_uris: [redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
          },
        ],
        findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ ...state.person, sub: id }) }),
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
        conformIdTokenClaims: false,
        pkce: { required: () => true },
      });
    },
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}

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
