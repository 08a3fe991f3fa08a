import { addJob, ZTaskPayloads } from '@svc/db/jobs';
import { EMAIL_DISPATCH_JOB_KEY } from '@svc/db/queries/email-deliveries';
import type { JobContext } from '../context.ts';
import { processEmailDeliveries } from '../email/process.ts';

/** Attempts per round; a run does rounds until nothing is due or its budget is spent. */
const ROUND_SIZE = 50;
/** A run stops claiming after this long and queues its successor: no run holds a worker slot for long. */
const RUN_BUDGET_MS = 30_000;

/**
 * `email:dispatch`: sends the invitation emails that are due. The outbox row owns the state
 * (docs/architecture.md section 5), so the job carries nothing and any run on any worker may do the
 * work; a run that finds nothing due costs one statement. Queued by an invitation (now), by a
 * failed attempt (at its retry time) and by every claim (at the end of its lease, in case the
 * claimer dies mid-send).
 *
 * With email disabled (the worker was started without a provider) it sends nothing: the rows
 * wait, due, for a worker that has one.
 */
export async function dispatchEmail(payload: unknown, ctx: JobContext): Promise<void> {
  ZTaskPayloads['email:dispatch'].parse(payload ?? {});
  const settings = ctx.email;
  if (!settings?.enabled) {
    ctx.logger.info({}, 'email:dispatch: email delivery is disabled in this worker; nothing sent');
    return;
  }
  const outbox = { settings, secretBox: ctx.secretBox, logger: ctx.logger };
  const started = Date.now();
  for (;;) {
    const result = await processEmailDeliveries(ctx.db, outbox, { limit: ROUND_SIZE, signal: ctx.stopping });
    if (result.processed < ROUND_SIZE && !ctx.stopping.aborted) {
      return;
    }
    if (ctx.stopping.aborted || Date.now() - started > RUN_BUDGET_MS) {
      // More may be due: a successor run picks it up (here, on another worker, or after restart).
      await addJob(ctx.db, 'email:dispatch', {}, { jobKey: EMAIL_DISPATCH_JOB_KEY });
      return;
    }
  }
}
