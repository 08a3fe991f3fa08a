import { readdirSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDatabase } from './support/db.ts';
import { REPO_ROOT, runCli, type SpawnedServer, spawnServer } from './support/spawn.ts';

const MIGRATION_FILES = readdirSync(path.join(REPO_ROOT, 'packages/db/migrations')).filter((f) => f.endsWith('.sql'));

describe('three svc serve processes started at once on one EMPTY database', () => {
  const { name, url, adminUrl } = runDatabase('empty');
  let admin: postgres.Sql;
  let db: postgres.Sql;
  let servers: SpawnedServer[] = [];
  let startResults: PromiseSettledResult<SpawnedServer>[] = [];

  beforeAll(async () => {
    admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    db = postgres(url, { max: 1, onnotice: () => {} });
    // Truly empty: no application tables, no migrations table, no worker schema.
    const [tables] = await db<{ n: number }[]>`
      select count(*)::int as n from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')`;
    expect(tables?.n).toBe(0);

    // All three at once. The worker stays on (the default of `svc serve`): its own migrations and
    // crontab registration race too.
    startResults = await Promise.allSettled([0, 1, 2].map(() => spawnServer({ DATABASE_URL: url, WORKER_ENABLED: 'true' })));
    servers = startResults.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await db?.end({ timeout: 1 });
    await admin?.unsafe(`drop database if exists "${name}" with (force)`);
    await admin?.end({ timeout: 1 });
  });

  it('all three become healthy', async () => {
    const failures = startResults.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
    expect(failures).toEqual([]);
    expect(servers).toHaveLength(3);
    for (const s of servers) {
      const res = await fetch(`${s.url}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    }
    // None logged a migration failure.
    for (const s of servers) {
      expect(s.output()).not.toMatch(/already exists|duplicate key|unexpected error/i);
    }
  });

  it('each migration was applied exactly once', async () => {
    expect(MIGRATION_FILES.length).toBeGreaterThan(0);
    const [row] = await db<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    expect(row?.n).toBe(MIGRATION_FILES.length);
    const hashes = await db<{ hash: string }[]>`select hash from drizzle.__drizzle_migrations`;
    expect(new Set(hashes.map((h) => h.hash)).size).toBe(MIGRATION_FILES.length);
  });

  it("svc's schema and Graphile Worker's schema are both in place", async () => {
    const [schema] = await db<{ n: number }[]>`select count(*)::int as n from pg_namespace where nspname = 'graphile_worker'`;
    expect(schema?.n).toBe(1);
    const [workerMigrations] = await db<{ n: number }[]>`select count(*)::int as n from graphile_worker.migrations`;
    expect(workerMigrations?.n).toBeGreaterThan(0);
    // add_job is what the in-transaction enqueue helper calls.
    const [addJob] = await db<{ n: number }[]>`
      select count(*)::int as n from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'graphile_worker' and p.proname = 'add_job'`;
    expect(addJob?.n).toBeGreaterThan(0);
    const tables = await db<{ table_name: string }[]>`
      select table_name from information_schema.tables where table_schema = 'public' order by table_name`;
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['applications', 'organizations', 'rate_limit_counters']));
    // The custom migration's trigger exists exactly once.
    const [trigger] = await db<{ n: number }[]>`
      select count(*)::int as n from pg_trigger where tgname = 'applications_changed_notify'`;
    expect(trigger?.n).toBe(1);
  });

  it('the three servers serve the same database', async () => {
    const a = servers[0] as SpawnedServer;
    const first = await fetch(`${a.url}/v1/client/config?keyless=1`);
    expect(first.status).toBe(200);
    const body = (await first.json()) as { application: { id: string } };
    for (const s of servers.slice(1)) {
      const res = await fetch(`${s.url}/v1/client/config?keyless=1`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { application: { id: string } }).application.id).toBe(body.application.id);
    }
  });

  it('a later svc migrate is a no-op', async () => {
    const r = await runCli(['migrate'], { DATABASE_URL: url });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [row] = await db<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    expect(row?.n).toBe(MIGRATION_FILES.length);
  });
});
