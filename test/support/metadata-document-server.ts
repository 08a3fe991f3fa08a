import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { LOOPBACK_TLS } from './loopback-tls.ts';

/** How the server answers one path: a document (its client_id defaults to the path's own URL), or a raw answer. */
export type MetadataRoute =
  | { document: Record<string, unknown>; headers?: Record<string, string>; delayMs?: number }
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

/**
 * An https server on 127.0.0.1 that publishes client metadata documents, as a third-party client
 * (an agent) would at its client_id URL. `hits` counts the requests each path received, so a test
 * can tell whether svc fetched a document (again) or never reached the server at all.
 */
export async function startMetadataDocumentServer(): Promise<{
  origin: string;
  url: (path: string) => string;
  route: (path: string, route: MetadataRoute) => void;
  hits: Map<string, number>;
  close: () => Promise<void>;
}> {
  const routes = new Map<string, MetadataRoute>();
  const hits = new Map<string, number>();
  const server = https.createServer({ key: LOOPBACK_TLS.key, cert: LOOPBACK_TLS.cert }, (req, res) => {
    const path = new URL(req.url ?? '/', 'https://127.0.0.1').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes.get(path);
    const answer = () => {
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      if ('document' in route) {
        const body = JSON.stringify({ client_id: `${origin}${path}`, ...route.document });
        res.writeHead(200, { 'content-type': 'application/json', ...route.headers }).end(body);
        return;
      }
      res.writeHead(route.status, route.headers).end(route.body ?? '');
    };
    if (route?.delayMs) {
      setTimeout(answer, route.delayMs).unref();
    } else {
      answer();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    route: (path, route) => routes.set(path, route),
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
