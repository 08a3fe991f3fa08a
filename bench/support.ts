/**
 * What the scenario modules of the bench (usage.ts, exports.ts, webhooks.ts) share: the context
 * bench/run.ts hands them, settings from the environment, child processes that are always
 * reaped, and CPU readings from /proc.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export type BenchContext = {
  root: string;
  cli: string;
  smoke: boolean;
  rounds: number;
  /** Every child process, so the bench's cleanup can kill what is left. */
  children: Set<ChildProcess>;
  createDb: (suffix: string) => Promise<{ name: string; url: string }>;
  runCli: (args: string[], databaseUrl: string) => Promise<string>;
  freePort: () => Promise<number>;
  log: (line: string) => void;
  /** Node arguments that profile a child (`--cpu-prof`, svc's only, when asked), else none. */
  profileArgs: (kind: 'svc' | 'other', label: string) => string[];
};

export type Verdict = { name: string; pass: boolean; detail: string };

export const HOST = '127.0.0.1';

/** svc's entry point, as scenarios name it in a child's script (`[ctx.cli, 'serve']`). */
export const SVC_CLI = 'apps/api/src/cli.ts';
/** What svc runs as it ships (`pnpm build`): the compiled entry point, and the condition that makes the workspace packages resolve to their compiled output too. */
const SVC_DIST = ['--conditions=svc-dist', 'apps/api/dist/cli.js'];
/** svc's command line as it ships: what `pnpm start` and the container image run. */
const SVC_BIN = 'apps/api/bin/svc';

/** Per checkout: BENCH_AGAINST runs a ref's build beside this one's, each with its own flags. */
const svcFlags = new Map<string, string[]>();

/** The Node flags svc ships with, read off SVC_BIN's `NODE_FLAGS="..."` line, so the bench runs svc as it is run and not as the bench remembers it. */
function svcNodeFlags(root: string): string[] {
  let flags = svcFlags.get(root);
  if (!flags) {
    const line = /^NODE_FLAGS="([^"]*)"/m.exec(readFileSync(path.join(root, SVC_BIN), 'utf8'));
    if (!line) {
      throw new Error(`${SVC_BIN} no longer names its Node flags in a NODE_FLAGS="..." line: update bench/support.ts`);
    }
    flags = (line[1] as string).split(/\s+/).filter(Boolean);
    svcFlags.set(root, flags);
  }
  return flags;
}

/**
 * Compiles svc as `pnpm build` does (tsc -b, incremental: quick when nothing changed), so that
 * the bench measures the compiled output svc ships, never a stale one.
 */
export function buildSvc(root: string): void {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-b', 'apps/api/tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  copyFileSync(path.join(root, 'apps/api/src/modules/shared/hosted.css'), path.join(root, 'apps/api/dist/modules/shared/hosted.css'));
}

/**
 * The Node command line of a child running `script` from the repository root `root`:
 * `profileArgs`, then svc's compiled entry point with its own Node flags when the script is svc's
 * command line (SVC_CLI), or the TypeScript file through tsx for the baselines and helpers.
 */
/** svc's command line run from its TypeScript sources through tsx (`SVC_FROM_SOURCE=1`), with its Node flags: the compiled scenario's other side. */
export function nodeCommandFromSource(root: string, args: string[], profileArgs: string[]): string[] {
  return [...profileArgs, ...svcNodeFlags(root), '--import', 'tsx', SVC_CLI, ...args];
}

export function nodeCommand(root: string, script: string[], profileArgs: string[]): string[] {
  return script[0] === SVC_CLI
    ? [...profileArgs, ...svcNodeFlags(root), ...SVC_DIST, ...script.slice(1)]
    : [...profileArgs, '--import', 'tsx', ...script];
}

/** A positive number from the environment, or `fallback` when unset. */
export function positiveSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`${name} must be a positive number, got ${raw}`);
  }
  return value;
}

export const fmt = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** User + system CPU of a process so far (Linux /proc; NaN elsewhere), in ms. */
export function processCpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // utime and stime, fields 14 and 15: the 12th and 13th after the command name (which may
    // contain spaces); clock ticks of 10 ms.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

export type Child = {
  child: ChildProcess;
  /** The last 16,000 characters of its stdout and stderr. */
  output: () => string;
  /** Its exit code once it has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop: () => Promise<void>;
};

/** A Node child running `script` from the repository root, registered for the bench's cleanup. */
export function spawnChild(
  ctx: BenchContext,
  opts: { kind: 'svc' | 'other'; label: string; script: string[]; env: NodeJS.ProcessEnv; graceMs?: number },
): Child {
  const child = spawn(process.execPath, nodeCommand(ctx.root, opts.script, ctx.profileArgs(opts.kind, opts.label)), {
    cwd: ctx.root,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  ctx.children.add(child);
  let buffer = '';
  const add = (chunk: Buffer) => {
    buffer = (buffer + chunk.toString()).slice(-16_000);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      ctx.children.delete(child);
      resolve(code);
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    child.kill('SIGTERM');
    if (!(await Promise.race([exited.then(() => true), sleep(opts.graceMs ?? 15_000).then(() => false)]))) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  return { child, output: () => buffer, exited, stop };
}

/**
 * A server child on a free port (PORT, HOST and PUBLIC_URL set for it), once `ready(url)` says
 * so; it is stopped and the start fails when it exits first or is not ready within BENCH_READY_SECONDS (60 s).
 */
export async function startServerChild(
  ctx: BenchContext,
  opts: { kind: 'svc' | 'other'; label: string; script: string[]; env: NodeJS.ProcessEnv; ready: (url: string) => Promise<boolean> },
): Promise<Child & { url: string }> {
  const port = await ctx.freePort();
  const url = `http://${HOST}:${port}`;
  const proc = spawnChild(ctx, { ...opts, env: { ...opts.env, PORT: String(port), HOST, PUBLIC_URL: url } });
  const deadline = Date.now() + READY_SECONDS * 1000;
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${opts.label} exited before it was ready:\n${proc.output()}`);
    }
    if (await opts.ready(url).catch(() => false)) {
      return { ...proc, url };
    }
    if (Date.now() > deadline) {
      await proc.stop();
      throw new Error(`${opts.label} was not ready within ${READY_SECONDS} s:\n${proc.output()}`);
    }
    await sleep(100);
  }
}

/** BENCH_READY_SECONDS (default 60): how long a server may take to start (a busy machine starts slowly). */
export const READY_SECONDS = positiveSetting('BENCH_READY_SECONDS', 60);

/** `GET /healthz` answers 200. */
export async function healthy(url: string): Promise<boolean> {
  const res = await fetch(`${url}/healthz`);
  await res.arrayBuffer();
  return res.status === 200;
}
