import { AppError } from '@svc/contracts/errors';
import { ZClientConfigRequest } from '@svc/contracts/public-edge';
import { type Request, type Response, Router } from 'express';
import type { AppServices } from '../context.ts';
import { describeBackendApplication } from '../modules/backend/service.ts';
import { buildClientConfig } from '../modules/client-config/service.ts';
import { resolvePublishableKeyFromRequest, resolveSecretKey } from '../trpc/procedures.ts';
import { requestIdOf, sendError } from './errors.ts';

/**
 * The two hottest routes, GET /v1/client/config and GET /v1/backend/application, served by plain
 * Express handlers ahead of the OpenAPI adapter. trpc-to-openapi builds a fetch Request and an
 * AbortSignal and runs tRPC's middleware chain on every call, which cost more CPU than these
 * routes' own work (they are answered from the application cache). The handlers use the same
 * input schema, key resolution and response builders as the procedures `clientConfig.get` and
 * `backend.application`, which remain the documented definitions (OpenAPI, /trpc); a test
 * asserts both paths answer identically.
 */
export function hotRoutes(services: AppServices): Router {
  const r = Router();

  r.get('/v1/client/config', async (req, res) => {
    try {
      // Same order as the procedure: key resolution, then input validation.
      const query = req.query as Record<string, unknown>;
      const resolved = await resolvePublishableKeyFromRequest(services, req.headers, query);
      const input = ZClientConfigRequest.safeParse(query);
      if (!input.success) {
        sendValidationError(req, res, input.error.issues);
        return;
      }
      res.json(buildClientConfig(services.config, resolved));
    } catch (error) {
      fail(services, req, res, error);
    }
  });

  r.get('/v1/backend/application', async (req, res) => {
    try {
      const found = await resolveSecretKey(services, req.headers.authorization);
      res.json(describeBackendApplication(found));
    } catch (error) {
      fail(services, req, res, error);
    }
  });

  return r;
}

function sendValidationError(req: Request, res: Response, issues: { path: PropertyKey[]; message: string }[]): void {
  res.status(400).json({
    error: {
      code: 'validation_failed',
      message: 'Input validation failed',
      requestId: requestIdOf(req),
      issues: issues.map((i) => ({ path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)), message: i.message })),
    },
  });
}

function fail(services: AppServices, req: Request, res: Response, error: unknown): void {
  if (error instanceof AppError) {
    sendError(req, res, error.code, error.message);
    return;
  }
  services.logger.error({ err: error, requestId: requestIdOf(req) }, 'unhandled error');
  sendError(req, res, 'internal', 'Internal server error');
}
