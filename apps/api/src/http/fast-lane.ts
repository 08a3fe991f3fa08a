import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { AppError } from '@svc/contracts/errors';
import { ZBackendApplicationResponse, ZClientConfigRequest, ZClientConfigResponse } from '@svc/contracts/public-edge';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { AppServices } from '../context.ts';
import { type ResolvedApplication, resolvePublishableKeyFromRequest, resolveSecretKey } from '../modules/applications/resolve.ts';
import { NO_SESSION_MESSAGE, sessionOf } from '../modules/auth/current-session.ts';
import { describeBackendApplication } from '../modules/backend/service.ts';
import { buildClientConfig } from '../modules/client-config/service.ts';
import { describeMe } from '../modules/me/service.ts';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../modules/oidc-provider/provider.ts';
import { createUsageIngestRoute } from '../modules/usage/ingest-route.ts';
import { toIssues } from '../trpc/errors.ts';
import { runBehindEdge } from './behind-edge.ts';
import { type Edge, normalizePath } from './edge.ts';
import { sendJson, sendValidationFailed } from './errors.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, query: string) => Promise<void>;

/**
 * The hottest routes, GET (and HEAD) /v1/client/config, /v1/backend/application and /v1/me,
 * answered before Express sees the request. Profiling under load showed Express's per-request setup and
 * router plus trpc-to-openapi's fetch Request, AbortSignal and tRPC middleware chain costing
 * several times these routes' own work (they are answered from the application cache). The edge
 * (request id, log, headers, CORS, rate limit) is the same code the Express app runs; the
 * handlers use the same input schema, key resolution, session check and response builders as
 * the procedures `clientConfig.get`, `backend.application` and `me.get`, which stay the
 * documented definitions (OpenAPI, /trpc). Answers pass the same output schemas, once per cached application rather than once
 * per request. A test asserts both paths answer identically for every outcome.
 *
 * Returns a function that takes the request (true) or leaves it to Express (false).
 */
export function createFastLane(services: AppServices, edge: Edge): (req: IncomingMessage, res: ServerResponse) => boolean {
  // Keyed by the cached row object: an invalidation replaces the object, so no stale answer stays.
  const clientConfigs = new WeakMap<ApplicationWithOrganization, string>();
  const backendViews = new WeakMap<ApplicationWithOrganization, ReturnType<typeof describeBackendApplication>>();

  function clientConfigJson(resolved: ResolvedApplication): string {
    let json = clientConfigs.get(resolved.found);
    if (json === undefined) {
      json = JSON.stringify(ZClientConfigResponse.parse(buildClientConfig(services.config, services.secretBox, resolved)));
      clientConfigs.set(resolved.found, json);
    }
    return json;
  }

  function backendView(found: ApplicationWithOrganization) {
    let view = backendViews.get(found);
    if (view === undefined) {
      view = ZBackendApplicationResponse.parse(describeBackendApplication(found));
      backendViews.set(found, view);
    }
    return { ...view, checkedAt: new Date().toISOString() };
  }

  const routes = new Map<string, Handler>([
    [
      '/v1/client/config',
      async (req, res, rawQuery) => {
        // querystring.parse is Express 5's default ("simple") parser: repeats become arrays.
        const query = parseQuery(rawQuery);
        // Same order as the procedure: key resolution, then input validation.
        const resolved = await resolvePublishableKeyFromRequest(services, req.headers, query);
        const input = ZClientConfigRequest.safeParse(query);
        if (!input.success) {
          sendValidationFailed(req, res, toIssues(input.error.issues));
          return;
        }
        const json = clientConfigJson(resolved);
        res.statusCode = 200;
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.setHeader('Content-Length', Buffer.byteLength(json));
        res.end(json);
      },
    ],
    [
      '/v1/backend/application',
      async (req, res) => {
        const found = await resolveSecretKey(services, req.headers.authorization);
        sendJson(res, 200, backendView(found));
      },
    ],
    [
      '/v1/me',
      async (req, res) => {
        const current = await sessionOf(services, req);
        if (!current) {
          throw new AppError('unauthenticated', NO_SESSION_MESSAGE);
        }
        // describeMe builds exactly ZMeResponse's fields (typed as TMeResponse); the procedure
        // validates the same object on /trpc, and a test holds the two answers equal.
        sendJson(res, 200, await describeMe(services.db, current));
      },
    ],
  ]);

  // svc's OpenID Provider metadata and keys: prebuilt from the provider itself, rebuilt when
  // the keys change (modules/oidc-provider/provider.ts).
  for (const [path, document] of [
    [DISCOVERY_PATH, () => services.oidc.discovery],
    [OIDC_ROUTES.jwks, () => services.oidc.jwks],
  ] as const) {
    routes.set(path, async (_req, res) => {
      const { json, contentType } = document();
      res.statusCode = 200;
      res.setHeader('Content-Type', contentType);
      res.setHeader('Content-Length', Buffer.byteLength(json));
      res.end(json);
    });
  }

  // POST /v1/usage/events and /v1/usage-events: hot ingestion (modules/usage/ingest-route.ts).
  const usageIngest = createUsageIngestRoute(services, edge);

  return (req, res) => {
    if (req.method === 'POST') {
      return usageIngest(req, res);
    }
    // HEAD runs the GET handler; Node sends the headers and drops the body for HEAD requests.
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return false;
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    const handler = routes.get(normalizePath(rawPath));
    if (!handler) {
      return false;
    }
    const query = q === -1 ? '' : url.slice(q + 1);
    runBehindEdge(services, edge, req, res, rawPath, () => handler(req, res, query));
    return true;
  };
}
