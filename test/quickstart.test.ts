import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { removeEmbeddedPostgres } from '@svc/db/embedded';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './support/server.ts';
import { REPO_ROOT } from './support/spawn.ts';

/** Not copied: installed, generated or local state. */
// dist: what `pnpm build` makes, absent from a fresh clone.
const SKIP = new Set(['node_modules', '.git', '.data', 'coverage', 'dist']);
// `pnpm start` builds the console and compiles svc before it serves.
const START_DEADLINE_MS = 240_000;
const STOP_DEADLINE_MS = 10_000;

/** The environment a person has in a fresh shell: none of the test run's svc settings. */
function freshEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (
      !/^(DATABASE_URL|DATA_DIR|NODE_ENV|LOG_LEVEL|PORT|HOST|WORKER_ENABLED|EMBEDDED_POSTGRES_PORT|DEV_ENGINE_PORT|VITEST.*|TEST)$/.test(
        key,
      )
    ) {
      env[key] = value;
    }
  }
  return { ...env, ...extra };
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the README quickstart', () => {
  // A fresh `mktemp -d`: mode 700, so only its owner may enter. Run as root (as CI and the
  // machines do), PostgreSQL runs as the postgres user, which cannot.
  const home = mkdtempSync(path.join(os.tmpdir(), 'svc-quickstart-'));
  const checkout = path.join(home, 'svc');
  const cluster = path.join(checkout, '.data', 'postgres');
  let server: ChildProcess | undefined;

  afterAll(() => {
    if (server && server.exitCode === null && server.signalCode === null && server.pid) {
      process.kill(-server.pid, 'SIGKILL');
    }
    try {
      const pid = Number(readFileSync(path.join(cluster, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0 && alive(pid)) {
        process.kill(pid, 'SIGQUIT');
      }
    } catch {
      // Not started, or stopped.
    }
    removeEmbeddedPostgres(cluster);
    rmSync(home, { recursive: true, force: true });
  });

  it('starts from a folder only its owner may enter, serves, and stops on Ctrl-C with one line', { timeout: 420_000 }, async () => {
    expect(statSync(home).mode & 0o777).toBe(0o700);
    cpSync(REPO_ROOT, checkout, { recursive: true, filter: (src) => !SKIP.has(path.basename(src)) });
    const install = spawnSync('pnpm', ['install', '--frozen-lockfile', '--offline'], {
      cwd: checkout,
      env: freshEnv({}),
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(install.status, `pnpm install failed:\n${install.stdout}\n${install.stderr}`).toBe(0);

    const [port, enginePort, pgPort] = [await freePort(), await freePort(), await freePort()];
    const url = `http://127.0.0.1:${port}`;
    // Its own process group, as a terminal's foreground job: Ctrl-C signals the whole group.
    // `pnpm start` (console build, then `exec svc serve`, the bin): Ctrl-C then reaches svc from
    // the terminal and from pnpm.
    server = spawn('pnpm', ['start'], {
      cwd: checkout,
      env: freshEnv({ PORT: String(port), DEV_ENGINE_PORT: String(enginePort), EMBEDDED_POSTGRES_PORT: String(pgPort) }),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    server.stdout?.on('data', (d) => {
      output += d;
    });
    server.stderr?.on('data', (d) => {
      output += d;
    });
    const exited = exitOf(server);

    const deadline = Date.now() + START_DEADLINE_MS;
    for (;;) {
      const status = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
        (res) => res.status,
        () => 0,
      );
      if (status === 200) {
        break;
      }
      if (server.exitCode !== null || Date.now() > deadline) {
        throw new Error(`svc serve did not become healthy (exit ${server.exitCode}):\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    expect((await fetch(`${url}/v1/client/config?keyless=1`)).status).toBe(200);
    // It serves the compiled build (apps/api/bin/svc runs dist/cli.js once `pnpm build` made it).
    expect(existsSync(path.join(checkout, 'apps/api/dist/cli.js'))).toBe(true);

    // The README's next step, in another shell without the server's settings: the CLI uses the
    // cluster the server runs, whichever port it is on.
    // Run without blocking this process: a spawnSync stops the event loop, so the keep-alive
    // connection svc closes meanwhile is still pooled, unread, when the next fetch picks it.
    const created = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      // The bin `pnpm svc` runs: the compiled command line `pnpm start` built.
      execFile(
        'apps/api/bin/svc',
        ['apps', 'create', '--org', 'acme', '--name', 'Web App', '--json'],
        { cwd: checkout, env: freshEnv({}), encoding: 'utf8', timeout: 60_000 },
        (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });
    expect(created.stderr).toBe('');
    expect(created.status).toBe(0);
    const { secretKey } = JSON.parse(created.stdout) as { secretKey: string };
    const application = await fetch(`${url}/v1/backend/application`, { headers: { authorization: `Bearer ${secretKey}` } }).catch(
      (error: unknown) => {
        throw new Error(`GET /v1/backend/application failed (${String(error)}); svc's output:\n${output}`);
      },
    );
    expect(application.status).toBe(200);

    // The cluster lives where the postgres user can reach it, and PostgreSQL runs outside the
    // terminal's process group.
    if (process.getuid?.() === 0) {
      expect(readlinkSync(cluster).startsWith('/var/lib/svc/')).toBe(true);
    }
    const postmaster = Number(readFileSync(path.join(cluster, 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(alive(postmaster)).toBe(true);

    const before = output.length;
    const signalled = Date.now();
    process.kill(-(server.pid as number), 'SIGINT');
    const stopTimer = setTimeout(() => process.kill(-(server?.pid as number), 'SIGKILL'), STOP_DEADLINE_MS);
    const { code } = await exited;
    clearTimeout(stopTimer);
    const elapsed = Date.now() - signalled;
    const after = output.slice(before);

    expect(code, `exit after SIGINT; output:\n${after}`).toBe(0);
    expect(elapsed).toBeLessThan(STOP_DEADLINE_MS);
    expect(after).toContain('svc: stopped');
    expect(after).not.toMatch(/terminating connection|ELIFECYCLE|unhandled|\n\s+at /);
    expect(after.trim().split('\n').length, after).toBeLessThanOrEqual(3);
    // PostgreSQL stopped with svc.
    const gone = Date.now() + 5_000;
    while (alive(postmaster) && Date.now() < gone) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(alive(postmaster)).toBe(false);
  });
});
