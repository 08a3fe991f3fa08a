import { AppError } from '@svc/contracts/errors';

export type EngineKind = 'authentik' | 'keycloak' | 'generic';

/** Every way svc hands a browser to the engine. svc implements none of these protocols itself. */
export type HandOff = 'password' | 'social' | 'signup' | 'recovery' | 'email_verification' | 'mfa_setup' | 'passkey_setup';

/** Per-installation overrides: a flow slug (Authentik) or a full URL (any engine). */
export type HandOffOverrides = Partial<
  Record<'social' | 'recovery' | 'email_verification' | 'mfa_setup' | 'passkey_setup' | 'signup', string>
>;

/** The account hand-offs of svc's account page (/auth/recovery, /auth/verify-email, /auth/mfa, /auth/passkeys). */
export const ACCOUNT_HAND_OFFS = ['recovery', 'email_verification', 'mfa_setup', 'passkey_setup'] as const;
export type AccountHandOff = (typeof ACCOUNT_HAND_OFFS)[number];

/**
 * What svc offers on the configured engine: a hand-off is offered only where the preset knows
 * the engine's page for it (or a URL is configured), so no link leads to a 404 at the engine.
 * docs/engines.md has the table per engine.
 */
export type EngineOffers = {
  kind: EngineKind;
  /** Each hand-off svc links to: the account page, /signin's sign-up and social buttons. */
  handOffs: Record<AccountHandOff | 'signup' | 'social', boolean>;
  /**
   * Hand-offs whose engine page sends the person back to svc when done. Authentik follows `next`
   * and Keycloak runs them inside the authorization request; a generic engine only when its URL
   * carries `{next}` or `{authorize_url}`: otherwise the account page opens it in a new tab.
   */
  comesBack: Record<AccountHandOff | 'signup' | 'social', boolean>;
  /** svc's engine admin API client (POST /v1/users, the platform engine proxy) speaks Authentik's /api/v3/ only. */
  adminApi: boolean;
};

/**
 * The engine kind an issuer URL has the shape of: Authentik's per-provider issuer
 * `/application/o/<slug>/`, Keycloak's `/realms/<realm>`, otherwise generic OIDC.
 */
export function inferEngineKind(issuer: string): EngineKind {
  let path: string;
  try {
    path = new URL(issuer).pathname;
  } catch {
    return 'generic';
  }
  if (/\/application\/o\/[^/]+\/?$/.test(path)) {
    return 'authentik';
  }
  if (/\/realms\/[^/]+\/?$/.test(path)) {
    return 'keycloak';
  }
  return 'generic';
}

/** What svc offers on an engine of `kind` with these settings. */
export function engineOffers(input: {
  kind: EngineKind;
  overrides: HandOffOverrides;
  /** ENGINE_SOCIAL was set (Authentik alone has a default source slug, `google`). */
  socialConfigured: boolean;
  /** ENGINE_ADMIN_API_URL (or the dev engine's) is configured. */
  adminApiConfigured: boolean;
}): EngineOffers {
  const { kind, overrides } = input;
  const names = [...ACCOUNT_HAND_OFFS, 'signup', 'social'] as const;
  const all = (value: boolean) => Object.fromEntries(names.map((n) => [n, value])) as Record<(typeof names)[number], boolean>;
  if (kind === 'authentik') {
    return { kind, handOffs: all(true), comesBack: all(true), adminApi: input.adminApiConfigured };
  }
  if (kind === 'keycloak') {
    // kc_idp_hint needs an identity-provider alias: no default.
    const handOffs = { ...all(true), social: input.socialConfigured };
    return { kind, handOffs, comesBack: handOffs, adminApi: false };
  }
  const handOffs = all(false);
  const comesBack = all(false);
  for (const name of names) {
    const url = overrides[name];
    if (url && isUrl(url)) {
      handOffs[name] = true;
      comesBack[name] = /\{(next|authorize_url)\}/.test(url);
    }
  }
  return { kind, handOffs, comesBack, adminApi: false };
}

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

  // Generic OIDC: login_hint for a password, configured URLs for the rest (nothing else is
  // standard: prompt=create is ignored by many engines, so sign-up needs its URL too).
  if (handOff === 'password') {
    return hinted;
  }
  const configured = overrides[handOff];
  if (!configured || !isUrl(configured)) {
    throw new AppError('not_found', `the identity engine offers no ${handOff.replace('_', ' ')} here`);
  }
  return genericHandOff(configured, hinted);
}

/**
 * A generic engine's configured URL: `{authorize_url}` becomes the whole authorization request
 * (URL-encoded) and `{next}` its relative path, for engines that take a return address; without
 * either, the URL is used as it is (the engine ignores a `next` it does not know).
 */
function genericHandOff(configured: string, authorize: URL): URL {
  if (!/\{(next|authorize_url)\}/.test(configured)) {
    return new URL(configured);
  }
  return new URL(
    configured
      .replaceAll('{authorize_url}', encodeURIComponent(authorize.href))
      .replaceAll('{next}', encodeURIComponent(`${authorize.pathname}${authorize.search}`)),
  );
}
