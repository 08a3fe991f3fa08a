import type postgres from 'postgres';

/**
 * How busy a postgres.js pool is, for the `svc_db_pool_*` gauges (docs/operations.md "Metrics").
 * postgres.js keeps its connection queues private; svc's patch of it (patches/postgres@3.4.9.patch)
 * adds `sql.stats()`, which reads them when asked: nothing is counted per query, so a process
 * whose metrics are never scraped pays nothing, and one that is pays a loop over its pool's
 * connections per scrape.
 *
 * - in use: connections connecting for a query, running or pipelining queries, or held by a
 *   transaction (`begin`, which Drizzle's `db.transaction` calls), between its statements too;
 * - waiting: queries queued for a connection, and those pipelined behind a running one.
 */
export type PoolStats = { name: string; max: number; inUse: () => number; waiting: () => number };

type Counted = { stats: () => { inUse: number; waiting: number } };

const live = new Set<PoolStats>();

/** Every pool of this process still open, for the gauges. */
export function openPools(): Iterable<PoolStats> {
  return live;
}

/** Reports `sql`'s pool from now on; `close` stops reporting it. */
export function trackPool(sql: postgres.Sql, opts: { name: string; max: number }): { stats: PoolStats; close: () => void } {
  const counted = sql as unknown as Partial<Counted>;
  if (typeof counted.stats !== 'function') {
    throw new Error('postgres.js without svc patch: sql.stats() is missing (pnpm install applies patches/postgres@3.4.9.patch)');
  }
  const read = counted.stats.bind(sql);
  const stats: PoolStats = {
    name: opts.name,
    max: opts.max,
    inUse: () => read().inUse,
    waiting: () => read().waiting,
  };
  live.add(stats);
  return { stats, close: () => live.delete(stats) };
}
