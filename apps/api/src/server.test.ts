import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Writable } from 'node:stream';
import { StartupError } from '@svc/db/client';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, runDatabase } from '../../../test/support/db.ts';
import { freePort, TEST_ENV } from '../../../test/support/server.ts';
import { runCli, spawnServer } from '../../../test/support/spawn.ts';
import { loadConfig } from './env.ts';
import { createLogger } from './logging.ts';
import { startServer } from './server.ts';

/** Operator-facing failures are one line on stderr, never a stack trace. */
function expectOneLineError(stderr: string): void {
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr.trim().split('\n')).toHaveLength(1);
}

/** Nothing that looks like a stack trace, printed or inside a JSON log line. */
function expectNoStack(output: string): void {
  expect(output).not.toMatch(/^\s+at /m);
  expect(output).not.toMatch(/\\n\s+at /);
  expect(output).not.toMatch(/unexpected error/);
}

async function occupy(port: number): Promise<net.Server> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** A request whose headers never finish: the server counts it as in flight until cut off. */
async function holdRequest(url: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\n`);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  // Let the server read the partial request before anything else happens.
  await new Promise((r) => setTimeout(r, 100));
  return { socket, closed };
}

describe('startup errors are one line', () => {
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });

  it('svc serve on a port already in use exits non-zero naming the port, host and PORT', async () => {
    const port = await freePort();
    const taken = await occupy(port);
    try {
      const r = await runCli(['serve'], { DATABASE_URL: databaseUrl, PORT: String(port), WORKER_ENABLED: 'true' });
      expect(r.code).not.toBe(0);
      expect(r.stdout).not.toContain('listening');
      expect(r.stderr.trim()).toBe(`svc: port ${port} on 127.0.0.1 is already in use (PORT)`);
      expectOneLineError(r.stderr);
    } finally {
      taken.close();
    }
  });

  it('startServer on a taken port rejects with a StartupError and releases what it had started', async () => {
    const port = await freePort();
    const taken = await occupy(port);
    try {
      const config = loadConfig({ ...TEST_ENV, PORT: String(port), DATABASE_URL: databaseUrl, WORKER_ENABLED: 'true' });
      const error = await startServer(config).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StartupError);
      expect((error as Error).message).toBe(`port ${port} on 127.0.0.1 is already in use (PORT)`);
    } finally {
      taken.close();
    }
    // The pool, the LISTEN connection and the worker's connections were closed.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const deadline = Date.now() + 5000;
      let open = -1;
      while (Date.now() < deadline) {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
        open = row?.n ?? -1;
        if (open === 0) {
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(open).toBe(0);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('an invalid TRUST_PROXY is a one-line configuration error', async () => {
    const r = await runCli(['serve'], { DATABASE_URL: databaseUrl, PORT: String(await freePort()), TRUST_PROXY: 'foo' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^svc: TRUST_PROXY=foo is invalid/);
    expectOneLineError(r.stderr);
  });

  it('TRUST_PROXY=true in production is refused in one line', async () => {
    const r = await runCli(['serve'], {
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: 'https://id.example.com',
      ENGINE_ISSUER: 'https://engine.example.com/application/o/svc/',
      TRUST_PROXY: 'true',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^svc: TRUST_PROXY=true is refused when NODE_ENV=production/);
    expectOneLineError(r.stderr);
  });

  it('TRUST_PROXY=true outside production starts, with one warning in the log', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        callback();
      },
    });
    const config = loadConfig({
      ...TEST_ENV,
      LOG_LEVEL: 'warn',
      PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      TRUST_PROXY: 'true',
    });
    const server = await startServer(config, createLogger(config, sink));
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
    const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.msg.includes('TRUST_PROXY=true'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.level).toBe(40);
    expect(warnings[0]?.msg).toMatch(/hop count/);
  });

  describe('a failing migration', () => {
    const { name, url, adminUrl } = runDatabase('badmig');
    let admin: postgres.Sql;

    beforeAll(async () => {
      admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database "${name}"`);
      // The first migration creates "applications": a table already in the way makes it fail.
      const db = postgres(url, { max: 1, onnotice: () => {} });
      await db`create table applications (x int)`;
      await db.end({ timeout: 1 });
    });

    afterAll(async () => {
      await admin?.unsafe(`drop database if exists "${name}" with (force)`);
      await admin?.end({ timeout: 1 });
    });

    for (const command of ['migrate', 'serve'] as const) {
      it(`svc ${command} prints one line naming the database, the migration and PostgreSQL's reason`, async () => {
        const r = await runCli([command], { DATABASE_URL: url, PORT: String(await freePort()) });
        expect(r.code).toBe(2);
        expectOneLineError(r.stderr);
        expect(r.stderr).toMatch(/^svc: migrations failed on postgres:/);
        expect(r.stderr).toContain(`/${name}`);
        expect(r.stderr).toContain('in migration 0000_init');
        expect(r.stderr).toContain('42P07 relation "applications" already exists');
        // Neither drizzle's SQL text nor its params line.
        expect(r.stderr).not.toMatch(/CREATE TABLE|Failed query|params:/);
        const password = new URL(adminUrl).password;
        if (password) {
          expect(r.stderr).not.toContain(`:${password}@`);
        }
      });
    }

    it('the migration lock is released after the failure', async () => {
      const db = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await db<{ locked: boolean }[]>`select pg_try_advisory_lock(727001) as locked`;
        expect(row?.locked).toBe(true);
      } finally {
        await db.end({ timeout: 1 });
      }
    });
  });
});

describe('graceful shutdown of svc serve', () => {
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });

  it('SIGTERM with nothing in flight exits 0 promptly and quietly', async () => {
    const server = await spawnServer({
      DATABASE_URL: databaseUrl,
      WORKER_ENABLED: 'true',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '20000',
    });
    const started = Date.now();
    server.child.kill('SIGTERM');
    const { code } = await exitOf(server.child);
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expectNoStack(server.output());
  });

  it('SIGTERM with a request in flight exits 0 once the deadline cuts it off, without a stack', async () => {
    const timeoutMs = 1500;
    const server = await spawnServer({
      DATABASE_URL: databaseUrl,
      WORKER_ENABLED: 'true',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
    });
    const held = await holdRequest(server.url);
    const started = Date.now();
    server.child.kill('SIGTERM');
    const { code } = await exitOf(server.child);
    const elapsed = Date.now() - started;
    await held.closed;
    expect(code).toBe(0);
    // Waited for the request up to the deadline, then cut it off and finished the shutdown.
    expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 100);
    expect(elapsed).toBeLessThan(timeoutMs + 5000);
    expect(server.output()).toContain('shutdown deadline reached');
    expectNoStack(server.output());
  });

  it('a second signal during shutdown exits 1 at once with one line', async () => {
    const server = await spawnServer({ DATABASE_URL: databaseUrl, SHUTDOWN_TIMEOUT_MS: '20000' });
    const held = await holdRequest(server.url);
    server.child.kill('SIGTERM');
    // Later than the echo window: a signal within a second of the first is pnpm forwarding it.
    await new Promise((r) => setTimeout(r, 1_300));
    expect(server.child.exitCode).toBeNull();
    const started = Date.now();
    server.child.kill('SIGINT');
    const { code } = await exitOf(server.child);
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(3000);
    held.socket.destroy();
    const output = server.output();
    expectNoStack(output);
    const after = output.slice(output.indexOf('svc listening')).trim().split('\n').slice(1);
    expect(after).toEqual(['svc: SIGINT during shutdown (after SIGTERM); exiting now']);
  });
});

describe('DATABASE_POOL_SIZE', () => {
  it("bounds svc serve's connections to PostgreSQL however many requests need one at once", async () => {
    const databaseUrl = await createTestDatabase();
    const config = loadConfig({
      ...TEST_ENV,
      LOG_LEVEL: 'silent',
      PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_SIZE: '2',
    });
    expect(config.databasePoolSize).toBe(2);
    const server = await startServer(config);
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      // A well-formed tenant API key nobody holds: each request reads the key table, and answers 401.
      // The application cache's LISTEN connection is its own, outside the pool.
      const headers = { authorization: `Bearer sk_live_${'a'.repeat(40)}` };
      const answers = await Promise.all(Array.from({ length: 40 }, () => fetch(`${server.url}/v1/tenants/ten_x`, { headers })));
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(401));
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name = 'svc-api' and query not ilike 'listen %'`;
      expect(row?.n).toBeGreaterThanOrEqual(1);
      expect(row?.n).toBeLessThanOrEqual(2);
    } finally {
      await sql.end();
      await server.close();
    }
  });

  it('defaults to 10 and refuses anything but a positive whole number', () => {
    expect(loadConfig({}).databasePoolSize).toBe(10);
    for (const value of ['0', '-3', '2.5', 'many']) {
      expect(() => loadConfig({ DATABASE_POOL_SIZE: value })).toThrow(/DATABASE_POOL_SIZE/);
    }
  });
});
