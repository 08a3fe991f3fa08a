import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, TEST_ENV } from './server.ts';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(REPO_ROOT, 'apps/api/src/cli.ts');

export type SpawnedServer = { url: string; child: ChildProcess; output: () => string; stop: () => Promise<void> };

/** Runs `svc <args>` to completion and returns its exit code and output. */
export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
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
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? -1)));
  return { code, stdout, stderr };
}

/** A real `svc serve` process; resolves once /healthz answers 200. */
export async function spawnServer(env: Record<string, string>): Promise<SpawnedServer> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...TEST_ENV, PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`svc serve exited with ${code}:\n${output}`))),
  );
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await Promise.race([
      fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
      exited,
    ]);
    if (ok) {
      break;
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`svc serve did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  exited.catch(() => {});
  return {
    url,
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null) {
        return;
      }
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
    },
  };
}
