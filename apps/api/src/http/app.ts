import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import { createOpenApiExpressMiddleware } from 'trpc-to-openapi';
import type { AppServices, RequestContext } from '../context.ts';
import { isInternal, statusOfError } from '../trpc/errors.ts';
import { errorRequestIds } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';
import { accessLog } from './access-log.ts';
import { consoleRouter } from './console.ts';
import { publicCors } from './cors.ts';
import { csrfGuard } from './csrf.ts';
import { docsRouter } from './docs.ts';
import { hotRoutes } from './hot-routes.ts';
import { requestIdOf, sendError } from './errors.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { pagesRouter } from './pages.ts';
import { RateLimiter, rateLimitMiddleware } from './rate-limit.ts';
import { requestId } from './request-id.ts';
import { securityHeaders } from './security-headers.ts';

/** Request bodies above this are refused with 413 payload_too_large. */
const MAX_BODY_BYTES = 1_000_000;

function trustProxySetting(value: string | undefined): boolean | number | string {
  if (value === undefined || value === '' || value === 'false') {
    return false;
  }
  if (value === 'true') {
    return true;
  }
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** The Express application in ARCHITECTURE.md section 3's middleware order. */
export function createHttpApp(services: AppServices): express.Express {
  const { config, logger } = services;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxySetting(config.trustProxy));

  app.use(requestId);
  app.use(accessLog(logger));
  app.use(
    securityHeaders({
      contentSecurityPolicy: {
        directives: {
          'script-src': ["'self'"],
          'img-src': ["'self'", 'data:'],
          'connect-src': ["'self'"],
          // Upgrading subresources breaks a plain-http local install; only on https.
          'upgrade-insecure-requests': config.publicUrl.startsWith('https:') ? [] : null,
        },
      },
      strictTransportSecurity: config.publicUrl.startsWith('https:'),
    }),
  );
  app.use(publicCors);
  // Refuse declared oversize bodies before anything reads them; chunked bodies without a length
  // are capped by the adapters' maxBodySize with the same code.
  app.use((req, res, next) => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > MAX_BODY_BYTES) {
      sendError(req, res, 'payload_too_large', `request body exceeds ${MAX_BODY_BYTES} bytes`);
      return;
    }
    next();
  });
  const limiter = new RateLimiter(services.db, logger);
  app.use(rateLimitMiddleware(limiter, config.rateLimit));

  app.use(hotRoutes(services));
  app.get('/healthz', async (req, res) => {
    try {
      await services.sql`select 1`;
      res.json({ status: 'ok' });
    } catch {
      sendError(req, res, 'service_unavailable', 'database unreachable');
    }
  });
  app.use(pagesRouter());
  app.use('/docs', docsRouter());
  app.use('/auth/console', consoleRouter());

  let openApiDocument: Record<string, unknown> | undefined;
  app.get('/v1/openapi.json', (_req, res) => {
    openApiDocument ??= buildOpenApiDocument(config.publicUrl);
    res.json(openApiDocument);
  });

  app.use(csrfGuard(new Set([new URL(config.publicUrl).origin])));

  const createContext = ({ req, res }: { req: Request; res: Response }): RequestContext => ({
    services,
    req,
    res,
    requestId: requestIdOf(req),
  });
  const onError = ({ error, req }: { error: Parameters<typeof statusOfError>[0]; req: Request }) => {
    errorRequestIds.set(error, requestIdOf(req));
    if (isInternal(error)) {
      logger.error({ err: error, requestId: requestIdOf(req) }, 'unhandled error');
    }
  };

  app.use('/trpc', createExpressMiddleware({ router: appRouter, createContext, onError, maxBodySize: MAX_BODY_BYTES }));
  // trpc-to-openapi never calls next(): an unknown /v1 route gets its NOT_FOUND, which the error
  // formatter turns into our 404 not_found body. It must stay the last /v1 handler.
  app.use(
    '/v1',
    createOpenApiExpressMiddleware({
      router: appRouter,
      createContext,
      onError,
      maxBodySize: MAX_BODY_BYTES,
      responseMeta: ({ errors }) => {
        const [first] = errors;
        return first ? { status: statusOfError(first), headers: {} } : { headers: {} };
      },
    }),
  );

  app.use((req, res) => {
    sendError(req, res, 'not_found', `no route ${req.method} ${req.path}`);
  });
  const onUnhandled: ErrorRequestHandler = (err, req, res, _next) => {
    const status = (err as { status?: number }).status;
    if (status === 413) {
      sendError(req, res, 'payload_too_large', 'request body too large');
      return;
    }
    if (status === 400) {
      sendError(req, res, 'malformed_request', 'malformed request');
      return;
    }
    logger.error({ err, requestId: requestIdOf(req) }, 'unhandled error');
    sendError(req, res, 'internal', 'Internal server error');
  };
  app.use(onUnhandled);
  return app;
}
