import { randomBytes } from 'node:crypto';
import type { SecretBox } from '@svc/db/secret-box';

/**
 * Webhook signing secrets, Standard Webhooks style: `whsec_` + base64 of 32 random bytes; the
 * HMAC key is the decoded bytes. Stored sealed (AES-256-GCM) and bound to the endpoint's id.
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The additional authenticated data that binds a sealed secret to its endpoint row. */
export function webhookSecretContext(endpointId: string): string {
  return `webhook_endpoint:${endpointId}`;
}

export function sealWebhookSecret(box: SecretBox, endpointId: string, secret: string): string {
  return box.seal(secret, webhookSecretContext(endpointId));
}

export function openWebhookSecret(box: SecretBox, endpointId: string, sealed: string): string {
  return box.open(sealed, webhookSecretContext(endpointId));
}

/** The HMAC key of a `whsec_` secret. */
export function webhookSecretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}
