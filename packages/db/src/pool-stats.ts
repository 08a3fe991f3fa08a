import type postgres from 'postgres';

/**
 * How busy a postgres.js pool is, for the `svc_db_pool_*` gauges (docs/operations.md "Metrics").
 * postgres.js keeps its connection queues private and has no pool statistics, so this counts at
 * the pool's edge instead, without changing the library:
 *
 * - a query of the pool is counted from the moment postgres.js starts it (Query#handle, the one
 *   method every execution goes through: await, .execute(), .forEach(), a cursor) until its
 *   promise settles, observed with the native Promise#then so nothing is triggered or reordered;
 * - a transaction (`begin`, which Drizzle's `db.transaction` calls) holds a connection from its
 *   start to its end, between its statements too; its statements run on the transaction's own
 *   handler and are not counted twice.
 *
 * Of `max` connections, `inUse` are taken by those; what is beyond `max` waits, queued or
 * pipelined behind a busy connection, and that is `waiting`.
 */
export type PoolStats = { name: string; max: number; inUse: () => number; waiting: () => number };

type QueryLike = { executed: boolean; handler: unknown };
type QueryPrototype = { handle: (this: QueryLike) => Promise<void> } & { [WRAPPED]?: true };

const WRAPPED = Symbol('svc pool stats');
/** Busy count per pool, found by the pool's query handler (each postgres() instance has its own). */
const busyByHandler = new WeakMap<object, { busy: number }>();
const live = new Set<PoolStats>();
/** Off until metrics are served (countPools): without them a query pays one boolean check. */
let counting = false;

/** Starts the counting (the metrics' first registration calls it); pools report from then on. */
export function countPools(): void {
  counting = true;
}

/** Every pool of this process still open, for the gauges. */
export function openPools(): Iterable<PoolStats> {
  return live;
}

function wrapQueries(sql: postgres.Sql): void {
  // A query is built lazily: making one runs nothing. Its prototype is postgres.js's Query.
  const proto = Object.getPrototypeOf(sql`select 1`) as QueryPrototype;
  if (proto[WRAPPED]) {
    return;
  }
  const handle = proto.handle;
  proto.handle = function handleCounted(this: QueryLike) {
    const counter = !counting || this.executed ? undefined : busyByHandler.get(this.handler as object);
    if (counter) {
      counter.busy++;
      const done = () => {
        counter.busy--;
      };
      // Promise#then itself, not Query#then (which would start the query): a reaction only.
      Promise.prototype.then.call(this, done, done);
    }
    return handle.call(this);
  };
  proto[WRAPPED] = true;
}

/** Starts counting `sql`'s queries and transactions; `close` stops reporting the pool. */
export function trackPool(sql: postgres.Sql, opts: { name: string; max: number }): { stats: PoolStats; close: () => void } {
  wrapQueries(sql);
  const counter = { busy: 0 };
  const handler = (sql`select 1` as unknown as QueryLike).handler as object;
  busyByHandler.set(handler, counter);
  const begin = sql.begin.bind(sql) as (...args: unknown[]) => Promise<unknown>;
  // An own property of this pool's instance: Drizzle's db.transaction calls client.begin.
  (sql as unknown as { begin: typeof begin }).begin = async (...args: unknown[]) => {
    if (!counting) {
      return begin(...args);
    }
    counter.busy++;
    try {
      return await begin(...args);
    } finally {
      counter.busy--;
    }
  };
  const stats: PoolStats = {
    name: opts.name,
    max: opts.max,
    inUse: () => Math.min(opts.max, counter.busy),
    waiting: () => Math.max(0, counter.busy - opts.max),
  };
  live.add(stats);
  return { stats, close: () => live.delete(stats) };
}
