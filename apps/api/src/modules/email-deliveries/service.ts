import {
  type TEmailDelivery,
  type TListEmailDeliveriesRequest,
  type TProcessEmailDeliveriesRequest,
  type TProcessEmailDeliveriesResponse,
  ZEmailDeliveryMetadata,
} from '@svc/contracts/email-deliveries';
import { AppError } from '@svc/contracts/errors';
import type { Db } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { type EmailDeliveryRow, findEmailDeliveriesByIds, listEmailDeliveries as listRows } from '@svc/db/queries/email-deliveries';
import { type EmailOutbox, processEmailDeliveries } from '@svc/jobs/email/process';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';

/**
 * The one place a delivery row becomes an answer (docs/architecture.md section 7): the body, the provider's message
 * id and error text are not even read, and metadata keeps only its public keys.
 */
export function toEmailDelivery(row: EmailDeliveryRow): TEmailDelivery {
  const metadata = ZEmailDeliveryMetadata.safeParse(row.metadata);
  return {
    id: row.id,
    kind: row.kind,
    recipient: row.recipient,
    subject: row.subject,
    status: row.status,
    attemptCount: row.attemptCount,
    nextAttemptAt: row.nextAttemptAt?.toISOString() ?? null,
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    sentAt: row.sentAt?.toISOString() ?? null,
    metadata: metadata.success ? metadata.data : {},
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** GET /v1/email-deliveries: the organization's outbox, newest first, for org admins. */
export async function listEmailDeliveries(
  db: Db,
  { organization }: Access,
  input: TListEmailDeliveriesRequest,
): Promise<{ data: TEmailDelivery[]; nextCursor: string | null }> {
  const scope = `email-deliveries:${organization.id}:${input.status ?? 'all'}`;
  const after = decodeCursor(scope, input.cursor);
  const rows = await listRows(db, { tenantId: organization.id, status: input.status, after, limit: input.limit + 1 });
  return toPage(scope, rows, input.limit, toEmailDelivery);
}

/**
 * POST /v1/email-deliveries/process: attempts the organization's due deliveries now (at most
 * `batchSize`), or exactly the selected ones, and answers what happened. Access is resolved
 * before (the route's rule), so an outsider learns nothing (404), not even whether email is enabled; then a disabled
 * outbox is `email_delivery_disabled`. Selected ids of another organization, or of none, are
 * `not_found`, exactly alike.
 */
export async function processEmailDeliveriesNow(
  db: Db,
  outbox: EmailOutbox,
  batchSize: number,
  { organization, principal }: Access,
  request: RequestMeta,
  input: TProcessEmailDeliveriesRequest,
): Promise<TProcessEmailDeliveriesResponse> {
  const tenantId = organization.id;
  if (!outbox.settings.enabled) {
    throw new AppError(
      'email_delivery_disabled',
      'email delivery is disabled on this server (EMAIL_ENABLED and EMAIL_PROVIDER): nothing can be sent; copy invite links by hand',
    );
  }
  const ids = input.ids ? [...new Set(input.ids)] : undefined;
  if (ids) {
    const found = await findEmailDeliveriesByIds(db, { tenantId, ids });
    if (found.length !== ids.length) {
      throw new AppError('not_found', 'email delivery not found');
    }
  }
  const result = await processEmailDeliveries(db, outbox, { tenantId, ids, limit: ids ? ids.length : batchSize });
  await recordAudit(db, principal, request, {
    tenantId,
    action: 'email_delivery.processed',
    target: { type: 'email_delivery', id: ids?.length === 1 ? (ids[0] as string) : null },
    summary: { processed: result.processed, sent: result.sent, failed: result.failed, retrying: result.retrying, selected: ids ?? null },
  });
  // With ids, every selected delivery as it is now (a sent one is shown, unchanged); else the attempted ones.
  const rows = ids ? await findEmailDeliveriesByIds(db, { tenantId, ids }) : result.deliveries;
  return {
    processed: result.processed,
    sent: result.sent,
    failed: result.failed,
    retrying: result.retrying,
    deliveries: rows.map(toEmailDelivery),
  };
}
