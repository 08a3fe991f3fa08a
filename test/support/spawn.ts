import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, TEST_ENV } from './server.ts';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(REPO_ROOT, 'apps/api/src/cli.ts');
const HEALTH_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
/** Keep the tail of a child's output for error messages; a chatty server must not grow memory. */
const OUTPUT_LIMIT = 64 * 1024;

export type SpawnedServer = {
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  child: ChildProcess;
  /** stdout + stderr so far (tail), for diagnosing a failed test. */
  output: () => string;
  stop: () => Promise<void>;
};

/**
 * How a test runs `svc`: `compiled`, the way production runs it (`apps/api/bin/svc` on
 * `pnpm build`'s dist/, which must exist), or from its TypeScript sources through tsx. Unsaid:
 * compiled when the build is current (every source older than its project's last build, as after
 * `pnpm test`'s own `pnpm build`), else from the sources, so a test run after an edit without a
 * build still tests the edit; SVC_FROM_SOURCE=1 forces the sources. A compiled svc starts in well
 * under a second; through tsx each process spends seconds of CPU transpiling, which the suite's
 * hundreds of processes felt. bin/svc execs node, so the child's pid is svc's own (a signal
 * reaches svc).
 */
export type SvcRun = { compiled?: boolean };

const BIN = path.join(REPO_ROOT, 'apps/api/bin/svc');

/** The projects `pnpm build` compiles for svc (apps/api/tsconfig.build.json and its references). */
const BUILT_PROJECTS = ['apps/api', 'apps/dev-engine', 'packages/contracts', 'packages/db', 'packages/jobs', 'packages/resource-server'];

/** The newest change to a file under `dir` that the build compiles (tests and matrices are not). */
function newestChange(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      newest = Math.max(newest, newestChange(file));
    } else if (!/\.(test|matrix)\.ts$/.test(entry.name)) {
      newest = Math.max(newest, statSync(file).mtimeMs);
    }
  }
  return newest;
}

let buildIsCurrent: boolean | undefined;
function compiledIsCurrent(): boolean {
  buildIsCurrent ??= BUILT_PROJECTS.every((project) => {
    const info = path.join(REPO_ROOT, project, 'dist/.tsbuildinfo');
    return existsSync(info) && statSync(info).mtimeMs >= newestChange(path.join(REPO_ROOT, project, 'src'));
  });
  return buildIsCurrent;
}

/** The command and arguments that run `svc <args>`. */
export function svcCommand(args: string[], run: SvcRun = {}): [string, string[]] {
  const compiled = run.compiled ?? (!process.env.SVC_FROM_SOURCE && compiledIsCurrent());
  if (!compiled) {
    return [process.execPath, ['--import', 'tsx', CLI, ...args]];
  }
  if (!existsSync(path.join(REPO_ROOT, 'apps/api/dist/cli.js'))) {
    throw new Error('the compiled svc is missing (apps/api/dist/cli.js): run `pnpm build` first');
  }
  return [BIN, args];
}

function svc(args: string[], env: Record<string, string>, run: SvcRun = {}): ChildProcess & { output: () => string } {
  const [command, argv] = svcCommand(args, run);
  const child = spawn(command, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...TEST_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return Object.assign(child, { output: () => output });
}

function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/**
 * Runs `svc <args>` to completion and returns its exit code and output. With `deadlineMs` the
 * process is killed at the deadline (`timedOut`) instead of being waited for forever. A setting
 * given as undefined is left unset (the test run's own DATABASE_URL, say). `compiled`: SvcRun.
 */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  opts: SvcRun & { deadlineMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean; elapsedMs: number }> {
  const started = Date.now();
  const [command, argv] = svcCommand(args, opts);
  const child = spawn(command, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...TEST_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  let timedOut = false;
  const timer =
    opts.deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, opts.deadlineMs);
  const code = await waitForExit(child);
  clearTimeout(timer);
  return { code, stdout, stderr, timedOut, elapsedMs: Date.now() - started };
}

/**
 * A real `svc serve` process; resolves once GET /healthz answers 200. `args` go after `serve`
 * (`--no-worker`); `compiled` runs the build (SvcRun).
 */
export async function spawnServer(env: Record<string, string>, opts: SvcRun & { args?: string[] } = {}): Promise<SpawnedServer> {
  // A port found free can be taken before the child binds it (any process's ephemeral port, on
  // a machine running many test servers at once): the child then exits naming PORT. Take another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnOnce(env, opts);
    } catch (error) {
      if (attempt >= 3 || env.PORT !== undefined || !/is already in use \(PORT\)/.test((error as Error).message)) {
        throw error;
      }
    }
  }
}

async function spawnOnce(env: Record<string, string>, opts: SvcRun & { args?: string[] }): Promise<SpawnedServer> {
  // A PORT given is the one (an engine registered svc's callback on it before svc started).
  const port = env.PORT !== undefined ? Number(env.PORT) : await freePort();
  const child = svc(['serve', ...(opts.args ?? [])], { PORT: String(port), ...env }, opts);
  const url = `http://127.0.0.1:${port}`;
  const exited = waitForExit(child).then((code) => {
    throw new Error(`svc serve exited with code ${code} before /healthz answered:\n${child.output()}`);
  });
  // Observed below through Promise.race; this keeps a late rejection from being "unhandled".
  exited.catch(() => {});
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  for (;;) {
    const healthy = await Promise.race([
      fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
        (res) => res.status === 200,
        () => false,
      ),
      exited,
    ]);
    if (healthy) {
      break;
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await waitForExit(child);
      throw new Error(`svc serve did not answer GET /healthz with 200 within ${HEALTH_TIMEOUT_MS / 1000}s:\n${child.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    child,
    output: child.output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        return;
      }
      const done = waitForExit(child);
      child.kill('SIGTERM');
      // A shutdown that hangs is a bug to see, but it must not hang the run.
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await done;
      clearTimeout(timer);
    },
  };
}
