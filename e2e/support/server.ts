import { createTestDatabase } from '../../test/support/db.ts';
import { freePort } from '../../test/support/server.ts';
import { type SpawnedServer, spawnServer } from '../../test/support/spawn.ts';

export type E2EServer = SpawnedServer;

/**
 * A real `svc serve` (the same binary production runs, worker included) on a fresh, migrated
 * database (or `databaseUrl`, for a test that seeds it directly) and its own ports, once
 * GET /healthz answers 200. `env` adds or overrides settings.
 */
export async function startServer(opts: { databaseUrl?: string; env?: Record<string, string> } = {}): Promise<E2EServer> {
  return spawnServer({
    DATABASE_URL: opts.databaseUrl ?? (await createTestDatabase()),
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: 'true',
    DEV_ENGINE_PORT: String(await freePort()),
    // Extra settings of one test file, e.g. WEBHOOK_ALLOW_PRIVATE for a receiver on loopback.
    ...opts.env,
  });
}
