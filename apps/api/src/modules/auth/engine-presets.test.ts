import { describe, expect, it } from 'vitest';
import { type EngineKind, engineOffers, type HandOff, handOffUrl, inferEngineKind } from './engine-presets.ts';
import { RelyingParty } from './oidc-client.ts';

const AUTHENTIK = new URL(
  'https://auth.example.com/application/o/authorize/?client_id=svc&response_type=code&state=S&code_challenge=C&code_challenge_method=S256&nonce=N',
);
const KEYCLOAK = new URL(
  'https://kc.example.com/realms/acme/protocol/openid-connect/auth?client_id=svc&response_type=code&state=S&code_challenge=C&nonce=N',
);

function build(kind: EngineKind, handOff: HandOff, extra: Partial<Parameters<typeof handOffUrl>[0]> = {}) {
  const authorizationUrl = kind === 'keycloak' ? KEYCLOAK : AUTHENTIK;
  return handOffUrl({ kind, authorizationUrl, handOff, socialProvider: 'google', ...extra });
}

describe('Authentik preset', () => {
  it('password: login_hint on the authorization request', () => {
    const url = build('authentik', 'password', { loginHint: 'ada@example.com' });
    expect(url.origin + url.pathname).toBe('https://auth.example.com/application/o/authorize/');
    expect(url.searchParams.get('login_hint')).toBe('ada@example.com');
    expect(url.searchParams.get('state')).toBe('S');
  });

  it.each([
    ['social', '/source/oauth/login/google/'],
    ['signup', '/if/flow/default-enrollment-flow/'],
    ['recovery', '/if/flow/default-recovery-flow/'],
    ['email_verification', '/if/flow/default-source-email-verification/'],
    ['mfa_setup', '/if/flow/default-authenticator-totp-setup/'],
    ['passkey_setup', '/if/flow/default-authenticator-webauthn-setup/'],
  ] as const)('%s: the engine page, returning through a RELATIVE next into the same authorization', (handOff, path) => {
    const url = build('authentik', handOff);
    expect(url.origin).toBe('https://auth.example.com');
    expect(url.pathname).toBe(path);
    const next = url.searchParams.get('next') as string;
    expect(next.startsWith('/application/o/authorize/?')).toBe(true);
    expect(new URL(next, 'https://x').searchParams.get('state')).toBe('S');
    expect(url.searchParams.get('login_hint')).toBeNull();
  });

  it('signup: the email typed on /signup rides inside next, so the enrollment form starts filled in', () => {
    const url = build('authentik', 'signup', { loginHint: 'ada@example.com' });
    expect(url.searchParams.get('login_hint')).toBeNull();
    expect(new URL(url.searchParams.get('next') as string, 'https://x').searchParams.get('login_hint')).toBe('ada@example.com');
    // Other hand-offs never carry it.
    const recovery = build('authentik', 'recovery', { loginHint: 'ada@example.com' });
    expect(new URL(recovery.searchParams.get('next') as string, 'https://x').searchParams.get('login_hint')).toBeNull();
  });

  it('flow slugs and full URLs can be overridden per installation', () => {
    expect(build('authentik', 'recovery', { overrides: { recovery: 'acme-recovery' } }).pathname).toBe('/if/flow/acme-recovery/');
    expect(build('authentik', 'social', { overrides: { social: 'github' } }).pathname).toBe('/source/oauth/login/github/');
    const custom = build('authentik', 'mfa_setup', { overrides: { mfa_setup: 'https://auth.example.com/if/flow/mfa/' } });
    expect(custom.pathname).toBe('/if/flow/mfa/');
    expect(custom.searchParams.get('next')).toMatch(/^\/application\/o\/authorize\/\?/);
  });
});

describe('Keycloak preset', () => {
  it.each([
    ['password', 'login_hint', 'ada@example.com'],
    ['social', 'kc_idp_hint', 'google'],
    ['signup', 'prompt', 'create'],
    ['recovery', 'kc_action', 'UPDATE_PASSWORD'],
    ['email_verification', 'kc_action', 'VERIFY_EMAIL'],
    ['mfa_setup', 'kc_action', 'CONFIGURE_TOTP'],
    ['passkey_setup', 'kc_action', 'webauthn-register-passwordless'],
  ] as const)('%s -> %s=%s on the authorization request', (handOff, param, value) => {
    const url = build('keycloak', handOff, { loginHint: 'ada@example.com' });
    expect(url.origin + url.pathname).toBe('https://kc.example.com/realms/acme/protocol/openid-connect/auth');
    expect(url.searchParams.get(param)).toBe(value);
    expect(url.searchParams.get('state')).toBe('S');
    expect(url.searchParams.get('code_challenge')).toBe('C');
  });

  it('a login hint is only sent for the password hand-off', () => {
    expect(build('keycloak', 'social', { loginHint: 'ada@example.com' }).searchParams.get('login_hint')).toBeNull();
  });
});

describe('generic preset', () => {
  it('password: login_hint only', () => {
    expect(build('generic', 'password', { loginHint: 'a@b.c' }).searchParams.get('login_hint')).toBe('a@b.c');
  });

  it('sign-up and the account hand-offs need their URL; without one nothing is offered (no prompt=create guess)', () => {
    for (const handOff of ['signup', 'social', 'recovery', 'email_verification', 'mfa_setup', 'passkey_setup'] as const) {
      expect(() => build('generic', handOff)).toThrow(/offers no/);
    }
    expect(build('keycloak', 'signup', { loginHint: 'a@b.c' }).searchParams.get('login_hint')).toBe('a@b.c');
  });

  it('a configured URL is used as it is, or with {next} / {authorize_url} filled in to come back to svc', () => {
    const plain = build('generic', 'recovery', { overrides: { recovery: 'https://idp.example.com/reset' } });
    expect(plain.href).toBe('https://idp.example.com/reset');
    const signup = build('generic', 'signup', {
      loginHint: 'a@b.c',
      overrides: { signup: 'https://idp.example.com/register?callback_url={authorize_url}' },
    });
    const back = new URL(signup.searchParams.get('callback_url') as string);
    expect(back.origin + back.pathname).toBe('https://auth.example.com/application/o/authorize/');
    expect(back.searchParams.get('state')).toBe('S');
    expect(back.searchParams.get('login_hint')).toBe('a@b.c');
    const mfa = build('generic', 'mfa_setup', { overrides: { mfa_setup: 'https://idp.example.com/mfa?next={next}' } });
    expect(mfa.searchParams.get('next')?.startsWith('/application/o/authorize/?')).toBe(true);
  });
});

describe('what each preset offers', () => {
  const none = { overrides: {}, socialConfigured: false, adminApiConfigured: false };
  it('Authentik: every hand-off (its default flows), each coming back; the admin API when configured', () => {
    const offers = engineOffers({ kind: 'authentik', ...none, adminApiConfigured: true });
    expect(Object.values(offers.handOffs).every(Boolean)).toBe(true);
    expect(Object.values(offers.comesBack).every(Boolean)).toBe(true);
    expect(offers.adminApi).toBe(true);
  });

  it('Keycloak: kc_action hand-offs and prompt=create; social only with an identity-provider alias; no admin API', () => {
    const offers = engineOffers({ kind: 'keycloak', ...none, adminApiConfigured: true });
    expect(offers.handOffs).toEqual({
      recovery: true,
      email_verification: true,
      mfa_setup: true,
      passkey_setup: true,
      signup: true,
      social: false,
    });
    expect(engineOffers({ kind: 'keycloak', ...none, socialConfigured: true }).handOffs.social).toBe(true);
    expect(offers.adminApi).toBe(false);
  });

  it('generic: only what has a URL; it comes back only with a placeholder', () => {
    const offers = engineOffers({
      kind: 'generic',
      overrides: {
        mfa_setup: 'https://idp.example.com/profile',
        signup: 'https://idp.example.com/register?r={authorize_url}',
        recovery: 'slug',
      },
      socialConfigured: true,
      adminApiConfigured: true,
    });
    expect(offers.handOffs).toEqual({
      recovery: false,
      email_verification: false,
      mfa_setup: true,
      passkey_setup: false,
      signup: true,
      social: false,
    });
    expect(offers.comesBack.mfa_setup).toBe(false);
    expect(offers.comesBack.signup).toBe(true);
    expect(offers.adminApi).toBe(false);
  });

  it.each([
    ['https://auth.example.com/application/o/svc/', 'authentik'],
    ['http://127.0.0.1:7151/application/o/svc/', 'authentik'],
    ['https://kc.example.com/realms/acme', 'keycloak'],
    ['https://kc.example.com/auth/realms/acme/', 'keycloak'],
    ['http://127.0.0.1:4593/api/oidc', 'generic'],
    ['https://accounts.google.com', 'generic'],
    ['https://auth.example.com/application/o/svc/extra/', 'generic'],
  ] as const)('the issuer %s is shaped like %s', (issuer, kind) => {
    expect(inferEngineKind(issuer)).toBe(kind);
  });
});

/** Each preset's end-session as its engine's discovery names it. */
const END_SESSION = {
  authentik: { issuer: 'https://auth.example.com/application/o/svc/', end: 'https://auth.example.com/application/o/svc/end-session/' },
  keycloak: { issuer: 'https://kc.example.com/realms/acme', end: 'https://kc.example.com/realms/acme/protocol/openid-connect/logout' },
  generic: { issuer: 'http://127.0.0.1:4593/api/oidc', end: 'http://127.0.0.1:4593/api/oidc/end_session' },
} as const;

describe.each(Object.entries(END_SESSION))("the engine's end-session URL: %s", (_kind, engine) => {
  const discovery = {
    issuer: engine.issuer,
    authorization_endpoint: `${engine.issuer}/auth`,
    token_endpoint: `${engine.issuer}/token`,
    jwks_uri: `${engine.issuer}/jwks`,
    end_session_endpoint: engine.end,
  };
  const rp = new RelyingParty(
    {
      issuer: engine.issuer,
      clientId: 'svc',
      clientSecret: 'secret',
      redirectUri: 'https://svc.example.com/auth/callback',
      scopes: ['openid'],
      groupsClaim: 'groups',
    },
    async () => Response.json(discovery),
  );

  it('with id_token_hint: the hint, client_id, post_logout_redirect_uri and state', async () => {
    const url = await rp.endSessionUrl({
      idTokenHint: 'eyJ.hint.sig',
      postLogoutRedirectUri: 'https://svc.example.com/signin',
      state: 'st',
    });
    expect(url?.origin + (url?.pathname ?? '')).toBe(engine.end);
    expect(Object.fromEntries(url?.searchParams ?? [])).toEqual({
      id_token_hint: 'eyJ.hint.sig',
      client_id: 'svc',
      post_logout_redirect_uri: 'https://svc.example.com/signin',
      state: 'st',
    });
  });

  it('without one (a session from before svc kept it): client_id and post_logout_redirect_uri', async () => {
    const url = await rp.endSessionUrl({ postLogoutRedirectUri: 'https://svc.example.com/signin' });
    expect(Object.fromEntries(url?.searchParams ?? [])).toEqual({
      client_id: 'svc',
      post_logout_redirect_uri: 'https://svc.example.com/signin',
    });
  });
});
