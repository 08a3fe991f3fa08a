import { MAX_JWKS_KEYS, type TClientType, type TJwkSet, type TPublicJwk } from '@svc/contracts/applications';
import { AppError } from '@svc/contracts/errors';
import type { DbOrTx } from '@svc/db/client';
import type { ApplicationRow } from '@svc/db/queries/applications';
import { findDeclaredPermissionNames } from '@svc/db/queries/machine-clients';
import { type AddressPolicy, checkWebhookUrl } from '@svc/jobs/webhooks/ssrf';
import { calculateJwkThumbprint, importJWK, type JWK } from 'jose';
import type { Access } from '../access/authorize.ts';
import { assertProductGrantable, heldProductPermissions } from '../access/product-grants.ts';
import { PRIVATE_KEY_JWT_ALGS } from '../oidc-provider/clients.ts';

/**
 * Machine clients (docs/api.md, "Machine clients"): applications of type `machine` that get
 * tokens for their organization by the client credentials grant. Here are the rules a request
 * must meet before one is stored or changed; the OpenID Provider side is clients.ts.
 */

/** What a request asks of the settings only machine clients have. */
export type MachineInput = {
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'private_key_jwt';
  jwks?: Record<string, unknown> | string | null;
  jwksUri?: string | null;
  permissions?: string[];
};

/** What a request asks of the settings only clients people sign in to have. */
export type SignInInput = {
  redirectUrls?: string[];
  allowedOrigins?: string[];
  postLogoutRedirectUrls?: string[];
  backchannelLogoutUrl?: string | null;
  signInAudience?: string;
  oauth?: { productionProvider: string | null };
};

/** The machine-only columns of an application row. */
export type MachineColumns = Pick<ApplicationRow, 'tokenEndpointAuthMethod' | 'jwks' | 'jwksUri' | 'machinePermissions'>;

/** The machine-only columns of every other client type. */
export const NOT_MACHINE: MachineColumns = { tokenEndpointAuthMethod: null, jwks: null, jwksUri: null, machinePermissions: [] };

/**
 * 400 client_type_mismatch when a request sets something the client type does not have. A
 * machine client has no person signing in: no redirect URLs, origins, logout URLs, sign-in
 * audience or social provider. The other types have no machine permissions, token endpoint
 * authentication choice or keys. Empty lists and nulls say "none" and are accepted.
 */
export function assertFitsClientType(clientType: TClientType, input: MachineInput & SignInInput): void {
  if (clientType === 'machine') {
    const extra = [
      input.redirectUrls?.length ? 'redirectUrls' : undefined,
      input.allowedOrigins?.length ? 'allowedOrigins' : undefined,
      input.postLogoutRedirectUrls?.length ? 'postLogoutRedirectUrls' : undefined,
      input.backchannelLogoutUrl != null ? 'backchannelLogoutUrl' : undefined,
      input.signInAudience !== undefined ? 'signInAudience' : undefined,
      input.oauth?.productionProvider != null ? 'oauth.productionProvider' : undefined,
    ].filter((f) => f !== undefined);
    if (extra.length > 0) {
      throw new AppError(
        'client_type_mismatch',
        `a machine client has no ${extra.join(', ')}: no person signs in to it, it gets tokens by the client credentials grant`,
      );
    }
    return;
  }
  const extra = [
    input.tokenEndpointAuthMethod !== undefined ? 'tokenEndpointAuthMethod' : undefined,
    input.jwks != null ? 'jwks' : undefined,
    input.jwksUri != null ? 'jwksUri' : undefined,
    input.permissions?.length ? 'permissions' : undefined,
  ].filter((f) => f !== undefined);
  if (extra.length > 0) {
    throw new AppError('client_type_mismatch', `${extra.join(', ')}: only machine clients (clientType machine) have these`);
  }
}

/**
 * The machine-only columns a request leads to, from the current ones (none for a create):
 * `tokenEndpointAuthMethod` defaults to client_secret_basic; `jwks` and `jwksUri` are exclusive
 * (setting one clears the other) and only for private_key_jwt, which needs one of them;
 * switching to client_secret_basic drops the keys. `permissions` replaces the list; each name
 * must be declared by an API resource (400 unknown_permission). Whether the caller may grant
 * them is `assertHoldsMachinePermissions`.
 */
export async function machineColumnsOf(
  db: DbOrTx,
  current: MachineColumns | undefined,
  input: MachineInput,
  policy: AddressPolicy,
): Promise<MachineColumns> {
  const method = input.tokenEndpointAuthMethod ?? current?.tokenEndpointAuthMethod ?? 'client_secret_basic';
  if (input.jwks != null && input.jwksUri != null) {
    throw new AppError('jwks_invalid', 'send jwks or jwksUri, not both: svc verifies with one set of keys');
  }
  if (method === 'client_secret_basic' && (input.jwks != null || input.jwksUri != null)) {
    throw new AppError(
      'client_type_mismatch',
      'jwks and jwksUri are for private_key_jwt: set tokenEndpointAuthMethod to private_key_jwt to register keys',
    );
  }
  let jwks = current?.jwks ?? null;
  let jwksUri = current?.jwksUri ?? null;
  if (input.jwks !== undefined) {
    jwks = input.jwks === null ? null : await checkJwks(input.jwks);
    jwksUri = jwks ? null : jwksUri;
  }
  if (input.jwksUri !== undefined) {
    jwksUri = input.jwksUri === null ? null : await checkJwksUri(input.jwksUri, policy);
    jwks = jwksUri ? null : jwks;
  }
  if (method === 'client_secret_basic') {
    jwks = null;
    jwksUri = null;
  } else if (!jwks && !jwksUri) {
    throw new AppError('jwks_invalid', 'a private_key_jwt client needs its public keys: send jwks (a JWK Set) or jwksUri');
  }
  if (input.permissions !== undefined) {
    const declared = await findDeclaredPermissionNames(db, input.permissions);
    const unknown = input.permissions.filter((p) => !declared.has(p));
    if (unknown.length > 0) {
      throw new AppError('unknown_permission', `no API resource declares ${unknown.join(', ')}`);
    }
  }
  return {
    tokenEndpointAuthMethod: method,
    jwks,
    jwksUri,
    machinePermissions: input.permissions ?? current?.machinePermissions ?? [],
  };
}

/**
 * 403 forbidden unless the caller holds every one of `permissions`: a machine client is a
 * credential, and no credential may do what its maker may not do directly.
 */
export async function assertHoldsMachinePermissions(
  db: DbOrTx,
  access: Access,
  permissions: readonly string[],
  refusal = 'you cannot grant a machine client permissions you do not hold',
): Promise<void> {
  if (permissions.length === 0) {
    return;
  }
  assertProductGrantable(await heldProductPermissions(db, access), permissions, refusal);
}

/**
 * 403 forbidden when a machine client holds product permissions the caller does not: such a
 * client is not the caller's to change, enable or rotate (the new secret or keys would be a
 * credential above their own). A name no API resource declares any more grants nothing and is
 * not counted.
 */
export async function assertNotAboveCaller(db: DbOrTx, access: Access, application: MachineColumns, refusal: string): Promise<void> {
  if (application.machinePermissions.length === 0) {
    return;
  }
  const declared = await findDeclaredPermissionNames(db, application.machinePermissions);
  await assertHoldsMachinePermissions(
    db,
    access,
    application.machinePermissions.filter((p) => declared.has(p)),
    refusal,
  );
}

/** A machine client's keys as audit entries and webhook events name them: kid, type and RFC 7638 thumbprint. */
export async function jwksSummary(
  jwks: TJwkSet | MachineColumns['jwks'],
): Promise<{ kid: string | null; kty: string; thumbprint: string }[] | null> {
  if (!jwks) {
    return null;
  }
  return Promise.all(
    jwks.keys.map(async (key) => ({
      kid: typeof key.kid === 'string' ? key.kid : null,
      kty: String(key.kty),
      thumbprint: await calculateJwkThumbprint(key as JWK),
    })),
  );
}

// JWK Sets. The token endpoint verifies a private_key_jwt assertion with these keys, so only
// public asymmetric keys that svc's OpenID Provider can verify with are stored.

/** Members that make a JWK private (RFC 7518 6.2.2, 6.3.2, 6.4; RFC 8037): never stored. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

/** The shortest RSA modulus accepted (NIST SP 800-131A: 2048 bits). */
const MIN_RSA_BITS = 2048;

type KeyKind = { label: string; algs: readonly string[]; members: readonly ('n' | 'e' | 'crv' | 'x' | 'y')[] };

/** What each accepted key type verifies with, among PRIVATE_KEY_JWT_ALGS (the first imports it). */
function kindOf(kty: unknown, crv: unknown): KeyKind | string {
  const only = (algs: readonly string[]) => algs.filter((a) => (PRIVATE_KEY_JWT_ALGS as readonly string[]).includes(a));
  switch (kty) {
    case 'RSA':
      return { label: 'RSA', algs: only(['RS256', 'PS256']), members: ['n', 'e'] };
    case 'EC':
      if (crv === 'P-256') {
        return { label: 'EC P-256', algs: only(['ES256']), members: ['crv', 'x', 'y'] };
      }
      if (crv === 'P-384') {
        return { label: 'EC P-384', algs: only(['ES384']), members: ['crv', 'x', 'y'] };
      }
      return `EC keys must be on curve P-256 or P-384 (not ${String(crv)})`;
    case 'OKP':
      if (crv === 'Ed25519') {
        return { label: 'OKP Ed25519', algs: only(['Ed25519', 'EdDSA']), members: ['crv', 'x'] };
      }
      return `OKP keys must be Ed25519 (not ${String(crv)})`;
    case 'oct':
      return 'symmetric keys (kty oct) are refused: private_key_jwt is verified with public keys only';
    default:
      return `key type ${String(kty)} is not supported: use RSA (2048 bits or more), EC P-256 or P-384, or OKP Ed25519`;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Bits of an RSA modulus (base64url, big-endian), leading zero bytes aside. */
function modulusBits(n: string): number {
  const bytes = Buffer.from(n, 'base64url');
  let start = 0;
  while (start < bytes.length && bytes[start] === 0) {
    start++;
  }
  if (start === bytes.length) {
    return 0;
  }
  return (bytes.length - start - 1) * 8 + (32 - Math.clz32(bytes[start] as number));
}

async function checkKey(raw: unknown, position: number): Promise<TPublicJwk> {
  const where = `key ${position}`;
  const invalid = (message: string) => new AppError('jwks_invalid', `${where}: ${message}`);
  if (!isRecord(raw)) {
    throw invalid('a JWK is a JSON object');
  }
  const privateMembers = PRIVATE_MEMBERS.filter((m) => raw[m] !== undefined);
  // A symmetric key (its `k` is the secret) is refused below, with its own reason.
  if (raw.kty !== 'oct' && privateMembers.length > 0) {
    throw invalid(`it carries private key material (${privateMembers.join(', ')}): register the public key only`);
  }
  const kind = kindOf(raw.kty, raw.crv);
  if (typeof kind === 'string') {
    throw invalid(kind);
  }
  if (raw.use !== undefined && raw.use !== 'sig') {
    throw invalid('"use" must be "sig" (the key verifies signed client assertions)');
  }
  if (raw.key_ops !== undefined && !(Array.isArray(raw.key_ops) && raw.key_ops.every((op) => op === 'verify'))) {
    throw invalid('"key_ops" may only list "verify"');
  }
  if (raw.kid !== undefined && !(typeof raw.kid === 'string' && raw.kid.length > 0 && raw.kid.length <= 256)) {
    throw invalid('"kid" must be a string of 1-256 characters');
  }
  if (raw.alg !== undefined && !(typeof raw.alg === 'string' && kind.algs.includes(raw.alg))) {
    throw invalid(`"alg" of an ${kind.label} key must be ${kind.algs.join(' or ')} (or left out)`);
  }
  const alg = typeof raw.alg === 'string' ? raw.alg : kind.algs[0];
  const missing = kind.members.filter((m) => typeof raw[m] !== 'string' || raw[m] === '');
  if (alg === undefined || missing.length > 0) {
    throw invalid(`an ${kind.label} public key needs ${kind.members.join(', ')}`);
  }
  const key: TPublicJwk = { kty: raw.kty as string };
  for (const member of kind.members) {
    key[member] = raw[member] as string;
  }
  try {
    await importJWK({ ...key }, alg);
  } catch {
    throw invalid(`not a valid ${kind.label} public key`);
  }
  if (key.n !== undefined && modulusBits(key.n) < MIN_RSA_BITS) {
    throw invalid(`an RSA key has at least ${MIN_RSA_BITS} bits (this one has ${modulusBits(key.n)})`);
  }
  return {
    ...(typeof raw.kid === 'string' ? { kid: raw.kid } : {}),
    ...(raw.use !== undefined ? { use: 'sig' } : {}),
    ...(typeof raw.alg === 'string' ? { alg: raw.alg } : {}),
    ...key,
  };
}

/**
 * A machine client's JWK Set, checked and reduced to what svc stores: the object or its JSON
 * text; 1-10 public asymmetric keys (RSA of 2048 bits or more, EC P-256 or P-384, OKP Ed25519)
 * that jose imports, no private members, no symmetric key, kids unique (and present when there
 * are several keys, so an assertion's kid picks one). Anything else is 400 jwks_invalid saying what.
 */
export async function checkJwks(raw: Record<string, unknown> | string): Promise<TJwkSet> {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new AppError('jwks_invalid', 'the JWK Set is not valid JSON');
    }
  }
  if (!isRecord(value) || !Array.isArray(value.keys)) {
    throw new AppError('jwks_invalid', 'a JWK Set is a JSON object with a "keys" array: { "keys": [ ... ] }');
  }
  if (value.keys.length === 0) {
    throw new AppError('jwks_invalid', 'the JWK Set has no keys');
  }
  if (value.keys.length > MAX_JWKS_KEYS) {
    throw new AppError('jwks_invalid', `a JWK Set has at most ${MAX_JWKS_KEYS} keys (this one has ${value.keys.length})`);
  }
  const keys: TPublicJwk[] = [];
  for (const [index, raw] of value.keys.entries()) {
    keys.push(await checkKey(raw, index + 1));
  }
  const kids = keys.map((k) => k.kid);
  if (keys.length > 1 && kids.some((kid) => kid === undefined)) {
    throw new AppError('jwks_invalid', 'with several keys, each needs a "kid" (an assertion names the key it is signed with)');
  }
  const repeated = kids.filter((kid, i) => kid !== undefined && kids.indexOf(kid) !== i);
  if (repeated.length > 0) {
    throw new AppError('jwks_invalid', `kids must be unique: ${[...new Set(repeated)].join(', ')} repeats`);
  }
  return { keys };
}

/**
 * Where a machine client publishes its keys, as stored: an https URL whose host resolves to
 * public addresses only. It is the address table and check webhook URLs are saved with (the
 * provider fetches it, so a private, loopback, link-local or metadata address would let a tenant
 * aim svc at its own network). 400 jwks_invalid saying what is wrong.
 */
export async function checkJwksUri(raw: string, policy: AddressPolicy): Promise<string> {
  const value = raw.trim();
  if (!/^https:\/\//i.test(value)) {
    throw new AppError('jwks_invalid', 'jwksUri must be an absolute https URL');
  }
  const checked = await checkWebhookUrl(value, policy);
  if ('problem' in checked) {
    throw new AppError(
      'jwks_invalid',
      checked.problem.code === 'webhook_url_not_allowed'
        ? 'jwksUri resolves to a private, loopback, link-local or reserved address: svc fetches keys from public addresses only'
        : `jwksUri: ${checked.problem.message}`,
    );
  }
  const href = checked.url.href;
  if (checked.url.protocol !== 'https:' || href.length > 2048) {
    throw new AppError('jwks_invalid', 'jwksUri must be an https URL of at most 2048 characters');
  }
  return href;
}
