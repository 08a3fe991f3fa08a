import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';
import type { CreatedApplication } from '../applications/service.ts';

const PEOPLE = {
  user: { email: 'user@svc.local', password: 'user-password' },
  social: { email: 'social@svc.local', password: '' },
} as const;
type Person = keyof typeof PEOPLE;

/**
 * The console's try sign-in, end to end: a cookie jar as the browser, svc's hosted pages, the
 * development engine, svc's authorization and token endpoints, real PostgreSQL. Each attack is
 * performed as an outsider would: on svc's public URL, with only what a browser or another
 * organization's member holds.
 */
describe('try sign-in: a real authorization of an application, shown on svc', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let tryCallback: string;
  let confidential: CreatedApplication;
  let pub: CreatedApplication;
  /** Signed in to svc as user@svc.local, an org admin of both applications' organization. */
  let owner: CookieJar;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-try-sign-in' });
    tryCallback = `${server.url}/oidc/try/callback`;
    confidential = await seedApplication(database.db, { name: 'Try <Confidential>', redirectUrls: ['https://app.example.com/cb'] });
    pub = await seedApplication(database.db, { org: confidential.organization.slug, name: 'Try Public', clientType: 'public' });
    owner = await signedIn('user');
    await addMember('user', confidential.organization.id, 'org_admin');
  });

  afterAll(async () => {
    await database?.close();
    await server?.close();
  });

  async function addMember(person: Person, tenantId: string, roleKey: string): Promise<void> {
    await database.sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${tenantId}, id, ${roleKey} from users where email = ${PEOPLE[person].email}`;
  }

  /**
   * Plays the browser from `url` until `stop` says so (that URL is not fetched): svc's sign-in
   * page, the engine's form, svc's organization choice.
   */
  async function browse(
    jar: CookieJar,
    url: string,
    stop: (url: string) => boolean,
    opts: { person?: Person; pick?: string } = {},
  ): Promise<string> {
    let current = url;
    for (let hop = 0; hop < 40; hop++) {
      if (stop(current)) {
        return current;
      }
      const res = await jar.fetch(current);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.body?.cancel();
        current = new URL(location, current).href;
        continue;
      }
      const html = await res.text();
      const here = new URL(current);
      const person = PEOPLE[opts.person ?? 'user'];
      if (here.origin === server.url && html.includes('name="login_hint"')) {
        const query = new URLSearchParams(
          [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]+)">/g)].map((m): [string, string] => [
            m[1] as string,
            m[2] as string,
          ]),
        );
        if (person.password === '') {
          query.set('method', 'social');
        } else {
          query.set('login_hint', person.email);
        }
        current = `${server.url}/auth/login?${query}`;
        continue;
      }
      if (here.origin === server.url && html.includes('data-testid="pick-organization"')) {
        const id = new RegExp(`value="([^"]+)" data-testid="pick-organization" data-slug="${opts.pick}"`).exec(html)?.[1];
        expect(id, `organization ${opts.pick} offered`).toBeDefined();
        const posted = await jar.fetch(current, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
          body: new URLSearchParams({ organization: id as string }).toString(),
        });
        current = new URL(posted.headers.get('location') as string, current).href;
        continue;
      }
      if (here.origin !== server.url && res.status === 200) {
        const submitted = await jar.post(current, { email: person.email, password: person.password });
        current = new URL(submitted.headers.get('location') as string, current).href;
        continue;
      }
      throw new Error(`stuck at ${current} (${res.status}): ${html.slice(-600)}`);
    }
    throw new Error('too many hops');
  }

  /** A browser signed in to svc (the console) as `person`. */
  async function signedIn(person: Person): Promise<CookieJar> {
    const jar = new CookieJar();
    await browse(jar, `${server.url}/signin`, (u) => u.startsWith(`${server.url}/auth/console`), { person });
    expect(jar.cookiesFor(server.url).svc_session).toBeDefined();
    return jar;
  }

  /** Presses "Try sign-in" and follows the authorization up to the try callback (not fetched). */
  async function tryUntilCallback(jar: CookieJar, applicationId: string, pick = confidential.organization.slug): Promise<URL> {
    const start = await jar.fetch(`${server.url}/oidc/try/${applicationId}`);
    expect(start.status).toBe(303);
    const location = start.headers.get('location') as string;
    expect(location.startsWith(`${server.url}/oidc/auth?`)).toBe(true);
    const landed = await browse(jar, location, (u) => u.startsWith(tryCallback), { pick });
    return new URL(landed);
  }

  async function codeConsumed(code: string): Promise<boolean> {
    const [row] = await database.sql<{ consumed_at: Date | null }[]>`
      select consumed_at from oidc_payloads where model = 'AuthorizationCode' and id = ${code}`;
    expect(row, 'the code is stored').toBeDefined();
    return row?.consumed_at !== null;
  }

  /** The claims table rows of a section of the result page, as { claim: shown value }. */
  function claimsOf(html: string, testId: string): Record<string, string> {
    const table = new RegExp(`<table data-testid="${testId}">(.*?)</table>`, 's').exec(html)?.[1] ?? '';
    return Object.fromEntries(
      [...table.matchAll(/<tr data-claim="([^"]+)"><th>[^<]*<\/th><td><code>([^<]*)<\/code>/g)].map((m) => [m[1], m[2]]),
    );
  }

  it('a confidential application: the code is redeemed at the token endpoint and the tokens and userinfo are shown', async () => {
    const callback = await tryUntilCallback(owner, confidential.application.id);
    expect(callback.origin + callback.pathname).toBe(tryCallback);
    const code = callback.searchParams.get('code') as string;
    const res = await owner.fetch(callback.href);
    const html = await res.text();
    expect(res.status, html.slice(0, 500)).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(html).not.toMatch(/<script/i);
    // Escaped: the application's name is shown as text.
    expect(html).toContain('Try &#60;Confidential&#62;');
    expect(html).not.toContain('<Confidential>');
    expect(await codeConsumed(code)).toBe(true);

    const [user] = await database.sql<{ id: string }[]>`select id from users where email = 'user@svc.local'`;
    const id = claimsOf(html, 'try-id-token-claims');
    expect(id).toMatchObject({
      iss: server.url,
      sub: user?.id,
      aud: confidential.application.id,
      email: 'user@svc.local',
      org_id: confidential.organization.id,
      org_slug: confidential.organization.slug,
      org_role: 'org_admin',
    });
    expect(id.nonce).toMatch(/^[\w-]{43}$/);
    const at = claimsOf(html, 'try-access-token-claims');
    expect(at).toMatchObject({ aud: confidential.application.id, client_id: confidential.application.id, sub: user?.id });
    expect(at.scope?.split(' ').sort()).toEqual(['email', 'openid', 'organization', 'profile']);
    expect(html).toMatch(/data-testid="try-access-token-header">[^<]*&#34;typ&#34;: &#34;at\+jwt&#34;/);
    expect(claimsOf(html, 'try-userinfo-claims')).toMatchObject({
      sub: user?.id,
      email: 'user@svc.local',
      org_id: confidential.organization.id,
    });
    expect(html).toContain(`href="/auth/console/applications/${confidential.application.id}"`);
    // The state cookie is spent: the same callback again issues nothing.
    expect(owner.cookiesFor(server.url).svc_try_signin).toBeUndefined();
    const again = await owner.fetch(callback.href);
    expect(again.status).toBe(400);
  });

  it('a public application: PKCE alone', async () => {
    const callback = await tryUntilCallback(owner, pub.application.id);
    const res = await owner.fetch(callback.href);
    const html = await res.text();
    expect(res.status, html.slice(0, 500)).toBe(200);
    expect(claimsOf(html, 'try-id-token-claims').aud).toBe(pub.application.id);
  });

  it("the callback without the state cookie, or with another try's, issues no token: the code stays unredeemed", async () => {
    // No cookie: the code landed in a browser that never started a try.
    const first = await tryUntilCallback(owner, confidential.application.id);
    const stranger = new CookieJar();
    const bare = await stranger.fetch(first.href);
    expect(bare.status).toBe(400);
    expect(await bare.text()).toContain('No token was issued');
    expect(await codeConsumed(first.searchParams.get('code') as string)).toBe(false);

    // The owner's browser started another try meanwhile: its cookie carries another state.
    const started = await owner.fetch(`${server.url}/oidc/try/${confidential.application.id}`);
    await started.body?.cancel();
    const wrongState = await owner.fetch(first.href);
    expect(wrongState.status).toBe(400);
    expect(await codeConsumed(first.searchParams.get('code') as string)).toBe(false);

    // A forged or tampered cookie does not open.
    const second = await tryUntilCallback(owner, confidential.application.id);
    const sealed = owner.cookiesFor(server.url).svc_try_signin as string;
    const tampered = `${sealed.slice(0, -2)}${sealed.endsWith('A') ? 'B' : 'A'}`;
    const forged = await fetch(second.href, {
      headers: { cookie: `svc_session=${owner.cookiesFor(server.url).svc_session}; svc_try_signin=${tampered}` },
      redirect: 'manual',
    });
    expect(forged.status).toBe(400);
    expect(await codeConsumed(second.searchParams.get('code') as string)).toBe(false);

    // The right cookie in another person's browser (planted there): bound to the owner's session.
    const outsider = await signedIn('social');
    const planted = await fetch(second.href, {
      headers: { cookie: `svc_session=${outsider.cookiesFor(server.url).svc_session}; svc_try_signin=${sealed}` },
      redirect: 'manual',
    });
    expect(planted.status).toBe(400);
    expect(await codeConsumed(second.searchParams.get('code') as string)).toBe(false);
  });

  it('a person of another organization, or a member without applications.read, cannot start a try of the application', async () => {
    const outsider = await signedIn('social');
    const notFound = await outsider.fetch(`${server.url}/oidc/try/${confidential.application.id}`);
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('location')).toBeNull();
    expect(outsider.cookiesFor(server.url).svc_try_signin).toBeUndefined();

    const other = await seedApplication(database.db, { name: 'Members only read' });
    await addMember('social', other.organization.id, 'org_member');
    const forbidden = await outsider.fetch(`${server.url}/oidc/try/${other.application.id}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('location')).toBeNull();
    expect(outsider.cookiesFor(server.url).svc_try_signin).toBeUndefined();

    // Not signed in: to svc's sign-in, which comes back here.
    const anonymous = await fetch(`${server.url}/oidc/try/${confidential.application.id}`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe(`/signin?return_to=${encodeURIComponent(`/oidc/try/${confidential.application.id}`)}`);
  });

  it("the try secret is refused on svc's public token endpoint in every form; the real secret key still works", async () => {
    const clientId = confidential.application.id;
    // What a thief of the try secret would hold (it never leaves the server).
    const trySecret = server.services.oidc.tryCodes.trySecretOf(clientId);
    expect(trySecret).toMatch(/^[\w-]{43}$/);
    // A code issued to the try callback, with a verifier of the thief's own (their own authorization request).
    const verifier = oidc.randomPKCECodeVerifier();
    const url = new URL(`${server.url}/oidc/auth`);
    url.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: tryCallback,
      state: 'thief',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const landed = new URL(await browse(owner, url.href, (u) => u.startsWith(tryCallback)));
    const code = landed.searchParams.get('code') as string;
    expect(code).toBeTruthy();

    const token = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(body).toString(),
      });
    const basic = (secret: string) =>
      `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const grant = { grant_type: 'authorization_code', code, redirect_uri: tryCallback, code_verifier: verifier };
    const attempts = [
      token(grant, { authorization: basic(trySecret) }),
      token({ ...grant, client_id: clientId, client_secret: trySecret }),
      // Pretending to come from the machine itself.
      token(grant, {
        authorization: basic(trySecret),
        'x-forwarded-for': '127.0.0.1',
        'x-forwarded-host': '127.0.0.1',
        'x-real-ip': '127.0.0.1',
      }),
      token(grant, { authorization: basic(trySecret), host: '127.0.0.1' }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe('invalid_client');
    }
    expect(await codeConsumed(code)).toBe(false);

    // The real secret key redeems the very same code.
    const real = await token(grant, { authorization: basic(confidential.secretKey) });
    expect(real.status).toBe(200);
    expect(((await real.json()) as { id_token?: string }).id_token).toBeTruthy();
  });

  it("the try callback is svc's exact URL: no variant of it takes a code anywhere else", async () => {
    const variants = [
      `${tryCallback}/x`,
      `${tryCallback}?next=https://evil.example/`,
      `${tryCallback}#x`,
      tryCallback.replace('/oidc/try/callback', '/oidc/try/callback/../../../evil'),
      tryCallback.replace('127.0.0.1', 'localhost'),
      `https://evil.example/oidc/try/callback`,
    ];
    for (const redirectUri of variants) {
      const url = new URL(`${server.url}/oidc/auth`);
      url.search = new URLSearchParams({
        client_id: confidential.application.id,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: redirectUri,
        state: 's',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      }).toString();
      const res = await owner.fetch(url.href);
      expect(res.status, redirectUri).toBe(400);
      expect(res.headers.get('location'), redirectUri).toBeNull();
    }
    // And the callback itself redirects nowhere, whatever it is sent.
    const res = await owner.fetch(`${tryCallback}?code=x&state=y&redirect_uri=https://evil.example/`);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });
});
