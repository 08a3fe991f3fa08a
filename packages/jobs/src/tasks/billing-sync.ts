import { addJob, ZTaskPayloads } from '@svc/db/jobs';
import { scheduleBillingSyncWake } from '@svc/db/queries/billing';
import { BILLING_SYNC_JOB_KEY } from '@svc/db/queries/billing-sync-queue';
import { billingSyncTiming, processBillingSync } from '../billing/sync.ts';
import type { JobContext } from '../context.ts';

/** Logs per round; a run does rounds until nothing is due or its budget is spent. */
const ROUND_SIZE = 100;
/** A run stops claiming after this long and queues its successor: no run holds a worker slot for long. */
const RUN_BUDGET_MS = 30_000;

/**
 * `billing:sync`: hands queued billing sync logs to their providers (billing/sync.ts). The log
 * rows hold the state, so the job carries nothing: queued by usage ingestion (queueBillingSync),
 * by a retry from the API, by its own wake-up for the next retry, and swept by the crontab. A
 * worker started without any provider configured still runs it: each log is then skipped, with
 * the reason, rather than left queued for ever.
 */
export async function syncBilling(payload: unknown, ctx: JobContext): Promise<void> {
  ZTaskPayloads['billing:sync'].parse(payload ?? {});
  const sync = { ...ctx.billing, logger: ctx.logger };
  const started = Date.now();
  for (;;) {
    const result = await processBillingSync(ctx.db, sync, { limit: ROUND_SIZE, signal: ctx.stopping });
    if (result.processed < ROUND_SIZE && !ctx.stopping.aborted) {
      break;
    }
    if (ctx.stopping.aborted || Date.now() - started > RUN_BUDGET_MS) {
      // More may be due: a successor run picks it up (here, on another worker, or after a restart).
      await addJob(ctx.db, 'billing:sync', {}, { jobKey: BILLING_SYNC_JOB_KEY });
      return;
    }
  }
  // Logs waiting for a retry (or for another worker's claim to end) get a run when they are due.
  await scheduleBillingSyncWake(ctx.db, billingSyncTiming(sync));
}
