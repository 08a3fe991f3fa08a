import { timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { register } from 'prom-client';
import type { Config } from '../env.ts';
import { parseBearer } from '../modules/applications/keys.ts';
import { sendError } from './errors.ts';

/** Writes the registry in Prometheus's text format. */
async function writeMetrics(res: ServerResponse): Promise<void> {
  const text = await register.metrics();
  res.statusCode = 200;
  res.setHeader('Content-Type', register.contentType);
  res.setHeader('Cache-Control', 'no-store');
  res.end(text);
}

function sameToken(given: string | undefined, expected: string): boolean {
  if (given === undefined) {
    return false;
  }
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `GET /metrics` on the API's own port (docs/operations.md "Metrics"), for a scraper holding
 * METRICS_TOKEN as a bearer token: 401 unauthenticated without it. Unset, the route does not
 * exist (404 like any other unknown path).
 */
export function metricsRoute(config: Config): ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null {
  const token = config.metrics.token;
  if (token === null) {
    return null;
  }
  return async (req, res) => {
    if (!sameToken(parseBearer(req.headers.authorization) ?? undefined, token)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
      sendError(req, res, 'unauthenticated', 'metrics need Authorization: Bearer <METRICS_TOKEN>');
      return;
    }
    await writeMetrics(res);
  };
}

/**
 * METRICS_PORT: a listener of its own on METRICS_HOST that answers `GET /metrics` and nothing
 * else, with no token, for a network only the scraper reaches. Gives a function that closes it.
 */
export async function startMetricsListener(config: Config, logger: Logger): Promise<(() => Promise<void>) | null> {
  const { port, host } = config.metrics;
  if (port === null) {
    return null;
  }
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if ((req.method === 'GET' || req.method === 'HEAD') && path === '/metrics') {
      writeMetrics(res).catch((error: unknown) => {
        logger.error({ err: error }, 'metrics could not be collected');
        res.statusCode = 500;
        res.end();
      });
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  logger.info({ url: `http://${address.address}:${address.port}/metrics` }, 'metrics listening');
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
