import { describe, expect, it } from 'vitest';
import { type EngineKind, type HandOff, handOffUrl } from './engine-presets.ts';

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
  it('uses only standard parameters and configured URLs', () => {
    expect(build('generic', 'password', { loginHint: 'a@b.c' }).searchParams.get('login_hint')).toBe('a@b.c');
    expect(build('generic', 'signup').searchParams.get('prompt')).toBe('create');
    expect(build('generic', 'signup', { loginHint: 'a@b.c' }).searchParams.get('login_hint')).toBe('a@b.c');
    expect(build('keycloak', 'signup', { loginHint: 'a@b.c' }).searchParams.get('login_hint')).toBe('a@b.c');
    const recovery = build('generic', 'recovery', { overrides: { recovery: 'https://idp.example.com/reset' } });
    expect(recovery.origin + recovery.pathname).toBe('https://idp.example.com/reset');
    expect(() => build('generic', 'mfa_setup')).toThrow(/no mfa setup flow/);
  });
});
