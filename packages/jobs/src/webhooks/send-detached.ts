import { addJob, ZTaskPayloads } from '@svc/db/jobs';
import { WEBHOOK_SEND_DETACHED_JOB_KEY_PREFIX } from '@svc/db/queries/webhook-events';
import type { JobHelpers } from 'graphile-worker';
import type { JobContext } from '../context.ts';
import { stateAfter } from './dispatch.ts';
import { openWebhookSecret, webhookSecretKey } from './secrets.ts';
import { webhookBody, webhookHeaders } from './signing.ts';

/**
 * `webhooks:send_detached`: one attempt at a delivery whose endpoint, event and delivery rows no
 * longer exist, an organization's `tenant.deleted` (the deletion cascades to them in the
 * transaction that queued this job). The payload carries everything the attempt needs; the
 * signing secret arrives sealed, exactly as webhook_endpoints held it, and is opened here.
 *
 * Signed and sent like every delivery (same body, headers, `webhook-id` = the event id, SSRF
 * rules and timeouts), retried on the same schedule (WEBHOOK_RETRY_SCHEDULE) by queueing the
 * next attempt as a new job at its time, under one job key per event and endpoint, so a rerun of
 * this job after a crash replaces that attempt instead of starting a second chain. At least once,
 * like every delivery: the receiver deduplicates on `webhook-id`. Nothing records the attempts
 * (the organization's delivery log is gone): the worker's log says how it ended.
 */
export async function sendDetachedDelivery(payload: unknown, ctx: JobContext, helpers: Pick<JobHelpers, 'abortSignal'>): Promise<void> {
  const job = ZTaskPayloads['webhooks:send_detached'].parse(payload);
  const log = {
    tenantId: job.tenantId,
    endpointId: job.endpointId,
    eventId: job.event.id,
    eventType: job.event.type,
    attempt: job.attempt,
  };
  let keys: Buffer[];
  try {
    keys = [webhookSecretKey(openWebhookSecret(ctx.secretBox, job.endpointId, job.secretCiphertext))];
    if (job.previousSecretCiphertext) {
      keys.push(webhookSecretKey(openWebhookSecret(ctx.secretBox, job.endpointId, job.previousSecretCiphertext)));
    }
  } catch {
    // SVC_ENCRYPTION_KEY changed or the payload was altered: nothing can be signed, ever.
    ctx.logger.error(log, "webhook not sent: the endpoint's signing secret does not decrypt with SVC_ENCRYPTION_KEY");
    return;
  }
  const body = webhookBody({
    id: job.event.id,
    type: job.event.type,
    createdAt: new Date(job.event.createdAtMs),
    dataJson: job.event.dataJson,
  });
  const headers = webhookHeaders({ id: job.event.id, body, keys });
  const sent = await ctx.webhookSender.send({ url: job.url, headers, body, signal: helpers.abortSignal });
  const next = stateAfter(sent.outcome, job.attempt, ctx.webhooks.retryScheduleMs);
  const outcome = { ...log, outcome: sent.outcome, statusCode: sent.statusCode, error: sent.error };
  if (next.status === 'succeeded') {
    ctx.logger.info(outcome, 'webhook of a deleted organization delivered');
    return;
  }
  if (next.retryInMs === null) {
    ctx.logger.error(outcome, 'webhook of a deleted organization failed for good');
    return;
  }
  await addJob(
    ctx.db,
    'webhooks:send_detached',
    { ...job, attempt: job.attempt + 1 },
    { runAt: new Date(Date.now() + next.retryInMs), jobKey: `${WEBHOOK_SEND_DETACHED_JOB_KEY_PREFIX}${job.event.id}:${job.endpointId}` },
  );
  ctx.logger.info({ ...outcome, retryInMs: next.retryInMs }, 'webhook of a deleted organization not delivered; retrying');
}
