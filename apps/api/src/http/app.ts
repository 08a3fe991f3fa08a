import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import { createOpenApiExpressMiddleware } from 'trpc-to-openapi';
import type { AppServices, RequestContext } from '../context.ts';
import { accountRouter } from '../modules/account/routes.ts';
import { keylessClaimRouter } from '../modules/applications/claim-routes.ts';
import { authRouter } from '../modules/auth/routes.ts';
import { exportDownloadRouter } from '../modules/exports/download.ts';
import { invitationPagesRouter } from '../modules/invitations/routes.ts';
import { oidcProviderRouter } from '../modules/oidc-provider/routes.ts';
import { platformEngineRouter } from '../modules/platform/engine-proxy.ts';
import { agentContextRepresentations, llmsTxtRouter } from '../modules/setup/documents.ts';
import { classifyError, isInternal, statusOfError } from '../trpc/errors.ts';
import { errorRequestIds, type Meta } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';
import { consoleRouter } from './console.ts';
import { csrfGuard } from './csrf.ts';
import { docsRouter } from './docs.ts';
import { type Edge, MAX_BODY_BYTES, MAX_TRPC_BATCH } from './edge.ts';
import { asAppError, requestIdOf, SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS, sendAppError, sendError } from './errors.ts';
import { faviconRouter } from './favicon.ts';
import { answerBodyRefusal, readJsonBody } from './json-body.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { pagesRouter } from './pages.ts';
import type { RateLimiter } from './rate-limit.ts';

/** A procedure's `successStatus` meta (201 for creates; an upsert's only when it created), else 200. */
function successStatusOf(path: string | undefined, data: unknown): number {
  const procedure = path === undefined ? undefined : (appRouter._def.procedures as Record<string, unknown>)[path];
  const meta = (procedure as { _def?: { meta?: Meta } } | undefined)?._def?.meta;
  if (meta?.upsert && (data as { created?: unknown } | undefined)?.created === false) {
    return 200;
  }
  return meta?.successStatus ?? 200;
}

/** Retry-After on a tRPC or /v1 answer that carries a 503 service_unavailable. */
function retryAfterOf(errors: readonly Parameters<typeof classifyError>[0][]): Record<string, string> {
  return errors.some((e) => classifyError(e).code === 'service_unavailable')
    ? { 'Retry-After': String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS) }
    : {};
}

/** The Express application in ARCHITECTURE.md section 3's middleware order. */
export function createHttpApp(services: AppServices, edge: Edge, limiter: RateLimiter): express.Express {
  const { config, logger } = services;
  const app = express();
  app.disable('x-powered-by');

  app.use((req, res, next) => {
    const proceed = edge.run(req, res, req.path);
    if (proceed instanceof Promise) {
      proceed.then((go) => (go ? next() : undefined), next);
    } else if (proceed) {
      next();
    }
  });

  // Its own connection and a deadline under a second: a load balancer probing it must learn
  // that the database is gone at once, not after the pool's DATABASE_TIMEOUT_MS.
  app.get('/healthz', async (req, res) => {
    if (await services.databaseHealth.check()) {
      res.json({ status: 'ok' });
    } else {
      sendError(req, res, 'service_unavailable', 'the database is unreachable');
    }
  });
  app.use(faviconRouter());
  app.use(pagesRouter(services));
  // Before the CSRF guard: logout is a same-origin form POST and checks its origin itself.
  app.use(authRouter(services, limiter));
  app.use('/docs', docsRouter());
  app.use(llmsTxtRouter(services));
  app.use('/auth/console', consoleRouter(services));
  app.use(accountRouter(services));
  // Before the CSRF guard: accepting is a same-origin form POST that checks its origin itself.
  app.use(invitationPagesRouter(services));
  // Before the CSRF guard: claiming a keyless application is a same-origin form POST that checks its origin itself.
  app.use(keylessClaimRouter(services));
  // svc's OpenID Provider (discovery, authorization, token, ...): before the CSRF guard, since
  // applications' back ends post forms to its token endpoint; oidc-provider checks each request.
  app.use(oidcProviderRouter(services));

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

  // A batch runs one procedure per name; the rate limiter charges one token per name (counted as
  // this adapter parses the path: edge.ts trpcProcedureCount) and the batch size is capped so one
  // request cannot fan out without bound.
  app.use(
    '/trpc',
    createExpressMiddleware({
      router: appRouter,
      createContext,
      onError,
      maxBodySize: MAX_BODY_BYTES,
      maxBatchSize: MAX_TRPC_BATCH,
      responseMeta: ({ errors }) => ({ headers: retryAfterOf(errors) }),
    }),
  );
  app.use('/v1/platform/engine', platformEngineRouter(services));
  // Streams a file: a plain route (a procedure cannot stream), before the /v1 adapter.
  app.use(exportDownloadRouter(services));
  // trpc-to-openapi answers any HEAD with 204 without running the procedure (so without checking
  // credentials). Run the GET procedure instead; Node omits the body of a HEAD response.
  app.use('/v1', (req, _res, next) => {
    if (req.method === 'HEAD') {
      req.method = 'GET';
    }
    next();
  });
  // A /v1 JSON body is read here, by the reader every JSON route uses (json-body.ts): the size cap,
  // then the input rule before anything walks the body. trpc-to-openapi would parse it itself and
  // then re-serialize it with JSON.stringify (for an abort signal) before any procedure runs, so
  // a body nested a few thousand levels deep overflowed the stack there and answered 500. It
  // takes `req.body` as the parsed body when set. GET and DELETE bodies it ignores; so does this.
  app.use('/v1', (req, res, next) => {
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    if (req.method === 'GET' || req.method === 'DELETE' || !contentType.startsWith('application/json')) {
      next();
      return;
    }
    readJsonBody(req).then(
      (body) => {
        (req as { body?: unknown }).body = body;
        next();
      },
      (error: unknown) => {
        if (!answerBodyRefusal(req, res, error)) {
          next(error);
        }
      },
    );
  });
  // The agent context as JSON or Markdown, with an ETag: wraps the adapter's answer below.
  app.get('/v1/setup/agent-context', agentContextRepresentations());
  // trpc-to-openapi never calls next(): an unknown /v1 route gets its NOT_FOUND, which the error
  // formatter turns into our 404 not_found body. It must stay the last /v1 handler.
  app.use(
    '/v1',
    createOpenApiExpressMiddleware({
      router: appRouter,
      createContext,
      onError,
      maxBodySize: MAX_BODY_BYTES,
      responseMeta: ({ errors, paths, data }) => {
        const [first] = errors;
        return first
          ? { status: statusOfError(first), headers: retryAfterOf(errors) }
          : { status: successStatusOf(paths?.[0], data?.[0]), headers: {} };
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
    if (res.headersSent) {
      // A streamed answer cut short: nothing more can be said to the client.
      res.destroy();
      return;
    }
    const appError = asAppError(err);
    if (appError) {
      sendAppError(req, res, appError, config);
      return;
    }
    logger.error({ err, requestId: requestIdOf(req) }, 'unhandled error');
    sendError(req, res, 'internal', 'Internal server error');
  };
  app.use(onUnhandled);
  return app;
}
