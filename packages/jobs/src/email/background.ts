import type { Db } from '@svc/db/client';
import type { JobLogger } from '../logger.ts';
import { type EmailOutbox, processEmailDeliveries } from './process.ts';

export type EmailBackgroundWorker = {
  /** Stops the timer and waits for a round in progress to finish. */
  stop: () => Promise<void>;
};

/**
 * EMAIL_DELIVERY_WORKER_ENABLED: the API server processes due deliveries every `intervalMs`, at
 * most `batchSize` per round. The next round is timed from the end of the previous one, so rounds
 * never overlap; several API processes may run it at once (claims keep them from sending one
 * email twice). A failing round is logged and the timer carries on.
 */
export function startEmailBackgroundWorker(
  db: Db,
  outbox: EmailOutbox,
  opts: { intervalMs: number; batchSize: number; logger: JobLogger },
): EmailBackgroundWorker {
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const round = async () => {
    try {
      const result = await processEmailDeliveries(db, outbox, { limit: opts.batchSize, signal: stopping.signal });
      if (result.processed > 0) {
        const { processed, sent, failed, retrying } = result;
        opts.logger.info({ processed, sent, failed, retrying }, 'email deliveries processed in the background');
      }
    } catch (error) {
      opts.logger.error({ err: error }, 'email background round failed; the next round runs as scheduled');
    }
  };

  const schedule = () => {
    if (stopping.signal.aborted) {
      return;
    }
    timer = setTimeout(() => {
      running = round().finally(() => {
        running = undefined;
        schedule();
      });
    }, opts.intervalMs);
  };
  schedule();

  return {
    stop: async () => {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
