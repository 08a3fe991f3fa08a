import { sql as raw } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { createDatabase, createHealthProbe, type Database, isDatabaseUnavailable } from './client.ts';

let url: string;
let admin: Database;

beforeAll(async () => {
  url = await createTestDatabase();
  admin = createDatabase({ url, max: 1, applicationName: 'svc-client-test-admin' });
  await admin.sql`create table outage_marks (mark text primary key)`;
});
afterAll(async () => {
  await admin?.close();
});

const marked = async (mark: string) => (await admin.sql`select 1 from outage_marks where mark = ${mark}`).length > 0;

describe('the pool when the database is slow or goes away', () => {
  it('a query waiting for a connection gives up after timeoutMs, and is never run later', async () => {
    const pool = createDatabase({ url, max: 1, timeoutMs: 300 });
    try {
      // The pool's one connection is held by a transaction for a second.
      let held: () => void = () => {};
      const holding = new Promise<void>((r) => {
        held = r;
      });
      const tx = pool.sql.begin(async (t) => {
        held();
        await t`select pg_sleep(1)`;
      });
      await holding;
      const started = performance.now();
      const error = await pool.sql`insert into outage_marks values ('queued')`.catch((e: unknown) => e);
      const waited = performance.now() - started;
      expect(error).toMatchObject({ code: 'CONNECTION_QUEUE_TIMEOUT' });
      expect(isDatabaseUnavailable(error)).toBe(true);
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(900);
      await tx;
      // The connection is free again: the abandoned insert did not run on it.
      await pool.sql`select 1`;
      expect(await marked('queued')).toBe(false);
    } finally {
      await pool.close();
    }
  });

  it("a transaction's statements after its connection died fail, never run outside it on the replacement connection", async () => {
    const pool = createDatabase({ url, max: 1, timeoutMs: 2_000 });
    try {
      let pid = 0;
      let resume: () => void = () => {};
      const paused = new Promise<void>((r) => {
        resume = r;
      });
      let late: unknown;
      const tx = pool.db.transaction(async (t) => {
        pid = ((await t.execute(raw`select pg_backend_pid() as pid`)) as unknown as { pid: number }[])[0]?.pid as number;
        await paused;
        // The connection was terminated meanwhile, and the pool has reconnected.
        late = await t.execute(raw`insert into outage_marks values ('late')`).catch((e: unknown) => e);
      });
      const txError = tx.catch((e: unknown) => e);
      while (pid === 0) {
        await new Promise((r) => setTimeout(r, 10));
      }
      await admin.sql`select pg_terminate_backend(${pid})`;
      // The pool's one connection is replaced by the next query.
      await pool.sql`select 1`;
      resume();
      expect(isDatabaseUnavailable(await txError)).toBe(true);
      // Let the callback finish its late insert attempt.
      while (late === undefined) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(isDatabaseUnavailable(late)).toBe(true);
      expect(await marked('late')).toBe(false);
      // And the pool is healthy afterwards.
      expect(await pool.sql`select 2 as two`).toEqual([{ two: 2 }]);
    } finally {
      await pool.close();
    }
  });

  it('answers from a fresh connection after the old one was terminated, with its prepared statements prepared again', async () => {
    const pool = createDatabase({ url, max: 1 });
    try {
      const [{ pid }] = (await pool.sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      await admin.sql`select pg_terminate_backend(${pid})`;
      // A query may still meet the dying backend, or fail with it; then a new connection answers
      // the same (prepared) statement, prepared again there.
      let again = pid;
      for (let i = 0; i < 100 && again === pid; i++) {
        try {
          again = ((await pool.sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }])[0].pid;
        } catch (error) {
          expect(isDatabaseUnavailable(error)).toBe(true);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(again).not.toBe(pid);
    } finally {
      await pool.close();
    }
  });

  it('the health probe answers false within its deadline when nothing listens, true when the database answers', async () => {
    const down = createHealthProbe('postgres://postgres@127.0.0.1:1/none', 500);
    const up = createHealthProbe(url, 500);
    try {
      const started = performance.now();
      expect(await down.check()).toBe(false);
      expect(performance.now() - started).toBeLessThan(700);
      expect(await up.check()).toBe(true);
    } finally {
      await Promise.all([down.close(), up.close()]);
    }
  });
});

describe('isDatabaseUnavailable', () => {
  const err = (code: string) => Object.assign(new Error(code), { code });
  it.each([
    'ECONNREFUSED',
    'ECONNRESET',
    'CONNECTION_CLOSED',
    'CONNECT_TIMEOUT',
    'CONNECTION_QUEUE_TIMEOUT',
    '57P01',
    '57P03',
    '08006',
    '08001',
  ])('%s is the database being unavailable', (code) => {
    expect(isDatabaseUnavailable(err(code))).toBe(true);
    // Wrapped, as drizzle wraps a driver error.
    expect(isDatabaseUnavailable(new Error('Failed query', { cause: err(code) }))).toBe(true);
  });
  it('an AggregateError of refused addresses is; a failed statement or a bug is not', () => {
    expect(isDatabaseUnavailable(new AggregateError([err('ECONNREFUSED'), err('ECONNREFUSED')]))).toBe(true);
    for (const code of ['23505', '22P02', '40001', '42P01']) {
      expect(isDatabaseUnavailable(err(code))).toBe(false);
    }
    expect(isDatabaseUnavailable(new TypeError('x is undefined'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});
