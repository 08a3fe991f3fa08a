/**
 * Tables at scale (docs/operations.md "Partitioned tables"), run by bench/run.ts:
 *
 * - row-scale: two databases, one organization each. The small one holds BENCH_SCALE_SMALL usage
 *   events and as many events in the feed (100,100: 100,000 and the page after the deep one; smoke
 *   2,000), the large one BENCH_SCALE_ROWS
 *   of each (10,000,000; smoke 20,000), loaded with generate_series INSERT ... SELECT (usage
 *   events over the last 90 days with their idempotency keys and hourly totals; feed events over
 *   the last 25 days, in transaction-id order), into the monthly partitions a year of running
 *   would have made. One `svc serve` per database (NODE_ENV=production), measured alternately in
 *   slices (small, large, large, small; which starts alternates per round), for five figures:
 *   single-event ingestion (POST /v1/usage/events, events/s), the 100-event batch (events/s), the
 *   events feed's page 1 (GET /v1/events?limit=100, req/s), its page BENCH_SCALE_DEEP events deep
 *   (100,000; smoke 1,000; the cursor reached page by page), and last month's usage summary (day
 *   buckets, req/s). Target: each large figure >= 0.8x the small one.
 *
 * Loading 10 million rows of each takes a while (minutes to tens of minutes on a busy machine);
 * `pnpm bench --smoke` runs the same path with a few thousand rows.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { type BenchContext, fmt, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';
import { type CreatedApp, cannon, eventBodies, type Load, type Measurement, seedAdmin } from './usage.ts';

export const ROW_SCALE_TARGETS = { largeOverSmallMin: 0.8 };
export const ROW_SCALE_SCENARIOS = ['row-scale'] as const;

type ScaleContext = BenchContext & { duration: number; warmup: number };
type Side = 'small' | 'large';
type Prepared = { url: string; tenantId: string; secretKey: string; cookie: string; stop: () => Promise<void> };

const FEED_PAGE = 100;
const SLICES = 4;

/** Rows of one organization: usage events (with keys and hourly totals) and feed events. */
async function seed(sql: postgres.Sql, tenantId: string, rows: number): Promise<void> {
  // The months a year of running made (the maintenance task makes them as time passes).
  await sql`select svc_create_monthly_partitions(t, now() - interval '13 months', now() + interval '3 months')
    from unnest(array['usage_events', 'webhook_events', 'audit_logs']) t`;
  const usageSpanMs = 90 * 86_400_000;
  await sql`
    insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, properties, source_id, channel, created_at)
    select 'uev_' || substr(md5(${tenantId} || g), 1, 20), ${tenantId}, 'seed-' || g, md5(g::text),
           (array['api_call', 'tokens', 'storage_gb_hours'])[1 + g % 3], 1 + g % 7,
           now() - (${usageSpanMs}::float8 * (${rows}::int - g) / ${rows}::float8) * interval '1 millisecond' - interval '1 minute',
           '{"route":"/v1/things"}'::jsonb, null, 'usage',
           now() - (${usageSpanMs}::float8 * (${rows}::int - g) / ${rows}::float8) * interval '1 millisecond' - interval '1 minute'
    from generate_series(1, ${rows}::int) g`;
  await sql`
    insert into usage_event_keys (tenant_id, idempotency_key, event_id, created_at)
    select tenant_id, idempotency_key, id, created_at from usage_events where tenant_id = ${tenantId}`;
  await sql`
    insert into usage_hourly (tenant_id, event_type, hour, events, quantity)
    select tenant_id, event_type, date_trunc('hour', occurred_at, 'UTC'), count(*), sum(quantity)
    from usage_events where tenant_id = ${tenantId} group by 1, 2, 3`;
  // Feed events: transaction ids below every running one (the feed serves only finished
  // transactions), increasing with time, about ten events per id where the counter allows.
  const [current] = await sql<{ xid: string }[]>`select pg_current_xact_id()::text as xid`;
  const ceiling = Number(current?.xid ?? 0) - 5;
  const perXid = Math.max(10, Math.ceil(rows / Math.max(1, ceiling - 10)));
  const feedSpanMs = 25 * 86_400_000;
  await sql`
    insert into webhook_events (id, tenant_id, type, data, created_at, xid)
    select 'evt_' || substr(md5('feed' || g), 1, 20), ${tenantId},
           (array['user.created', 'user.updated', 'session.created', 'session.ended', 'usage_event.created'])[1 + g % 5],
           jsonb_build_object('object', 'user', 'id', 'usr_' || lpad(g::text, 20, '0'), 'organizationId', ${tenantId}::text),
           now() - (${feedSpanMs}::float8 * (${rows}::int - g) / ${rows}::float8) * interval '1 millisecond' - interval '1 minute',
           greatest(3, ${ceiling}::bigint - (${rows}::int - g) / ${perXid}::int)::text::xid8
    from generate_series(1, ${rows}::int) g`;
  await sql`vacuum analyze usage_events`;
  await sql`vacuum analyze usage_event_keys`;
  await sql`vacuum analyze webhook_events`;
  await sql`analyze usage_hourly`;
}

async function prepare(ctx: ScaleContext, side: Side, rows: number): Promise<Prepared> {
  const db = await ctx.createDb(`scale_${side}`);
  await ctx.runCli(['migrate'], db.url);
  const app = JSON.parse(
    await ctx.runCli(['apps', 'create', '--org', `bench-scale-${side}`, '--name', 'Bench scale', '--json'], db.url),
  ) as CreatedApp;
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  let tenantId: string;
  let cookie: string;
  try {
    const [row] = await sql<{ tenantId: string }[]>`select tenant_id as "tenantId" from applications where id = ${app.application.id}`;
    tenantId = row?.tenantId as string;
    const started = Date.now();
    await seed(sql, tenantId, rows);
    cookie = await seedAdmin(sql, tenantId, side);
    const [counts] = await sql<{ u: number; e: number }[]>`
      select (select count(*) from usage_events)::float8 as u, (select count(*) from webhook_events)::float8 as e`;
    ctx.log(
      `setup: row-scale ${side}: ${counts?.u.toLocaleString('en-US')} usage events, ${counts?.e.toLocaleString('en-US')} feed events, ` +
        `loaded in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  } finally {
    await sql.end({ timeout: 2 });
  }
  const server = await startServerChild(ctx, {
    kind: 'svc',
    label: `svc-row-scale-${side}`,
    script: [ctx.cli, 'serve'],
    env: {
      DATABASE_URL: db.url,
      NODE_ENV: 'production',
      ENGINE_ISSUER: 'http://127.0.0.1:7151/application/o/svc/',
      SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      WORKER_ENABLED: 'false',
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
      RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
    },
    ready: healthy,
  });
  return { url: server.url, tenantId, secretKey: app.secretKey, cookie, stop: server.stop };
}

/** The feed's cursor `deep` events in, reached page by page (500 a page, then the rest). */
async function cursorAt(p: Prepared, deep: number): Promise<string> {
  let cursor: string | null = null;
  let served = 0;
  while (served < deep) {
    const limit = Math.min(500, deep - served);
    const res = await fetch(`${p.url}/v1/events?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
      headers: { cookie: p.cookie },
    });
    const body = (await res.json()) as { data?: unknown[]; nextCursor?: string | null };
    if (res.status !== 200 || !body.data || !body.nextCursor) {
      throw new Error(`row-scale: GET /v1/events answered ${res.status} after ${served} events: ${JSON.stringify(body).slice(0, 300)}`);
    }
    served += body.data.length;
    cursor = body.nextCursor;
  }
  return cursor as string;
}

/** One request first: the load answers 2xx (and the feed a full page). */
async function check(url: string, load: Load, counter: { n: number }, label: string): Promise<void> {
  const res = await fetch(`${url}${load.path}`, { method: load.method, headers: load.headers, body: load.body?.(counter.n++) });
  const text = await res.text();
  if (
    res.status < 200 ||
    res.status > 299 ||
    (load.path.startsWith('/v1/events') && (JSON.parse(text) as { data: unknown[] }).data.length !== FEED_PAGE)
  ) {
    throw new Error(`row-scale ${label}: ${load.method} ${load.path} answered ${res.status} ${text.slice(0, 300)}`);
  }
}

export async function runRowScaleBenches(
  ctx: ScaleContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('row-scale')) {
    return { verdicts: [], results: {} };
  }
  const rows: Record<Side, number> = {
    small: positiveSetting('BENCH_SCALE_SMALL', ctx.smoke ? 2_000 : 100_000 + FEED_PAGE),
    large: positiveSetting('BENCH_SCALE_ROWS', ctx.smoke ? 20_000 : 10_000_000),
  };
  const deep = positiveSetting('BENCH_SCALE_DEEP', ctx.smoke ? 1_000 : 100_000);
  if (deep + FEED_PAGE > rows.small) {
    throw new Error(`row-scale: BENCH_SCALE_DEEP (${deep}) + a page must fit in BENCH_SCALE_SMALL (${rows.small})`);
  }
  ctx.log(`row-scale: loading ${rows.small.toLocaleString('en-US')} and ${rows.large.toLocaleString('en-US')} rows of each table`);
  const prepared: Partial<Record<Side, Prepared>> = {};
  try {
    prepared.small = await prepare(ctx, 'small', rows.small);
    prepared.large = await prepare(ctx, 'large', rows.large);
    const sides = prepared as Record<Side, Prepared>;
    const deepCursor = { small: await cursorAt(sides.small, deep), large: await cursorAt(sides.large, deep) };
    const now = new Date();
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString();
    const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    const connections = positiveSetting('BENCH_CONNECTIONS', 20);
    const loadsOf = (side: Side): Record<string, { load: Load; perRequest: number }> => {
      const p = sides[side];
      const bodies = eventBodies(`scale-${side}-${randomBytes(4).toString('hex')}`);
      const key = { authorization: `Bearer ${p.secretKey}`, 'content-type': 'application/json' };
      return {
        'single event': {
          load: { path: '/v1/usage/events', method: 'POST', headers: key, body: bodies.single, connections },
          perRequest: 1,
        },
        '100-event batch': {
          load: { path: '/v1/usage/events', method: 'POST', headers: key, body: bodies.batch, connections },
          perRequest: 100,
        },
        'feed page 1': {
          load: { path: `/v1/events?limit=${FEED_PAGE}`, method: 'GET', headers: { cookie: p.cookie }, connections },
          perRequest: 1,
        },
        [`feed ${deep.toLocaleString('en-US')} deep`]: {
          load: {
            path: `/v1/events?limit=${FEED_PAGE}&cursor=${encodeURIComponent(deepCursor[side])}`,
            method: 'GET',
            headers: { cookie: p.cookie },
            connections,
          },
          perRequest: 1,
        },
        'month usage summary': {
          load: {
            path: `/v1/tenants/${p.tenantId}/usage/summary?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&bucket=day`,
            method: 'GET',
            headers: { cookie: p.cookie },
            connections,
          },
          perRequest: 1,
        },
      };
    };
    const loads = { small: loadsOf('small'), large: loadsOf('large') };
    const counter = { n: 0 };
    const verdicts: Verdict[] = [];
    const results: Record<string, unknown> = { rows, deep, targets: ROW_SCALE_TARGETS };
    for (const figure of Object.keys(loads.small)) {
      const perRequest = loads.small[figure]?.perRequest ?? 1;
      for (const side of ['small', 'large'] as const) {
        await check(sides[side].url, loads[side][figure]?.load as Load, counter, `${figure} ${side}`);
      }
      const best: Record<Side, Measurement | undefined> = { small: undefined, large: undefined };
      let failed = 0;
      for (let round = 1; round <= ctx.rounds; round++) {
        for (const side of ['small', 'large'] as const) {
          if (ctx.warmup > 0) {
            await cannon(sides[side].url, loads[side][figure]?.load as Load, ctx.warmup, counter);
          }
        }
        const slices: Record<Side, Measurement[]> = { small: [], large: [] };
        for (let i = 0; i < SLICES; i++) {
          for (const side of (i + round) % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const)) {
            // At least a second a slice: a 100-event batch takes more than the smoke's half second on a busy machine.
            slices[side].push(
              await cannon(sides[side].url, loads[side][figure]?.load as Load, Math.max(1, ctx.duration / SLICES), counter),
            );
          }
        }
        for (const side of ['small', 'large'] as const) {
          const ok = slices[side].reduce((n, m) => n + m.ok, 0);
          const seconds = slices[side].reduce((n, m) => n + m.seconds, 0);
          failed += slices[side].reduce((n, m) => n + m.failed, 0);
          const m = { ...(slices[side][0] as Measurement), rps: ok / seconds, ok, seconds, latencies: [] };
          ctx.log(
            `  row-scale ${figure.padEnd(20)} round ${round} ${side.padEnd(5)} ${fmt(m.rps * perRequest, 0).padStart(8)} ${perRequest > 1 ? 'events' : 'req'}/s`,
          );
          if (!best[side] || m.rps > (best[side] as Measurement).rps) {
            best[side] = m;
          }
        }
      }
      const s = (best.small as Measurement).rps * perRequest;
      const l = (best.large as Measurement).rps * perRequest;
      const ratio = l / s;
      results[figure] = { small: s, large: l, ratio, failed };
      verdicts.push({
        name: `row-scale: ${figure} at ${rows.large.toLocaleString('en-US')} rows >= ${ROW_SCALE_TARGETS.largeOverSmallMin}x at ${rows.small.toLocaleString('en-US')}`,
        pass: failed === 0 && ratio >= ROW_SCALE_TARGETS.largeOverSmallMin,
        detail: `${fmt(l, 0)} vs ${fmt(s, 0)} ${perRequest > 1 ? 'events' : 'req'}/s = ${fmt(ratio, 2)}x${failed > 0 ? ` [${failed} failed requests]` : ''}`,
      });
    }
    return { verdicts, results };
  } finally {
    await prepared.small?.stop();
    await prepared.large?.stop();
  }
}
