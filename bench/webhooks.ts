import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { createDatabase } from '../packages/db/src/client.ts';
import { recordEvent } from '../packages/db/src/queries/webhook-events.ts';
import { createSecretBox } from '../packages/db/src/secret-box.ts';
import { DISPATCH_CONCURRENCY } from '../packages/jobs/src/webhooks/dispatch.ts';
import { generateWebhookSecret, sealWebhookSecret } from '../packages/jobs/src/webhooks/secrets.ts';
import { webhookBody, webhookHeaders } from '../packages/jobs/src/webhooks/signing.ts';
import {
  type BenchContext,
  type Child,
  fmt,
  healthy,
  positiveSetting,
  processCpuMs,
  spawnChild,
  startServerChild,
  type Verdict,
} from './support.ts';

export type WebhookBenchContext = BenchContext;
export type WebhookVerdict = Verdict;

export const WEBHOOK_TARGETS = { throughputMin: 0.5, latencyP95MaxMs: 250 };

type ReceiverStats = { requests: number; unique: number; badSignatures: number; firstAt: number; lastAt: number; latencies: number[] };

const TENANT_ID = 'ten_benchwebhooks';
// `wh_` + 20 characters: the shape the API's {id} routes accept (webhook-replay calls one).
const ENDPOINT_ID = 'wh_benchwebhooks0000000';
const SLUG = 'bench-webhooks';
const EVENT_TYPE = 'user.created';

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) {
    return Number.NaN;
  }
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

function start(ctx: WebhookBenchContext, script: string[], env: NodeJS.ProcessEnv, kind: 'svc' | 'other', label: string): Child {
  return spawnChild(ctx, { kind, label, script, env, graceMs: 20_000 });
}

async function waitForOutput(proc: Child, pattern: RegExp, what: string, timeoutMs = 60_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(proc.output());
    if (match) {
      return match;
    }
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${what} exited before it was ready:\n${proc.output()}`);
    }
    if (Date.now() > deadline) {
      await proc.stop();
      throw new Error(`${what} not ready within ${timeoutMs / 1000} s:\n${proc.output()}`);
    }
    await sleep(50);
  }
}

type Receiver = {
  url: string;
  hookUrl: string;
  stats: () => Promise<ReceiverStats>;
  reset: () => Promise<void>;
  stop: () => Promise<void>;
  /** The receiver process's CPU so far, ms. */
  cpuMs: () => number;
};

async function startReceiver(ctx: WebhookBenchContext, secret: string): Promise<Receiver> {
  const port = await ctx.freePort();
  const proc = start(
    ctx,
    ['bench/webhook-receiver.ts'],
    { PORT: String(port), HOST: '127.0.0.1', WEBHOOK_SECRET: secret },
    'other',
    'receiver',
  );
  await waitForOutput(proc, /webhook-receiver listening/, 'the webhook receiver');
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    hookUrl: `${url}/hooks/bench`,
    stats: async () => (await (await fetch(`${url}/stats`)).json()) as ReceiverStats,
    reset: async () => {
      await (await fetch(`${url}/reset`, { method: 'POST' })).arrayBuffer();
    },
    stop: proc.stop,
    cpuMs: () => processCpuMs(proc.child.pid),
  };
}

/** The bench organization and its one endpoint, delivering to the receiver with `secret`. */
async function seedEndpoint(sql: postgres.Sql, key: Buffer, receiverUrl: string, secret: string): Promise<void> {
  const sealed = sealWebhookSecret(createSecretBox(key), ENDPOINT_ID, secret);
  await sql`insert into organizations (id, slug, name) values (${TENANT_ID}, ${SLUG}, 'Bench webhooks')`;
  await sql`
    insert into webhook_endpoints (id, tenant_id, url, event_types, secret_ciphertext)
    values (${ENDPOINT_ID}, ${TENANT_ID}, ${receiverUrl}, ${[EVENT_TYPE]}::text[], ${sealed})`;
}

/** No events, deliveries or dispatch jobs left from a previous measurement. */
async function clearDeliveries(sql: postgres.Sql): Promise<void> {
  await sql`truncate webhook_delivery_attempts, webhook_deliveries, webhook_events`;
  await sql`delete from graphile_worker._private_jobs where task_id in
    (select id from graphile_worker._private_tasks where identifier = 'webhooks:dispatch')`;
}

/**
 * `count` events with a user-shaped payload (~250 bytes of data) and one pending delivery each,
 * due now, as recordEvent leaves them; previous rounds' rows are removed first.
 */
async function seedDeliveries(sql: postgres.Sql, count: number, round: number): Promise<void> {
  await clearDeliveries(sql);
  await sql`
    insert into webhook_events (id, tenant_id, type, data, created_at)
    select 'evt_r' || ${round}::int || 'n' || g, ${TENANT_ID}, ${EVENT_TYPE},
           jsonb_build_object(
             'object', 'user',
             'id', 'usr_' || substr(md5('u' || g), 1, 20),
             'email', 'bench-user-' || g || '@example.com',
             'name', 'Bench User ' || g,
             'emailVerified', true,
             'createdAt', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'organizationId', ${TENANT_ID}::text),
           now()
    from generate_series(1, ${count}::int) g`;
  await sql`
    insert into webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, status, next_attempt_at)
    select 'whd_r' || ${round}::int || 'n' || g, ${TENANT_ID}, ${ENDPOINT_ID}, 'evt_r' || ${round}::int || 'n' || g,
           ${EVENT_TYPE}, 'pending', now()
    from generate_series(1, ${count}::int) g`;
  await sql`analyze webhook_events`;
  await sql`analyze webhook_deliveries`;
  // The seeding's own row counts must be in pg_stat_database before the run's are measured.
  await sql`select pg_stat_force_next_flush()`;
  await sql`select 1`;
}

function workerEnv(databaseUrl: string, encryptionKey: string): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: databaseUrl,
    NODE_ENV: 'production',
    PUBLIC_URL: 'http://127.0.0.1:7150',
    ENGINE_ISSUER: 'http://127.0.0.1:7151/application/o/svc/',
    SVC_ENCRYPTION_KEY: encryptionKey,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
  };
}

type ThroughputRound = {
  side: 'baseline' | 'svc';
  deliveries: number;
  seconds: number;
  rps: number;
  requests: number;
  badSignatures: number;
  /** CPU time of the sending process (the worker after its boot, or the baseline script). */
  cpuMs: number;
  /** svc only: what PostgreSQL did for the run (transactions and rows, from pg_stat_database). */
  db?: DbCounters;
  /** svc only: CPU of the PostgreSQL backends serving the bench database during the run. */
  pgCpuMs?: number;
  /** svc only: CPU of autovacuum on the bench database during the run. */
  vacuumCpuMs?: number;
  /** The receiver's CPU during the run (the same work on both sides). */
  receiverCpuMs: number;
};

/**
 * CPU so far of every PostgreSQL process working on the bench database (but this connection), by
 * pid: the worker's connections and, separately counted, autovacuum (the dead rows the run's
 * updates leave are its cost too).
 */
async function backendCpu(sql: postgres.Sql): Promise<Map<number, { ms: number; vacuum: boolean }>> {
  const rows = await sql<{ pid: number; backend_type: string }[]>`
    select pid, backend_type from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
  const out = new Map<number, { ms: number; vacuum: boolean }>();
  for (const r of rows) {
    const ms = processCpuMs(r.pid);
    if (Number.isFinite(ms)) {
      out.set(r.pid, { ms, vacuum: r.backend_type.startsWith('autovacuum') });
    }
  }
  return out;
}

type DbCounters = { xactCommit: number; tupInserted: number; tupUpdated: number; tupDeleted: number; tupReturned: number };

async function dbCounters(sql: postgres.Sql): Promise<DbCounters> {
  const [row] = await sql<DbCounters[]>`
    select xact_commit::float8 as "xactCommit", tup_inserted::float8 as "tupInserted", tup_updated::float8 as "tupUpdated",
           tup_deleted::float8 as "tupDeleted", tup_returned::float8 as "tupReturned"
    from pg_stat_database where datname = current_database()`;
  if (!row) {
    throw new Error('pg_stat_database has no row for the bench database');
  }
  return row;
}

function diffCounters(after: DbCounters, before: DbCounters): DbCounters {
  return {
    xactCommit: after.xactCommit - before.xactCommit,
    tupInserted: after.tupInserted - before.tupInserted,
    tupUpdated: after.tupUpdated - before.tupUpdated,
    tupDeleted: after.tupDeleted - before.tupDeleted,
    tupReturned: after.tupReturned - before.tupReturned,
  };
}

async function throughput(
  ctx: WebhookBenchContext,
  databaseUrl: string,
  sql: postgres.Sql,
  receiver: Receiver,
  env: NodeJS.ProcessEnv,
  secret: string,
) {
  const count = Math.round(positiveSetting('BENCH_WEBHOOK_DELIVERIES', ctx.smoke ? 1_000 : 10_000));
  ctx.log(
    `measuring: webhook-throughput (${count.toLocaleString('en-US')} pending deliveries, one receiver, ` +
      `${DISPATCH_CONCURRENCY} in flight both sides)`,
  );
  const rounds: ThroughputRound[] = [];
  for (let round = 1; round <= ctx.rounds; round++) {
    await seedDeliveries(sql, count, round);
    const order: ('baseline' | 'svc')[] = round % 2 === 1 ? ['baseline', 'svc'] : ['svc', 'baseline'];
    for (const side of order) {
      await receiver.reset();
      const receiverCpuAtStart = receiver.cpuMs();
      let seconds: number;
      let diagnostics: { cpuMs: number; db?: DbCounters; pgCpuMs?: number; vacuumCpuMs?: number } = { cpuMs: Number.NaN };
      if (side === 'baseline') {
        const proc = start(
          ctx,
          ['bench/webhook-baseline.ts'],
          { DATABASE_URL: databaseUrl, RECEIVER_URL: receiver.hookUrl, WEBHOOK_SECRET: secret, CONCURRENCY: String(DISPATCH_CONCURRENCY) },
          'other',
          'webhook-baseline',
        );
        const code = await proc.exited;
        const line = /\{.*"sent".*\}/.exec(proc.output())?.[0];
        if (code !== 0 || !line) {
          throw new Error(`webhook baseline failed (${code}):\n${proc.output()}`);
        }
        const result = JSON.parse(line) as { sent: number; failed: number; cpuMs: number };
        diagnostics = { cpuMs: result.cpuMs };
        if (result.failed > 0) {
          throw new Error(`webhook baseline: ${result.failed} POSTs failed`);
        }
        const stats = await receiver.stats();
        seconds = (stats.lastAt - stats.firstAt) / 1000;
      } else {
        const worker = start(ctx, [ctx.cli, 'worker'], env, 'svc', 'webhook-throughput');
        let cpuMs = Number.NaN;
        let pgCpuMs = 0;
        let vacuumCpuMs = 0;
        let db: DbCounters | undefined;
        try {
          await waitForOutput(worker, /svc worker running/, 'svc worker');
          // Boot (tsx, migrations check) is not the engine's cost: count from here.
          const cpuAtStart = processCpuMs(worker.child.pid);
          const dbAtStart = await dbCounters(sql);
          const backendsAtStart = await backendCpu(sql);
          await waitForReceiver(receiver, count, 600_000);
          const deadline = Date.now() + 60_000;
          for (;;) {
            const [row] = await sql<{ done: number; failed: number }[]>`
              select count(*) filter (where status = 'succeeded')::int as done,
                     count(*) filter (where status = 'failed')::int as failed
              from webhook_deliveries`;
            if ((row?.done ?? 0) + (row?.failed ?? 0) >= count) {
              if ((row?.failed ?? 0) > 0) {
                throw new Error(`webhook-throughput: ${row?.failed} deliveries failed:\n${worker.output()}`);
              }
              break;
            }
            if (Date.now() > deadline || worker.child.exitCode !== null) {
              throw new Error(`webhook-throughput: ${row?.done ?? 0} of ${count} succeeded before the deadline:\n${worker.output()}`);
            }
            await sleep(100);
          }
          cpuMs = processCpuMs(worker.child.pid) - cpuAtStart;
          const backendsAtEnd = await backendCpu(sql);
          for (const [pid, end] of backendsAtEnd) {
            const used = end.ms - (backendsAtStart.get(pid)?.ms ?? 0);
            if (end.vacuum) {
              vacuumCpuMs += used;
            } else {
              pgCpuMs += used;
            }
          }
          // PostgreSQL publishes its statistics within a second of a transaction's end.
          await sleep(1_200);
          db = diffCounters(await dbCounters(sql), dbAtStart);
        } finally {
          await worker.stop();
        }
        const stats = await receiver.stats();
        // Until the last attempt was recorded: succeeded_at is the recording statement's time.
        const [last] = await sql<{ at: number }[]>`
          select extract(epoch from max(succeeded_at))::float8 * 1000 as at from webhook_deliveries`;
        seconds = ((last?.at ?? stats.lastAt) - stats.firstAt) / 1000;
        diagnostics = { cpuMs, db, pgCpuMs, vacuumCpuMs };
      }
      const stats = await receiver.stats();
      if (stats.unique !== count || stats.badSignatures > 0) {
        throw new Error(
          `webhook-throughput ${side}: the receiver saw ${stats.unique} of ${count} webhook-ids (${stats.badSignatures} bad signatures)`,
        );
      }
      const m: ThroughputRound = {
        side,
        deliveries: count,
        seconds,
        rps: count / seconds,
        cpuMs: diagnostics.cpuMs,
        receiverCpuMs: receiver.cpuMs() - receiverCpuAtStart,
        pgCpuMs: diagnostics.pgCpuMs,
        vacuumCpuMs: diagnostics.vacuumCpuMs,
        db: diagnostics.db,
        requests: stats.requests,
        badSignatures: stats.badSignatures,
      };
      rounds.push(m);
      ctx.log(
        `  webhook-throughput   round ${round} ${side.padEnd(10)} ${fmt(m.rps, 0).padStart(7)} deliveries/s ` +
          `(${count} in ${fmt(seconds, 2)} s${stats.requests > count ? `, ${stats.requests - count} duplicate sends` : ''}; ` +
          `CPU per delivery: sender ${fmt((m.cpuMs * 1000) / count, 0)} us, receiver ${fmt((m.receiverCpuMs * 1000) / count, 0)} us` +
          (m.db
            ? `; PostgreSQL: ${fmt(((m.pgCpuMs ?? Number.NaN) * 1000) / count, 0)} us CPU ` +
              `(+ ${fmt(((m.vacuumCpuMs ?? Number.NaN) * 1000) / count, 0)} us autovacuum), ` +
              `${fmt(m.db.xactCommit / count, 3)} transactions, ${fmt((m.db.tupInserted + m.db.tupUpdated + m.db.tupDeleted) / count, 2)} rows written per delivery`
            : '') +
          ')',
      );
    }
  }
  const best = (side: 'baseline' | 'svc') => Math.max(...rounds.filter((r) => r.side === side).map((r) => r.rps));
  return { rounds, baselineRps: best('baseline'), svcRps: best('svc'), ratio: best('svc') / best('baseline') };
}

type LatencySide = {
  side: 'floor' | 'svc';
  events: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  lateTicks: number;
  /** svc: from the event's transaction to the attempt's start (the time spent queued), ms. */
  queue?: { p50: number; p95: number; p99: number };
};

/**
 * `rate` events/s for `seconds`, each its own transaction calling recordEvent with
 * `data.committedAt` stamped inside the transaction; `afterCommit` runs once COMMIT returned.
 */
async function generate(
  db: ReturnType<typeof createDatabase>['db'],
  rate: number,
  seconds: number,
  afterCommit: ((event: { id: string; committedAt: number }) => Promise<void>) | null,
): Promise<{ ids: string[]; lateTicks: number }> {
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const begin = performance.now();
  const pending = new Set<Promise<void>>();
  const ids: string[] = [];
  let lateTicks = 0;
  for (let i = 0; i < total; i++) {
    const due = begin + i * interval;
    const wait = due - performance.now();
    if (wait > 0) {
      await sleep(wait);
    } else if (wait < -interval) {
      lateTicks++;
    }
    const work = (async () => {
      let committedAt = 0;
      const event = await db.transaction(async (tx) => {
        committedAt = performance.timeOrigin + performance.now();
        return recordEvent(tx, { tenantId: TENANT_ID, type: EVENT_TYPE, data: { n: i, committedAt } });
      });
      ids.push(event.id);
      await afterCommit?.({ id: event.id, committedAt });
    })().finally(() => pending.delete(work));
    pending.add(work);
  }
  await Promise.all(pending);
  return { ids, lateTicks };
}

async function latency(
  ctx: WebhookBenchContext,
  databaseUrl: string,
  sql: postgres.Sql,
  receiver: Receiver,
  env: NodeJS.ProcessEnv,
  secret: string,
) {
  const rate = positiveSetting('BENCH_WEBHOOK_RATE', 100);
  const seconds = positiveSetting('BENCH_WEBHOOK_SECONDS', ctx.smoke ? 2 : 10);
  const warmup = ctx.smoke ? 0 : 2;
  ctx.log(`measuring: webhook-latency (${rate} events/s for ${seconds} s after ${warmup} s warmup, commit to receiver)`);
  const database = createDatabase({ url: databaseUrl, max: 10, applicationName: 'bench-webhook-events' });
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const hook = new URL(receiver.hookUrl);
  // The floor: POST the event from this process the moment its COMMIT returned.
  const postNow = (event: { id: string; committedAt: number }) =>
    new Promise<void>((resolve, reject) => {
      const body = webhookBody({
        id: event.id,
        type: EVENT_TYPE,
        createdAt: new Date(),
        dataJson: JSON.stringify({ n: 0, committedAt: event.committedAt }),
      });
      const req = http.request(hook, { method: 'POST', agent, headers: webhookHeaders({ id: event.id, body, keys: [key] }) });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`floor POST answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });

  const measureSide = async (side: 'floor' | 'svc'): Promise<LatencySide> => {
    // Both sides commit the same transactions (event, delivery, dispatch job); on the floor's
    // side no worker runs, so the bench process is the only sender.
    await clearDeliveries(sql);
    const worker = side === 'svc' ? start(ctx, [ctx.cli, 'worker'], env, 'svc', 'webhook-latency') : null;
    try {
      if (worker) {
        await waitForOutput(worker, /svc worker running/, 'svc worker');
      }
      const after = side === 'floor' ? postNow : null;
      if (warmup > 0) {
        const w = await generate(database.db, rate, warmup, after);
        await waitForReceiver(receiver, w.ids.length, 30_000);
      }
      await receiver.reset();
      const run = await generate(database.db, rate, seconds, after);
      const stats = await waitForReceiver(receiver, run.ids.length, 60_000);
      let queue: LatencySide['queue'];
      if (side === 'svc') {
        // The receiver has them all; the last attempts may still be on their way into the database.
        const deadline = Date.now() + 30_000;
        for (;;) {
          const [row] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where status <> 'succeeded'`;
          if ((row?.n ?? 0) === 0) {
            break;
          }
          if (Date.now() > deadline) {
            throw new Error(`webhook-latency: ${row?.n} deliveries not succeeded 30 s after the receiver had every event`);
          }
          await sleep(50);
        }
        // Where the time goes: the transaction's start (the delivery row's created_at, about the
        // commit) to the attempt's start is the queue; the rest is the request itself.
        const [q] = await sql<{ p50: number; p95: number; p99: number }[]>`
          select percentile_cont(0.5) within group (order by ms) as p50,
                 percentile_cont(0.95) within group (order by ms) as p95,
                 percentile_cont(0.99) within group (order by ms) as p99
          from (select extract(epoch from a.started_at - d.created_at) * 1000 as ms
                from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
                where d.event_id = any(${run.ids}::text[])) t`;
        queue = q;
      }
      const sorted = [...stats.latencies].sort((a, b) => a - b);
      return {
        side,
        events: run.ids.length,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        p99: percentile(sorted, 99),
        max: sorted[sorted.length - 1] ?? Number.NaN,
        lateTicks: run.lateTicks,
        queue,
      };
    } finally {
      await worker?.stop();
    }
  };

  try {
    const sides: LatencySide[] = [];
    for (let round = 1; round <= ctx.rounds; round++) {
      for (const side of round % 2 === 1 ? (['floor', 'svc'] as const) : (['svc', 'floor'] as const)) {
        const m = await measureSide(side);
        sides.push(m);
        ctx.log(
          `  webhook-latency      round ${round} ${side.padEnd(10)} p50 ${fmt(m.p50, 1).padStart(6)} ms  p95 ${fmt(m.p95, 1).padStart(6)} ms  ` +
            `p99 ${fmt(m.p99, 1).padStart(6)} ms  max ${fmt(m.max, 1).padStart(6)} ms  (${m.events} events` +
            `${m.lateTicks > 0 ? `, generator late on ${m.lateTicks} ticks` : ''}` +
            `${m.queue ? `; queued before the send p50 ${fmt(m.queue.p50, 1)} / p95 ${fmt(m.queue.p95, 1)} / p99 ${fmt(m.queue.p99, 1)} ms` : ''})`,
        );
      }
    }
    const best = (side: 'floor' | 'svc') => {
      const of = sides.filter((s) => s.side === side);
      return { p50: Math.min(...of.map((s) => s.p50)), p95: Math.min(...of.map((s) => s.p95)), p99: Math.min(...of.map((s) => s.p99)) };
    };
    return { sides, floor: best('floor'), svc: best('svc') };
  } finally {
    agent.destroy();
    await database.close();
  }
}

/** An org admin of the bench organization with a live session; returns its cookie. */
async function seedAdminSession(sql: postgres.Sql): Promise<string> {
  const token = createHash('sha256')
    .update(`bench-webhooks-${process.pid}-${Date.now()}`)
    .digest('hex')
    .replace(/[0189]/g, '2')
    .slice(0, 32);
  await sql`
    insert into users (id, engine_subject, email, email_verified, name)
    values ('usr_benchwebhooks', 'bench-webhooks-sub', 'bench-webhooks@example.com', true, 'Bench webhooks admin')`;
  await sql`insert into memberships (tenant_id, user_id, role_key) values (${TENANT_ID}, 'usr_benchwebhooks', 'org_admin')`;
  await sql`
    insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
    values ('ses_benchwebhooks', encode(sha256(convert_to(${token}, 'UTF8')), 'hex'), 'usr_benchwebhooks', ${TENANT_ID},
            now() + interval '1 day', now() + interval '7 days', now())`;
  return `svc_session=${token}`;
}

type ReplayRound = { deliveries: number; seconds: number; rps: number; answeredMs: number; firstArrivalMs: number };

/**
 * webhook-replay: the same `count` events as webhook-throughput, their live deliveries already
 * succeeded, replayed to the endpoint by one `POST /v1/webhook-endpoints/{id}/replay` (an org
 * admin's session, a real `svc serve` without its worker) and sent by a real `svc worker`.
 * deliveries/s = count / (first arrival at the receiver -> last replayed delivery recorded
 * succeeded), the throughput scenario's measure; the request's answer time and the wait from
 * the request to the first arrival are printed beside it.
 */
async function replayThroughput(ctx: WebhookBenchContext, sql: postgres.Sql, receiver: Receiver, env: NodeJS.ProcessEnv) {
  const count = Math.round(positiveSetting('BENCH_WEBHOOK_DELIVERIES', ctx.smoke ? 1_000 : 10_000));
  ctx.log(`measuring: webhook-replay (${count.toLocaleString('en-US')} events replayed to one endpoint by one request, one receiver)`);
  const cookie = await seedAdminSession(sql);
  const server = await startServerChild(ctx, {
    kind: 'svc',
    label: 'svc-webhook-replay',
    script: [ctx.cli, 'serve'],
    env: { ...env, WORKER_ENABLED: 'false' },
    ready: healthy,
  });
  const rounds: ReplayRound[] = [];
  try {
    for (let round = 1; round <= ctx.rounds; round++) {
      await seedDeliveries(sql, count, round);
      // The live deliveries went out long ago: only the replay is due.
      await sql`update webhook_deliveries set status = 'succeeded', attempt_count = 1, next_attempt_at = null, succeeded_at = now()`;
      await receiver.reset();
      const worker = start(ctx, [ctx.cli, 'worker'], env, 'svc', 'webhook-replay');
      let answeredMs: number;
      let requestedAt: number;
      try {
        await waitForOutput(worker, /svc worker running/, 'svc worker');
        requestedAt = Date.now();
        const res = await fetch(`${server.url}/v1/webhook-endpoints/${ENDPOINT_ID}/replay`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json', origin: server.url },
          body: JSON.stringify({
            organization_slug: SLUG,
            from: new Date(Date.now() - 3_600_000).toISOString(),
            to: new Date(Date.now() + 60_000).toISOString(),
          }),
        });
        const text = await res.text();
        answeredMs = Date.now() - requestedAt;
        if (res.status !== 202 || (JSON.parse(text) as { count: number }).count !== count) {
          throw new Error(`webhook-replay: the replay answered ${res.status} ${text.slice(0, 300)}`);
        }
        await waitForReceiver(receiver, count, 600_000);
        const deadline = Date.now() + 60_000;
        for (;;) {
          const [row] = await sql<{ done: number; failed: number }[]>`
            select count(*) filter (where status = 'succeeded')::int as done, count(*) filter (where status = 'failed')::int as failed
            from webhook_deliveries where replay`;
          if ((row?.failed ?? 0) > 0) {
            throw new Error(`webhook-replay: ${row?.failed} replayed deliveries failed:\n${worker.output()}`);
          }
          if ((row?.done ?? 0) >= count) {
            break;
          }
          if (Date.now() > deadline || worker.child.exitCode !== null) {
            throw new Error(`webhook-replay: ${row?.done ?? 0} of ${count} succeeded before the deadline:\n${worker.output()}`);
          }
          await sleep(100);
        }
      } finally {
        await worker.stop();
      }
      const stats = await receiver.stats();
      if (stats.unique !== count || stats.badSignatures > 0) {
        throw new Error(`webhook-replay: the receiver saw ${stats.unique} of ${count} webhook-ids (${stats.badSignatures} bad signatures)`);
      }
      const [last] = await sql<{ at: number }[]>`
        select extract(epoch from max(succeeded_at))::float8 * 1000 as at from webhook_deliveries where replay`;
      const seconds = ((last?.at ?? stats.lastAt) - stats.firstAt) / 1000;
      const m: ReplayRound = { deliveries: count, seconds, rps: count / seconds, answeredMs, firstArrivalMs: stats.firstAt - requestedAt };
      rounds.push(m);
      ctx.log(
        `  webhook-replay       round ${round} svc        ${fmt(m.rps, 0).padStart(7)} deliveries/s (${count} in ${fmt(seconds, 2)} s; ` +
          `the request answered 202 in ${fmt(answeredMs, 0)} ms, first arrival ${fmt(m.firstArrivalMs, 0)} ms after it` +
          `${stats.requests > count ? `; ${stats.requests - count} duplicate sends` : ''})`,
      );
    }
  } finally {
    await server.stop();
  }
  return { rounds, svcRps: Math.max(...rounds.map((r) => r.rps)) };
}

async function waitForReceiver(receiver: Receiver, count: number, timeoutMs: number): Promise<ReceiverStats> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await receiver.stats();
    if (stats.badSignatures > 0) {
      throw new Error(`webhook bench: ${stats.badSignatures} requests with a bad signature`);
    }
    if (stats.unique >= count) {
      return stats;
    }
    if (Date.now() > deadline) {
      throw new Error(`webhook bench: the receiver saw ${stats.unique} of ${count} events within ${timeoutMs / 1000} s`);
    }
    await sleep(50);
  }
}

/** Runs the wanted webhook scenarios on a fresh bench database; returns verdicts and figures. */
export async function runWebhookBenches(
  ctx: WebhookBenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: WebhookVerdict[]; results: Record<string, unknown> }> {
  const db = await ctx.createDb('webhooks');
  await ctx.runCli(['migrate'], db.url);
  const encryptionKey = randomBytes(32).toString('base64');
  const secret = generateWebhookSecret();
  const receiver = await startReceiver(ctx, secret);
  // One connection: the statistics flush after seeding applies to the backend that seeded.
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const verdicts: WebhookVerdict[] = [];
  const results: Record<string, unknown> = {};
  try {
    await seedEndpoint(sql, Buffer.from(encryptionKey, 'base64'), receiver.hookUrl, secret);
    const env = workerEnv(db.url, encryptionKey);
    if (wanted('webhook-throughput')) {
      const t = await throughput(ctx, db.url, sql, receiver, env, secret);
      results.throughput = t;
      ctx.log(`  webhook-throughput   svc ${fmt(t.svcRps, 0)} vs baseline ${fmt(t.baselineRps, 0)} deliveries/s = ${fmt(t.ratio, 2)}x`);
      verdicts.push({
        name: `webhook-throughput: svc deliveries/s >= ${WEBHOOK_TARGETS.throughputMin}x plain Node POST loop`,
        pass: t.ratio >= WEBHOOK_TARGETS.throughputMin,
        detail: `${fmt(t.svcRps, 0)} vs ${fmt(t.baselineRps, 0)} deliveries/s = ${fmt(t.ratio, 2)}x`,
      });
    }
    if (wanted('webhook-replay')) {
      const r = await replayThroughput(ctx, sql, receiver, env);
      const t = results.throughput as { svcRps: number } | undefined;
      results.replay = { ...r, throughputSvcRps: t?.svcRps ?? null, ratio: t ? r.svcRps / t.svcRps : null };
      const side = t
        ? `; webhook-throughput svc ${fmt(t.svcRps, 0)} deliveries/s in this run, replay / throughput = ${fmt(r.svcRps / t.svcRps, 2)}x`
        : ' (add webhook-throughput to BENCH_ONLY for the ratio)';
      ctx.log(`  webhook-replay       svc ${fmt(r.svcRps, 0)} deliveries/s${side}`);
      verdicts.push({
        name: `webhook-replay: one replay of ${r.rounds[0]?.deliveries ?? 0} events arrives whole, signed, once each`,
        pass: true,
        detail: `${fmt(r.svcRps, 0)} deliveries/s (at most 1000/s by design: due 1 ms apart)${side}`,
      });
    }
    if (wanted('webhook-latency')) {
      const l = await latency(ctx, db.url, sql, receiver, env, secret);
      results.latency = l;
      verdicts.push({
        name: `webhook-latency: p95 commit -> receiver < ${WEBHOOK_TARGETS.latencyP95MaxMs} ms at ${positiveSetting('BENCH_WEBHOOK_RATE', 100)}/s`,
        pass: l.svc.p95 < WEBHOOK_TARGETS.latencyP95MaxMs,
        detail:
          `p50 ${fmt(l.svc.p50, 1)} / p95 ${fmt(l.svc.p95, 1)} / p99 ${fmt(l.svc.p99, 1)} ms; ` +
          `floor (POST right after COMMIT) p95 ${fmt(l.floor.p95, 1)} ms = ${fmt(l.svc.p95 / l.floor.p95, 1)}x`,
      });
    }
  } finally {
    await sql.end({ timeout: 2 });
    await receiver.stop();
  }
  return { verdicts, results };
}

export const WEBHOOK_SCENARIOS = ['webhook-throughput', 'webhook-replay', 'webhook-latency'] as const;
