/**
 * Usage figures (issue 6 "Figures"), run by bench/run.ts:
 *
 * - usage-single: POST /v1/usage/events, one new event per request (an application secret key),
 *   BENCH_USAGE_CONNECTIONS (64) connections: svc events/s against the naive handler
 *   (bench/usage-baseline.ts: Express 5 + postgres.js, one INSERT ... ON CONFLICT transaction per
 *   request), same database, alternating A, B per round. Target >= 1.5x.
 * - usage-batch: the same route with 100 new events per request: svc events/s against the naive
 *   handler's single-event events/s of the same run. Target >= 20x.
 * - usage-summary: GET /v1/tenants/{id}/usage/summary for last calendar month (day buckets) of an
 *   organization with 5,000,000 events against one with 100,000 (events over the last 90 days,
 *   hourly totals consistent with them), same server, alternating. Target: the large
 *   organization's req/s >= 0.8x the small one's (its time within 25%).
 * - usage-thresholds: POST /v1/usage/events, one new event per request, for an organization whose
 *   plan limits the three event types with usage thresholds (50/80/100%) against one whose plan
 *   has the same limits and no thresholds; same server, alternating slices. Target: thresholds on
 *   >= 0.9x the events/s of thresholds off.
 *
 * Every svc server is a real `svc serve` process (NODE_ENV=production, LOG_LEVEL=warn,
 * WORKER_ENABLED=false, rate limits 1e9/min); the naive handler is its own process too.
 */
import { createHash, randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { type BenchContext, fmt, healthy, positiveSetting, processCpuMs, startServerChild, type Verdict } from './support.ts';

export type UsageBenchContext = BenchContext & { duration: number; warmup: number };
export type UsageVerdict = Verdict;

export const USAGE_TARGETS = { singleMin: 1.5, batchMin: 20, summaryMin: 0.8, thresholdsMin: 0.9 };
export const USAGE_SCENARIOS = ['usage-single', 'usage-batch', 'usage-summary', 'usage-thresholds'] as const;

type Server = { url: string; pid: number | undefined; stop: () => Promise<void>; output: () => string };

async function startServer(
  ctx: UsageBenchContext,
  kind: 'svc' | 'baseline',
  databaseUrl: string,
  encryptionKey: string,
  label: string,
): Promise<Server> {
  const server = await startServerChild(ctx, {
    kind: kind === 'svc' ? 'svc' : 'other',
    label,
    script: kind === 'svc' ? [ctx.cli, 'serve'] : ['bench/usage-baseline.ts'],
    env: {
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'production',
      ENGINE_ISSUER: 'http://127.0.0.1:7151/application/o/svc/',
      SVC_ENCRYPTION_KEY: encryptionKey,
      LOG_LEVEL: 'warn',
      WORKER_ENABLED: 'false',
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
      RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
    },
    ready: healthy,
  });
  return { url: server.url, pid: server.child.pid, stop: server.stop, output: server.output };
}

export type Load = {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: (n: number) => string;
  connections: number;
};
export type Measurement = {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  failed: number;
  seconds: number;
  /** Every response's latency, ms (to merge slices). */
  latencies?: number[];
  /** CPU of the server process and of its PostgreSQL backends during the measurement, ms. */
  serverCpuMs?: number;
  pgCpuMs?: number;
};

async function backendCpu(sql: postgres.Sql): Promise<Map<number, number>> {
  const rows = await sql<
    { pid: number }[]
  >`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
  return new Map(rows.map((r) => [r.pid, processCpuMs(r.pid)]).filter(([, ms]) => Number.isFinite(ms)) as [number, number][]);
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number);
}

/** One autocannon run; POST bodies are built per request (`body(n)`, n counting up) so every event is new. */
export function cannon(url: string, load: Load, seconds: number, counter: { n: number }): Promise<Measurement> {
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}${load.path}`,
        connections: load.connections,
        duration: seconds,
        timeout: 20,
        requests: [
          {
            method: load.method,
            path: load.path,
            headers: load.headers,
            setupRequest: (req: Record<string, unknown>) => (load.body ? { ...req, body: load.body(counter.n++) } : req),
          },
        ],
      },
      (error: Error | null, result: autocannon.Result) => {
        if (error) {
          reject(error);
          return;
        }
        const sorted = Float64Array.from(latencies).sort();
        const secondsRun = result.duration > 0 ? result.duration : seconds;
        resolve({
          rps: result['2xx'] / secondsRun,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          ok: result['2xx'],
          failed: result.non2xx + result.errors + result.timeouts,
          seconds: secondsRun,
          latencies,
        });
      },
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
    });
  });
}

/**
 * Warmup, then the measured run; with `cpu`, also the CPU the server process and its PostgreSQL
 * backends spent during the measured run (a figure other load on the machine does not inflate).
 */
async function measure(
  ctx: UsageBenchContext,
  url: string,
  load: Load,
  counter: { n: number },
  cpu?: { pid: number | undefined; sql: postgres.Sql },
): Promise<Measurement> {
  if (ctx.warmup > 0) {
    await cannon(url, load, ctx.warmup, counter);
  }
  if (!cpu) {
    return cannon(url, load, ctx.duration, counter);
  }
  const serverBefore = processCpuMs(cpu.pid);
  const backendsBefore = await backendCpu(cpu.sql);
  const m = await cannon(url, load, ctx.duration, counter);
  const serverAfter = processCpuMs(cpu.pid);
  const backendsAfter = await backendCpu(cpu.sql);
  let pg = 0;
  for (const [pid, ms] of backendsAfter) {
    pg += ms - (backendsBefore.get(pid) ?? 0);
  }
  return { ...m, serverCpuMs: serverAfter - serverBefore, pgCpuMs: pg };
}

/** CPU (server + PostgreSQL backends) per event, µs. */
const cpuPerEvent = (m: Measurement, perRequest: number) =>
  (((m.serverCpuMs ?? Number.NaN) + (m.pgCpuMs ?? Number.NaN)) * 1000) / (m.ok * perRequest);

/** One request first: the route answers 2xx with the expected body. */
async function check(url: string, load: Load, counter: { n: number }, expect: (status: number, body: unknown) => boolean, label: string) {
  const res = await fetch(`${url}${load.path}`, {
    method: load.method,
    headers: load.headers,
    body: load.body ? load.body(counter.n++) : undefined,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: reported below
  }
  if (!expect(res.status, body)) {
    throw new Error(`${label} ${load.method} ${load.path} answered ${res.status} ${text.slice(0, 300)}`);
  }
}

export type CreatedApp = { secretKey: string; application: { id: string } };

/** A single event and a batch of 100, each with keys no other request uses. */
export function eventBodies(tag: string) {
  const types = ['api_call', 'tokens', 'storage_gb_hours'];
  return {
    single: (n: number) =>
      `{"idempotencyKey":"${tag}-s${n}","eventType":"${types[n % 3]}","quantity":${(n % 7) + 1},"properties":{"route":"/v1/things","region":"eu"}}`,
    batch: (n: number) => {
      const parts: string[] = [];
      for (let i = 0; i < 100; i++) {
        parts.push(
          `{"idempotencyKey":"${tag}-b${n}-${i}","eventType":"${types[i % 3]}","quantity":${(i % 7) + 1},"properties":{"route":"/v1/things","region":"eu"}}`,
        );
      }
      return `{"events":[${parts.join(',')}]}`;
    },
  };
}

type Side = { label: string; rounds: Measurement[] };
/** A measurement as the results file keeps it (without every latency). */
const figures = ({ latencies: _latencies, ...rest }: Measurement) => rest;
const best = (side: Side) => [...side.rounds].sort((a, b) => b.rps - a.rps)[0] as Measurement;
const clean = (...sides: Side[]) => sides.every((s) => s.rounds.every((r) => r.failed === 0 && r.ok > 0));

function line(ctx: UsageBenchContext, scenario: string, round: number, label: string, m: Measurement, perRequest: number) {
  ctx.log(
    `  ${scenario.padEnd(14)} round ${round} ${label.padEnd(34)} ${fmt(m.rps * perRequest, 0).padStart(8)} events/s ` +
      `(${fmt(m.rps, 0)} req/s)  p50 ${fmt(m.p50, 1)} ms  p99 ${fmt(m.p99, 1)} ms  ` +
      `CPU ${fmt(cpuPerEvent(m, perRequest), 0)} µs/event (server ${fmt(((m.serverCpuMs ?? Number.NaN) * 1000) / (m.ok * perRequest), 0)}, PostgreSQL ${fmt(((m.pgCpuMs ?? Number.NaN) * 1000) / (m.ok * perRequest), 0)})` +
      `${m.failed > 0 ? `  FAILED ${m.failed}` : ''}`,
  );
}

/** usage-single and usage-batch: svc and the naive handler on one database, one process at a time. */
async function ingestion(
  ctx: UsageBenchContext,
  wanted: (s: string) => boolean,
  verdicts: UsageVerdict[],
  results: Record<string, unknown>,
) {
  const db = await ctx.createDb('usage_ingest');
  await ctx.runCli(['migrate'], db.url);
  const app = JSON.parse(
    await ctx.runCli(['apps', 'create', '--org', 'bench-usage', '--name', 'Bench usage', '--json'], db.url),
  ) as CreatedApp;
  const encryptionKey = randomBytes(32).toString('base64');
  const connections = positiveSetting('BENCH_USAGE_CONNECTIONS', 64);
  const headers = { authorization: `Bearer ${app.secretKey}`, 'content-type': 'application/json' };
  const naive: Side = { label: 'naive handler, 1 event/request', rounds: [] };
  const single: Side = { label: 'svc, 1 event/request', rounds: [] };
  const batch: Side = { label: 'svc, 100 events/request', rounds: [] };
  const counter = { n: 0 };
  // Reads the backends' pids for the CPU figures (its own backend is left out).
  const probe = postgres(db.url, { max: 1, onnotice: () => {} });
  const isNew = (status: number, body: unknown) => status === 201 && (body as { duplicate?: boolean })?.duplicate === false;
  const isBatch = (status: number, body: unknown) =>
    status === 200 && ((body as { results?: { duplicate: boolean }[] })?.results ?? []).filter((r) => !r.duplicate).length === 100;
  ctx.log(
    `measuring: POST /v1/usage/events at ${connections} connections, svc vs the naive handler (bench/usage-baseline.ts), ` +
      `${ctx.warmup} s warmup + ${ctx.duration} s per measurement, ${ctx.rounds} round(s)`,
  );
  for (let round = 1; round <= ctx.rounds; round++) {
    const tag = `r${round}-${randomBytes(4).toString('hex')}`;
    const bodies = eventBodies(tag);
    for (const kind of round % 2 === 1 ? (['baseline', 'svc'] as const) : (['svc', 'baseline'] as const)) {
      const server = await startServer(ctx, kind, db.url, encryptionKey, kind === 'svc' ? 'svc-usage' : 'usage-baseline');
      try {
        const singleLoad: Load = { path: '/v1/usage/events', method: 'POST', headers, body: bodies.single, connections };
        if (kind === 'baseline') {
          await check(server.url, singleLoad, counter, isNew, 'naive handler');
          const m = await measure(ctx, server.url, singleLoad, counter, { pid: server.pid, sql: probe });
          naive.rounds.push(m);
          line(ctx, 'usage', round, naive.label, m, 1);
          continue;
        }
        if (wanted('usage-single')) {
          await check(server.url, singleLoad, counter, isNew, 'svc');
          const m = await measure(ctx, server.url, singleLoad, counter, { pid: server.pid, sql: probe });
          single.rounds.push(m);
          line(ctx, 'usage-single', round, single.label, m, 1);
        }
        if (wanted('usage-batch')) {
          const batchLoad: Load = { ...singleLoad, body: bodies.batch };
          await check(server.url, batchLoad, counter, isBatch, 'svc');
          const m = await measure(ctx, server.url, batchLoad, counter, { pid: server.pid, sql: probe });
          batch.rounds.push(m);
          line(ctx, 'usage-batch', round, batch.label, m, 100);
        }
      } finally {
        await server.stop();
      }
    }
  }
  await probe.end({ timeout: 2 });
  const base = best(naive);
  const cpuNote = (svc: Measurement, perRequest: number) =>
    `; CPU per event (server + PostgreSQL backends) ${fmt(cpuPerEvent(svc, perRequest), 0)} vs ${fmt(cpuPerEvent(base, 1), 0)} µs = ${fmt(cpuPerEvent(base, 1) / cpuPerEvent(svc, perRequest), 1)}x less`;
  if (single.rounds.length > 0) {
    const s = best(single);
    const ratio = s.rps / base.rps;
    results.single = { naive: naive.rounds.map(figures), svc: single.rounds.map(figures), ratio };
    verdicts.push({
      name: `usage-single: svc events/s >= ${USAGE_TARGETS.singleMin}x naive handler (${connections} conns)`,
      pass: clean(naive, single) && ratio >= USAGE_TARGETS.singleMin,
      detail: `${fmt(s.rps, 0)} vs ${fmt(base.rps, 0)} events/s = ${fmt(ratio, 2)}x (p99 ${fmt(s.p99, 1)} vs ${fmt(base.p99, 1)} ms${cpuNote(s, 1)})${clean(naive, single) ? '' : ' [failed requests]'}`,
    });
  }
  if (batch.rounds.length > 0) {
    const b = best(batch);
    const ratio = (b.rps * 100) / base.rps;
    results.batch = { naive: naive.rounds.map(figures), svc: batch.rounds.map(figures), ratio };
    verdicts.push({
      name: `usage-batch: svc events/s in 100-event requests >= ${USAGE_TARGETS.batchMin}x naive`,
      pass: clean(naive, batch) && ratio >= USAGE_TARGETS.batchMin,
      detail: `${fmt(b.rps * 100, 0)} vs ${fmt(base.rps, 0)} events/s = ${fmt(ratio, 1)}x (${fmt(b.rps, 0)} req/s, p99 ${fmt(b.p99, 1)} ms${cpuNote(b, 100)})${clean(naive, batch) ? '' : ' [failed requests]'}`,
    });
  }
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    // The totals svc kept while ingesting agree with its events (the naive handler keeps none).
    const [check] = await sql<{ events: number; hourly: number }[]>`
      select (select count(*) from usage_events where channel = 'usage' and source_id = ${app.application.id})::float8 as events,
             (select coalesce(sum(events), 0) from usage_hourly)::float8 as hourly`;
    ctx.log(`  check: svc recorded ${check?.events} events; usage_hourly counts ${check?.hourly}`);
    results.hourlyConsistent = check?.events === check?.hourly;
  } finally {
    await sql.end({ timeout: 2 });
  }
}

/**
 * `count` events of one organization, spread evenly over the 90 days before now across three
 * types, inserted with generate_series, then the hourly totals computed from them (what ingestion
 * would have kept).
 */
async function seedEvents(sql: postgres.Sql, tenantId: string, count: number): Promise<void> {
  const span = 90 * 86_400_000;
  await sql`
    insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, properties, source_id, channel, created_at)
    select 'uev_' || substr(md5(${tenantId} || g), 1, 20), ${tenantId}, 'seed-' || g, md5(g::text),
           (array['api_call', 'tokens', 'storage_gb_hours'])[1 + g % 3], 1 + g % 7,
           now() - (${span}::float8 * g / ${count}::float8) * interval '1 millisecond',
           '{"route":"/v1/things"}'::jsonb, null, 'usage',
           now() - (${span}::float8 * g / ${count}::float8) * interval '1 millisecond'
    from generate_series(1, ${count}::int) g`;
  await sql`
    insert into usage_hourly (tenant_id, event_type, hour, events, quantity)
    select tenant_id, event_type, date_trunc('hour', occurred_at, 'UTC'), count(*), sum(quantity)
    from usage_events where tenant_id = ${tenantId} group by 1, 2, 3`;
}

/** An org admin of the organization with a live session (as a sign-in leaves it); its cookie. */
export async function seedAdmin(sql: postgres.Sql, tenantId: string, label: string): Promise<string> {
  const token = createHash('sha256')
    .update(`bench-usage-${label}-${randomBytes(8).toString('hex')}`)
    .digest('hex')
    .replace(/[0189]/g, '2')
    .slice(0, 32);
  const userId = `usr_benchusage${label}`;
  await sql`insert into users (id, engine_subject, email, email_verified, name) values (${userId}, ${`bench-usage-${label}`}, ${`bench-usage-${label}@example.com`}, true, 'Bench')`;
  await sql`insert into memberships (tenant_id, user_id, role_key) values (${tenantId}, ${userId}, 'org_admin')`;
  await sql`
    insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
    values (${`ses_benchusage${label}`}, encode(sha256(convert_to(${token}, 'UTF8')), 'hex'), ${userId}, ${tenantId},
            now() + interval '1 day', now() + interval '7 days', now())`;
  return `svc_session=${token}`;
}

/** Slices per side and round of the summary measurement. */
const SUMMARY_SLICES = 4;

/** One measurement from consecutive slices of the same load. */
function merge(slices: Measurement[]): Measurement {
  const ok = slices.reduce((n, m) => n + m.ok, 0);
  const seconds = slices.reduce((n, m) => n + m.seconds, 0);
  const sorted = Float64Array.from(slices.flatMap((m) => m.latencies ?? [])).sort();
  return {
    rps: ok / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    ok,
    failed: slices.reduce((n, m) => n + m.failed, 0),
    seconds,
  };
}

/**
 * Two loads on one server, each warmed up, then measured in SUMMARY_SLICES slices per side in
 * A B B A order (which side starts alternates per round): a change of the machine's load during
 * the round falls on both sides alike. One merged measurement per side.
 */
async function alternating<K extends string>(
  ctx: UsageBenchContext,
  url: string,
  loads: Record<K, Load>,
  sides: readonly [K, K],
  round: number,
  counter: { n: number },
): Promise<Record<K, Measurement>> {
  for (const which of sides) {
    if (ctx.warmup > 0) {
      await cannon(url, loads[which], ctx.warmup, counter);
    }
  }
  const [a, b] = sides;
  const slices = { [a]: [], [b]: [] } as unknown as Record<K, Measurement[]>;
  for (let i = 0; i < SUMMARY_SLICES; i++) {
    for (const which of (i + round) % 2 === 0 ? [a, b] : [b, a]) {
      slices[which].push(await cannon(url, loads[which], ctx.duration / SUMMARY_SLICES, counter));
    }
  }
  return { [a]: merge(slices[a]), [b]: merge(slices[b]) } as Record<K, Measurement>;
}

/** usage-summary: one server, two organizations (100,000 and 5,000,000 events), alternating. */
async function summary(ctx: UsageBenchContext, verdicts: UsageVerdict[], results: Record<string, unknown>) {
  const small = positiveSetting('BENCH_USAGE_SMALL', ctx.smoke ? 10_000 : 100_000);
  const large = positiveSetting('BENCH_USAGE_LARGE', ctx.smoke ? 200_000 : 5_000_000);
  const db = await ctx.createDb('usage_summary');
  await ctx.runCli(['migrate'], db.url);
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const encryptionKey = randomBytes(32).toString('base64');
  const orgs = { small: 'ten_benchusagesmall00000', large: 'ten_benchusagelarge00000' };
  let cookies: { small: string; large: string };
  try {
    const started = Date.now();
    for (const [label, id] of Object.entries(orgs)) {
      await sql`insert into organizations (id, slug, name) values (${id}, ${`bench-usage-${label}`}, ${`Bench usage ${label}`})`;
    }
    await Promise.all([seedEvents(sql, orgs.small, small), seedEvents(sql, orgs.large, large)]);
    await sql`analyze usage_events`;
    await sql`analyze usage_hourly`;
    cookies = { small: await seedAdmin(sql, orgs.small, 'small'), large: await seedAdmin(sql, orgs.large, 'large') };
    const [counts] = await sql<{ s: number; l: number; h: number }[]>`
      select (select count(*) from usage_events where tenant_id = ${orgs.small})::float8 as s,
             (select count(*) from usage_events where tenant_id = ${orgs.large})::float8 as l,
             (select count(*) from usage_hourly)::float8 as h`;
    ctx.log(
      `setup: usage-summary ${counts?.s.toLocaleString('en-US')} and ${counts?.l.toLocaleString('en-US')} events, ` +
        `${counts?.h.toLocaleString('en-US')} hourly rows, seeded in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  } finally {
    await sql.end({ timeout: 2 });
  }
  const now = new Date();
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString();
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const query = `?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&bucket=day`;
  const connections = positiveSetting('BENCH_CONNECTIONS', 20);
  const loads = {
    small: {
      path: `/v1/tenants/${orgs.small}/usage/summary${query}`,
      method: 'GET',
      headers: { cookie: cookies.small },
      connections,
    } as Load,
    large: {
      path: `/v1/tenants/${orgs.large}/usage/summary${query}`,
      method: 'GET',
      headers: { cookie: cookies.large },
      connections,
    } as Load,
  };
  const sides = {
    small: { label: `${small.toLocaleString('en-US')} events`, rounds: [] } as Side,
    large: { label: `${large.toLocaleString('en-US')} events`, rounds: [] } as Side,
  };
  const days = Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000);
  const expectMonth = (status: number, body: unknown) => {
    const data = (body as { data?: { points: unknown[] }[] })?.data;
    return status === 200 && Array.isArray(data) && data.length === 3 && data.every((d) => d.points.length === days);
  };
  ctx.log(`measuring: GET usage summary of ${from.slice(0, 7)} (day buckets), ${sides.small.label} vs ${sides.large.label}, same server`);
  const counter = { n: 0 };
  for (let round = 1; round <= ctx.rounds; round++) {
    const server = await startServer(ctx, 'svc', db.url, encryptionKey, 'svc-usage-summary');
    try {
      for (const which of ['small', 'large'] as const) {
        await check(server.url, loads[which], counter, expectMonth, `summary ${which}`);
      }
      const measured = await alternating(ctx, server.url, loads, ['small', 'large'], round, counter);
      for (const which of ['small', 'large'] as const) {
        const m = measured[which];
        sides[which].rounds.push(m);
        ctx.log(
          `  usage-summary  round ${round} ${sides[which].label.padEnd(20)} ${fmt(m.rps, 0).padStart(7)} req/s  p50 ${fmt(m.p50, 2)} ms  p99 ${fmt(m.p99, 2)} ms${m.failed > 0 ? `  FAILED ${m.failed}` : ''}`,
        );
      }
    } finally {
      await server.stop();
    }
  }
  const s = best(sides.small);
  const l = best(sides.large);
  const ratio = l.rps / s.rps;
  results.summary = { small: sides.small.rounds.map(figures), large: sides.large.rounds.map(figures), ratio };
  verdicts.push({
    name: `usage-summary: month summary req/s at ${large.toLocaleString('en-US')} events >= ${USAGE_TARGETS.summaryMin}x at ${small.toLocaleString('en-US')}`,
    pass: clean(sides.small, sides.large) && ratio >= USAGE_TARGETS.summaryMin,
    detail: `${fmt(l.rps, 0)} vs ${fmt(s.rps, 0)} req/s = ${fmt(ratio, 2)}x (p50 ${fmt(l.p50, 2)} vs ${fmt(s.p50, 2)} ms)`,
  });
}

/**
 * usage-thresholds: one server, two organizations on plans with the same usage limits (far above
 * what the run records, so nothing is refused), one with the default thresholds (every limited
 * event's transaction locks its counter and reads the month's total), one with none; single
 * events at BENCH_USAGE_CONNECTIONS, in slices A B B A per round.
 */
async function thresholds(ctx: UsageBenchContext, verdicts: UsageVerdict[], results: Record<string, unknown>) {
  const db = await ctx.createDb('usage_thresholds');
  await ctx.runCli(['migrate'], db.url);
  const apps: Record<'on' | 'off', CreatedApp> = {
    on: JSON.parse(await ctx.runCli(['apps', 'create', '--org', 'bench-thresholds-on', '--name', 'Thresholds on', '--json'], db.url)),
    off: JSON.parse(await ctx.runCli(['apps', 'create', '--org', 'bench-thresholds-off', '--name', 'Thresholds off', '--json'], db.url)),
  };
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const limits = JSON.stringify({ api_call: 1e15, tokens: 1e15, storage_gb_hours: 1e15 });
  try {
    for (const [which, thresholdList] of [
      ['on', '{50,80,100}'],
      ['off', '{}'],
    ] as const) {
      const planId = `pln_benchthresholds${which.padEnd(3, '0')}`;
      await sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits, usage_thresholds)
        values (${planId}, ${`bench-thresholds-${which}`}, ${`Thresholds ${which}`}, null, ${limits}::text::jsonb, ${thresholdList}::text::integer[])`;
      await sql`update subscriptions set plan_id = ${planId}
        where tenant_id = (select tenant_id from applications where id = ${apps[which].application.id})`;
    }
  } finally {
    await sql.end({ timeout: 2 });
  }
  const encryptionKey = randomBytes(32).toString('base64');
  const connections = positiveSetting('BENCH_USAGE_CONNECTIONS', 64);
  const sides = {
    on: { label: 'thresholds 50/80/100%', rounds: [] } as Side,
    off: { label: 'no thresholds', rounds: [] } as Side,
  };
  const isNew = (status: number, body: unknown) => status === 201 && (body as { duplicate?: boolean })?.duplicate === false;
  ctx.log(`measuring: POST /v1/usage/events at ${connections} connections, ${sides.on.label} vs ${sides.off.label}, same server`);
  const counter = { n: 0 };
  for (let round = 1; round <= ctx.rounds; round++) {
    const server = await startServer(ctx, 'svc', db.url, encryptionKey, 'svc-usage-thresholds');
    try {
      const tag = `t${round}-${randomBytes(4).toString('hex')}`;
      const loads = {
        on: {
          path: '/v1/usage/events',
          method: 'POST',
          headers: { authorization: `Bearer ${apps.on.secretKey}`, 'content-type': 'application/json' },
          body: eventBodies(`${tag}-on`).single,
          connections,
        } as Load,
        off: {
          path: '/v1/usage/events',
          method: 'POST',
          headers: { authorization: `Bearer ${apps.off.secretKey}`, 'content-type': 'application/json' },
          body: eventBodies(`${tag}-off`).single,
          connections,
        } as Load,
      };
      for (const which of ['on', 'off'] as const) {
        await check(server.url, loads[which], counter, isNew, `thresholds ${which}`).catch((error: Error) => {
          throw new Error(`${error.message}\n${server.output()}`);
        });
      }
      const measured = await alternating(ctx, server.url, loads, ['on', 'off'], round, counter);
      for (const which of ['on', 'off'] as const) {
        const m = measured[which];
        sides[which].rounds.push(m);
        ctx.log(
          `  usage-thresholds round ${round} ${sides[which].label.padEnd(22)} ${fmt(m.rps, 0).padStart(7)} events/s  p50 ${fmt(m.p50, 1)} ms  p99 ${fmt(m.p99, 1)} ms${m.failed > 0 ? `  FAILED ${m.failed}` : ''}`,
        );
      }
    } finally {
      await server.stop();
    }
  }
  const on = best(sides.on);
  const off = best(sides.off);
  const ratio = on.rps / off.rps;
  results.thresholds = { on: sides.on.rounds.map(figures), off: sides.off.rounds.map(figures), ratio };
  verdicts.push({
    name: `usage-thresholds: events/s with usage thresholds >= ${USAGE_TARGETS.thresholdsMin}x without`,
    pass: clean(sides.on, sides.off) && ratio >= USAGE_TARGETS.thresholdsMin,
    detail: `${fmt(on.rps, 0)} vs ${fmt(off.rps, 0)} events/s = ${fmt(ratio, 2)}x (p99 ${fmt(on.p99, 1)} vs ${fmt(off.p99, 1)} ms)`,
  });
}

export async function runUsageBenches(
  ctx: UsageBenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: UsageVerdict[]; results: Record<string, unknown> }> {
  const verdicts: UsageVerdict[] = [];
  const results: Record<string, unknown> = {};
  if (wanted('usage-single') || wanted('usage-batch')) {
    await ingestion(ctx, wanted, verdicts, results);
  }
  if (wanted('usage-summary')) {
    await summary(ctx, verdicts, results);
  }
  if (wanted('usage-thresholds')) {
    await thresholds(ctx, verdicts, results);
  }
  return { verdicts, results };
}
