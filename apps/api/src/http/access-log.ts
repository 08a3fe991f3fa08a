import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { requestIdOf } from './errors.ts';

/**
 * One line per request, written when the response finishes. A plain listener instead of a child
 * logger per request: pino-http's per-request child costs more than our hot routes themselves.
 * Only method, path, status, duration and request id are logged: never headers, query strings
 * (they may carry keys) or bodies.
 */
export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!logger.isLevelEnabled('info')) {
      next();
      return;
    }
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // originalUrl: routers mounted on a prefix rewrite req.path; the query is dropped on purpose.
      const path = req.originalUrl.split('?', 1)[0];
      const entry = { requestId: requestIdOf(req), method: req.method, path, status: res.statusCode, ms: Math.round(ms * 10) / 10 };
      if (res.statusCode >= 500) {
        logger.error(entry, 'request failed');
      } else {
        logger.info(entry, 'request');
      }
    });
    next();
  };
}
