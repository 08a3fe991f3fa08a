import { z } from 'zod';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';

/** `eml_` + 20 base62. Anything else is a 400, never a lookup. */
export const ZEmailDeliveryId = z.string().regex(/^eml_[0-9A-Za-z]{20}$/, 'expected an email delivery id (eml_...)');

/** pending and retrying are waiting for an attempt; sent (the provider accepted it) and failed are final. */
export const ZEmailDeliveryStatus = z.enum(['pending', 'retrying', 'sent', 'failed']).meta({ id: 'EmailDeliveryStatus' });
export type TEmailDeliveryStatus = z.infer<typeof ZEmailDeliveryStatus>;

/**
 * The public metadata of a delivery: these keys and no others (an unknown key in the row is
 * dropped here, whatever wrote it). `notSentReason` says why a failed delivery was never sent
 * (its invitation was revoked, accepted or expired first).
 */
export const ZEmailDeliveryMetadata = z
  .object({
    invitationId: z.string().optional(),
    roleKey: z.string().optional(),
    notSentReason: z.enum(['invitation_revoked', 'invitation_accepted', 'invitation_expired']).optional(),
  })
  .meta({ id: 'EmailDeliveryMetadata' });

/**
 * An outbox entry as lists show it (docs/architecture.md section 7): recipient, subject, status, attempt count,
 * timestamps and public metadata. Never the body (it holds the one-time invite link), the
 * provider's message id or error text, nor anything of the provider's configuration.
 */
export const ZEmailDelivery = z
  .object({
    id: z.string(),
    kind: z.enum(['invitation']),
    recipient: z.string(),
    subject: z.string(),
    status: ZEmailDeliveryStatus,
    attemptCount: z.number().int(),
    /** When the next attempt is due (null once sent or failed). */
    nextAttemptAt: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    sentAt: z.string().nullable(),
    metadata: ZEmailDeliveryMetadata,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'EmailDelivery' });
export type TEmailDelivery = z.infer<typeof ZEmailDelivery>;

export const ZListEmailDeliveriesRequest = ZListQuery.extend({
  organization_slug: ZSlug.optional(),
  status: ZEmailDeliveryStatus.optional(),
});
export type TListEmailDeliveriesRequest = z.infer<typeof ZListEmailDeliveriesRequest>;
export const ZEmailDeliveryPage = ZPage(ZEmailDelivery).meta({ id: 'EmailDeliveryPage' });

/** At most this many deliveries selected in one process call. */
export const EMAIL_PROCESS_MAX_IDS = 100;

export const ZProcessEmailDeliveriesRequest = z.object({
  organization_slug: ZSlug.optional(),
  /**
   * Process exactly these (pending or retrying ones are attempted now, even before their next
   * attempt is due; sent and failed ones are left as they are). Without: the due ones.
   */
  ids: z.array(ZEmailDeliveryId).min(1).max(EMAIL_PROCESS_MAX_IDS).optional(),
});
export type TProcessEmailDeliveriesRequest = z.infer<typeof ZProcessEmailDeliveriesRequest>;

export const ZProcessEmailDeliveriesResponse = z
  .object({
    /** Attempts made by this call. */
    processed: z.number().int(),
    sent: z.number().int(),
    failed: z.number().int(),
    retrying: z.number().int(),
    /** The attempted deliveries as they are now, and with `ids` every selected one. */
    deliveries: z.array(ZEmailDelivery),
  })
  .meta({ id: 'ProcessedEmailDeliveries' });
export type TProcessEmailDeliveriesResponse = z.infer<typeof ZProcessEmailDeliveriesResponse>;

/** Beside a created invitation: the email queued for it, or null when email delivery is disabled. */
export const ZQueuedEmail = z.object({ id: z.string(), status: ZEmailDeliveryStatus }).nullable();
export type TQueuedEmail = z.infer<typeof ZQueuedEmail>;
