import { type Column, fillPlaceholders, is, Param, Placeholder, type SQL } from 'drizzle-orm';
import { PgColumn, type PgDialect, type PgPreparedQuery, type PreparedQueryConfig } from 'drizzle-orm/pg-core';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { type PoolStats, trackPool } from './pool-stats.ts';

/** The query builder, with its postgres.js client (`$client`) for the few hand-written hot reads. */
export type Db = PostgresJsDatabase & { $client: postgres.Sql };
/** A transaction handle; queries accept `Db | Tx` so callers choose the transaction. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type DbOrTx = Db | Tx;
export type Sql = postgres.Sql;

export type Database = {
  db: Db;
  sql: Sql;
  close: () => Promise<void>;
  /** How busy the pool is (the `svc_db_pool_*` gauges): pool-stats.ts. */
  pool: PoolStats;
};

/** A startup problem the operator must fix; printed as one line, never as a stack trace. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** The URL with its password replaced, safe to print. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) {
      parsed.password = '***';
    }
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** DATABASE_TIMEOUT_MS's default: how long a request waits for the database before a 503. */
export const DEFAULT_DATABASE_TIMEOUT_MS = 3_000;

/**
 * Seconds before reconnecting after a failed or lost connection: short and jittered, at most half
 * a second, so that the pool is back within a second of the server (postgres.js's default grows
 * to 20 s after a few refusals, which kept svc down long after PostgreSQL was up again).
 * Reconnects only happen for a query that wants a connection, so this is no reconnect storm.
 */
function reconnectDelaySeconds(retries: number): number {
  return Math.min(0.5, 0.05 * 2 ** retries) * (0.5 + Math.random() / 2);
}

export type DatabaseOptions = {
  url: string;
  max?: number;
  applicationName?: string;
  /**
   * DATABASE_TIMEOUT_MS: a connection attempt, and a query waiting for a free connection, give up
   * after this long (CONNECT_TIMEOUT, CONNECTION_QUEUE_TIMEOUT; both `isDatabaseUnavailable`).
   * Statements already running are not cut off. Unset: 10 s to connect, no limit on waiting.
   */
  timeoutMs?: number;
};

export function createDatabase(opts: DatabaseOptions): Database {
  const sql = postgres(opts.url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    connect_timeout: opts.timeoutMs === undefined ? 10 : opts.timeoutMs / 1000,
    queue_timeout: opts.timeoutMs === undefined ? null : opts.timeoutMs / 1000,
    backoff: reconnectDelaySeconds,
    connection: {
      application_name: opts.applicationName ?? 'svc',
      // Named prepared statements (postgres.js tagged templates, drizzle's .prepare()) are the hot
      // key lookups: by default PostgreSQL re-plans them on every execution when it estimates a
      // custom plan cheaper, which for the session read cost more than running it (0.16 ms of
      // planning against 0.10 ms of execution). Unnamed statements are planned once anyway.
      // postgres.js forgets a connection's prepared statements when it reconnects, so they are
      // prepared again on the new connection after an outage.
      plan_cache_mode: 'force_generic_plan',
    },
  });
  const tracked = trackPool(sql, { name: opts.applicationName ?? 'svc', max: opts.max ?? 10 });
  const db = drizzle(sql, { casing: 'snake_case' });
  return {
    db,
    sql,
    close: () => {
      tracked.close();
      return sql.end({ timeout: 5 });
    },
    pool: tracked.stats,
  };
}

/**
 * Error codes of a database that cannot be reached or went away: the socket's, postgres.js's
 * (CONNECTION_QUEUE_TIMEOUT is svc's patch: no connection within DATABASE_TIMEOUT_MS), and
 * PostgreSQL's admin_shutdown, crash_shutdown, cannot_connect_now (starting or stopping),
 * too_many_connections and the whole connection_exception class (08xxx, matched below).
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'CONNECTION_QUEUE_TIMEOUT',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * Whether `error` (or an error it wraps: drizzle's query error, an AggregateError of several
 * addresses) says the database is unreachable rather than that a statement failed. These answer
 * 503 service_unavailable, never 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) {
      return true;
    }
    const inner = (current as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0 && inner.every((e) => isDatabaseUnavailable(e))) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * `/healthz`'s check: `select 1` on a connection of its own, answered false within `timeoutMs`
 * when the server does not answer, so the probe never queues behind a saturated pool and never
 * hangs on a dead one. Concurrent checks share one query.
 */
export function createHealthProbe(url: string, timeoutMs = 800): { check: () => Promise<boolean>; close: () => Promise<void> } {
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: timeoutMs / 1000,
    queue_timeout: timeoutMs / 1000,
    // Probes are rare and their callers want today's answer: reconnect at once.
    backoff: () => 0,
    // No array-type fetch on connect: one round trip fewer inside the deadline.
    fetch_types: false,
    connection: { application_name: 'svc-health' },
  });
  let pending: Promise<boolean> | undefined;
  const check = () => {
    pending ??= new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      const settle = (up: boolean) => {
        clearTimeout(timer);
        resolve(up);
      };
      sql`select 1`.then(
        () => settle(true),
        () => settle(false),
      );
    }).finally(() => {
      pending = undefined;
    });
    return pending;
  };
  return { check, close: () => sql.end({ timeout: 1 }) };
}

/**
 * Connects once so that an unreachable DATABASE_URL fails at startup, naming the setting. A hard
 * deadline is needed: against a server that accepts and hangs up (not PostgreSQL, a proxy, a
 * wrong port) postgres.js reconnects forever and its connect_timeout restarts on every attempt.
 */
export async function assertReachable(url: string, variable = 'DATABASE_URL', deadlineMs = 10_000): Promise<void> {
  let sql: Sql;
  try {
    sql = postgres(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
  } catch (error) {
    throw new StartupError(`${variable} is not a valid PostgreSQL URL: ${(error as Error).message}`);
  }
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no PostgreSQL answer within ${deadlineMs / 1000} s`)), deadlineMs);
  });
  try {
    await Promise.race([sql`select 1`, deadline]);
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    const reason = err.code ? `${err.code} ${err.message}` : err.message;
    throw new StartupError(`cannot reach the database at ${variable}=${redactDatabaseUrl(url)}: ${reason}`);
  } finally {
    clearTimeout(timer);
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

/**
 * Runs `query` as a named prepared statement of the connection at hand (the pool's, or the
 * transaction's): PostgreSQL parses and plans it once per connection (a generic plan,
 * plan_cache_mode above) instead of on every execution, which is what `db.execute` does. For
 * statements on a hot path whose text never changes (values go in parameters, arrays or JSON,
 * never in the text) and whose plan does not hinge on a parameter's value (no LIMIT $n).
 * postgres.js keys prepared statements by text, so a text built per call would pile them up.
 * Rows come back as `db.execute` returns them.
 */
export async function executePrepared<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  const internals = db as unknown as { dialect: PgDialect; session: { client: postgres.Sql } };
  const { sql: text, params } = internals.dialect.sqlToQuery(query);
  return (await internals.session.client.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true })) as unknown as T[];
}

/** What `leanRead` reads off a prepared drizzle statement (postgres-js driver). */
type PreparedInternals = { client: postgres.Sql; queryString: string; params: unknown[]; prepare: boolean };

/** A prepared read run by `leanRead`: every row, or the first (undefined when there is none). */
export type LeanRead<Row> = {
  all: (values: Record<string, unknown>) => Promise<Row[]>;
  first: (values: Record<string, unknown>) => Promise<Row | undefined>;
};

/**
 * Runs a prepared drizzle select straight on postgres.js: the same statement text, parameters and
 * server-side prepare as `prepared.execute(values)`, each value decoded by its column's own
 * `mapFromDriverValue`, without drizzle's per-execution layers (tracing spans, the cache check,
 * the logger and four promises per call). For the reads that every authenticated request makes
 * (its API key, the key's creator, the organization); everything else calls `.execute()`.
 * `fields` are the select's fields in the order selected: `getTableColumns(table)` for a
 * `select()`, the object given to `select({...})` otherwise.
 */
export function leanRead<Row>(
  prepared: PgPreparedQuery<PreparedQueryConfig & { execute: Row[] }>,
  fields: Record<string, Column | SQL | SQL.Aliased>,
): LeanRead<Row> {
  const { client, queryString, params, prepare } = prepared as unknown as PreparedInternals;
  const keys = Object.keys(fields);
  const decoders = keys.map((key) => {
    const field = fields[key];
    return is(field, PgColumn) ? (value: unknown) => field.mapFromDriverValue(value) : undefined;
  });
  const decode = (raw: unknown[]): Row => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const value = raw[i];
      const decoder = decoders[i];
      row[keys[i] as string] = value === null || decoder === undefined ? value : decoder(value);
    }
    return row as Row;
  };
  // Which parameters are placeholders, and their names, read once: drizzle's fillPlaceholders
  // asks each parameter's class on every execution. A placeholder wrapped in a Param (a value
  // its column encodes) keeps drizzle's own filling.
  const names = params.map((p) => (is(p, Placeholder) ? p.name : undefined));
  const fill = params.some((p) => is(p, Param))
    ? (values: Record<string, unknown>) => fillPlaceholders(params, values)
    : (values: Record<string, unknown>) =>
        names.map((name, i) => {
          if (name === undefined) {
            return params[i];
          }
          if (!(name in values)) {
            throw new Error(`No value for placeholder "${name}" was provided`);
          }
          return values[name];
        });
  const run = (values: Record<string, unknown>) =>
    client.unsafe(queryString, fill(values) as postgres.ParameterOrJSON<never>[], { prepare }).values();
  return {
    all: (values) => run(values).then((raw) => raw.map(decode)),
    first: (values) => run(values).then((raw) => (raw.length > 0 ? decode(raw[0] as unknown[]) : undefined)),
  };
}
