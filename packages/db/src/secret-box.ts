import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for values svc must be able to read back (webhook signing secrets, queued email
 * bodies), keyed by SVC_ENCRYPTION_KEY. Each value is bound to the row it belongs to through the
 * additional authenticated data, so a ciphertext copied into another row does not decrypt.
 *
 * Format: `v1.<iv>.<tag>.<ciphertext>`, each part base64url. Never log either side.
 *
 * `mac` is for values svc hands out and must recognize later without storing them (a keyless
 * application's claim token): HMAC-SHA256 under a key derived from the same key (HKDF, never the
 * AES key itself), over the context and the value, base64url (43 characters). A MAC made for one
 * context never matches in another.
 */
export type SecretBox = {
  seal: (plaintext: string, context: string) => string;
  open: (sealed: string, context: string) => string;
  mac: (value: string, context: string) => string;
};

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) {
    throw new SecretBoxError('the encryption key must be 32 bytes');
  }
  const macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'svc secret-box mac', 32));
  return {
    mac(value, context) {
      return createHmac('sha256', macKey).update(context, 'utf8').update('\0').update(value, 'utf8').digest('base64url');
    },
    seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return `v1.${iv.toString('base64url')}.${tag.toString('base64url')}.${ct.toString('base64url')}`;
    },
    open(sealed, context) {
      const parts = sealed.split('.');
      if (parts.length !== 4 || parts[0] !== 'v1') {
        throw new SecretBoxError('not a sealed value');
      }
      const [, iv, tag, ct] = parts as [string, string, string, string];
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        // Wrong key, wrong row or tampered: the same answer, and never the cause's details.
        throw new SecretBoxError('the sealed value does not open with this key and context');
      }
    },
  };
}
