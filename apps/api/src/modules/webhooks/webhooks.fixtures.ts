import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints, webhookEvents } from '@svc/db/schema/webhooks';
import type { SecretBox } from '@svc/db/secret-box';
import { generateWebhookSecret, sealWebhookSecret } from '@svc/jobs/webhooks/secrets';

// Test fixtures for the webhooks module: rows written directly, as the delivery worker would
// leave them, so the management routes can be tested in every state without a receiver.

/** An endpoint of `tenantId`, its secret sealed as the API stores it. */
export async function seedWebhookEndpoint(
  db: Db,
  box: SecretBox,
  opts: { tenantId: string; eventTypes?: string[]; enabled?: boolean; disabledReason?: 'manual' | 'gone'; url?: string },
): Promise<{ id: string; secret: string }> {
  const id = newId('webhookEndpoint');
  const secret = generateWebhookSecret();
  const enabled = opts.enabled ?? true;
  await db.insert(webhookEndpoints).values({
    id,
    tenantId: opts.tenantId,
    url: opts.url ?? 'http://127.0.0.1:9/hook',
    eventTypes: opts.eventTypes ?? ['user.created'],
    enabled,
    disabledReason: enabled ? null : (opts.disabledReason ?? 'manual'),
    disabledAt: enabled ? null : new Date(),
    secretCiphertext: sealWebhookSecret(box, id, secret),
  });
  return { id, secret };
}

/**
 * An event of `type` and one delivery of it to `endpointId` in `status`, with `attempts` failed
 * attempts recorded (the last one's facts copied onto the delivery, as the worker does).
 */
export async function seedWebhookDelivery(
  db: Db,
  opts: {
    tenantId: string;
    endpointId: string;
    type?: string;
    status?: 'pending' | 'retrying' | 'failed' | 'succeeded';
    attempts?: number;
    lockedUntil?: Date;
    createdAt?: Date;
  },
): Promise<{ id: string; eventId: string }> {
  const eventId = newId('event');
  const id = newId('webhookDelivery');
  const type = opts.type ?? 'user.created';
  const status = opts.status ?? 'failed';
  const attempts = opts.attempts ?? (status === 'pending' ? 0 : 1);
  const createdAt = opts.createdAt ?? new Date();
  await db.insert(webhookEvents).values({ id: eventId, tenantId: opts.tenantId, type, data: { object: 'user', id: 'usr_x' }, createdAt });
  const lastAttemptAt = attempts > 0 ? new Date(createdAt.getTime() + attempts * 1000) : null;
  await db.insert(webhookDeliveries).values({
    id,
    tenantId: opts.tenantId,
    endpointId: opts.endpointId,
    eventId,
    eventType: type,
    status,
    attemptCount: attempts,
    nextAttemptAt: status === 'retrying' ? new Date(Date.now() + 300_000) : status === 'pending' ? createdAt : null,
    lockedUntil: opts.lockedUntil ?? null,
    lastAttemptAt,
    lastStatusCode: attempts > 0 ? (status === 'succeeded' ? 200 : 500) : null,
    lastOutcome: attempts > 0 ? (status === 'succeeded' ? 'succeeded' : 'http_error') : null,
    succeededAt: status === 'succeeded' ? lastAttemptAt : null,
    createdAt,
    updatedAt: createdAt,
  });
  for (let n = 1; n <= attempts; n++) {
    const last = n === attempts;
    const ok = last && status === 'succeeded';
    await db.insert(webhookDeliveryAttempts).values({
      tenantId: opts.tenantId,
      deliveryId: id,
      attemptNumber: n,
      startedAt: new Date(createdAt.getTime() + n * 1000),
      durationMs: 12 * n,
      statusCode: ok ? 200 : 500,
      outcome: ok ? 'succeeded' : 'http_error',
      error: ok ? null : 'the receiver answered HTTP 500',
      responseExcerpt: ok ? 'ok' : 'internal error',
    });
  }
  return { id, eventId };
}
