import { AppError } from '@svc/contracts/errors';

export type EngineKind = 'authentik' | 'keycloak' | 'generic';

/** Every way svc hands a browser to the engine. svc implements none of these protocols itself. */
export type HandOff = 'password' | 'social' | 'signup' | 'recovery' | 'email_verification' | 'mfa_setup' | 'passkey_setup';

/** Per-installation overrides: a flow slug (Authentik) or a full URL (any engine). */
export type HandOffOverrides = Partial<
  Record<'social' | 'recovery' | 'email_verification' | 'mfa_setup' | 'passkey_setup' | 'signup', string>
>;

/** Authentik's default flow slugs for each account hand-off. */
const AUTHENTIK_FLOWS: Record<Exclude<HandOff, 'password' | 'social'>, string> = {
  signup: 'default-enrollment-flow',
  recovery: 'default-recovery-flow',
  email_verification: 'default-source-email-verification',
  mfa_setup: 'default-authenticator-totp-setup',
  passkey_setup: 'default-authenticator-webauthn-setup',
};

/** Keycloak application-initiated actions (kc_action) for the account hand-offs. */
const KEYCLOAK_ACTIONS: Record<'recovery' | 'email_verification' | 'mfa_setup' | 'passkey_setup', string> = {
  recovery: 'UPDATE_PASSWORD',
  email_verification: 'VERIFY_EMAIL',
  mfa_setup: 'CONFIGURE_TOTP',
  passkey_setup: 'webauthn-register-passwordless',
};

export type HandOffInput = {
  kind: EngineKind;
  /**
   * The complete authorization request svc just prepared (fresh state, nonce and PKCE
   * challenge); every hand-off ends in it, so the browser comes back to svc's callback.
   */
  authorizationUrl: URL;
  handOff: HandOff;
  /** An email for the password flow (never a password). */
  loginHint?: string;
  /** Social provider slug (Authentik source slug, Keycloak identity-provider alias). */
  socialProvider: string;
  overrides?: HandOffOverrides;
};

function withParams(url: URL, params: Record<string, string | undefined>): URL {
  const out = new URL(url);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== '') {
      out.searchParams.set(key, value);
    }
  }
  return out;
}

/** A flow override: a full URL stays as it is; anything else is a flow (or source) slug. */
function isUrl(value: string): boolean {
  return /^https?:\/\//i.test(value);
}

/**
 * Where the browser goes for a hand-off. Authentik: its own flow or source pages, with
 * `next` set to the authorization request's relative path (Authentik refuses absolute `next`),
 * so the user finishes the flow and lands in svc's callback. Keycloak: parameters on the
 * authorization request itself (login_hint, kc_idp_hint, kc_action, prompt=create). Generic OIDC:
 * login_hint, prompt=create, and configured URLs for the rest.
 */
export function handOffUrl(input: HandOffInput): URL {
  const { kind, authorizationUrl: auth, handOff, overrides = {} } = input;
  // The email typed on /signin or /signup travels as login_hint, so the engine's login or
  // enrollment form starts filled in; other hand-offs never carry it.
  const loginHint = handOff === 'password' || handOff === 'signup' ? input.loginHint?.trim() || undefined : undefined;
  const hinted = withParams(auth, { login_hint: loginHint });
  const relativeAuthorize = `${hinted.pathname}${hinted.search}`;

  if (kind === 'authentik') {
    if (handOff === 'password') {
      return hinted;
    }
    const override = overrides[handOff];
    if (override && isUrl(override)) {
      return withParams(new URL(override), { next: relativeAuthorize });
    }
    const path =
      handOff === 'social'
        ? `/source/oauth/login/${encodeURIComponent(override ?? input.socialProvider)}/`
        : `/if/flow/${encodeURIComponent(override ?? AUTHENTIK_FLOWS[handOff])}/`;
    return withParams(new URL(path, auth.origin), { next: relativeAuthorize });
  }

  if (kind === 'keycloak') {
    switch (handOff) {
      case 'password':
        return hinted;
      case 'social':
        return withParams(auth, { kc_idp_hint: overrides.social ?? input.socialProvider });
      case 'signup':
        return withParams(hinted, { prompt: 'create' });
      default:
        return withParams(auth, { kc_action: KEYCLOAK_ACTIONS[handOff] });
    }
  }

  // Generic OIDC: only what the protocol defines, plus configured URLs.
  switch (handOff) {
    case 'password':
      return hinted;
    case 'signup':
      return withParams(hinted, { prompt: 'create' });
    case 'social':
      return overrides.social && isUrl(overrides.social) ? withParams(new URL(overrides.social), { next: relativeAuthorize }) : auth;
    default: {
      const configured = overrides[handOff];
      if (!configured || !isUrl(configured)) {
        throw new AppError('not_found', `the identity engine has no ${handOff.replace('_', ' ')} flow configured`);
      }
      return withParams(new URL(configured), { next: relativeAuthorize });
    }
  }
}
