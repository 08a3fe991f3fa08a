import { statusOf } from '@svc/contracts/errors';
import express, { type Request, type Response } from 'express';
import type { AppServices } from '../context.ts';
import { isPlatformAdmin } from '../modules/access/authorize.ts';
import { sessionOf } from '../modules/auth/current-session.ts';
import { MAX_ENGINE_QUERY_CHARS, matchEngineProxyPath } from '../modules/platform/engine-allowlist.ts';
import { callEngineAdminApi } from '../modules/platform/engine-client.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { errorBody, sendError, sendJson } from './errors.ts';

/**
 * `/v1/platform/engine/*` (docs/architecture.md section 7): platform admins read an allowlist of the engine's
 * admin API (modules/platform/engine-allowlist.ts) through svc, which adds the server-side ENGINE_ADMIN_TOKEN.
 *
 * The order of checks is the security property. Who the caller is comes first: anonymous is 401,
 * and a signed-in user outside the platform admin group gets one and the same 403 whatever the
 * method, path or query, before any of them is looked at, so a tenant user cannot probe the
 * allowlist, the configuration or the engine. Then, for platform admins only: GET/HEAD (405),
 * the allowlist (404), the query size (400), the configuration (503), the engine (relayed, or
 * 502/504). Mounted behind the CSRF guard, although nothing here changes state.
 */
export function platformEngineRouter(services: AppServices): express.Router {
  const router = express.Router();
  router.use(async (req: Request, res: Response) => {
    // Engine data about users: never stored by a browser or a shared cache.
    res.setHeader('Cache-Control', 'no-store');
    const current = await sessionOf(services, req);
    if (!current) {
      sendError(req, res, 'unauthenticated', 'sign in first: no valid session');
      return;
    }
    // The rule of platformProcedure; the answer stays this route's one bare 403 for every path.
    if (!isPlatformAdmin({ kind: 'user', ...current })) {
      sendError(req, res, 'forbidden', 'Forbidden');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendError(req, res, 'method_not_allowed', 'the engine proxy is read-only: GET or HEAD');
      return;
    }
    // req.url is the rest after the mount point, still percent-encoded: `/core/users/?page=2`.
    const url = req.url;
    const q = url.indexOf('?');
    const rawPath = (q === -1 ? url : url.slice(0, q)).replace(/^\//, '');
    const rawQuery = q === -1 ? '' : url.slice(q + 1);
    const match = matchEngineProxyPath(rawPath);
    if (!match) {
      sendError(req, res, 'not_found', 'not an allowlisted engine admin API path');
      return;
    }
    if (rawQuery.length > MAX_ENGINE_QUERY_CHARS) {
      sendError(req, res, 'validation_failed', `the query string is longer than ${MAX_ENGINE_QUERY_CHARS} characters`);
      return;
    }
    const admin = services.config.engine.admin;
    if (!admin) {
      sendError(req, res, 'service_unavailable', 'the engine admin API is not configured: set ENGINE_ADMIN_API_URL and ENGINE_ADMIN_TOKEN');
      return;
    }
    // Re-encoded through URLSearchParams: the engine gets well-formed pairs, whatever was sent.
    const query = new URLSearchParams(rawQuery).toString();
    const answer = await callEngineAdminApi(admin, { path: match.path, query });
    if (answer.ok) {
      if (answer.status === 204) {
        res.status(204).end();
        return;
      }
      // Only the status and the JSON body are relayed: no engine header (Set-Cookie, hop-by-hop
      // or any other) reaches the caller.
      sendJson(res, answer.status, answer.body);
      return;
    }
    if (answer.cause !== undefined || statusOf(answer.code) >= 500) {
      services.logger.warn(
        {
          ...(answer.cause === undefined ? {} : { err: answer.cause }),
          code: answer.code,
          enginePath: match.path,
          requestId: requestIdOf(req),
        },
        `engine admin API call failed: ${answer.message}`,
      );
    }
    sendJson(res, statusOf(answer.code), {
      error: errorBody(answer.code, answer.message, requestIdOf(req)),
      ...(answer.engineBody === undefined ? {} : { engine: answer.engineBody }),
    });
  });
  return router;
}
