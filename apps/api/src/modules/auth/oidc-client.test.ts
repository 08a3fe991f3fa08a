import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { type DevEngine, startDevEngine } from '@svc/dev-engine/engine';
import { DEMO_USERS } from '@svc/dev-engine/users';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../../../test/support/server.ts';
import { OidcError, RelyingParty, type StartedAuthorization } from './oidc-client.ts';

const REDIRECT_URI = 'http://127.0.0.1:1/auth/callback';
let engine: DevEngine;
let rp: RelyingParty;

beforeAll(async () => {
  engine = await startDevEngine({
    port: await freePort(),
    users: DEMO_USERS,
    clients: [{ client_id: 'svc', redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: ['http://127.0.0.1:1/signin'] }],
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
