import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase } from '@svc/db/client';
import { migrateDatabase } from '@svc/db/migrate';
import { startWorker, type WorkerHandle } from '@svc/jobs/runner';
import pino, { type Logger } from 'pino';
import type { AppServices } from './context.ts';
import { resolveDatabase } from './database.ts';
import type { Config } from './env.ts';
import { createHttpApp } from './http/app.ts';
import { createEdge } from './http/edge.ts';
import { createFastLane } from './http/fast-lane.ts';
import { ApplicationCache } from './modules/applications/cache.ts';

export type RunningServer = { url: string; services: AppServices; close: () => Promise<void> };

export function createLogger(config: Config): Logger {
  // Asynchronous stdout: a synchronous write per request line stalls the event loop under load.
  // Shutdown flushes it (RunningServer.close).
  return pino({ level: config.logLevel, base: { service: 'svc' } }, pino.destination({ dest: 1, sync: false }));
}

/**
 * `svc serve`: database (embedded when DATABASE_URL is unset), migrations under the advisory
 * lock, the application cache with its LISTEN, the in-process worker unless WORKER_ENABLED=false,
 * and the HTTP server.
 */
export async function startServer(config: Config, logger = createLogger(config)): Promise<RunningServer> {
  const database = await resolveDatabase(config);
  await migrateDatabase(database.url);
  const { db, sql, close: closeDb } = createDatabase({ url: database.url, max: 20, applicationName: 'svc-api' });
  const applications = new ApplicationCache(db, { ttlMs: config.applicationCacheTtlMs });
  await applications.listen(sql);
  const services: AppServices = { config, db, sql, logger, applications };

  let worker: WorkerHandle | undefined;
  if (config.workerEnabled) {
    worker = await startWorker({ connectionString: database.url, db, logger, concurrency: config.workerConcurrency });
  }

  const edge = createEdge(services);
  const app = createHttpApp(services, edge);
  const fastLane = createFastLane(services, edge);
  const server = http.createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    if (!fastLane(req, res)) {
      app(req, res);
    }
  });
  // Node answers oversized headers with a bare 431; give it our error body instead.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
    const body = JSON.stringify({
      error: tooLarge
        ? { code: 'header_too_large', message: 'request headers exceed 16 KiB', requestId: 'none' }
        : { code: 'malformed_request', message: 'malformed HTTP request', requestId: 'none' },
    });
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = config.port === 0 ? `http://${config.host}:${address.port}` : config.publicUrl;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await worker?.stop();
      await applications.close();
      await closeDb();
      await database.stop();
      logger.flush();
    })();
    return closing;
  };
  return { url, services, close };
}
