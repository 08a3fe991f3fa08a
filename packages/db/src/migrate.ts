import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate as drizzleMigrate } from 'drizzle-orm/postgres-js/migrator';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import postgres from 'postgres';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../migrations', import.meta.url));

/** Arbitrary but fixed: every svc process that migrates takes this session-level lock first. */
const MIGRATION_LOCK_ID = 727_001;

/**
 * Applies svc's committed migrations, then Graphile Worker's, under one advisory lock, so any
 * number of processes may start at once on an empty database (drizzle's migrator takes no lock).
 */
export async function migrateDatabase(url: string): Promise<void> {
  // One connection: the advisory lock belongs to the session that runs the migrations.
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    try {
      await drizzleMigrate(drizzle(sql), { migrationsFolder: MIGRATIONS_FOLDER });
      await runWorkerMigrations({ connectionString: url, logger: silentLogger() });
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

function silentLogger(): Logger {
  // Worker migrations have nothing an operator needs to read on every boot.
  return new Logger(() => () => {});
}
