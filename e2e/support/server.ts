import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '../../test/support/db.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HEALTH_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
/** Keep the tail of the child's output for error messages; a chatty server must not grow memory. */
const OUTPUT_LIMIT = 64 * 1024;

export type E2EServer = {
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  /** stdout + stderr so far (tail), for diagnosing a failed test. */
  output: () => string;
  stop: () => Promise<void>;
};

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/**
 * Spawns a real `svc serve` (the same binary production runs) on a fresh, migrated database and
 * its own ports, and resolves once GET /healthz answers 200.
 */
export async function startServer(): Promise<E2EServer> {
  const port = await freePort();
  let devEnginePort = await freePort();
  while (devEnginePort === port) {
    devEnginePort = await freePort();
  }
  const databaseUrl = await createTestDatabase();

  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/api/src/cli.ts', 'serve'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      DEV_ENGINE_PORT: String(devEnginePort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);

  const url = `http://127.0.0.1:${port}`;
  const exited = waitForExit(child).then((code) => {
    throw new Error(`svc serve exited with code ${code} before /healthz answered:\n${output}`);
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
      throw new Error(`svc serve did not answer GET /healthz with 200 within ${HEALTH_TIMEOUT_MS / 1000}s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }

  return {
    url,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        return;
      }
      const done = waitForExit(child);
      child.kill('SIGTERM');
      // A shutdown that hangs is a bug the lead should see, but it must not hang the run.
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await done;
      clearTimeout(timer);
    },
  };
}
