import { isDatabaseUnavailable } from '@svc/db/client';
import type { Logger } from 'pino';

/** Whether `reason` is a lost or unreachable database connection (and nothing else). */
export function isLostConnection(reason: unknown): boolean {
  return isDatabaseUnavailable(reason);
}

/**
 * postgres.js 3.4 reads the server's array types on a fresh connection without awaiting it, so a
 * database that goes away at that moment (a restart, a failover) surfaces as an unhandled
 * rejection, which Node turns into a crash of `svc serve` or `svc worker`. Those rejections are
 * logged and survived: the pool reconnects on the next query. Any other unhandled rejection is
 * still a bug, and still ends the process, after a log line.
 */
export function surviveLostConnections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    if (isLostConnection(reason)) {
      logger.warn({ code: (reason as { code: string }).code }, 'database connection lost outside a request; reconnecting on next use');
      return;
    }
    logger.fatal({ err: reason }, 'unhandled promise rejection');
    process.exitCode = 1;
    setImmediate(() => process.exit(1));
  });
}
