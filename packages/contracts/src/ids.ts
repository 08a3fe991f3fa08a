import { randomFillSync } from 'node:crypto';

/** Every id prefix in one table (ARCHITECTURE.md section 5). */
export const ID_PREFIXES = {
  /** organizations are tenants */
  organization: 'ten',
  application: 'app',
  user: 'usr',
  session: 'ses',
  invitation: 'inv',
  apiKey: 'key',
  webhookEndpoint: 'wh',
  webhookDelivery: 'whd',
  event: 'evt',
  export: 'exp',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes are drawn in 4 KiB batches: one syscall serves hundreds of ids. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset >= pool.length) {
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
