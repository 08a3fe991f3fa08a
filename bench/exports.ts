/**
 * Export streaming figure (issue 6 "Figures"), run by bench/run.ts:
 *
 * - export-memory: one organization with BENCH_EXPORT_EVENTS usage events (1,000,000; smoke
 *   50,000), seeded with generate_series straight into usage_events. An export is built once
 *   for real (POST /v1/export/all, a `svc serve` with its worker, polled until completed). Then,
 *   per round and per side, a fresh server process downloads it while the bench samples the
 *   server's resident memory (VmRSS of /proc/<pid>/status, every 10 ms): growth = peak during
 *   the download minus the value just before it. svc sides: GET /v1/exports/{id}/download as
 *   JSON and as CSV (`svc serve`, NODE_ENV=production, WORKER_ENABLED=false). Baseline, same
 *   rows, same run: bench/export-baseline.ts, a plain node:http server piping
 *   `COPY (select ...) TO STDOUT (FORMAT csv)` of the usage events to the response. Target:
 *   svc's growth < 100 MB in both formats (worst round); times printed beside the baseline's.
 *
 * The client reads as fast as it can and discards the body (counting bytes and, for a check,
 * the rows), so the figure is the server's.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { type BenchContext, fmt, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export type ExportBenchContext = BenchContext;
export type ExportVerdict = Verdict;

export const EXPORT_TARGETS = { rssGrowthMaxMb: 100 };
export const EXPORT_SCENARIOS = ['export-memory'] as const;

const TENANT_ID = 'ten_benchexports0000000';
const ENGINE_ISSUER = 'http://127.0.0.1:7151/application/o/svc/';

/** Resident set size of a process, MB (NaN once it is gone). */
function rssMb(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

function svcEnv(databaseUrl: string, encryptionKey: string, worker: boolean): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: databaseUrl,
    NODE_ENV: 'production',
    ENGINE_ISSUER,
    SVC_ENCRYPTION_KEY: encryptionKey,
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: worker ? 'true' : 'false',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
  };
}

/** The organization, an org admin with a live session (its cookie returned), and `events` usage events. */
async function seed(sql: postgres.Sql, events: number): Promise<string> {
  const token = createHash('sha256')
    .update(`bench-exports-${process.pid}-${Date.now()}`)
    .digest('hex')
    .replace(/[0189]/g, '2')
    .slice(0, 32);
  await sql`insert into organizations (id, slug, name) values (${TENANT_ID}, 'bench-exports', 'Bench exports')`;
  await sql`
    insert into users (id, engine_subject, email, email_verified, name)
    values ('usr_benchexports', 'bench-exports-sub', 'bench-exports@example.com', true, 'Bench exporter')`;
  await sql`insert into memberships (tenant_id, user_id, role_key) values (${TENANT_ID}, 'usr_benchexports', 'org_admin')`;
  await sql`
    insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
    values ('ses_benchexports', encode(sha256(convert_to(${token}, 'UTF8')), 'hex'), 'usr_benchexports', ${TENANT_ID},
            now() + interval '1 day', now() + interval '7 days', now())`;
  // Realistic rows (~230 bytes as JSON): an idempotency key, a small properties object, a source.
  await sql`
    insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at,
                              properties, source_id, channel, created_at)
    select 'uev_' || lpad(g::text, 20, '0'), ${TENANT_ID}, 'order-' || g || '-' || md5(g::text), md5('r' || g),
           (array['api.call', 'storage.gb', 'seat.active'])[1 + g % 3], 1 + g % 7,
           timestamptz '2025-01-01 00:00:00+00' + g * interval '2 seconds',
           jsonb_build_object('region', (array['eu', 'us', 'ap'])[1 + g % 3], 'plan', 'pro', 'n', g),
           'key_benchexports', 'usage',
           timestamptz '2025-01-01 00:00:00+00' + g * interval '2 seconds'
    from generate_series(1, ${events}::int) g`;
  await sql`vacuum analyze usage_events`;
  return `svc_session=${token}`;
}

/** Builds the export for real (POST, the worker, polling) and returns its id and the build time. */
async function buildExport(ctx: ExportBenchContext, env: NodeJS.ProcessEnv, cookie: string): Promise<{ id: string; seconds: number }> {
  const server = await startServerChild(ctx, { kind: 'svc', label: 'svc-export-build', script: [ctx.cli, 'serve'], env, ready: healthy });
  try {
    const started = Date.now();
    const res = await fetch(`${server.url}/v1/export/all`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', origin: server.url },
      body: JSON.stringify({ organization_slug: 'bench-exports', format: 'json' }),
    });
    const created = (await res.json()) as { export?: { id: string } };
    if (res.status !== 202 || !created.export) {
      throw new Error(`POST /v1/export/all answered ${res.status}: ${JSON.stringify(created)}`);
    }
    const deadline = Date.now() + 300_000;
    for (;;) {
      const record = (await (await fetch(`${server.url}/v1/exports/${created.export.id}`, { headers: { cookie } })).json()) as {
        status: string;
      };
      if (record.status === 'completed') {
        return { id: created.export.id, seconds: (Date.now() - started) / 1000 };
      }
      if (record.status === 'failed' || Date.now() > deadline) {
        throw new Error(`the export is ${record.status}:\n${server.output()}`);
      }
      await sleep(100);
    }
  } finally {
    await server.stop();
  }
}

type Download = {
  side: 'svc json' | 'svc csv' | 'baseline COPY csv';
  seconds: number;
  bytes: number;
  /** Lines of the body: the usage events are all there. */
  lines: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  growthMb: number;
};

/** Downloads `url` as fast as the client can, sampling the server's RSS meanwhile. */
async function measureDownload(
  side: Download['side'],
  pid: number | undefined,
  url: string,
  headers: Record<string, string>,
): Promise<Download> {
  const rssBeforeMb = rssMb(pid);
  let rssPeakMb = rssBeforeMb;
  const sampler = setInterval(() => {
    const now = rssMb(pid);
    if (now > rssPeakMb) {
      rssPeakMb = now;
    }
  }, 10);
  const started = process.hrtime.bigint();
  let bytes = 0;
  let lines = 0;
  try {
    const res = await fetch(url, { headers });
    if (res.status !== 200 || !res.body) {
      throw new Error(`${side}: ${res.status} ${await res.text()}`);
    }
    for await (const chunk of res.body) {
      bytes += chunk.byteLength;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
        lines++;
      }
    }
  } finally {
    clearInterval(sampler);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  rssPeakMb = Math.max(rssPeakMb, rssMb(pid));
  return { side, seconds, bytes, lines, rssBeforeMb, rssPeakMb, growthMb: rssPeakMb - rssBeforeMb };
}

export async function runExportBenches(
  ctx: ExportBenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: ExportVerdict[]; results: Record<string, unknown> }> {
  if (!wanted('export-memory')) {
    return { verdicts: [], results: {} };
  }
  const events = ctx.smoke ? 50_000 : positiveSetting('BENCH_EXPORT_EVENTS', 1_000_000);
  const db = await ctx.createDb('exports');
  await ctx.runCli(['migrate'], db.url);
  const encryptionKey = createHash('sha256').update(`bench-exports-${process.pid}`).digest().toString('base64');
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const rounds: Download[] = [];
  let build: { id: string; seconds: number };
  try {
    ctx.log(`export-memory: seeding ${events.toLocaleString('en-US')} usage events`);
    const seedStarted = Date.now();
    const cookie = await seed(sql, events);
    ctx.log(`  seeded in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s; building the export (svc serve with its worker)`);
    build = await buildExport(ctx, svcEnv(db.url, encryptionKey, true), cookie);
    ctx.log(`  built ${build.id} in ${build.seconds.toFixed(1)} s (POST -> completed)`);

    for (let round = 1; round <= ctx.rounds; round++) {
      const sides: Download['side'][] =
        round % 2 === 1 ? ['svc json', 'svc csv', 'baseline COPY csv'] : ['baseline COPY csv', 'svc csv', 'svc json'];
      for (const side of sides) {
        // A fresh process per download: its growth is this download's, not what an earlier one left.
        const proc =
          side === 'baseline COPY csv'
            ? await startServerChild(ctx, {
                kind: 'other',
                label: 'export-baseline',
                script: ['bench/export-baseline.ts'],
                env: { DATABASE_URL: db.url },
                ready: async (url) => (await fetch(`${url}/?tenant=x`)).status === 400,
              })
            : await startServerChild(ctx, {
                kind: 'svc',
                label: 'svc-export',
                script: [ctx.cli, 'serve'],
                env: svcEnv(db.url, encryptionKey, false),
                ready: healthy,
              });
        try {
          // Let start-up settle (lazy compilation, the first pool connections) before the baseline reading.
          await sleep(1_000);
          const url =
            side === 'baseline COPY csv'
              ? `${proc.url}/?tenant=${TENANT_ID}`
              : `${proc.url}/v1/exports/${build.id}/download?format=${side === 'svc json' ? 'json' : 'csv'}`;
          const measured = await measureDownload(side, proc.child.pid, url, side === 'baseline COPY csv' ? {} : { cookie });
          if (measured.lines < events) {
            throw new Error(`${side}: ${measured.lines} lines for ${events} events`);
          }
          rounds.push(measured);
          ctx.log(
            `  round ${round} ${side.padEnd(18)} ${fmt(measured.seconds, 2)} s, ${fmt(measured.bytes / 1e6, 1)} MB, ` +
              `${fmt(events / measured.seconds / 1000, 0)}k rows/s, RSS ${fmt(measured.rssBeforeMb, 0)} -> peak ${fmt(measured.rssPeakMb, 0)} MB ` +
              `(+${fmt(measured.growthMb, 1)} MB)`,
          );
        } finally {
          await proc.stop();
        }
      }
    }
  } finally {
    await sql.end({ timeout: 2 });
  }

  const of = (side: Download['side']) => rounds.filter((r) => r.side === side);
  const worstGrowth = (side: Download['side']) => Math.max(...of(side).map((r) => r.growthMb));
  const bestSeconds = (side: Download['side']) => Math.min(...of(side).map((r) => r.seconds));
  const baselineSeconds = bestSeconds('baseline COPY csv');
  const verdicts: ExportVerdict[] = (['svc json', 'svc csv'] as const).map((side) => ({
    name: `export-memory: ${side} download of ${(events / 1e6).toLocaleString('en-US')}M usage events, server RSS growth < ${EXPORT_TARGETS.rssGrowthMaxMb} MB`,
    pass: worstGrowth(side) < EXPORT_TARGETS.rssGrowthMaxMb,
    detail:
      `+${fmt(worstGrowth(side), 1)} MB (worst round), ${fmt(bestSeconds(side), 2)} s; ` +
      `baseline COPY +${fmt(worstGrowth('baseline COPY csv'), 1)} MB, ${fmt(baselineSeconds, 2)} s = ${fmt(bestSeconds(side) / baselineSeconds, 2)}x its time`,
  }));
  return { verdicts, results: { events, buildSeconds: build.seconds, rounds } };
}
