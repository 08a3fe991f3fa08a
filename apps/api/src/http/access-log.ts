import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { requestIdOf } from '../modules/shared/request-id.ts';

/**
 * One line per request, written when the response finishes. A plain listener instead of a child
 * logger per request: pino-http's per-request child costs more than our hot routes themselves.
 * Only method, path, status, duration and request id are logged: never headers, query strings
 * (they may carry keys) or bodies.
 */
export function logRequest(logger: Logger, req: IncomingMessage, res: ServerResponse): void {
  if (!logger.isLevelEnabled('info')) {
    return;
  }
  const started = process.hrtime.bigint();
  // Captured now: Express rewrites req.url inside mounted routers.
  const path = (req.url ?? '').split('?', 1)[0];
  res.once('finish', () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const entry = { requestId: requestIdOf(req), method: req.method, path, status: res.statusCode, ms: Math.round(ms * 10) / 10 };
    if (res.statusCode >= 500) {
      logger.error(entry, 'request failed');
    } else {
      logger.info(entry, 'request');
    }
  });
}
