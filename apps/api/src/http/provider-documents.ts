import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppServices } from '../context.ts';
import { AUTHORIZATION_SERVER_METADATA_PATH, DISCOVERY_PATH, OIDC_ROUTES } from '../modules/oidc-provider/paths.ts';
import { runBehindEdge } from './behind-edge.ts';
import { type Edge, normalizePath } from './edge.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * svc's OpenID Provider routes that need nothing of Express, taken before Express sees the
 * request: the metadata and keys (prebuilt JSON in memory), and the back-channel endpoints
 * applications' servers post to (token, revocation, introspection), handed straight to
 * oidc-provider rather than walked through every router of the Express app. The edge (request
 * id, log, headers, CORS, rate limit) is the same code the Express app and the /v1 adapter run.
 * Everything else under /oidc (the browser's pages, userinfo, preflights) goes through Express
 * (http/oidc/routes.ts).
 *
 * Returns a function that takes the request (true) or leaves it to the others (false).
 */
export function createProviderDocuments(services: AppServices, edge: Edge): (req: IncomingMessage, res: ServerResponse) => boolean {
  const routes = new Map<string, Handler>();

  // svc's OpenID Provider metadata and keys: prebuilt from the provider itself, rebuilt when
  // the keys change (modules/oidc-provider/provider.ts).
  for (const [path, document] of [
    [DISCOVERY_PATH, () => services.oidc.discovery],
    // RFC 8414: OAuth clients and agents look here; the same metadata (section 3 allows it).
    [AUTHORIZATION_SERVER_METADATA_PATH, () => services.oidc.discovery],
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

  const handOver: Handler = async (req, res) => {
    services.oidc.handle(req, res);
  };
  const posted = new Set<string>([OIDC_ROUTES.token, OIDC_ROUTES.revocation, OIDC_ROUTES.introspection]);

  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    if (req.method === 'POST') {
      if (!posted.has(normalizePath(rawPath))) {
        return false;
      }
      runBehindEdge(services, edge, req, res, rawPath, () => handOver(req, res));
      return true;
    }
    // HEAD runs the GET handler; Node sends the headers and drops the body for HEAD requests.
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return false;
    }
    const handler = routes.get(normalizePath(rawPath));
    if (!handler) {
      return false;
    }
    runBehindEdge(services, edge, req, res, rawPath, () => handler(req, res));
    return true;
  };
}
