import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppServices } from '../context.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import type { Edge } from './edge.ts';
import { asAppError, sendAppError, sendError } from './errors.ts';

/**
 * How a route served before Express (the /v1 adapter, the OpenID Provider documents) runs: the edge first (rate
 * limits, CORS, the request id), which may answer the request itself, then `handle`. An AppError
 * (or an unreachable database: 503) from either is answered with its code; anything else is
 * logged and answered 500; nothing is written once the response has started.
 */
export function runBehindEdge(
  services: AppServices,
  edge: Edge,
  req: IncomingMessage,
  res: ServerResponse,
  rawPath: string,
  handle: () => Promise<void>,
): void {
  try {
    const proceed = edge.run(req, res, rawPath);
    if (proceed instanceof Promise) {
      proceed.then(
        (go) => {
          if (go) {
            runHandle(services, req, res, handle);
          }
        },
        (error: unknown) => {
          answerFailure(services, req, res, error);
        },
      );
    } else if (proceed) {
      runHandle(services, req, res, handle);
    }
  } catch (error) {
    answerFailure(services, req, res, error);
  }
}

/** Runs the route; whatever it throws or rejects with is answered (answerFailure). */
function runHandle(services: AppServices, req: IncomingMessage, res: ServerResponse, handle: () => Promise<void>): void {
  try {
    handle().catch((error: unknown) => {
      answerFailure(services, req, res, error);
    });
  } catch (error) {
    answerFailure(services, req, res, error);
  }
}

/**
 * The answer to an error from the edge or the route (a module function, not a closure made per
 * request: tsx's keepNames would name it with a defineProperty call on every request).
 */
function answerFailure(services: AppServices, req: IncomingMessage, res: ServerResponse, error: unknown): void {
  const appError = asAppError(error);
  if (!appError) {
    services.logger.error({ err: error, requestId: requestIdOf(req) }, 'unhandled error');
  }
  if (res.headersSent) {
    return;
  }
  if (appError) {
    sendAppError(req, res, appError, services.config);
  } else {
    sendError(req, res, 'internal', 'Internal server error');
  }
}
