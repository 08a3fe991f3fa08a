import { randomBytes } from 'node:crypto';
import { newId } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { billingMappings, billingSyncLogs } from '@svc/db/schema/billing';
import { usageEvents } from '@svc/db/schema/usage';
import { and, eq } from 'drizzle-orm';

/**
 * A usage event, its organization's mapping for the provider (created once per event type) and
 * one sync log in `status`, written directly (the routes under test only read and retry logs).
 */
export async function seedSyncLog(
  db: Db,
  opts: {
    tenantId: string;
    provider?: 'stripe' | 'razorpay' | 'paddle';
    eventType?: string;
    status: 'queued' | 'succeeded' | 'failed' | 'skipped';
    attempts?: number;
    reason?: string | null;
    /** When the log was queued (default now): tests that read an order set it, as rows seeded within one millisecond tie. */
    createdAt?: Date;
  },
): Promise<{ id: string; usageEventId: string; mappingId: string }> {
  const provider = opts.provider ?? 'stripe';
  const eventType = opts.eventType ?? 'api.request';
  const [existing] = await db
    .select({ id: billingMappings.id })
    .from(billingMappings)
    .where(
      and(eq(billingMappings.tenantId, opts.tenantId), eq(billingMappings.provider, provider), eq(billingMappings.eventType, eventType)),
    );
  const mappingId = existing?.id ?? newId('billingMapping');
  if (!existing) {
    await db
      .insert(billingMappings)
      .values({ id: mappingId, tenantId: opts.tenantId, provider, eventType, providerItemId: `item_${eventType}` });
  }
  const usageEventId = newId('usageEvent');
  await db.insert(usageEvents).values({
    id: usageEventId,
    tenantId: opts.tenantId,
    idempotencyKey: `fixture-${randomBytes(8).toString('hex')}`,
    requestHash: randomBytes(32).toString('hex'),
    eventType,
    occurredAt: new Date(),
    channel: 'usage',
  });
  const id = newId('billingSyncLog');
  await db.insert(billingSyncLogs).values({
    id,
    tenantId: opts.tenantId,
    provider,
    mappingId,
    usageEventId,
    status: opts.status,
    attempts: opts.attempts ?? (opts.status === 'queued' ? 0 : 1),
    reason: opts.reason ?? (opts.status === 'failed' ? 'Stripe refused it (400 resource_missing): No such meter' : null),
    providerRecordId: opts.status === 'succeeded' ? usageEventId : null,
    ...(opts.createdAt ? { createdAt: opts.createdAt, updatedAt: opts.createdAt } : {}),
  });
  return { id, usageEventId, mappingId };
}
