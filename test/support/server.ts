import net from 'node:net';
import { loadConfig } from '../../apps/api/src/env.ts';
import { type RunningServer, startServer } from '../../apps/api/src/server.ts';
import { createTestDatabase } from './db.ts';

/**
 * A port free now, for a server a test starts (often another process, which binds it a moment
 * later). Chosen at random below Linux's ephemeral range (32768-60999 by default), so the
 * outgoing connections of every process on the machine, which take their local ports from that
 * range, cannot take it in between; only another test's random pick could, rarely.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) {
      return port;
    }
    if (attempt >= 50) {
      throw new Error('no free port found in 20000-31999');
    }
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => {
      srv.close(() => resolve(true));
    });
  });
}

/** Settings every test server gets unless the test overrides them. */
export const TEST_ENV = {
  NODE_ENV: 'test',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  WORKER_ENABLED: 'false',
  RATE_LIMIT_PUBLIC_PER_MINUTE: '100000',
  RATE_LIMIT_BACKEND_PER_MINUTE: '100000',
  // Each server starts its own development engine: on a free port, so files can run in parallel.
  DEV_ENGINE_PORT: '0',
} as const;

/** A real svc HTTP server in this process, on its own fresh database (or `databaseUrl`). */
export async function startTestServer(
  opts: { env?: Record<string, string>; databaseUrl?: string } = {},
): Promise<RunningServer & { databaseUrl: string }> {
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase());
  const port = await freePort();
  const config = loadConfig({ ...TEST_ENV, PORT: String(port), DATABASE_URL: databaseUrl, ...opts.env });
  const server = await startServer(config);
  return { ...server, databaseUrl };
}
