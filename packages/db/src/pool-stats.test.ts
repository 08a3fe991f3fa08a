import { setTimeout as sleep } from 'node:timers/promises';
import { sql as raw } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { createDatabase, type Database } from './client.ts';
import { openPools } from './pool-stats.ts';

/**
 * The pool gauges' counts (docs/operations.md "Metrics"): connections taken by running queries
 * and open transactions, what waits beyond the pool size, and nothing left counted afterwards,
 * whether the queries succeed or fail.
 */
describe('database pool stats', () => {
  let url: string;
  let database: Database;

  beforeAll(async () => {
    url = await createTestDatabase();
    database = createDatabase({ url, max: 2, applicationName: 'svc-pool-test' });
    await database.sql`select 1`;
  });

  afterAll(async () => {
    await database?.close();
  });

  /** Polls until `check` holds (the counts change when postgres.js starts a query, a tick later). */
  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 100 && !check(); i++) {
      await sleep(5);
    }
  }

  it('five queries on a pool of two: two in use, three waiting, then none', async () => {
    expect(database.pool).toMatchObject({ name: 'svc-pool-test', max: 2 });
    expect([...openPools()]).toContain(database.pool);
    const running = Array.from({ length: 5 }, () => database.sql`select pg_sleep(0.3)`.then(() => 'ok'));
    await until(() => database.pool.waiting() === 3);
    expect(database.pool.inUse()).toBe(2);
    expect(database.pool.waiting()).toBe(3);
    expect(await Promise.all(running)).toEqual(Array(5).fill('ok'));
    expect(database.pool.inUse()).toBe(0);
    expect(database.pool.waiting()).toBe(0);
  });

  it('Drizzle queries and a failing query are counted and released', async () => {
    // Drizzle builds lazily: then() starts it.
    const query = database.db.execute(raw`select pg_sleep(0.3)`).then(() => true);
    await until(() => database.pool.inUse() === 1);
    expect(database.pool.inUse()).toBe(1);
    // A failure releases its count: only the Drizzle query is still running after it.
    expect(await database.sql`select * from no_such_table`.catch((error: Error) => error.message)).toMatch(/no_such_table/);
    expect(database.pool.inUse()).toBe(1);
    await query;
    expect(database.pool.inUse()).toBe(0);
  });

  it('an open transaction holds its connection between its statements', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tx = database.db.transaction(async (t) => {
      await t.execute(raw`select 1`);
      await held;
      await t.execute(raw`select 2`);
    });
    await until(() => database.pool.inUse() === 1);
    await sleep(50);
    // Between its statements, nothing runs, and the connection is still taken.
    expect(database.pool.inUse()).toBe(1);
    release();
    await tx;
    expect(database.pool.inUse()).toBe(0);
  });

  it('a closed pool is no longer reported', async () => {
    const other = createDatabase({ url, max: 1, applicationName: 'svc-pool-closed' });
    expect([...openPools()].map((p) => p.name)).toContain('svc-pool-closed');
    await other.close();
    expect([...openPools()].map((p) => p.name)).not.toContain('svc-pool-closed');
  });
});
