import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the receiver checks
 * `webhook-signature` against HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>") with
 * any of its secrets, and rejects stale timestamps, so a captured request cannot be replayed
 * later or altered.
 */

export const WEBHOOK_USER_AGENT = 'svc-webhooks/1';

/** The event as it goes out: the same body for every attempt and every endpoint. */
export type WebhookEventMessage = {
  /** `evt_` id. */
  id: string;
  type: string;
  createdAt: Date;
  /** The event's `data` as JSON text (PostgreSQL's jsonb output), spliced in without a re-parse. */
  dataJson: string;
};

/** `{ "id", "type", "timestamp" (the event's creation, ISO 8601), "data" }`. */
export function webhookBody(event: WebhookEventMessage): string {
  return `{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(
    event.createdAt.toISOString(),
  )},"data":${event.dataJson}}`;
}

/**
 * `v1,<base64 signature>` per key, space-separated: during a rotation's grace period both the
 * new and the previous secret sign, so a receiver holding either one accepts the delivery.
 */
export function webhookSignature(opts: { id: string; timestampSeconds: number; body: string; keys: Buffer[] }): string {
  const signed = `${opts.id}.${opts.timestampSeconds}.${opts.body}`;
  return opts.keys.map((key) => `v1,${createHmac('sha256', key).update(signed).digest('base64')}`).join(' ');
}

/** The request headers of one attempt; `webhook-timestamp` is the attempt's own time. */
export function webhookHeaders(opts: { id: string; body: string; keys: Buffer[]; now?: Date }): Record<string, string> {
  const timestampSeconds = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'webhook-id': opts.id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': webhookSignature({ id: opts.id, timestampSeconds, body: opts.body, keys: opts.keys }),
  };
}
