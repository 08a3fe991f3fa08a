import { createHash, randomBytes } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { recordApplicationSignIn } from '@svc/db/queries/session-applications';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { type SignedIn, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { CLAIM_PATH, keylessClaimToken, keylessClaimUrl } from './claim.ts';

/**
 * Claiming the keyless development application over real HTTP, on real PostgreSQL: the claim
 * link in client config and the agent context, the hosted page (sign-in, then back), the claim
 * (same id, client id and publishable key; a secret key once; the people who signed in during
 * development become members, their grants standing; a fresh keyless application afterwards),
 * and every refusal.
 */

const REDIRECT = 'http://127.0.0.1:53127/callback';
const COOKIE = 'svc_keyless_claim';

let server: Awaited<ReturnType<typeof startTestServer>>;
let database: Database;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
  database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-claim' });
});
afterAll(async () => {
  await database?.close();
  await server?.close();
});

type Json = Record<string, any>;

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, { redirect: 'manual', headers });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) as Json };
}

/** The keyless application as keyless=1 shows it: client config (with its claim link). */
async function keylessConfig(): Promise<Json> {
  const res = await get('/v1/client/config?keyless=1');
  expect(res.status).toBe(200);
  return res.json();
}

/** What the browser holds once it opened the claim link: the pending-claim cookie. */
function claimCookieOf(claimUrl: string): string {
  const url = new URL(claimUrl);
  return `${COOKIE}=${url.searchParams.get('application')}.${url.searchParams.get('token')}`;
}

function cookies(...parts: (string | undefined)[]): string {
  return parts.filter((p) => p !== undefined).join('; ');
}

async function postClaim(opts: {
  cookie: string;
  organization?: string;
  name?: string;
  /** confidential unless given; null sends none. */
  clientType?: string | null;
  origin?: string | null;
  body?: string;
}): Promise<{ status: number; text: string }> {
  const form = new URLSearchParams();
  if (opts.organization !== undefined) {
    form.set('organization', opts.organization);
  }
  if (opts.name !== undefined) {
    form.set('name', opts.name);
  }
  if (opts.clientType !== null) {
    form.set('client_type', opts.clientType ?? 'confidential');
  }
  const origin = opts.origin === undefined ? server.services.config.publicUrl : opts.origin;
  const res = await fetch(`${server.url}${CLAIM_PATH}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: opts.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      ...(origin ? { origin } : {}),
    },
    body: opts.body ?? form.toString(),
  });
  return { status: res.status, text: await res.text() };
}

const errorCodeOf = (html: string) => /data-testid="claim-error-code">([^<]+)</.exec(html)?.[1];
const testIdText = (html: string, id: string) => new RegExp(`data-testid="${id}">([^<]*)<`).exec(html)?.[1];

/** A person signed in to `applicationId` through svc (a recorded sign-in of their session). */
async function signedInTo(applicationId: string, person: SignedIn): Promise<void> {
  await recordApplicationSignIn(database.db, { sessionId: person.sessionId, applicationId, organizationId: null, at: new Date() });
}

async function membershipOf(tenantId: string, userId: string): Promise<{ role_key: string; status: string } | undefined> {
  const [row] = await database.sql<{ role_key: string; status: string }[]>`
    select role_key, status from memberships where tenant_id = ${tenantId} and user_id = ${userId}`;
  return row;
}

describe('the claim link', () => {
  it('keyless client config and agent context carry the same claim link, with a token; other applications carry none', async () => {
    const config = await keylessConfig();
    expect(config.keyless).toBe(true);
    const claimUrl = new URL(config.claimUrl as string);
    expect(`${claimUrl.origin}${claimUrl.pathname}`).toBe(`${server.services.config.publicUrl}${CLAIM_PATH}`);
    expect(claimUrl.searchParams.get('application')).toBe(config.application.id);
    expect(claimUrl.searchParams.get('token')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Not derivable from the id: an HMAC under the installation's key.
    expect(claimUrl.searchParams.get('token')).not.toContain(config.application.id);

    const context = (await get('/v1/setup/agent-context?keyless=1&framework=nextjs')).json();
    expect(context.claimUrl).toBe(config.claimUrl);
    expect(context.aiAgentPrompt).toContain(config.claimUrl);
    expect(context.steps.join('\n')).toContain(config.claimUrl);
    const markdown = await get('/v1/setup/agent-context?keyless=1&format=markdown');
    expect(markdown.text).toContain(config.claimUrl);

    // The same application through its publishable key is still the keyless one: same link.
    const byKey = (await get('/v1/client/config', { 'x-svc-publishable-key': config.application.publishableKey })).json();
    expect(byKey.claimUrl).toBe(config.claimUrl);

    const other = await seedApplication(database.db);
    const plain = (await get('/v1/client/config', { 'x-svc-publishable-key': other.publishableKey })).json();
    expect(plain.keyless).toBe(false);
    expect(plain.claimUrl).toBeNull();
    const plainContext = (await get(`/v1/setup/agent-context?publishable_key=${other.publishableKey}`)).json();
    expect(plainContext.claimUrl).toBeNull();
  });

  it('opening it keeps the link in a cookie and sends an anonymous browser to hosted sign-in, coming back to the claim page', async () => {
    const { claimUrl } = await keylessConfig();
    const opened = await get(new URL(claimUrl).pathname + new URL(claimUrl).search);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe(CLAIM_PATH);
    const setCookie = opened.headers.get('set-cookie') ?? '';
    expect(setCookie).toContain(`${claimCookieOf(claimUrl)};`);
    expect(setCookie).toContain('HttpOnly');

    const page = await get(CLAIM_PATH, { cookie: claimCookieOf(claimUrl) });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe(`/signin?return_to=${encodeURIComponent(CLAIM_PATH)}`);
    // The token never travels through sign-in.
    expect(page.headers.get('location')).not.toContain(new URL(claimUrl).searchParams.get('token'));
  });

  it('signed in, the page offers exactly the workspaces the person administers', async () => {
    const { claimUrl, application } = await keylessConfig();
    const admin = await seedSignedIn(database.db);
    const adminOf = await seedOrganization(database.db, { name: 'Admin Org' });
    const memberOf = await seedOrganization(database.db, { name: 'Member Org' });
    await database.sql`insert into memberships (tenant_id, user_id, role_key) values
      (${adminOf.id}, ${admin.user.id}, 'org_admin'), (${memberOf.id}, ${admin.user.id}, 'org_member')`;
    const page = await get(CLAIM_PATH, { cookie: cookies(admin.cookie, claimCookieOf(claimUrl)) });
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const offered = [...page.text.matchAll(/data-testid="claim-workspace" data-slug="([^"]+)"/g)].map((m) => m[1]).sort();
    expect(offered).toEqual([admin.ownWorkspace.slug, adminOf.slug].sort());
    expect(testIdText(page.text, 'claim-client-id')).toBe(application.id);
    expect(testIdText(page.text, 'claim-publishable-key')).toBe(application.publishableKey);
  });
});

describe('claiming', () => {
  it('moves the same application into the workspace with a new secret key; the people who signed in become members and keep their grants', async () => {
    const before = await keylessConfig();
    const keylessId = before.application.id as string;

    // A person signs in to the keyless application for real (svc's OpenID Provider, the engine).
    const client = await oidc.discovery(new URL(server.url), keylessId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const authUrl = oidc.buildAuthorizationUrl(client, {
      redirect_uri: REDIRECT,
      scope: 'openid email offline_access',
      prompt: 'consent',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const browsed = await browseToRedirect(new CookieJar(), authUrl, { svcUrl: server.url, redirectUri: REDIRECT, person: 'social' });
    const tokens = await oidc.authorizationCodeGrant(client, browsed.callback, { pkceCodeVerifier: verifier, expectedState: state });
    const [social] = await database.sql<{ id: string }[]>`select id from users where email = 'social@svc.local'`;
    const socialId = social?.id as string;

    const claimer = await seedSignedIn(database.db);
    const workspace = claimer.ownWorkspace;
    // Someone already a member (as admin) who also signed in: stays as they are.
    const existing = await seedSignedIn(database.db, { organization: workspace as never, roleKey: 'org_admin' });
    await signedInTo(keylessId, existing);
    await signedInTo(keylessId, claimer);

    // The page says how many people signed in to it (the claim adds those not yet members).
    const confirm = await get(CLAIM_PATH, { cookie: cookies(claimer.cookie, claimCookieOf(before.claimUrl)) });
    expect(testIdText(confirm.text, 'claim-signed-in-people')).toBe('3');

    // The URL the app used while keyless is what the claim will keep registered.
    expect([...confirm.text.matchAll(/data-testid="claim-url" data-kind="([^"]+)">([^<]+)</g)].map((m) => [m[1], m[2]])).toEqual([
      ['redirectUrls', REDIRECT],
    ]);
    // A browser-only app: stays public.
    const claimed = await postClaim({
      cookie: cookies(claimer.cookie, claimCookieOf(before.claimUrl)),
      organization: workspace.id,
      name: 'Storefront',
      clientType: 'public',
    });
    expect(claimed.status).toBe(200);
    expect(testIdText(claimed.text, 'claimed-client-id')).toBe(keylessId);
    expect(testIdText(claimed.text, 'claimed-publishable-key')).toBe(before.application.publishableKey);
    const secretKey = testIdText(claimed.text, 'claimed-secret-key') as string;
    expect(secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(testIdText(claimed.text, 'claimed-members-added')).toBe('1');
    expect(claimed.text).toContain('data-client-type="public"');
    // The secret has a copy button (a same-origin script: hosted pages allow no inline one).
    expect(claimed.text).toContain('data-copy="claimed-secret-key"');
    expect(claimed.text).toContain('<script src="/hosted/copy.js" defer></script>');
    expect(claimed.text).toContain(`href="/auth/console/applications/${keylessId}"`);

    // The same application, now the workspace's: its keys answer as an ordinary application.
    const backend = await fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `Bearer ${secretKey}` } });
    expect(backend.status).toBe(200);
    expect(((await backend.json()) as Json).application.id).toBe(keylessId);
    const [moved] = await database.sql<{ client_type: string; redirect_urls: string[] }[]>`
      select client_type, redirect_urls from applications where id = ${keylessId}`;
    expect(moved).toEqual({ client_type: 'public', redirect_urls: [REDIRECT] });
    const after = (await get('/v1/client/config', { 'x-svc-publishable-key': before.application.publishableKey })).json();
    expect(after).toMatchObject({
      application: { id: keylessId, publishableKey: before.application.publishableKey, name: 'Storefront', slug: 'storefront' },
      organization: { slug: workspace.slug },
      oidc: { clientId: keylessId },
      keyless: false,
      claimUrl: null,
    });
    const listed = await fetch(`${server.url}/v1/applications?organization_slug=${workspace.slug}`, {
      headers: { cookie: claimer.cookie },
    });
    expect(((await listed.json()) as Json).data.map((a: Json) => a.id)).toContain(keylessId);

    // The person who signed in during development is a member now; the existing member unchanged.
    expect(await membershipOf(workspace.id, socialId)).toEqual({ role_key: 'org_member', status: 'active' });
    expect(await membershipOf(workspace.id, existing.user.id)).toEqual({ role_key: 'org_admin', status: 'active' });
    // Their grant stands: the refresh token still works against the same client id.
    const refreshed = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: keylessId }),
    });
    expect(refreshed.status).toBe(200);

    // Audited, and announced as application.created (plus member.added for the person added).
    const audits = await database.sql<{ action: string; target_id: string; summary: Json; actor_id: string }[]>`
      select action, target_id, summary, actor_id from audit_logs where tenant_id = ${workspace.id} order by created_at`;
    const created = audits.find((a) => a.action === 'application.created' && a.target_id === keylessId);
    expect(created?.summary).toMatchObject({
      claimedFromKeyless: true,
      membersAdded: 1,
      publishableKey: before.application.publishableKey,
    });
    expect(created?.actor_id).toBe(claimer.user.id);
    expect(audits.filter((a) => a.action === 'member.added').map((a) => a.target_id)).toEqual([socialId]);
    const events = await database.sql<
      { type: string }[]
    >`select type from webhook_events where tenant_id = ${workspace.id} order by created_at`;
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['application.created', 'member.added']));

    // Keyless mode goes on with a fresh application and a new link.
    const next = await keylessConfig();
    expect(next.application.id).not.toBe(keylessId);
    expect(next.application.publishableKey).not.toBe(before.application.publishableKey);
    expect(next.claimUrl).not.toBe(before.claimUrl);

    // The app keeps signing in at the URL it used (registered by the claim), PKCE as before.
    const again = oidc.buildAuthorizationUrl(client, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const resumed = await browseToRedirect(new CookieJar(), again, { svcUrl: server.url, redirectUri: REDIRECT, person: 'social' });
    await oidc.authorizationCodeGrant(client, resumed.callback, { pkceCodeVerifier: verifier, expectedState: state });

    // The claimed application no longer takes any other loopback redirect: it is an ordinary client.
    const loopback = oidc.buildAuthorizationUrl(client, { redirect_uri: 'http://127.0.0.1:53999/elsewhere', scope: 'openid', state: 'x' });
    const refused = await fetch(loopback, { redirect: 'manual' });
    expect(refused.status).toBe(400);

    // The same link again: 409, and nothing moves.
    const twice = await postClaim({ cookie: cookies(claimer.cookie, claimCookieOf(before.claimUrl)), organization: workspace.id });
    expect(twice.status).toBe(409);
    expect(errorCodeOf(twice.text)).toBe('application_already_claimed');
    const page = await get(CLAIM_PATH, { cookie: cookies(claimer.cookie, claimCookieOf(before.claimUrl)) });
    expect(page.status).toBe(409);
    expect(errorCodeOf(page.text)).toBe('application_already_claimed');
  });

  it('an app with a server becomes confidential: its secret key signs in at the token endpoint, no secret is refused, PKCE still binds the code', async () => {
    const before = await keylessConfig();
    const keylessId = before.application.id as string;
    const redirect = 'http://localhost:53128/auth/callback';
    const signIn = async (config: oidc.Configuration) => {
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirect,
        scope: 'openid email offline_access',
        prompt: 'consent',
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      });
      const { callback } = await browseToRedirect(new CookieJar(), url, { svcUrl: server.url, redirectUri: redirect, person: 'social' });
      return { callback, verifier, state };
    };
    const insecure = { execute: [oidc.allowInsecureRequests] };
    const publicClient = await oidc.discovery(new URL(server.url), keylessId, undefined, oidc.None(), insecure);
    // Before the claim: a code issued to the public keyless client (PKCE), redeemed after it.
    const pending = await signIn(publicClient);
    const earlier = await signIn(publicClient);
    const earlierTokens = await oidc.authorizationCodeGrant(publicClient, earlier.callback, {
      pkceCodeVerifier: earlier.verifier,
      expectedState: earlier.state,
    });

    const claimer = await seedSignedIn(database.db);
    const claimed = await postClaim({
      cookie: cookies(claimer.cookie, claimCookieOf(before.claimUrl)),
      organization: claimer.ownWorkspace.id,
    });
    expect(claimed.status).toBe(200);
    expect(claimed.text).toContain('data-client-type="confidential"');
    const steps = [...claimed.text.matchAll(/<li data-testid="claimed-step">(.*?)<\/li>/g)].map((m) => m[1]).join(' ');
    expect(steps).toContain('<code>SVC_SECRET_KEY=</code>');
    expect(steps).toContain('Restart the app');
    const secretKey = testIdText(claimed.text, 'claimed-secret-key') as string;

    // Without the secret: invalid_client, for a new code and for the refresh token alike.
    await expect(
      oidc.authorizationCodeGrant(publicClient, pending.callback, { pkceCodeVerifier: pending.verifier, expectedState: pending.state }),
    ).rejects.toMatchObject({ error: 'invalid_client' });
    const noSecret = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: earlierTokens.refresh_token as string,
        client_id: keylessId,
      }),
    });
    expect(noSecret.status).toBe(401);

    // With it (client_secret_basic, what the generated apps send once SVC_SECRET_KEY is set): signs in.
    const confidential = await oidc.discovery(new URL(server.url), keylessId, undefined, oidc.ClientSecretBasic(secretKey), insecure);
    const after = await signIn(confidential);
    const tokens = await oidc.authorizationCodeGrant(confidential, after.callback, {
      pkceCodeVerifier: after.verifier,
      expectedState: after.state,
    });
    expect(tokens.claims()?.aud).toBe(keylessId);
    const refreshed = await oidc.refreshTokenGrant(confidential, earlierTokens.refresh_token as string);
    expect(refreshed.access_token).toBeTruthy();
    // A code still needs its PKCE verifier, secret or not.
    const wrongVerifier = await signIn(confidential);
    await expect(
      oidc.authorizationCodeGrant(confidential, wrongVerifier.callback, {
        pkceCodeVerifier: oidc.randomPKCECodeVerifier(),
        expectedState: wrongVerifier.state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });

    // The secret is shown on the result page only: the claim page (and the link afterwards) never carry it.
    const page = await get(CLAIM_PATH, { cookie: cookies(claimer.cookie, claimCookieOf(before.claimUrl)) });
    expect(page.text).not.toContain(secretKey);
    expect(page.text).not.toMatch(/sk_live_/);
  });

  it('without a client type, or with another one, the claim is refused and nothing moves', async () => {
    const { claimUrl, application } = await keylessConfig();
    const admin = await seedSignedIn(database.db);
    for (const clientType of [null, '', 'machine', 'CONFIDENTIAL']) {
      const res = await postClaim({
        cookie: cookies(admin.cookie, claimCookieOf(claimUrl)),
        organization: admin.ownWorkspace.id,
        clientType,
      });
      expect(res.status, String(clientType)).toBe(400);
      expect(errorCodeOf(res.text)).toBe('validation_failed');
    }
    const page = await get(CLAIM_PATH, { cookie: cookies(admin.cookie, claimCookieOf(claimUrl)) });
    // Both choices offered, neither preselected.
    expect(page.text).toContain('value="confidential" required');
    expect(page.text).toContain('value="public" required');
    expect(page.text).not.toMatch(/name="client_type"[^>]*checked/);
    expect((await keylessConfig()).application.id).toBe(application.id);
  });

  it('a wrong, tampered or borrowed token is 404, the same as an unknown id, and nothing moves', async () => {
    const { claimUrl, application } = await keylessConfig();
    const admin = await seedSignedIn(database.db);
    const token = new URL(claimUrl).searchParams.get('token') as string;
    const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const someoneElses = await seedApplication(database.db, { org: `claim-victim-${randomBytes(3).toString('hex')}` });
    const attempts = [
      `${COOKIE}=${application.id}.${tampered}`,
      `${COOKIE}=${application.id}.${randomBytes(32).toString('base64url')}`,
      // The keyless application's real token on another application's (public) id.
      `${COOKIE}=${someoneElses.application.id}.${token}`,
      `${COOKIE}=${someoneElses.application.id}.${randomBytes(32).toString('base64url')}`,
      `${COOKIE}=${newId('application')}.${randomBytes(32).toString('base64url')}`,
    ];
    const messages = new Set<string>();
    for (const attempt of attempts) {
      const page = await get(CLAIM_PATH, { cookie: attempt });
      expect(page.status, attempt).toBe(404);
      expect(errorCodeOf(page.text)).toBe('application_not_found');
      const posted = await postClaim({ cookie: cookies(admin.cookie, attempt), organization: admin.ownWorkspace.id });
      expect(posted.status, attempt).toBe(404);
      expect(errorCodeOf(posted.text)).toBe('application_not_found');
      messages.add(testIdText(posted.text, 'claim-error-message') as string);
    }
    expect(messages.size).toBe(1);
    expect((await keylessConfig()).application.id).toBe(application.id);
    const [victim] = await database.sql<
      { tenant_id: string }[]
    >`select tenant_id from applications where id = ${someoneElses.application.id}`;
    expect(victim?.tenant_id).toBe(someoneElses.organization.id);
  });

  it("an application that was never keyless cannot be claimed even with the installation's own MAC of its id", async () => {
    const admin = await seedSignedIn(database.db);
    const other = await seedApplication(database.db, { org: `claim-never-${randomBytes(3).toString('hex')}` });
    const cookie = `${COOKIE}=${other.application.id}.${keylessClaimToken(server.services.secretBox, other.application.id)}`;
    const posted = await postClaim({ cookie: cookies(admin.cookie, cookie), organization: admin.ownWorkspace.id });
    expect(posted.status).toBe(409);
    expect(errorCodeOf(posted.text)).toBe('application_already_claimed');
    const [row] = await database.sql<{ tenant_id: string }[]>`select tenant_id from applications where id = ${other.application.id}`;
    expect(row?.tenant_id).toBe(other.organization.id);
  });

  it('a workspace where the person is not org_admin is refused (403 as a member, 404 as an outsider), and nothing moves', async () => {
    const { claimUrl, application } = await keylessConfig();
    const org = await seedOrganization(database.db);
    const member = await seedSignedIn(database.db, { organization: org, roleKey: 'org_member' });
    const asMember = await postClaim({ cookie: cookies(member.cookie, claimCookieOf(claimUrl)), organization: org.id });
    expect(asMember.status).toBe(403);
    expect(errorCodeOf(asMember.text)).toBe('forbidden');

    const outsider = await seedSignedIn(database.db);
    const asOutsider = await postClaim({ cookie: cookies(outsider.cookie, claimCookieOf(claimUrl)), organization: org.id });
    expect(asOutsider.status).toBe(404);
    expect(errorCodeOf(asOutsider.text)).toBe('not_found');

    // A platform admin administers every workspace through the API, but claims only into their own.
    const platformAdmin = await seedSignedIn(database.db, { platformAdmin: true });
    const asPlatform = await postClaim({ cookie: cookies(platformAdmin.cookie, claimCookieOf(claimUrl)), organization: org.id });
    expect(asPlatform.status).toBe(403);

    expect((await keylessConfig()).application.id).toBe(application.id);
  });

  it('not signed in: POST sends to sign-in as well; cross-site POSTs and missing or malformed input are refused without a 500', async () => {
    const { claimUrl, application } = await keylessConfig();
    const admin = await seedSignedIn(database.db);
    const withClaim = cookies(admin.cookie, claimCookieOf(claimUrl));

    const anonymous = await postClaim({ cookie: claimCookieOf(claimUrl), organization: admin.ownWorkspace.id });
    expect(anonymous.status).toBe(303);

    const crossSite = await postClaim({ cookie: withClaim, organization: admin.ownWorkspace.id, origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(errorCodeOf(crossSite.text)).toBe('csrf_rejected');

    expect((await postClaim({ cookie: admin.cookie, organization: admin.ownWorkspace.id })).status).toBe(400);
    expect((await get(`${CLAIM_PATH}?application=nope&token=short`)).status).toBe(400);
    expect((await get(`${CLAIM_PATH}?application=${application.id}&application=${application.id}&token=x`)).status).toBe(400);
    expect((await get(CLAIM_PATH)).status).toBe(400);
    for (const bad of [
      { organization: 'not-an-id' },
      { organization: admin.ownWorkspace.id, name: 'x'.repeat(101) },
      { organization: admin.ownWorkspace.id, name: 'bad\u0000name' },
      {},
    ]) {
      const res = await postClaim({ cookie: withClaim, ...bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(errorCodeOf(res.text)).toBe('validation_failed');
    }
    const oversized = await postClaim({ cookie: withClaim, body: `organization=${'a'.repeat(10_000)}` });
    expect(oversized.status).toBe(413);
    expect((await keylessConfig()).application.id).toBe(application.id);
  });

  it('each person added takes a seat: with none free the claim is refused (402) and nothing moves', async () => {
    const { claimUrl, application } = await keylessConfig();
    const claimer = await seedSignedIn(database.db);
    const visitor = await seedSignedIn(database.db);
    await signedInTo(application.id, visitor);
    const platform = await seedSignedIn(database.db, { platformAdmin: true });
    const patched = await fetch(`${server.url}/v1/subscription?organization_slug=${claimer.ownWorkspace.slug}`, {
      method: 'PATCH',
      headers: { cookie: platform.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
      body: JSON.stringify({ seats: 1 }),
    });
    expect(patched.status, await patched.text()).toBe(200);

    const refused = await postClaim({ cookie: cookies(claimer.cookie, claimCookieOf(claimUrl)), organization: claimer.ownWorkspace.id });
    expect(refused.status).toBe(402);
    expect(errorCodeOf(refused.text)).toBe('subscription_limit_exceeded');
    expect((await keylessConfig()).application.id).toBe(application.id);
    expect(await membershipOf(claimer.ownWorkspace.id, visitor.user.id)).toBeUndefined();
  });

  it('two admins claiming at once: exactly one wins, the other gets 409', async () => {
    const { claimUrl } = await keylessConfig();
    const [a, b] = await Promise.all([seedSignedIn(database.db), seedSignedIn(database.db)]);
    const results = await Promise.all(
      [a, b].map((p) => postClaim({ cookie: cookies(p?.cookie, claimCookieOf(claimUrl)), organization: p?.ownWorkspace.id })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  });

  it('a second claim into the same workspace gets a free slug', async () => {
    const admin = await seedSignedIn(database.db);
    for (const expected of ['keyless-development-app', 'keyless-development-app-2']) {
      const { claimUrl, application } = await keylessConfig();
      const res = await postClaim({ cookie: cookies(admin.cookie, claimCookieOf(claimUrl)), organization: admin.ownWorkspace.id });
      expect(res.status).toBe(200);
      const [row] = await database.sql<{ slug: string }[]>`select slug from applications where id = ${application.id}`;
      expect(row?.slug).toBe(expected);
    }
  });
});

describe('what the keyless application remembers for its claim', () => {
  async function rememberedOf(id: string) {
    const [row] = await database.sql<{ redirect_urls: string[]; post_logout_redirect_urls: string[]; allowed_origins: string[] }[]>`
      select redirect_urls, post_logout_redirect_urls, allowed_origins from applications where id = ${id}`;
    return row;
  }

  it('the redirect URI a code went to, the post-logout URL of an accepted sign-out and the origin of a browser token request; nothing merely asked for', async () => {
    const { application } = await keylessConfig();
    const id = application.id as string;
    const spa = 'http://localhost:53140';
    const redirect = `${spa}/callback`;
    const verifier = oidc.randomPKCECodeVerifier();
    const authorize = (redirectUri: string, extra: Record<string, string> = {}) => {
      const url = new URL(`${server.url}/oidc/auth`);
      url.search = new URLSearchParams({
        client_id: id,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'openid email',
        state: 's',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        ...extra,
      }).toString();
      return url;
    };

    // Anyone may send an authorization request: asking alone teaches it nothing.
    for (let i = 0; i < 3; i++) {
      const res = await fetch(authorize(`http://127.0.0.1:${54000 + i}/callback`), { redirect: 'manual' });
      expect(res.status).toBe(303);
    }
    expect(await rememberedOf(id)).toEqual({ redirect_urls: [], post_logout_redirect_urls: [], allowed_origins: [] });

    // A sign-in whose code went to the app, and the SPA's token request from its origin.
    const { callback } = await browseToRedirect(new CookieJar(), authorize(redirect), {
      svcUrl: server.url,
      redirectUri: redirect,
      person: 'social',
    });
    const exchanged = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: spa },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') as string,
        redirect_uri: redirect,
        code_verifier: verifier,
        client_id: id,
      }),
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get('access-control-allow-origin')).toBe(spa);
    const { id_token: idToken } = (await exchanged.json()) as { id_token: string };
    // A sign-out the provider accepted (its confirmation page), returning to the app.
    const endSession = new URL(`${server.url}/oidc/session/end`);
    endSession.search = new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: `${spa}/` }).toString();
    expect((await fetch(endSession, { redirect: 'manual' })).status).toBeLessThan(400);
    // Refused ones teach nothing: a token request with a bad code, from another loopback origin.
    const refused = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost:53999' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: 'nope',
        redirect_uri: redirect,
        code_verifier: verifier,
        client_id: id,
      }),
    });
    expect(refused.status).toBe(400);

    expect(await rememberedOf(id)).toEqual({ redirect_urls: [redirect], post_logout_redirect_urls: [`${spa}/`], allowed_origins: [spa] });
    // What it remembers is for the claim alone: the keyless context of each framework keeps that
    // framework's defaults, and client config names no remembered URL as a return target.
    const react = (await get(`/v1/setup/agent-context?keyless=1&framework=react`)).json();
    expect(react).toMatchObject({ redirectUrls: ['http://localhost:5173/callback'], redirectUrlsSource: 'framework_default' });
    expect((await keylessConfig()).auth.afterSignInUrl).toBe(`${server.services.config.publicUrl}/user`);

    // A claim keeps them as the application's registered URLs.
    const claimer = await seedSignedIn(database.db);
    const { claimUrl } = await keylessConfig();
    const claimed = await postClaim({
      cookie: cookies(claimer.cookie, claimCookieOf(claimUrl)),
      organization: claimer.ownWorkspace.id,
      clientType: 'public',
    });
    expect(claimed.status).toBe(200);
    const got = (await get(`/v1/applications/${id}`, { cookie: claimer.cookie })).json();
    expect(got).toMatchObject({
      redirectUrls: [redirect],
      postLogoutRedirectUrls: [`${spa}/`],
      allowedOrigins: [spa],
      clientType: 'public',
    });
    // Once claimed it remembers nothing more: its lists are its owner's.
    await browseToRedirect(new CookieJar(), authorize(redirect), { svcUrl: server.url, redirectUri: redirect, person: 'social' });
    expect((await rememberedOf(id))?.redirect_urls).toEqual([redirect]);
  });

  it('keeps only the newest ten of each', async () => {
    const { rememberKeylessUrl } = await import('@svc/db/queries/applications');
    const { application } = await keylessConfig();
    for (let port = 1; port <= 12; port++) {
      await rememberKeylessUrl(database.db, { id: application.id, list: 'redirectUrls', value: `http://localhost:${port}/cb`, keep: 10 });
    }
    // Already there: no write, no reordering.
    expect(
      await rememberKeylessUrl(database.db, { id: application.id, list: 'redirectUrls', value: 'http://localhost:12/cb', keep: 10 }),
    ).toBe(false);
    expect((await rememberedOf(application.id))?.redirect_urls).toEqual(
      Array.from({ length: 10 }, (_, i) => `http://localhost:${i + 3}/cb`),
    );
  });
});

describe('keyless development disabled', () => {
  let off: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    off = await startTestServer({ env: { KEYLESS_ENABLED: 'false' } });
  });
  afterAll(async () => {
    await off?.close();
  });

  it('a claim link answers 403 keyless_disabled, before and after sign-in', async () => {
    const offDb = createDatabase({ url: off.databaseUrl, max: 1, applicationName: 'svc-test-claim-off' });
    try {
      // An installation that had keyless mode on once: its keyless application still exists.
      const { getOrCreateKeylessApplication } = await import('./service.ts');
      const keyless = await getOrCreateKeylessApplication(offDb.db);
      const link = new URL(keylessClaimUrl(off.services.config.publicUrl, off.services.secretBox, keyless.application.id));
      const cookie = `${COOKIE}=${link.searchParams.get('application')}.${link.searchParams.get('token')}`;
      const page = await fetch(`${off.url}${CLAIM_PATH}`, { redirect: 'manual', headers: { cookie } });
      expect(page.status).toBe(403);
      expect(errorCodeOf(await page.text())).toBe('keyless_disabled');
      const admin = await seedSignedIn(offDb.db);
      const posted = await fetch(`${off.url}${CLAIM_PATH}`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: cookies(admin.cookie, cookie),
          origin: off.services.config.publicUrl,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ organization: admin.ownWorkspace.id }).toString(),
      });
      expect(posted.status).toBe(403);
      expect(errorCodeOf(await posted.text())).toBe('keyless_disabled');
      const [row] = await offDb.sql<{ is_keyless: boolean }[]>`select is_keyless from applications where id = ${keyless.application.id}`;
      expect(row?.is_keyless).toBe(true);
    } finally {
      await offDb.close();
    }
  });
});
