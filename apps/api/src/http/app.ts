import { migrationsApplied } from '@svc/db/migrate';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import type { AppServices, RequestContext } from '../context.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { classifyError, isInternal, type statusOfError } from '../trpc/errors.ts';
import { errorRequestIds } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';
import { llmsTxtRouter } from './agent-context.ts';
import { createCanonicalHost } from './canonical-host.ts';
import { proxyTrustOf } from './client-ip.ts';
import { consoleRouter } from './console.ts';
import { copyButtonRouter } from './copy-button.ts';
import { csrfGuard } from './csrf.ts';
import { docsRouter } from './docs.ts';
import { type Edge, MAX_BODY_BYTES, MAX_TRPC_BATCH } from './edge.ts';
import { platformEngineRouter } from './engine-proxy.ts';
import { asAppError, SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS, sendAppError, sendError } from './errors.ts';
import { exportDownloadRouter } from './exports-download.ts';
import { faviconRouter } from './favicon.ts';
import { accountRouter } from './hosted/account.ts';
import { keylessClaimRouter } from './hosted/claim.ts';
import { invitationPagesRouter } from './hosted/invitation.ts';
import { setupLinkRouter } from './hosted/setup.ts';
import { authRouter } from './hosted/sign-in.ts';
import { mcpRouter } from './mcp.ts';
import { metricsRoute } from './metrics-endpoint.ts';
import { sendNotFound } from './not-found.ts';
import { oidcProviderRouter } from './oidc/routes.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { pagesRouter } from './pages.ts';
import type { RateLimiter } from './rate-limit.ts';
import { assertOneOwnerPerRoute, expressRoutesOf, procedureRoutesOf } from './route-table.ts';
import { scimRouter } from './scim.ts';
import { ssoRouter } from './sso.ts';

/** Retry-After on a tRPC or /v1 answer that carries a 503 service_unavailable. */
function retryAfterOf(errors: readonly Parameters<typeof classifyError>[0][]): Record<string, string> {
  return errors.some((e) => classifyError(e).code === 'service_unavailable')
    ? { 'Retry-After': String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS) }
    : {};
}

/** The Express application in docs/architecture.md section 3's middleware order. */
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
  // svc's pages on PUBLIC_URL's host only (canonical-host.ts): before any of them sets a cookie.
  const canonicalHost = createCanonicalHost({
    publicUrl: config.publicUrl,
    production: config.nodeEnv === 'production',
    trust: proxyTrustOf(config.trustProxy),
  });
  app.use((req, res, next) => {
    if (!canonicalHost(req, res, req.path)) {
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
  // Prometheus metrics for a scraper holding METRICS_TOKEN (docs/operations.md "Metrics").
  const metrics = metricsRoute(config);
  if (metrics) {
    app.get('/metrics', (req, res, next) => {
      metrics(req, res).catch(next);
    });
  }
  // Readiness, beside liveness (docs/operations.md "Probes"): the database answers, it has every
  // migration this build ships, the in-process worker (if any) runs, and the process is not
  // shutting down. Migrations never go back: once seen applied, not asked again.
  let migrationsSeen = false;
  app.get('/readyz', async (req, res) => {
    const draining = services.readiness.draining;
    const database = !draining && (await services.databaseHealth.check());
    migrationsSeen ||= database && (await migrationsApplied(services.sql));
    const worker = services.readiness.workerRunning?.() ?? null;
    const checks = { draining, database, migrations: migrationsSeen, worker };
    if (!draining && database && migrationsSeen && worker !== false) {
      res.setHeader('Cache-Control', 'no-store');
      res.json({ status: 'ready', checks });
      return;
    }
    const reason = draining
      ? 'shutting down'
      : !database
        ? 'the database is unreachable'
        : !migrationsSeen
          ? 'the database lacks migrations this build ships'
          : 'the job worker is not running';
    sendError(req, res, 'service_unavailable', `not ready: ${reason}`, { checks });
  });
  app.use(faviconRouter());
  app.use(copyButtonRouter());
  app.use(pagesRouter(services));
  // Before the CSRF guard: logout is a same-origin form POST and checks its origin itself.
  app.use(authRouter(services, limiter));
  // Before the CSRF guard: the SAML ACS is a cross-site form POST from the IdP; only its signed response counts.
  app.use(ssoRouter(services));
  app.use('/docs', docsRouter());
  app.use(llmsTxtRouter(services));
  app.use('/auth/console', consoleRouter(services));
  app.use(accountRouter(services));
  // Before the CSRF guard: accepting is a same-origin form POST that checks its origin itself.
  app.use(invitationPagesRouter(services));
  // Before the CSRF guard: claiming a keyless application is a same-origin form POST that checks its origin itself.
  app.use(keylessClaimRouter(services));
  // Before the CSRF guard: a setup link's page posts same-origin forms that check their origin themselves.
  app.use(setupLinkRouter(services));
  // svc's OpenID Provider (discovery, authorization, token, ...): before the CSRF guard, since
  // applications' back ends post forms to its token endpoint; oidc-provider checks each request.
  app.use(oidcProviderRouter(services));
  // SCIM 2.0 for organizations' directories: bearer-token clients, no cookie, so before the CSRF guard.
  app.use(scimRouter(services));

  let openApiDocument: Record<string, unknown> | undefined;
  // svc's MCP server: a bearer token, never a cookie, so before the CSRF guard.
  app.use(mcpRouter(services));
  app.get('/v1/openapi.json', (_req, res) => {
    openApiDocument ??= buildOpenApiDocument(config.publicUrl);
    res.json(openApiDocument);
  });

  app.use(csrfGuard(new Set([new URL(config.publicUrl).origin])));

  const createContext = ({ req, res }: { req: Request; res: Response }): RequestContext => ({
    services,
    req: req as RequestContext['req'],
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
  // Streams a file: a plain route (a procedure cannot stream).
  app.use(exportDownloadRouter(services));
  // /v1 procedures are served before Express (rest.ts); what reaches here under /v1 is no route.
  // A browser asking for a page gets one; the APIs and every other client the JSON 404.
  app.use(sendNotFound);
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
  // One owner per method and path, across the procedures and every router above (route-table.ts).
  const routes = [...procedureRoutesOf(appRouter._def.procedures as never), ...expressRoutesOf(app)];
  assertOneOwnerPerRoute(routes);
  app.locals.routes = routes;
  return app;
}
