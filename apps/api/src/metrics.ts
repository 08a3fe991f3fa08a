import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Db } from '@svc/db/client';
import { openPools } from '@svc/db/pool-stats';
import { countJobsByTaskAndState, oldestWaitingByTask } from '@svc/db/queries/job-queue';
import { Counter, Gauge, Histogram, register } from 'prom-client';

/**
 * svc's Prometheus metrics (docs/operations.md "Metrics"), on prom-client's default registry,
 * which the job worker's metrics (packages/jobs/src/metrics.ts) share. Served by `/metrics`
 * (http/metrics-endpoint.ts) when METRICS_TOKEN or METRICS_PORT is set. No label carries a user,
 * key, organization, session or any path a client made up: routes are templates.
 */
function counter(name: string, help: string, labelNames: readonly string[]): Counter<string> {
  return (register.getSingleMetric(name) as Counter<string> | undefined) ?? new Counter({ name, help, labelNames });
}

/** HTTP requests, by method, route template and status. */
export const httpRequests = counter('svc_http_requests_total', 'HTTP requests answered, by method, route template and status.', [
  'method',
  'route',
  'status',
]);

/** How long requests took to answer, by method and route template. */
export const httpRequestSeconds =
  (register.getSingleMetric('svc_http_request_duration_seconds') as Histogram<string> | undefined) ??
  new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method and route template.',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });

/** Tokens svc's OpenID Provider issued, by grant type. */
export const tokensIssued = counter(
  'svc_oidc_tokens_issued_total',
  "Token endpoint grants svc's OpenID Provider answered with tokens, by grant type.",
  ['grant_type'],
);

/** Requests refused by a rate limit, by its class (public, backend, sign-in, ...). */
export const rateLimitRefusals = counter('svc_rate_limit_refusals_total', 'Requests refused with 429, by rate-limit class.', ['class']);

/** svc sessions opened. */
export const sessionsCreated = counter('svc_sessions_created_total', 'svc sessions opened (sign-ins).', []);

/** svc sessions ended, by how (signed out, revoked, expired, ...). */
export const sessionsEnded = counter('svc_sessions_ended_total', 'svc sessions ended, by reason.', ['reason']);

/** Usage events recorded, and submissions refused by the subscription rule (402), by channel. */
export const usageEventsAccepted = counter('svc_usage_events_accepted_total', 'Usage events recorded, by channel.', ['channel']);
export const usageEventsRefused = counter(
  'svc_usage_events_refused_total',
  'Usage submissions refused by the subscription rule (402), by channel and code.',
  ['channel', 'code'],
);

/** The route template a request was matched to, set by the adapter that matched it. */
const ROUTE = Symbol('svc.route');
type Routed = IncomingMessage & { [ROUTE]?: string };

/** Names the route template of a request (`/v1/tenants/{id}`), for its metrics. */
export function markRoute(req: IncomingMessage, route: string): void {
  (req as Routed)[ROUTE] = route;
}

/** svc's own top-level paths; anything else is `other`, so a scan of made-up paths adds no series. */
const TOP_LEVEL = new Set([
  '',
  'healthz',
  'readyz',
  'metrics',
  'signin',
  'signup',
  'sign-in',
  'sign-up',
  'user',
  'docs',
  'llms.txt',
  'favicon.ico',
  'invitations',
  'claim',
  'trpc',
  'v1',
]);
/** Second segments kept under these first ones: a fixed vocabulary, never an id or a token. */
const NAMED_SECOND = new Set(['oidc', 'auth', '.well-known']);

/**
 * The label of a request's route: the template its adapter matched (markRoute), else its first
 * path segment (and, under /oidc, /auth and /.well-known, a second one made of letters, dashes
 * and underscores only). An unknown path, or any 404, is `unmatched`.
 */
export function routeOf(req: IncomingMessage, path: string, status: number): string {
  const marked = (req as Routed)[ROUTE];
  if (marked) {
    return marked;
  }
  if (status === 404) {
    return 'unmatched';
  }
  const segments = path.split('/');
  const first = (segments[1] ?? '').toLowerCase();
  if (NAMED_SECOND.has(first)) {
    const second = (segments[2] ?? '').toLowerCase();
    return /^[a-z_-]{1,40}$/.test(second) ? `/${first}/${second}` : `/${first}`;
  }
  return TOP_LEVEL.has(first) ? `/${first}` : 'other';
}

/** What observeRequest keeps on a response until it finishes (no closure per request). */
const OBSERVED = Symbol('svc.observedRequest');
type Observed = ServerResponse & { [OBSERVED]?: { req: IncomingMessage; path: string; started: number } };

/** Counts the request and its duration once it is answered. */
export function observeRequest(req: IncomingMessage, res: ServerResponse, path: string): void {
  (res as Observed)[OBSERVED] = { req, path, started: performance.now() };
  res.on('finish', onAnswered);
}

function onAnswered(this: Observed): void {
  const observed = this[OBSERVED];
  if (!observed) {
    return;
  }
  this[OBSERVED] = undefined;
  const method = observed.req.method ?? 'GET';
  const route = routeOf(observed.req, observed.path, this.statusCode);
  httpRequests.inc({ method, route, status: String(this.statusCode) });
  httpRequestSeconds.observe({ method, route }, (performance.now() - observed.started) / 1000);
}

/** A pool gauge read at each scrape: `value` of every open pool, summed by pool name. */
function poolGauge(name: string, help: string, value: (pool: { max: number; inUse: () => number; waiting: () => number }) => number) {
  new Gauge({
    name,
    help,
    labelNames: ['pool'],
    collect() {
      this.reset();
      const byName = new Map<string, number>();
      for (const pool of openPools()) {
        byName.set(pool.name, (byName.get(pool.name) ?? 0) + value(pool));
      }
      for (const [pool, n] of byName) {
        this.set({ pool }, n);
      }
    },
  });
}

/**
 * Gauges read when /metrics is scraped: the job queue per task (waiting jobs, the oldest waiting
 * one's age) from PostgreSQL, and this process's database pools (packages/db/src/pool-stats.ts,
 * by application name: `svc-api`, `svc-worker`, ...). One registration per process; `db` is the
 * last server's.
 */
let scrapeDb: Db | undefined;
export function collectFrom(db: Db): void {
  scrapeDb = db;
  if (register.getSingleMetric('svc_jobs_waiting')) {
    return;
  }
  poolGauge('svc_db_pool_connections_max', 'Connections a database pool may open, by pool.', (p) => p.max);
  poolGauge('svc_db_pool_in_use', 'Pool connections running a query or holding a transaction, by pool.', (p) => p.inUse());
  poolGauge(
    'svc_db_pool_waiting',
    'Queries and transactions beyond the pool size, waiting for a connection (queued or pipelined), by pool.',
    (p) => p.waiting(),
  );
  new Gauge({
    name: 'svc_jobs_waiting',
    help: 'Jobs due and waiting for a worker, by task.',
    labelNames: ['task'],
    async collect() {
      this.reset();
      if (!scrapeDb) {
        return;
      }
      for (const row of await countJobsByTaskAndState(scrapeDb)) {
        this.set({ task: row.task }, row.waiting);
      }
    },
  });
  new Gauge({
    name: 'svc_jobs_oldest_waiting_seconds',
    help: 'Age of the job that has waited longest since it was due, by task.',
    labelNames: ['task'],
    async collect() {
      this.reset();
      if (!scrapeDb) {
        return;
      }
      for (const row of await oldestWaitingByTask(scrapeDb)) {
        this.set({ task: row.task }, row.ageSeconds);
      }
    },
  });
}
