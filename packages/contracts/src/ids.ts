import { randomFillSync } from 'node:crypto';

/** Every id prefix in one table (docs/architecture.md section 5). */
export const ID_PREFIXES = {
  /** organizations are tenants */
  organization: 'ten',
  application: 'app',
  user: 'usr',
  session: 'ses',
  invitation: 'inv',
  role: 'rol',
  auditLog: 'aud',
  apiKey: 'key',
  webhookEndpoint: 'wh',
  webhookDelivery: 'whd',
  event: 'evt',
  emailDelivery: 'eml',
  export: 'exp',
  usageEvent: 'uev',
  subscriptionPlan: 'pln',
  billingProvider: 'bpr',
  billingMapping: 'bmp',
  billingSyncLog: 'bsl',
  request: 'req',
  /** The product's API resources and their permissions (docs/authorization.md). */
  apiResource: 'res',
  apiPermission: 'prm',
  /** Roles the platform defines for every organization. */
  productRole: 'prl',
  /** An organization's email domains (docs/enterprise.md). */
  domain: 'dom',
  /** An organization's SCIM directories and what they provision (docs/enterprise.md "Directory sync"). */
  directory: 'dir',
  directoryUser: 'dsu',
  directoryGroup: 'dsg',
  /** An organization's SSO connections (docs/enterprise.md "SSO connections"). */
  ssoConnection: 'ssoc',
  /** A setup link for an organization's IT admin (docs/enterprise.md "Setup links"). */
  setupLink: 'setl',
  /** A client of svc's OpenID Provider that registered itself (RFC 7591; docs/oidc.md "Dynamic client registration"). */
  registeredClient: 'dcr',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes are drawn in 4 KiB batches: one syscall serves hundreds of ids. Allocated on first
 * use, so that the console, which imports this module's checks (isIdOf) but never makes an id, runs
 * it in a browser.
 */
const POOL_BYTES = 4096;
let pool: Uint8Array | undefined;
let poolOffset = POOL_BYTES;

function randomByte(): number {
  if (!pool || poolOffset >= POOL_BYTES) {
    pool ??= new Uint8Array(POOL_BYTES);
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++] as number;
}

/**
 * Uniform base62 from crypto randomness. Rejection sampling (bytes >= 248 are redrawn) keeps
 * every character equally likely, so `length` characters carry length * log2(62) bits.
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) {
      out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomBase62(20)}`;
}

/** A zod-free check that an id has the prefix of its kind and the shape newId gives it. */
export function isIdOf(kind: IdKind, value: string): boolean {
  return (
    value.length === ID_PREFIXES[kind].length + 21 &&
    value.startsWith(`${ID_PREFIXES[kind]}_`) &&
    /^[0-9A-Za-z]{20}$/.test(value.slice(-20))
  );
}
