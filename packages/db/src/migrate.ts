import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate as drizzleMigrate } from 'drizzle-orm/postgres-js/migrator';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import postgres from 'postgres';
import { redactDatabaseUrl, StartupError } from './client.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../migrations', import.meta.url));

/** Arbitrary but fixed: every svc process that migrates takes this session-level lock first. */
const MIGRATION_LOCK_ID = 727_001;

/**
 * Applies svc's committed migrations, then Graphile Worker's, under one advisory lock, so any
 * number of processes may start at once on an empty database (drizzle's migrator takes no lock).
 * A failure is a one-line StartupError naming the database (password redacted), the failing
 * migration when it is one of ours, and PostgreSQL's reason; never the SQL or a stack.
 */
export async function migrateDatabase(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    // The advisory lock belongs to a session: hold it on a reserved connection, so the pool can
    // never hand the migrations a different (reconnected) session that does not hold it. If the
    // reserved connection drops, its next query fails instead of silently running unlocked.
    const conn = await sql.reserve();
    try {
      await conn`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
      let failure: unknown;
      try {
        await drizzleMigrate(drizzle(asDrizzleClient(sql, conn)), { migrationsFolder: MIGRATIONS_FOLDER });
        try {
          await runWorkerMigrations({ connectionString: url, logger: silentLogger() });
        } catch (error) {
          throw new StartupError(`Graphile Worker migrations failed on ${redactDatabaseUrl(url)}: ${reasonOf(error)}`);
        }
      } catch (error) {
        failure = error;
      }
      let unlocked = false;
      try {
        const [row] = await conn<{ unlocked: boolean }[]>`select pg_advisory_unlock(${MIGRATION_LOCK_ID}) as unlocked`;
        unlocked = row?.unlocked === true;
      } catch (error) {
        failure ??= error;
      }
      if (failure === undefined && !unlocked) {
        failure = new Error('the migration lock was lost while migrating (the connection was reset)');
      }
      if (failure !== undefined) {
        throw failure;
      }
    } finally {
      conn.release();
    }
  } catch (error) {
    if (error instanceof StartupError) {
      throw error;
    }
    const migration = failingMigration(error);
    throw new StartupError(
      `migrations failed on ${redactDatabaseUrl(url)}${migration ? ` in migration ${migration}` : ''}: ${reasonOf(error)}`,
    );
  } finally {
    await sql.end({ timeout: 5 }).catch(() => {});
  }
}

/**
 * drizzle's postgres-js driver reads `client.options` and runs the migrations through
 * `client.begin`; a reserved connection has neither. Give it the pool's options (the same object
 * drizzle(sql) would adjust) and a `begin` that runs BEGIN/COMMIT on the reserved connection.
 */
function asDrizzleClient(sql: postgres.Sql, conn: postgres.ReservedSql): postgres.Sql {
  const begin = async <T>(fn: (tx: postgres.Sql) => T | Promise<T>): Promise<T> => {
    await conn.unsafe('begin');
    try {
      const result = await fn(conn);
      await conn.unsafe('commit');
      return result;
    } catch (error) {
      await conn.unsafe('rollback').catch(() => {});
      throw error;
    }
  };
  return Object.assign(conn, { options: sql.options, begin }) as unknown as postgres.Sql;
}

/** PostgreSQL's reason, without the SQL text or parameters drizzle puts in its own message. */
function reasonOf(error: unknown): string {
  const err = error as { message?: unknown; cause?: unknown; code?: unknown } | undefined;
  const cause = err?.cause as { message?: unknown; code?: unknown } | undefined;
  const source = typeof err?.message === 'string' && err.message.startsWith('Failed query') && cause ? cause : err;
  const code = typeof source?.code === 'string' ? `${source.code} ` : '';
  const message = typeof source?.message === 'string' ? source.message : String(error);
  const firstLine = message.split('\n', 1)[0] ?? '';
  const params = firstLine.search(/(^|\s)params:/);
  return `${code}${params === -1 ? firstLine : firstLine.slice(0, params).trimEnd()}`.trim() || 'unknown error';
}

/** The tag (file name) of the committed migration whose statement failed, when it is one. */
function failingMigration(error: unknown): string | undefined {
  const query = (error as { query?: unknown } | undefined)?.query;
  if (typeof query !== 'string' || query.trim() === '') {
    return undefined;
  }
  try {
    const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as {
      entries: { tag: string }[];
    };
    for (const { tag } of journal.entries) {
      const statements = readFileSync(path.join(MIGRATIONS_FOLDER, `${tag}.sql`), 'utf8').split('--> statement-breakpoint');
      if (statements.some((s) => s.trim() === query.trim())) {
        return tag;
      }
    }
  } catch {
    // The name is a convenience; the reason is still reported.
  }
  return undefined;
}

function silentLogger(): Logger {
  // Worker migrations have nothing an operator needs to read on every boot.
  return new Logger(() => () => {});
}

/**
 * Applies the committed migrations up to and including `tag` (a journal entry such as
 * `0014_webhook_attempts_removed_by_trigger`) to the database at `url`, as a server of that time
 * would have: for tests that migrate data written under an older schema.
 */
/** How many migrations this build of svc ships (its journal's entries). */
export function shippedMigrationCount(): number {
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
  return journal.entries.length;
}

/**
 * Whether the database has every migration this build ships (a newer build may have applied
 * more). False while they are missing, or when the migrations table is not there at all.
 */
export async function migrationsApplied(sql: postgres.Sql, shipped = shippedMigrationCount()): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from drizzle.__drizzle_migrations`.catch(() => [{ n: -1 }]);
  return (row?.n ?? -1) >= shipped;
}

export async function migrateDatabaseTo(url: string, tag: string): Promise<void> {
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as {
    entries: { tag: string }[];
  };
  const last = journal.entries.findIndex((e) => e.tag === tag);
  if (last < 0) {
    throw new Error(`no migration ${tag} in ${MIGRATIONS_FOLDER}`);
  }
  const folder = mkdtempSync(path.join(tmpdir(), 'svc-migrations-'));
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
    writeFileSync(path.join(folder, 'meta/_journal.json'), JSON.stringify({ ...journal, entries: journal.entries.slice(0, last + 1) }));
    await drizzleMigrate(drizzle(sql), { migrationsFolder: folder });
  } finally {
    await sql.end({ timeout: 1 });
    rmSync(folder, { recursive: true, force: true });
  }
}
