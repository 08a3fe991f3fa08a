import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase, type Database } from '@svc/db/client';
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { type SpawnedServer, spawnServer } from '../../../../../test/support/spawn.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { CookieJar } from '../../../../dev-engine/src/cookie-jar.ts';
import { seedDomain } from '../domains/domains.fixtures.ts';

const REDIRECT = 'http://127.0.0.1:53119/callback';

/** An application's back end: records the logout tokens POSTed to it. */
async function startReceiver(): Promise<{ url: string; tokens: string[]; close: () => Promise<void> }> {
  const tokens: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      tokens.push(new URLSearchParams(body).get('logout_token') ?? '');
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tokens,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A directory deactivating a person ends their svc session on every API process within a second
 * and sends back-channel logout to the applications they signed in to (docs/enterprise.md
 * "Directory sync"): two real `svc serve` processes on one database (A runs the job worker), the
 * person signed in on A through the development engine and into an application with
 * openid-client, the SCIM deactivation sent to B.
 */
describe('SCIM deactivation across API processes', () => {
  let a: SpawnedServer;
  let b: SpawnedServer;
  let database: Database;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    const databaseUrl = await createTestDatabase();
    // One after the other: on a loaded machine two cold starts at once can outlast the health deadline.
    a = await spawnServer({
      DATABASE_URL: databaseUrl,
      WORKER_ENABLED: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_SIGNIN_PER_MINUTE: '1000',
      WEBHOOK_RETRY_SCHEDULE: '0,300ms,300ms,300ms',
    });
    b = await spawnServer({ DATABASE_URL: databaseUrl });
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-test-scim' });
  }, 240_000);

  afterAll(async () => {
    await database?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await receiver?.close();
  });

  const me = (s: SpawnedServer, cookie: string) => fetch(`${s.url}/v1/me`, { headers: { cookie } });

  it('PATCH active "False" on B: the session is refused on A and B within a second; the application gets a logout token', async () => {
    const db = database.db;
    // user@svc.local signs in on A (for real, through A's engine): svc knows them, email verified.
    const jar = new CookieJar();
    const atCallback = (l: string) => l.startsWith(`${a.url}/auth/callback`);
    const started = await jar.fetch(`${a.url}/auth/login?login_hint=user@svc.local`);
    const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
    const submitted = await jar.post(page.url, { email: 'user@svc.local', password: 'user-password' });
    const callback = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
    expect((await jar.fetch(callback.url)).status).toBe(303);
    const cookie = `svc_session=${jar.cookiesFor(a.url).svc_session}`;

    // The customer's organization owns svc.local and has a directory.
    const org = await seedOrganization(db);
    const admin = await seedSignedIn(db, { organization: org, roleKey: 'org_admin' });
    await seedDomain(db, { tenantId: org.id, domain: 'svc.local', verified: true });
    const created = await fetch(`${a.url}/v1/directories`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: a.url },
      body: JSON.stringify({ organization_slug: org.slug, name: 'Entra ID' }),
    });
    expect(created.status).toBe(201);
    const directory = (await created.json()) as { id: string; token: string };
    const scim = (s: SpawnedServer, method: string, path: string, body: unknown) =>
      fetch(`${s.url}/scim/v2/${directory.id}${path}`, {
        method,
        headers: { authorization: `Bearer ${directory.token}`, 'content-type': 'application/scim+json' },
        body: JSON.stringify(body),
      });
    const user = await scim(b, 'POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'user@svc.local',
      externalId: 'entra-object-id-1',
      active: true,
    });
    expect(user.status).toBe(201);
    const scimUserId = ((await user.json()) as { id: string }).id;

    // The person signs in to the organization's application (single sign-on from the svc session).
    const app = await seedApplication(db, {
      org: org.slug,
      clientType: 'confidential',
      redirectUrls: [REDIRECT],
      backchannelLogoutUrl: `${receiver.url}/backchannel`,
    });
    const config = await oidc.discovery(new URL(a.url), app.application.id, undefined, oidc.ClientSecretBasic(app.secretKey), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email offline_access organization',
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      organization: org.slug,
    });
    const { callback: appCallback } = await browseToRedirect(jar, url, { svcUrl: a.url, redirectUri: REDIRECT });
    const tokens = await oidc.authorizationCodeGrant(config, appCallback, { pkceCodeVerifier: verifier, expectedState: state });
    const sid = (tokens.claims() as JWTPayload).sid as string;
    expect((await me(a, cookie)).status).toBe(200);
    expect((await me(b, cookie)).status).toBe(200);

    const deactivated = await scim(b, 'PATCH', `/Users/${scimUserId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
    });
    expect(deactivated.status).toBe(200);
    const at = Date.now();
    // Refused on both processes within a second of the answer (no waiting on a cache).
    for (;;) {
      const [onA, onB] = await Promise.all([me(a, cookie), me(b, cookie)]);
      if (onA.status === 401 && onB.status === 401) {
        break;
      }
      expect(Date.now() - at, 'the session still works a second after the deactivation').toBeLessThan(1_000);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(Date.now() - at).toBeLessThan(1_000);

    // The application's back end gets a logout token for the session, signed by svc.
    const deadline = Date.now() + 15_000;
    let token: string | undefined;
    while (!token && Date.now() < deadline) {
      token = receiver.tokens.find((t) => {
        const payload = JSON.parse(Buffer.from(t.split('.')[1] ?? '', 'base64url').toString() || '{}') as JWTPayload;
        return payload.sid === sid && payload.aud === app.application.id;
      });
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(token, 'a back-channel logout token').toBeDefined();
    const verified = await jwtVerify(token as string, createRemoteJWKSet(new URL(`${a.url}/oidc/jwks`)), {
      issuer: a.url,
      audience: app.application.id,
      typ: 'logout+jwt',
    });
    expect(verified.payload.events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });
    // And the refresh token is dead.
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toThrow();
  }, 120_000);
});
