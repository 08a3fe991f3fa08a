import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { type DevEngine, startDevEngine } from '@svc/dev-engine/engine';
import { DEMO_USERS } from '@svc/dev-engine/users';
import type { JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../../../test/support/server.ts';
import { type ForgingEngine, hs256Token, startForgingEngine, unsignedToken } from '../../../test/forging-engine.ts';
import { OidcError, RelyingParty, type StartedAuthorization } from './oidc-client.ts';

const REDIRECT_URI = 'http://127.0.0.1:1/auth/callback';
const CLIENT_SECRET = 'confidential-client-secret-for-tests';
let engine: DevEngine;
let rp: RelyingParty;

beforeAll(async () => {
  engine = await startDevEngine({
    port: await freePort(),
    users: DEMO_USERS,
    clients: [
      { client_id: 'svc', redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: ['http://127.0.0.1:1/signin'] },
      { client_id: 'svc-confidential', client_secret: CLIENT_SECRET, redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [] },
    ],
  });
  rp = new RelyingParty({
    issuer: engine.issuer,
    clientId: 'svc',
    clientSecret: null,
    redirectUri: REDIRECT_URI,
    scopes: ['openid', 'email', 'profile'],
    groupsClaim: 'groups',
  });
});
afterAll(async () => {
  await engine?.close();
});

/** Plays the browser through the engine's password page; returns the code svc's callback gets. */
async function passwordSignIn(started: StartedAuthorization, email: string, password: string): Promise<string> {
  const jar = new CookieJar();
  started.url.searchParams.set('login_hint', email);
  const page = await jar.follow(started.url.href, (l) => l.startsWith(REDIRECT_URI));
  const submitted = await jar.post(page.url, { email, password });
  const done = await jar.follow(new URL(submitted.headers.get('location') ?? '', page.url).href, (l) => l.startsWith(REDIRECT_URI));
  const callback = new URL(done.url);
  expect(callback.searchParams.get('state')).toBe(started.state);
  return callback.searchParams.get('code') ?? '';
}

describe('RelyingParty against the dev engine', () => {
  it('runs code + PKCE and returns the identity from a verified ID token', async () => {
    const started = await rp.startAuthorization();
    expect(started.url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(started.url.searchParams.get('nonce')).toBe(started.nonce);
    expect(started.url.searchParams.has('code_verifier')).toBe(false);
    const code = await passwordSignIn(started, 'admin@svc.local', 'admin-password');
    const { identity, idToken } = await rp.completeAuthorization({ code, codeVerifier: started.codeVerifier, nonce: started.nonce });
    expect(identity).toMatchObject({ email: 'admin@svc.local', emailVerified: true, groups: ['platform-admins'] });
    expect(identity.subject).toBeTruthy();
    expect(idToken.split('.')).toHaveLength(3);
    const logout = await rp.endSessionUrl({ idTokenHint: idToken, postLogoutRedirectUri: 'http://127.0.0.1:1/signin' });
    expect(logout?.pathname).toBe('/application/o/svc/end-session/');
  });

  it('every authorization gets fresh state, nonce and verifier', async () => {
    const a = await rp.startAuthorization();
    const b = await rp.startAuthorization();
    expect(new Set([a.state, b.state, a.nonce, b.nonce]).size).toBe(4);
    expect(a.codeVerifier).not.toBe(b.codeVerifier);
  });

  it('refuses an ID token whose nonce belongs to another sign-in', async () => {
    const started = await rp.startAuthorization();
    const code = await passwordSignIn(started, 'user@svc.local', 'user-password');
    await expect(rp.completeAuthorization({ code, codeVerifier: started.codeVerifier, nonce: 'someone-else' })).rejects.toBeInstanceOf(
      OidcError,
    );
  });

  it('refuses a wrong PKCE verifier and a replayed code', async () => {
    const started = await rp.startAuthorization();
    const code = await passwordSignIn(started, 'user@svc.local', 'user-password');
    const other = await rp.startAuthorization();
    await expect(rp.completeAuthorization({ code, codeVerifier: other.codeVerifier, nonce: started.nonce })).rejects.toThrow(
      /token exchange failed/,
    );

    const fresh = await rp.startAuthorization();
    const code2 = await passwordSignIn(fresh, 'user@svc.local', 'user-password');
    await rp.completeAuthorization({ code: code2, codeVerifier: fresh.codeVerifier, nonce: fresh.nonce });
    await expect(rp.completeAuthorization({ code: code2, codeVerifier: fresh.codeVerifier, nonce: fresh.nonce })).rejects.toThrow(
      /token exchange failed/,
    );
    // What the engine said, for the log: its status and OAuth error.
    const refused = await rp.completeAuthorization({ code: code2, codeVerifier: fresh.codeVerifier, nonce: fresh.nonce }).catch((e) => e);
    expect(refused).toBeInstanceOf(OidcError);
    expect(refused.engine).toMatchObject({ status: 400, error: 'invalid_grant' });
  });

  it("keeps the engine's status, error and error_description when it refuses the client", async () => {
    const wrongSecret = new RelyingParty({
      issuer: engine.issuer,
      clientId: 'svc-confidential',
      clientSecret: 'not-the-secret',
      redirectUri: REDIRECT_URI,
      scopes: ['openid', 'email'],
      groupsClaim: 'groups',
    });
    const started = await wrongSecret.startAuthorization();
    const code = await passwordSignIn(started, 'user@svc.local', 'user-password');
    const refused = await wrongSecret
      .completeAuthorization({ code, codeVerifier: started.codeVerifier, nonce: started.nonce })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(OidcError);
    expect(refused.engine).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(typeof refused.engine.error_description).toBe('string');
    expect(refused.message).not.toContain('not-the-secret');
  });

  it('refuses an engine whose discovery names another issuer', async () => {
    const liar = new RelyingParty({
      issuer: engine.issuer.replace('/svc/', '/svc/../svc/'),
      clientId: 'svc',
      clientSecret: null,
      redirectUri: REDIRECT_URI,
      scopes: ['openid'],
      groupsClaim: 'groups',
    });
    await expect(liar.startAuthorization()).rejects.toThrow(/names issuer .* expected/);
  });
});

describe('ID tokens the relying party refuses', () => {
  // The engine as svc sees it is a front over the dev engine that re-mints each ID token with a
  // key the test holds (apps/api/test/forging-engine.ts): every forgery below is the accepted
  // token with one thing changed, and each must fail on that one check.
  let front: ForgingEngine;
  const rpAt = (clientId: string, clientSecret: string | null) =>
    new RelyingParty({
      issuer: front.issuer,
      clientId,
      clientSecret,
      redirectUri: REDIRECT_URI,
      scopes: ['openid', 'email', 'profile'],
      groupsClaim: 'groups',
    });

  beforeAll(async () => {
    front = await startForgingEngine({ engine });
  });
  afterAll(async () => {
    await front?.close();
  });

  /** A real sign-in at the engine whose ID token is replaced by `forge` (none: as the engine signed it). */
  async function signIn(client: RelyingParty, forge?: (claims: JWTPayload) => string | Promise<string>) {
    const started = await client.startAuthorization();
    const code = await passwordSignIn(started, 'user@svc.local', 'user-password');
    if (forge) {
      front.forgeNext(forge);
    }
    return client.completeAuthorization({ code, codeVerifier: started.codeVerifier, nonce: started.nonce });
  }

  const now = () => Math.floor(Date.now() / 1000);
  const without = (claims: JWTPayload, name: string) => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== name));

  it('accepts the token the engine signed (the control: the front itself is not what refuses)', async () => {
    const { identity } = await signIn(rpAt('svc', null));
    expect(identity.email).toBe('user@svc.local');
    const confidential = await signIn(rpAt('svc-confidential', CLIENT_SECRET));
    expect(confidential.identity.email).toBe('user@svc.local');
  });

  it('accepts several audiences when azp names svc', async () => {
    const { identity } = await signIn(rpAt('svc', null), (c) => front.signAsEngine({ ...c, aud: ['svc', 'other-client'], azp: 'svc' }));
    expect(identity.email).toBe('user@svc.local');
  });

  it.each<[string, (c: JWTPayload) => string | Promise<string>, RegExp]>([
    ['signed by a key the engine JWKS does not hold', (c) => front.signWithRogueKey(c), /no applicable key found in the JSON Web Key Set/],
    [
      'signed by another key under the engine key id',
      (c) => front.signWithRogueKey(c, { kid: front.engineKid }),
      /signature verification failed/,
    ],
    ['that is unsigned (alg none)', (c) => unsignedToken(c), /"alg" \(Algorithm\) Header Parameter value not allowed/],
    ['for another client (aud)', (c) => front.signAsEngine({ ...c, aud: 'other-client' }), /unexpected "aud" claim value/],
    [
      'for several audiences, authorized for another client (azp)',
      (c) => front.signAsEngine({ ...c, aud: ['svc', 'other-client'], azp: 'other-client' }),
      /authorized for another client/,
    ],
    [
      'for several audiences without azp',
      (c) => front.signAsEngine({ ...c, aud: ['other-client', 'svc'] }),
      /authorized for another client/,
    ],
    [
      'for svc alone but authorized for another client (azp)',
      (c) => front.signAsEngine({ ...c, azp: 'other-client' }),
      /authorized for another client/,
    ],
    ['that has expired', (c) => front.signAsEngine({ ...c, iat: now() - 3600, exp: now() - 60 }), /"exp" claim timestamp check failed/],
    ['without exp (it would never expire)', (c) => front.signAsEngine(without(c, 'exp')), /missing required "exp" claim/],
    [
      'from another issuer',
      (c) => front.signAsEngine({ ...c, iss: 'https://evil.example/application/o/svc/' }),
      /unexpected "iss" claim value/,
    ],
    ['without a nonce', (c) => front.signAsEngine(without(c, 'nonce')), /nonce does not match/],
  ])('refuses an ID token %s', async (_name, forge, reason) => {
    const attempt = signIn(rpAt('svc', null), forge);
    await expect(attempt).rejects.toBeInstanceOf(OidcError);
    await expect(attempt).rejects.toThrow(reason);
  });

  it('refuses an HS256 ID token keyed with the client secret (a confidential client knows it too)', async () => {
    const attempt = signIn(rpAt('svc-confidential', CLIENT_SECRET), (c) => hs256Token(c, CLIENT_SECRET));
    await expect(attempt).rejects.toBeInstanceOf(OidcError);
    await expect(attempt).rejects.toThrow(/"alg" \(Algorithm\) Header Parameter value not allowed/);
  });
});
