import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppServices } from '../context.ts';
import { AUTHORIZATION_SERVER_METADATA_PATH, DISCOVERY_PATH, OIDC_ROUTES } from '../modules/oidc-provider/paths.ts';
import { runBehindEdge } from './behind-edge.ts';
import { type Edge, normalizePath } from './edge.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * svc's OpenID Provider metadata and keys (prebuilt JSON in memory), answered before Express sees
 * the request. The edge (request id, log, headers, CORS, rate limit) is the same code the Express
 * app and the /v1 adapter run.
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

  return (req, res) => {
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
    runBehindEdge(services, edge, req, res, rawPath, () => handler(req, res));
    return true;
  };
}
