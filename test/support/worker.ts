import { type ChildProcess, spawn } from 'node:child_process';
import { REPO_ROOT, type SvcRun, svcCommand } from './spawn.ts';

const READY_TIMEOUT_MS = 60_000;
const OUTPUT_LIMIT = 64 * 1024;

export type WorkerExit = { code: number | null; signal: NodeJS.Signals | null };

/** A real `svc worker` process. */
export type SpawnedWorker = {
  child: ChildProcess;
  /** stdout + stderr so far (tail), for diagnosing a failed test. */
  output: () => string;
  /** Resolves when the process has exited. */
  exited: Promise<WorkerExit>;
  /** Whether the process is still running. */
  running: () => boolean;
  /** SIGTERM, then SIGKILL after `timeoutMs` if it has not exited. */
  stop: (timeoutMs?: number) => Promise<WorkerExit>;
};

/**
 * Spawns `svc worker` (from source through tsx, or `compiled`: SvcRun) with `env` (on top of
 * this process's environment) and resolves once it prints that it runs.
 */
export async function spawnWorker(env: Record<string, string>, run: SvcRun = {}): Promise<SpawnedWorker> {
  const [command, argv] = svcCommand(['worker'], run);
  const child = spawn(command, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<WorkerExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = async (timeoutMs = 20_000) => {
    if (running()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    }
    return exited;
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!output.includes('svc worker running')) {
    if (!running()) {
      throw new Error(`svc worker exited (${child.exitCode ?? child.signalCode}) before it ran:\n${output}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`svc worker did not start within ${READY_TIMEOUT_MS / 1000} s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, output: () => output, exited, running, stop };
}
