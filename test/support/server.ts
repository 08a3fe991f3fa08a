import net from 'node:net';
import { loadConfig } from '../../apps/api/src/env.ts';
import { type RunningServer, startServer } from '../../apps/api/src/server.ts';
import { createTestDatabase } from './db.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
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
