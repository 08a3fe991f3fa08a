import { createHash } from 'node:crypto';
import { randomBase62 } from '@svc/contracts/ids';
import {
  PUBLISHABLE_KEY_PREFIX,
  PUBLISHABLE_KEY_RANDOM_LENGTH,
  SECRET_KEY_DISPLAY_LENGTH,
  SECRET_KEY_PREFIX,
  SECRET_KEY_RANDOM_LENGTH,
} from '@svc/contracts/keys';

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function newPublishableKey(): string {
  return PUBLISHABLE_KEY_PREFIX + randomBase62(PUBLISHABLE_KEY_RANDOM_LENGTH);
}

/** A fresh secret key: the raw value (shown once) and what is stored (hash and display prefix). */
export function newSecretKey(): { secretKey: string; secretKeyHash: string; secretKeyPrefix: string } {
  const secretKey = SECRET_KEY_PREFIX + randomBase62(SECRET_KEY_RANDOM_LENGTH);
  return {
    secretKey,
    secretKeyHash: sha256Hex(secretKey),
    secretKeyPrefix: secretKey.slice(0, SECRET_KEY_DISPLAY_LENGTH),
  };
}

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, as RFC 9110
 * says), or undefined. The one parser used by authentication and the rate limiter alike.
 */
export function parseBearer(header: string | undefined): string | undefined {
  if (!header) {
    return undefined;
  }
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  return match?.[1];
}
