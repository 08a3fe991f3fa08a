import { z } from 'zod';
import { ZProductPermissionList, ZProductPermissionName } from './authorization.ts';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';

/**
 * Applications (projects) of an organization: what publishable and secret keys identify, with
 * the redirect and origin allowlists hosted sign-in and the setup context use (docs/api.md "Applications").
 */

/** `app_` + 20 base62: an application id. Anything else is a 400, never a lookup. */
export const ZApplicationId = z.string().regex(/^app_[0-9A-Za-z]{20}$/, 'expected an application id (app_...)');

export const ZApplicationStatus = z.enum(['active', 'disabled']);
export type TApplicationStatus = z.infer<typeof ZApplicationStatus>;

/** At most this many redirect URLs, and this many origins, per application. */
export const MAX_ALLOWLIST_ENTRIES = 50;
const MAX_URL_LENGTH = 2048;

/**
 * Plain http is only for a developer's own machine: anywhere else a network attacker could read
 * the code or token the browser carries back.
 */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const UNSAFE_CHARACTERS = /[\u0000-\u0020\u007f\\]/;

type Checked = { value: string } | { error: string };

function parseAbsolute(value: string): URL | undefined {
  if (!/^https?:\/\//i.test(value)) {
    return undefined;
  }
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

function plainHttpRefused(url: URL): boolean {
  return url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * A redirect allowlist entry: an absolute http(s) URL (http only for localhost, 127.0.0.1 and
 * [::1]) without credentials or fragment, or a same-origin path (`/after-sign-in`). Returns the
 * form it is stored and compared in (WHATWG-serialized, as return_to checks parse it).
 */
export function checkRedirectUrl(raw: string): Checked {
  const value = raw.trim();
  if (value.length === 0 || value.length > MAX_URL_LENGTH) {
    return { error: `a redirect URL is 1-${MAX_URL_LENGTH} characters` };
  }
  if (UNSAFE_CHARACTERS.test(value)) {
    return { error: `${value}: spaces, control characters and backslashes are not allowed` };
  }
  if (value.includes('#')) {
    return { error: `${value}: a redirect URL may not have a fragment (#...)` };
  }
  if (value.startsWith('/')) {
    // `//host` is another origin to a browser: only single-slash paths are same-origin.
    if (value.startsWith('//')) {
      return { error: `${value}: a path must start with a single /` };
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(value);
    } catch {
      return { error: `${value}: malformed percent-encoding` };
    }
    // `/%2F%2Fevil` decodes to `//evil`: refused like its plain form.
    if (decoded.startsWith('//') || UNSAFE_CHARACTERS.test(decoded.replaceAll(' ', ''))) {
      return { error: `${value}: not a same-origin path` };
    }
    const base = new URL('https://svc.invalid');
    const parsed = new URL(value, base);
    if (parsed.origin !== base.origin) {
      return { error: `${value}: not a same-origin path` };
    }
    return { value: `${parsed.pathname}${parsed.search}` };
  }
  const url = parseAbsolute(value);
  if (!url || url.hostname === '') {
    return { error: `${value}: expected an absolute http(s) URL or a path starting with /` };
  }
  if (url.username || url.password) {
    return { error: `${value}: a redirect URL may not carry credentials` };
  }
  if (plainHttpRefused(url)) {
    return { error: `${value}: use https (plain http is only allowed for localhost and 127.0.0.1)` };
  }
  return { value: url.href };
}

/**
 * A post-logout redirect URL or a back-channel logout URL: an absolute URL under the same rules
 * as a redirect URL (https, http only on loopback, no credentials or fragment); paths are not
 * allowed, since these are given to an application's OpenID Connect library, not to svc's pages.
 */
export function checkAbsoluteUrl(raw: string): Checked {
  const value = raw.trim();
  if (value.startsWith('/')) {
    return { error: `${value}: expected an absolute http(s) URL (a path is not enough here)` };
  }
  return checkRedirectUrl(value);
}

/**
 * An origin allowlist entry: exactly `scheme://host[:port]` as browsers send it in Origin
 * (lower-case, no default port, no path or trailing slash), https or loopback http.
 */
export function checkAllowedOrigin(raw: string): Checked {
  const value = raw.trim();
  if (value.length === 0 || value.length > MAX_URL_LENGTH) {
    return { error: `an origin is 1-${MAX_URL_LENGTH} characters` };
  }
  const url = UNSAFE_CHARACTERS.test(value) ? undefined : parseAbsolute(value);
  if (!url || url.hostname === '') {
    return { error: `${value}: expected an origin such as https://app.example.com` };
  }
  if (url.origin !== value) {
    return { error: `${value}: an origin is exactly scheme://host[:port]; write ${url.origin}` };
  }
  if (plainHttpRefused(url)) {
    return { error: `${value}: use https (plain http is only allowed for localhost and 127.0.0.1)` };
  }
  return { value: url.origin };
}

function allowlist(check: (raw: string) => Checked, what: string) {
  return z
    .array(z.string().max(MAX_URL_LENGTH + 64))
    .max(MAX_ALLOWLIST_ENTRIES, `at most ${MAX_ALLOWLIST_ENTRIES} ${what}`)
    .transform((values, ctx) => {
      const out: string[] = [];
      values.forEach((raw, index) => {
        const checked = check(raw);
        if ('error' in checked) {
          ctx.addIssue({ code: 'custom', message: checked.error, path: [index] });
        } else if (!out.includes(checked.value)) {
          // Duplicates (also after normalization) are dropped, first occurrence kept.
          out.push(checked.value);
        }
      });
      return out;
    });
}

/** Redirect URL allowlist: normalized, deduplicated, at most 50. */
export const ZRedirectUrls = allowlist(checkRedirectUrl, 'redirect URLs').describe(
  'Exact URLs (https; http only for localhost/127.0.0.1; no fragment or credentials) or same-origin paths a hosted sign-in may return to. Replaces the whole list; duplicates are removed.',
);
/** Origin allowlist: `scheme://host[:port]`, deduplicated, at most 50. */
export const ZAllowedOrigins = allowlist(checkAllowedOrigin, 'origins').describe(
  'Browser origins (scheme://host[:port] exactly) of the application: listed in the setup context as its allowed origins. Replaces the whole list; duplicates are removed.',
);

/** Post-logout redirect URLs: absolute, normalized, deduplicated, at most 50. */
export const ZPostLogoutRedirectUrls = allowlist(checkAbsoluteUrl, 'post-logout redirect URLs').describe(
  "Exact URLs (https; http only for localhost/127.0.0.1; no fragment or credentials) an OpenID Connect logout may return to (the client's post_logout_redirect_uris). Replaces the whole list; duplicates are removed.",
);

/** Longest logo URL accepted, as sent and as stored. */
export const MAX_LOGO_URL_LENGTH = 2048;

/**
 * An application's logo, shown (an `<img>`) on the hosted sign-in pages of its authorization
 * requests: an absolute https URL of at most 2,048 characters, without credentials. Plain http
 * would let a network attacker swap the picture on a page that asks for a sign-in; `data:` and
 * `javascript:` URLs are not images svc fetches, and credentials (`https://user@host`) would be
 * shown to everyone who reads the page. Returns the WHATWG-serialized form it is stored in. The
 * service answers 400 `logo_url_invalid` with the message; the console shows it by the field.
 */
export function checkLogoUrl(raw: string): Checked {
  const value = raw.trim();
  const example = 'use an absolute https URL such as https://cdn.example.com/logo.png';
  if (value.length === 0) {
    return { error: `the logo URL is empty: ${example}, or null for no logo` };
  }
  if (value.length > MAX_LOGO_URL_LENGTH) {
    return { error: `the logo URL is longer than ${MAX_LOGO_URL_LENGTH} characters` };
  }
  if (UNSAFE_CHARACTERS.test(value)) {
    return { error: 'the logo URL may not contain spaces, control characters or backslashes' };
  }
  if (!/^https:\/\//i.test(value)) {
    return { error: `the logo URL must be https (http, data:, javascript: and relative URLs are refused): ${example}` };
  }
  const url = parseAbsolute(value);
  if (!url || url.hostname === '') {
    return { error: `the logo URL is not a valid URL: ${example}` };
  }
  if (url.username || url.password) {
    return { error: 'the logo URL may not carry credentials (https://user@host)' };
  }
  if (url.href.length > MAX_LOGO_URL_LENGTH) {
    return { error: `the logo URL is longer than ${MAX_LOGO_URL_LENGTH} characters once encoded` };
  }
  return { value: url.href };
}

/**
 * The logo URL in request bodies: a string, or null for none. Its rules (checkLogoUrl) are checked
 * by the service, which answers 400 `logo_url_invalid` naming the problem (not a generic
 * validation error), whatever the string.
 */
export const ZLogoUrl = z
  .string()
  .nullable()
  .describe(
    `URL of the application's logo, shown on hosted sign-in: https only, at most ${MAX_LOGO_URL_LENGTH} characters, no credentials; null for none. Anything else is 400 logo_url_invalid.`,
  );

/** The back-channel logout URL: one absolute URL, or null for none. */
export const ZBackchannelLogoutUrl = z
  .string()
  .max(MAX_URL_LENGTH + 64)
  .transform((raw, ctx) => {
    const checked = checkAbsoluteUrl(raw);
    if ('error' in checked) {
      ctx.addIssue({ code: 'custom', message: checked.error });
      return z.NEVER;
    }
    return checked.value;
  })
  .nullable()
  .describe(
    'URL (https; http only for localhost/127.0.0.1) svc POSTs an OpenID Connect Back-Channel Logout token to when a session that signed in to the application ends; null for none. A host that is a private, loopback, link-local, reserved or cloud metadata address or name (the webhook address rules) is 400 backchannel_logout_url_not_allowed.',
  );

export const ZClientType = z
  .enum(['confidential', 'public', 'machine'])
  .describe(
    'confidential (default): a server-side app that authenticates at the token endpoint with the secret key (client_secret_basic or client_secret_post); public: an SPA or native app using PKCE alone; machine: a backend job or partner with no person signing in, which gets tokens for its organization by the client credentials grant.',
  );
export type TClientType = z.infer<typeof ZClientType>;

/**
 * How a machine client authenticates at the token endpoint: `client_secret_basic` (the default)
 * with its secret key, or `private_key_jwt` (RFC 7523) with a JWT signed by a key it registered.
 */
export const ZTokenEndpointAuthMethod = z
  .enum(['client_secret_basic', 'private_key_jwt'])
  .describe(
    'machine clients only: client_secret_basic (default) authenticates at the token endpoint with the secret key; private_key_jwt with a JWT signed by a key of jwks or jwksUri (RFC 7523), and the secret key then serves svc backend routes only',
  );
export type TTokenEndpointAuthMethod = z.infer<typeof ZTokenEndpointAuthMethod>;

/** At most this many keys in a machine client's JWK Set. */
export const MAX_JWKS_KEYS = 10;
/** Longest JWK Set accepted as JSON text. */
export const MAX_JWKS_TEXT = 65_536;

/**
 * A public key of a machine client's JWK Set as svc stores and returns it: only the members
 * that say what the key is (never anything private, which svc refuses).
 */
export const ZPublicJwk = z
  .object({
    kty: z.string(),
    kid: z.string().optional(),
    use: z.string().optional(),
    alg: z.string().optional(),
    n: z.string().optional(),
    e: z.string().optional(),
    crv: z.string().optional(),
    x: z.string().optional(),
    y: z.string().optional(),
  })
  .meta({ id: 'PublicJwk' });
export type TPublicJwk = z.infer<typeof ZPublicJwk>;

export const ZJwkSet = z.object({ keys: z.array(ZPublicJwk) }).meta({ id: 'JwkSet' });
export type TJwkSet = z.infer<typeof ZJwkSet>;

/**
 * A JWK Set in request bodies: the object, or its JSON text as pasted; null clears it. Whatever
 * is wrong with it (not JSON, not a set, a private or symmetric key, a short RSA key, too many
 * keys, repeated kids) is 400 `jwks_invalid` from the service naming the problem, not a generic
 * validation error.
 */
export const ZJwkSetInput = z
  .union([z.record(z.string(), z.unknown()), z.string().max(MAX_JWKS_TEXT)])
  .nullable()
  .describe(
    `machine clients with private_key_jwt: their public keys, a JWK Set ({ "keys": [...] }) or its JSON text; null for none. Public asymmetric keys only (RSA of 2048 bits or more, EC P-256 or P-384, OKP Ed25519), at most ${MAX_JWKS_KEYS}, kids unique (and present when there are several). Anything else is 400 jwks_invalid. Exclusive with jwksUri.`,
  );

/** Where a machine client publishes its JWK Set; checked by the service (400 `jwks_invalid`). */
export const ZJwksUriInput = z
  .string()
  .max(MAX_URL_LENGTH + 64)
  .nullable()
  .describe(
    'machine clients with private_key_jwt: the https URL of their JWK Set, fetched by svc; null for none. Its host must resolve to public addresses only (never private, loopback, link-local or metadata ones); anything else is 400 jwks_invalid. Exclusive with jwks.',
  );

/** A machine client's product permissions in request bodies; each must exist (400 `unknown_permission`). */
export const ZMachinePermissions = ZProductPermissionList.describe(
  "machine clients only: the product permissions (API resources' permission names) its access tokens may carry, for the resource each token is for. Each must exist (400 unknown_permission) and be held by the caller (403 forbidden). Replaces the whole list.",
);

/** One product permission a machine client may be granted, with its API resource (the console's picker). */
export const ZProductPermissionOption = z
  .object({
    name: z.string(),
    description: z.string(),
    resource: z.object({ identifier: z.string().describe('the API identifier: the audience of its tokens'), name: z.string() }),
  })
  .meta({ id: 'ProductPermissionOption' });
export type TProductPermissionOption = z.infer<typeof ZProductPermissionOption>;

export const ZListProductPermissionsRequest = z.object({
  organization_slug: ZSlug.optional().describe("the organization; default: the session's active workspace or the API key's organization"),
});
export type TListProductPermissionsRequest = z.infer<typeof ZListProductPermissionsRequest>;

export const ZProductPermissionCatalog = z
  .object({
    data: z.array(ZProductPermissionOption).describe('by resource identifier, then name'),
    nextCursor: z.null().describe('always null: the catalog is one page'),
  })
  .meta({ id: 'ProductPermissionCatalog' });
export type TProductPermissionCatalog = z.infer<typeof ZProductPermissionCatalog>;

export const ZSignInAudience = z
  .enum(['anyone', 'members'])
  .describe("anyone (default): any person may sign in; members: only members of the application's organization");
export type TSignInAudience = z.infer<typeof ZSignInAudience>;

/** A social provider id at the engine (Authentik source slug, Keycloak alias): `google`, `github`. */
export const ZProviderId = z
  .string()
  .trim()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'a provider id is 1-64 lower-case letters, digits, ".", "_" or "-" (e.g. google)');

export const ZApplicationOauthInput = z
  .object({
    productionProvider: ZProviderId.nullable().describe(
      'provider used in production with your own OAuth credentials; null falls back to the shared development provider',
    ),
  })
  .strict();

export const ZApplication = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    logoUrl: z.string().nullable().describe('https URL of the logo shown on hosted sign-in; null for none'),
    status: ZApplicationStatus,
    publishableKey: z.string().describe('pk_live_...: public, identifies the application to browsers'),
    secretKeyPrefix: z.string().describe('leading characters of the secret key, to tell keys apart; never the secret'),
    redirectUrls: z.array(z.string()),
    allowedOrigins: z.array(z.string()),
    postLogoutRedirectUrls: z.array(z.string()),
    backchannelLogoutUrl: z.string().nullable(),
    clientType: ZClientType,
    signInAudience: ZSignInAudience,
    oauth: z.object({ productionProvider: z.string().nullable() }),
    tokenEndpointAuthMethod: ZTokenEndpointAuthMethod.nullable().describe(
      'machine clients: client_secret_basic or private_key_jwt; null for the other client types',
    ),
    jwks: ZJwkSet.nullable().describe("a private_key_jwt machine client's public keys, or null"),
    jwksUri: z.string().nullable().describe("where a private_key_jwt machine client's public keys are published, or null"),
    permissions: z
      .array(z.string())
      .describe('machine clients: the product permissions granted to it (sorted); empty for the other client types'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Application' });
export type TApplication = z.infer<typeof ZApplication>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

export const ZListApplicationsRequest = ZListQuery.extend({
  organization_slug: organizationSlug,
  status: ZApplicationStatus.optional(),
});
export type TListApplicationsRequest = z.infer<typeof ZListApplicationsRequest>;

export const ZApplicationPage = ZPage(ZApplication).meta({ id: 'ApplicationPage' });
export type TApplicationPage = z.infer<typeof ZApplicationPage>;

export const ZCreateApplicationRequest = z.object({
  organization_slug: organizationSlug,
  name: ZName,
  slug: ZSlug.optional().describe('unique in the organization; default: from the name (suffixed -2, -3, ... when taken)'),
  logoUrl: ZLogoUrl.optional(),
  redirectUrls: ZRedirectUrls.optional(),
  allowedOrigins: ZAllowedOrigins.optional(),
  postLogoutRedirectUrls: ZPostLogoutRedirectUrls.optional(),
  backchannelLogoutUrl: ZBackchannelLogoutUrl.optional(),
  clientType: ZClientType.optional(),
  signInAudience: ZSignInAudience.optional(),
  oauth: ZApplicationOauthInput.optional(),
  tokenEndpointAuthMethod: ZTokenEndpointAuthMethod.optional(),
  jwks: ZJwkSetInput.optional(),
  jwksUri: ZJwksUriInput.optional(),
  permissions: ZMachinePermissions.optional(),
});
export type TCreateApplicationRequest = z.infer<typeof ZCreateApplicationRequest>;

/** The secret key is shown here once, beside the application (docs/api.md). */
export const ZApplicationWithSecret = z
  .object({
    application: ZApplication,
    secretKey: z.string().describe('sk_live_...: shown once; svc keeps only its SHA-256'),
  })
  .meta({ id: 'ApplicationWithSecret' });
export type TApplicationWithSecret = z.infer<typeof ZApplicationWithSecret>;

/** Routes on one application: the id, and optionally the organization it must be in. */
export const ZApplicationRef = z.object({ id: ZApplicationId, organization_slug: organizationSlug });
export type TApplicationRef = z.infer<typeof ZApplicationRef>;

const UPDATABLE = [
  'name',
  'logoUrl',
  'redirectUrls',
  'allowedOrigins',
  'postLogoutRedirectUrls',
  'backchannelLogoutUrl',
  'clientType',
  'signInAudience',
  'oauth',
  'tokenEndpointAuthMethod',
  'jwks',
  'jwksUri',
  'permissions',
] as const;

export const ZUpdateApplicationRequest = ZApplicationRef.extend({
  name: ZName.optional(),
  logoUrl: ZLogoUrl.optional(),
  redirectUrls: ZRedirectUrls.optional(),
  allowedOrigins: ZAllowedOrigins.optional(),
  postLogoutRedirectUrls: ZPostLogoutRedirectUrls.optional(),
  backchannelLogoutUrl: ZBackchannelLogoutUrl.optional(),
  clientType: ZClientType.optional(),
  signInAudience: ZSignInAudience.optional(),
  oauth: ZApplicationOauthInput.optional(),
  tokenEndpointAuthMethod: ZTokenEndpointAuthMethod.optional(),
  jwks: ZJwkSetInput.optional(),
  jwksUri: ZJwksUriInput.optional(),
  permissions: ZMachinePermissions.optional(),
}).refine((v) => UPDATABLE.some((field) => v[field] !== undefined), {
  message: `send at least one of ${UPDATABLE.join(', ')}`,
});
export type TUpdateApplicationRequest = z.infer<typeof ZUpdateApplicationRequest>;

export const ZSetApplicationStatusRequest = ZApplicationRef.extend({ status: ZApplicationStatus });
export type TSetApplicationStatusRequest = z.infer<typeof ZSetApplicationStatusRequest>;

// Console forms: the same checks as the API bodies, from the shapes a form holds (text areas
// with one entry per line, an empty field for "none").

function linesOf(check: (raw: string) => Checked, what: string) {
  return z
    .string()
    .max(MAX_ALLOWLIST_ENTRIES * (MAX_URL_LENGTH + 2))
    .transform((text, ctx) => {
      const lines = text
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line !== '');
      const problems: string[] = [];
      const out: string[] = [];
      lines.forEach((line, index) => {
        const checked = check(line);
        if ('error' in checked) {
          problems.push(`line ${index + 1}: ${checked.error}`);
        } else if (!out.includes(checked.value)) {
          out.push(checked.value);
        }
      });
      if (out.length > MAX_ALLOWLIST_ENTRIES) {
        problems.unshift(`at most ${MAX_ALLOWLIST_ENTRIES} ${what}`);
      }
      if (problems.length > 0) {
        ctx.addIssue({ code: 'custom', message: problems.join('; ') });
        return z.NEVER;
      }
      return out;
    });
}

/** A form's logo URL field: empty for none (null), else checkLogoUrl's rules and message. */
const logoUrlField = z
  .string()
  .trim()
  .transform((v, ctx) => {
    if (v === '') {
      return null;
    }
    const checked = checkLogoUrl(v);
    if ('error' in checked) {
      ctx.addIssue({ code: 'custom', message: checked.error });
      return z.NEVER;
    }
    return checked.value;
  });

/**
 * A form's JWK Set field (a text area): empty for none (null), else JSON text, parsed here so a
 * typing slip is shown by the field; what the keys are is the service's check (jwks_invalid).
 */
const jwksField = z
  .string()
  .trim()
  .max(MAX_JWKS_TEXT)
  .transform((v, ctx): Record<string, unknown> | null => {
    if (v === '') {
      return null;
    }
    try {
      const parsed: unknown = JSON.parse(v);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
        return parsed as Record<string, unknown>;
      }
    } catch {
      // Reported below, like any other non-object.
    }
    ctx.addIssue({ code: 'custom', message: 'paste a JWK Set: a JSON object such as { "keys": [ ... ] }' });
    return z.NEVER;
  });

/** A form's JWKS URI field: empty for none (null); its rules are the service's (jwks_invalid). */
const jwksUriField = z
  .string()
  .trim()
  .max(MAX_URL_LENGTH)
  .transform((v) => (v === '' ? null : v));

/** The machine client fields of the console's forms; their output is the request's fields. */
const machineFields = {
  tokenEndpointAuthMethod: ZTokenEndpointAuthMethod,
  jwks: jwksField,
  jwksUri: jwksUriField,
  permissions: z.array(ZProductPermissionName).max(500),
};

/**
 * What the console's create form asks first: the kind of application, which decides its client
 * type (a web server keeps the secret key; a single-page or native app cannot, so it uses PKCE).
 */
export const ZApplicationKind = z.enum(['web', 'spa', 'native', 'machine']);
export type TApplicationKind = z.infer<typeof ZApplicationKind>;

/** The client type each kind of application is created as. */
export const CLIENT_TYPE_OF_KIND = {
  web: 'confidential',
  spa: 'public',
  native: 'public',
  machine: 'machine',
} as const satisfies Record<TApplicationKind, TClientType>;

/**
 * The console's create form: a name, a slug when the one derived from the name will not do, a
 * logo, the kind of application and, for every kind that signs people in, the redirect URL its
 * first sign-in returns to (an application without one cannot complete a sign-in); a machine
 * client instead says how it authenticates and its permissions. `redirectUrl` comes out
 * normalized, or null for a machine client.
 */
export const ZCreateApplicationForm = z
  .object({
    name: ZName,
    slug: z
      .string()
      .trim()
      .transform((v) => (v === '' ? undefined : v))
      .pipe(ZSlug.optional()),
    logoUrl: logoUrlField,
    kind: ZApplicationKind,
    redirectUrl: z.string().trim().max(MAX_URL_LENGTH),
    ...machineFields,
  })
  .transform((form, ctx) => {
    if (form.kind === 'machine') {
      return { ...form, redirectUrl: null };
    }
    if (form.redirectUrl === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['redirectUrl'],
        message: 'where your app receives the sign-in: e.g. https://app.example.com/callback',
      });
      return z.NEVER;
    }
    const checked = checkAbsoluteUrl(form.redirectUrl);
    if ('error' in checked) {
      ctx.addIssue({ code: 'custom', path: ['redirectUrl'], message: checked.error });
      return z.NEVER;
    }
    return { ...form, redirectUrl: checked.value };
  });

/** The console's settings form of a machine client; its output is the PATCH body's fields. */
export const ZMachineClientSettingsForm = z.object({
  name: ZName,
  logoUrl: logoUrlField,
  ...machineFields,
});

/** The console's settings form; its output is the PATCH body's fields. */
export const ZApplicationSettingsForm = z.object({
  name: ZName,
  logoUrl: logoUrlField,
  redirectUrls: linesOf(checkRedirectUrl, 'redirect URLs'),
  allowedOrigins: linesOf(checkAllowedOrigin, 'origins'),
  postLogoutRedirectUrls: linesOf(checkAbsoluteUrl, 'post-logout redirect URLs'),
  backchannelLogoutUrl: z
    .string()
    .trim()
    .transform((v, ctx) => {
      if (v === '') {
        return null;
      }
      const checked = checkAbsoluteUrl(v);
      if ('error' in checked) {
        ctx.addIssue({ code: 'custom', message: checked.error });
        return z.NEVER;
      }
      return checked.value;
    }),
  clientType: ZClientType,
  signInAudience: ZSignInAudience,
  productionProvider: z
    .string()
    .trim()
    .transform((v) => (v === '' ? null : v))
    .pipe(ZProviderId.nullable()),
});
