import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase, type Database } from '@svc/db/client';
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { browseToRedirect, CookieJar, PEOPLE, type Person } from '../../../../../test/support/oidc-browser.ts';
import { freePort, startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';
import { type CreatedApplication, changeApplicationStatus } from '../applications/service.ts';
import { signInFromEngine } from '../identity/service.ts';
import { endSessions } from '../session-store/end.ts';

const REDIRECT = 'http://127.0.0.1:53118/callback';
const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

type Received = { path: string; contentType: string | undefined; token: string };

/** An application's back end: records every POST it receives (form-encoded logout_token) and answers 200. */
async function startReceiver(port = 0): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        token: new URLSearchParams(body).get('logout_token') ?? '',
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Ending a svc session ends it in every application it signed in to: each path that ends a session
 * (sign-out, admin revocation, account suspension, leaving the platform admin group) or one of its
 * application sign-ins (membership suspended or removed, application disabled) makes the next
 * refresh invalid_grant and delivers an OpenID Connect Back-Channel Logout token, through the job
 * queue and a real worker, to the application's backchannelLogoutUrl. Real svc, engine,
 * PostgreSQL, worker and an HTTP receiver; openid-client as the confidential application.
 */
describe('svc OpenID Provider: sessions are one thing (back-channel logout)', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let jwks: ReturnType<typeof createRemoteJWKSet>;
  /** The organization of user@svc.local (their own workspace, where they are org_admin). */
  let org: { id: string; slug: string };
  /** Confidential, with a back-channel logout URL. */
  let appA: CreatedApplication;
  /** Confidential, without one. */
  let appB: CreatedApplication;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer({
      env: {
        RATE_LIMIT_SIGNIN_PER_MINUTE: '1000',
        WORKER_ENABLED: 'true',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_SCHEDULE: '0,300ms,300ms,300ms,300ms,300ms,300ms,300ms',
      },
    });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-backchannel' });
    jwks = createRemoteJWKSet(new URL(`${server.url}/oidc/jwks`));
    await svcSignIn('user');
    await svcSignIn('social');
    const [row] = await database.sql<{ id: string; slug: string }[]>`
      select o.id, o.slug from memberships m join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
      where u.email = 'user@svc.local' and o.kind = 'tenant' and m.role_key = 'org_admin'`;
    org = row as { id: string; slug: string };
    appA = await seedApplication(database.db, {
      org: org.slug,
      clientType: 'confidential',
      redirectUrls: [REDIRECT],
      backchannelLogoutUrl: `${receiver.url}/a/backchannel`,
    });
    appB = await seedApplication(database.db, { org: org.slug, clientType: 'confidential', redirectUrls: [REDIRECT] });
    // social@svc.local is also an active member of the organization.
    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${org.id}, id, 'org_member' from users where email = 'social@svc.local'`;
  }, 120_000);

  afterAll(async () => {
    await database?.close();
    await server?.close();
    await receiver?.close();
  });

  /** A browser with a fresh svc session of `person` (hosted sign-in through the engine). */
  async function svcSignIn(person: Person): Promise<CookieJar> {
    const jar = new CookieJar();
    const atCallback = (l: string) => l.startsWith(`${server.url}/auth/callback`);
    const query = person === 'social' ? 'method=social' : `login_hint=${encodeURIComponent(PEOPLE[person].email)}`;
    const started = await jar.fetch(`${server.url}/auth/login?${query}`);
    expect(started.status).toBe(303);
    const page = await jar.follow(new URL(started.headers.get('location') ?? '').href, atCallback);
    let callback = page;
    if (!page.url.startsWith(`${server.url}/auth/callback`)) {
      const submitted = await jar.post(page.url, { email: PEOPLE[person].email, password: PEOPLE[person].password });
      callback = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, atCallback);
    }
    expect((await jar.fetch(callback.url)).status).toBe(303);
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    return jar;
  }

  async function clientOf(app: CreatedApplication): Promise<oidc.Configuration> {
    return oidc.discovery(new URL(server.url), app.application.id, undefined, oidc.ClientSecretBasic(app.secretKey), {
      execute: [oidc.allowInsecureRequests],
    });
  }

  /** The application signs the browser's svc session in (single sign-on): tokens with offline_access. */
  async function signInTo(app: CreatedApplication, jar: CookieJar, opts: { person?: Person; organization?: boolean } = {}) {
    const config = await clientOf(app);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: opts.organization === false ? 'openid email offline_access' : 'openid email offline_access organization',
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...(opts.organization === false ? {} : { organization: org.slug }),
    });
    const { callback } = await browseToRedirect(jar, url, {
      svcUrl: server.url,
      redirectUri: REDIRECT,
      ...(opts.person ? { person: opts.person } : {}),
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const claims = tokens.claims() as JWTPayload;
    expect(tokens.refresh_token).toBeDefined();
    return { config, tokens, sid: claims.sid as string, sub: claims.sub as string };
  }

  /** The error openid-client's refresh meets, or 'ok'. */
  async function refreshOutcome(config: oidc.Configuration, refreshToken: string): Promise<string> {
    try {
      await oidc.refreshTokenGrant(config, refreshToken);
      return 'ok';
    } catch (error) {
      // A token endpoint error (400), or a client authentication challenge (401 WWW-Authenticate).
      const challenge = (error as { cause?: { parameters?: { error?: string } }[] }).cause;
      return (
        (error as { error?: string }).error ?? (Array.isArray(challenge) ? challenge[0]?.parameters?.error : undefined) ?? String(error)
      );
    }
  }

  /** Logout tokens received for `aud` and `sid`, waiting up to `ms` for `count` of them. */
  async function logoutTokensFor(aud: string, sid: string, opts: { count?: number; ms?: number } = {}): Promise<JWTPayload[]> {
    const count = opts.count ?? 1;
    const deadline = Date.now() + (opts.ms ?? 10_000);
    for (;;) {
      const found: JWTPayload[] = [];
      for (const r of receiver.received) {
        const payload = JSON.parse(Buffer.from(r.token.split('.')[1] ?? '', 'base64url').toString() || '{}') as JWTPayload;
        if (payload.aud === aud && payload.sid === sid) {
          found.push(payload);
        }
      }
      if (found.length >= count || Date.now() > deadline) {
        return found;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The logout token is what OpenID Connect Back-Channel Logout 1.0 says, signed with svc's published key. */
  async function expectLogoutToken(app: CreatedApplication, sid: string, sub: string): Promise<void> {
    const [payload] = await logoutTokensFor(app.application.id, sid);
    expect(payload, `a logout token for ${sid}`).toBeDefined();
    const first = tokenOf(sid, app);
    const entry = receiver.received.find((r) => r.token === first);
    expect(entry?.path).toBe('/a/backchannel');
    expect(entry?.contentType).toBe('application/x-www-form-urlencoded');
    const token = entry?.token as string;
    expect(decodeProtectedHeader(token).typ).toBe('logout+jwt');
    const verified = await jwtVerify(token, jwks, {
      issuer: server.url,
      audience: app.application.id,
      typ: 'logout+jwt',
      requiredClaims: ['iat', 'exp', 'jti', 'sub', 'sid', 'events'],
    });
    expect(verified.payload).toMatchObject({ sub, sid, events: { [BACKCHANNEL_EVENT]: {} } });
    expect(verified.payload.nonce).toBeUndefined();
    expect((verified.payload.exp as number) - (verified.payload.iat as number)).toBeLessThanOrEqual(300);
  }

  function tokenOf(sid: string, app: CreatedApplication): string | undefined {
    return receiver.received.find((r) => {
      const payload = JSON.parse(Buffer.from(r.token.split('.')[1] ?? '', 'base64url').toString() || '{}') as JWTPayload;
      return payload.aud === app.application.id && payload.sid === sid;
    })?.token;
  }

  const control = (jar: CookieJar, method: string, path: string, body?: unknown) =>
    jar.fetch(`${server.url}/v1${path}`, {
      method,
      headers: { 'content-type': 'application/json', origin: server.url },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function userIdOf(email: string): Promise<string> {
    const [row] = await database.sql<{ id: string }[]>`select id from users where email = ${email}`;
    return row?.id as string;
  }

  async function eventsOf(type: string, sid: string) {
    return database.sql<{ tenant_id: string; data: Record<string, unknown> }[]>`
      select tenant_id, data from webhook_events where type = ${type} and data->>'id' = ${sid} order by created_at`;
  }

  it('signing out (/auth/logout): refresh is invalid_grant, the application gets a logout token; one without a URL gets none; session.created and session.ended', async () => {
    const discovery = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(discovery).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
    const jar = await svcSignIn('user');
    const a = await signInTo(appA, jar);
    const b = await signInTo(appB, jar);
    expect(b.sid).toBe(a.sid);
    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('ok');

    // The sign-ins are recorded, audited and announced to the organization.
    const rows = await database.sql<{ application_id: string; organization_id: string | null; ended_at: Date | null }[]>`
      select application_id, organization_id, ended_at from session_applications where session_id = ${a.sid} order by application_id`;
    expect(rows.map((r) => r.application_id).sort()).toEqual([appA.application.id, appB.application.id].sort());
    expect(rows.every((r) => r.organization_id === org.id && r.ended_at === null)).toBe(true);
    const created = await eventsOf('session.created', a.sid);
    expect(created.map((e) => e.tenant_id)).toEqual([org.id, org.id]);
    expect(created[0]?.data).toMatchObject({ object: 'session', id: a.sid, userId: a.sub, organizationId: org.id });
    expect(created.map((e) => (e.data.application as { id: string }).id).sort()).toEqual([appA.application.id, appB.application.id].sort());
    const [audited] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from audit_logs where action = 'session.created' and target_id = ${a.sid} and tenant_id = ${org.id}`;
    expect(audited?.n).toBe(2);
    // Signing in again through the same session is no new sign-in: nothing more is announced.
    await signInTo(appA, jar);
    expect(await eventsOf('session.created', a.sid)).toHaveLength(2);

    // The organization's Sessions list shows the applications the session signed in to; an
    // application of another organization, signed in to for no organization, is not its business.
    const appX = await seedApplication(database.db, { clientType: 'confidential', redirectUrls: [REDIRECT] });
    await signInTo(appX, jar, { organization: false });
    const listed = await jar.fetch(`${server.url}/v1/sessions?organization_slug=${org.slug}`);
    expect(listed.status).toBe(200);
    const page = (await listed.json()) as { data: { id: string; applications: { id: string; name: string; endedAt: string | null }[] }[] };
    const mine = page.data.find((session) => session.id === a.sid);
    expect(
      mine?.applications.map((app) => ({ id: app.id, name: app.name, endedAt: app.endedAt })).sort((x, y) => x.id.localeCompare(y.id)),
    ).toEqual(
      [appA, appB]
        .map((app) => ({ id: app.application.id, name: app.application.name, endedAt: null }))
        .sort((x, y) => x.id.localeCompare(y.id)),
    );
    // The other organization sees its own application's sign-in (organizationId null), announced to it.
    expect((await eventsOf('session.created', a.sid)).filter((e) => e.tenant_id === appX.organization.id)).toHaveLength(1);

    const out = await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } });
    expect(out.status).toBe(303);
    // The job for B was never queued: B takes no logout tokens.
    const [queuedForB] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker._private_jobs where key = ${`oidc:backchannel_logout:${a.sid}:${appB.application.id}`}`;
    expect(queuedForB?.n).toBe(0);

    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('invalid_grant');
    expect(await refreshOutcome(b.config, b.tokens.refresh_token as string)).toBe('invalid_grant');
    await expectLogoutToken(appA, a.sid, a.sub);
    expect(await logoutTokensFor(appB.application.id, a.sid, { ms: 500 })).toHaveLength(0);
    expect(receiver.received.filter((r) => r.path !== '/a/backchannel')).toHaveLength(0);

    const ended = (await eventsOf('session.ended', a.sid)).filter((e) => e.tenant_id === org.id);
    expect(ended).toHaveLength(1);
    expect(ended[0]?.tenant_id).toBe(org.id);
    expect(ended[0]?.data).toMatchObject({ reason: 'signed_out', userId: a.sub, organizationId: org.id });
    expect([...((ended[0]?.data.applicationIds as string[] | undefined) ?? [])].sort()).toEqual(
      [appA.application.id, appB.application.id].sort(),
    );
  });

  it("an admin revokes the session (POST /v1/sessions/{id}/revoke); another organization's admin cannot, and nothing is sent", async () => {
    const jar = await svcSignIn('user');
    const a = await signInTo(appA, jar);

    // Attack: the admin of another organization (social's own workspace) names this session.
    const outsider = await svcSignIn('social');
    const [theirs] = await database.sql<{ slug: string }[]>`
      select o.slug from memberships m join organizations o on o.id = m.tenant_id
      where m.user_id = ${await userIdOf('social@svc.local')} and m.role_key = 'org_admin' and o.kind = 'tenant'`;
    const forged = await control(outsider, 'POST', `/sessions/${a.sid}/revoke?organization_slug=${theirs?.slug}`, {});
    expect(forged.status).toBe(404);
    // Their own session ending sends nothing to this application either.
    const outsiderSid = (
      await database.sql<{ id: string }[]>`
      select id from sessions where user_id = ${await userIdOf('social@svc.local')} and revoked_at is null order by created_at desc limit 1`
    )[0]?.id;
    expect((await outsider.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } })).status).toBe(303);
    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('ok');
    expect(await logoutTokensFor(appA.application.id, a.sid, { ms: 1_000 })).toHaveLength(0);
    expect(await logoutTokensFor(appA.application.id, outsiderSid as string, { ms: 10 })).toHaveLength(0);

    const admin = await svcSignIn('user');
    const revoked = await control(admin, 'POST', `/sessions/${a.sid}/revoke?organization_slug=${org.slug}`, {});
    expect(revoked.status).toBe(200);
    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('invalid_grant');
    await expectLogoutToken(appA, a.sid, a.sub);
    expect((await eventsOf('session.revoked', a.sid)).length).toBe(1);
    expect((await eventsOf('session.ended', a.sid))[0]?.data.reason).toBe('revoked');
  });

  it("a membership suspended, then removed, ends the sign-ins made for that organization; another organization's membership ending sends nothing", async () => {
    const admin = await svcSignIn('user');
    const socialId = await userIdOf('social@svc.local');
    const jar = await svcSignIn('social');
    const first = await signInTo(appA, jar, { person: 'social' });
    // A member who signed in to the organization's application is one of its users.
    const users = await control(admin, 'GET', `/users?organization_slug=${org.slug}&email=social`);
    expect(((await users.json()) as { data: { id: string }[] }).data.map((u) => u.id)).toContain(socialId);

    // Attack: the person's membership of another organization ends: nothing for this sign-in.
    const other = await seedApplication(database.db);
    await database.sql`insert into memberships (tenant_id, user_id, role_key) values (${other.organization.id}, ${socialId}, 'org_member')`;
    await endSessions(database.db, { kind: 'membership_ended', tenantId: other.organization.id, userId: socialId });
    expect(await refreshOutcome(first.config, first.tokens.refresh_token as string)).toBe('ok');
    expect(await logoutTokensFor(appA.application.id, first.sid, { ms: 1_000 })).toHaveLength(0);

    const suspended = await control(admin, 'PATCH', `/users/${socialId}`, { organization_slug: org.slug, status: 'suspended' });
    expect(suspended.status).toBe(200);
    expect(await refreshOutcome(first.config, first.tokens.refresh_token as string)).toBe('invalid_grant');
    await expectLogoutToken(appA, first.sid, socialId);
    expect((await eventsOf('session.ended', first.sid))[0]?.data.reason).toBe('membership_ended');
    // Reactivated, the grant stays ended: the application must sign the person in again.
    expect((await control(admin, 'PATCH', `/users/${socialId}`, { organization_slug: org.slug, status: 'active' })).status).toBe(200);
    expect(await refreshOutcome(first.config, first.tokens.refresh_token as string)).toBe('invalid_grant');

    // Signing in again starts the application's sign-in anew; removing the member ends it.
    const second = await signInTo(appA, jar, { person: 'social' });
    expect(second.sid).toBe(first.sid);
    const removed = await control(admin, 'DELETE', `/users/${socialId}?organization_slug=${org.slug}`);
    expect(removed.status).toBe(200);
    expect(await refreshOutcome(second.config, second.tokens.refresh_token as string)).toBe('invalid_grant');
    expect(await logoutTokensFor(appA.application.id, first.sid, { count: 2 })).toHaveLength(2);
    await database.sql`insert into memberships (tenant_id, user_id, role_key) values (${org.id}, ${socialId}, 'org_member')`;
  });

  it("a platform admin suspends the person's account: every session ends, with its logout tokens", async () => {
    const platformAdmin = await svcSignIn('admin');
    const socialId = await userIdOf('social@svc.local');
    const jar = await svcSignIn('social');
    const a = await signInTo(appA, jar, { person: 'social' });
    const res = await control(platformAdmin, 'PATCH', `/users/${socialId}`, {
      organization_slug: org.slug,
      accountStatus: 'suspended',
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('invalid_grant');
    await expectLogoutToken(appA, a.sid, socialId);
    expect((await eventsOf('session.ended', a.sid))[0]?.data.reason).toBe('account_suspended');
    await database.sql`update users set status = 'active' where id = ${socialId}`;
  });

  it('leaving the platform admin group ends the sessions opened as a platform admin, with their logout tokens', async () => {
    const jar = await svcSignIn('admin');
    // Not a member of the organization: the sign-in speaks for no organization (signInAudience anyone).
    const a = await signInTo(appA, jar, { person: 'admin', organization: false });
    const [row] = await database.sql<{ organization_id: string | null }[]>`
      select organization_id from session_applications where session_id = ${a.sid}`;
    expect(row?.organization_id).toBeNull();
    const [admin] = await database.sql<{ engine_subject: string; name: string }[]>`
      select engine_subject, name from users where id = ${a.sub}`;
    await signInFromEngine(
      database.db,
      { subject: admin?.engine_subject as string, email: 'admin@svc.local', emailVerified: true, name: admin?.name ?? '', groups: [] },
      { platformAdminGroup: 'platform-admins' },
    );
    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('invalid_grant');
    await expectLogoutToken(appA, a.sid, a.sub);
    // Announced to the application's organization.
    expect((await eventsOf('session.ended', a.sid))[0]).toMatchObject({ tenant_id: org.id, data: { reason: 'platform_admin_left' } });
  });

  it('disabling the application ends its sign-ins (grants gone, logout token sent); the svc session stands', async () => {
    const jar = await svcSignIn('user');
    const a = await signInTo(appA, jar);
    await changeApplicationStatus(database.db, appA, 'disabled');
    await expectLogoutToken(appA, a.sid, a.sub);
    expect(await refreshOutcome(a.config, a.tokens.refresh_token as string)).toBe('invalid_client');
    await changeApplicationStatus(database.db, appA, 'active');
    // Enabled again (every process hears of it within a second), the old refresh token is still
    // refused: the grant ended with the disabling.
    let outcome = 'invalid_client';
    for (let i = 0; i < 60 && outcome === 'invalid_client'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      outcome = await refreshOutcome(a.config, a.tokens.refresh_token as string);
    }
    expect(outcome).toBe('invalid_grant');
    expect((await jar.fetch(`${server.url}/v1/me`)).status).toBe(200);
    expect((await eventsOf('session.ended', a.sid))[0]?.data.reason).toBe('application_disabled');
  });

  it('durable: the receiver is down when the session ends and up later; the logout token arrives after a retry', async () => {
    const port = await freePort();
    const appD = await seedApplication(database.db, {
      org: org.slug,
      clientType: 'confidential',
      redirectUrls: [REDIRECT],
      backchannelLogoutUrl: `http://127.0.0.1:${port}/a/backchannel`,
    });
    const jar = await svcSignIn('user');
    const d = await signInTo(appD, jar);
    expect((await jar.fetch(`${server.url}/auth/logout`, { method: 'POST', headers: { origin: server.url } })).status).toBe(303);
    await new Promise((r) => setTimeout(r, 700));
    const late = await startReceiver(port);
    try {
      const deadline = Date.now() + 15_000;
      while (late.received.length === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(late.received).toHaveLength(1);
      const verified = await jwtVerify(late.received[0]?.token as string, jwks, {
        issuer: server.url,
        audience: appD.application.id,
        typ: 'logout+jwt',
      });
      expect(verified.payload).toMatchObject({ sid: d.sid, sub: d.sub });
    } finally {
      await late.close();
    }
  });
});
