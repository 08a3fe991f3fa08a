/**
 * Events feed figure, run by bench/run.ts:
 *
 * - events-feed: one organization with BENCH_FEED_EVENTS events (100,000; smoke 10,000) of five
 *   types, ten per transaction id, seeded with generate_series straight into webhook_events. A
 *   `svc serve` (NODE_ENV=production) is read through GET /v1/events at 500 per page, cursor
 *   after cursor, to the end (each round a full pass: events/s). Then page 1 and the last page
 *   (page 200 of 100,000) are asked for again and again from the same cursors, and their median
 *   times compared. Target: the last page within 20% of the first (keyset paging on (xid, id):
 *   a page deep in the feed costs what the first costs). The same pass with `types` (two of the
 *   five types: read type by type) is printed beside it.
 */
import { createHash } from 'node:crypto';
import postgres from 'postgres';
import { type BenchContext, fmt, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export const EVENTS_FEED_TARGETS = { feedLastPageMaxRatio: 1.2 };
export const EVENTS_FEED_SCENARIOS = ['events-feed'] as const;

const TENANT_ID = 'ten_benchfeed0000000000';
const ENGINE_ISSUER = 'http://127.0.0.1:7151/application/o/svc/';
const PAGE = 500;
const REPEATS = 30;

/** The organization, an org admin with a live session (its cookie returned), and `events` events. */
async function seed(sql: postgres.Sql, events: number): Promise<string> {
  // A session token in the alphabet svc issues (as bench/exports.ts seeds its session).
  const token = createHash('sha256')
    .update(`bench-feed-${process.pid}-${Date.now()}`)
    .digest('hex')
    .replace(/[0189]/g, '2')
    .slice(0, 32);
  await sql`insert into organizations (id, slug, name) values (${TENANT_ID}, 'bench-feed', 'Bench feed')`;
  await sql`
    insert into users (id, engine_subject, email, email_verified, name)
    values ('usr_benchfeed', 'bench-feed-sub', 'bench-feed@example.com', true, 'Bench feed reader')`;
  await sql`insert into memberships (tenant_id, user_id, role_key) values (${TENANT_ID}, 'usr_benchfeed', 'org_admin')`;
  await sql`
    insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
    values ('ses_benchfeed', encode(sha256(convert_to(${token}, 'UTF8')), 'hex'), 'usr_benchfeed', ${TENANT_ID},
            now() + interval '1 day', now() + interval '7 days', now())`;
  // Ten events per transaction id, ids random as newId's are, payloads like real ones (~150 bytes).
  await sql`
    insert into webhook_events (id, tenant_id, type, data, created_at, xid)
    select 'evt_' || substr(md5(g::text), 1, 20), ${TENANT_ID},
           (array['user.created', 'user.updated', 'session.created', 'session.ended', 'usage_event.created'])[1 + g % 5],
           jsonb_build_object('object', 'user', 'id', 'usr_' || lpad(g::text, 20, '0'), 'organizationId', ${TENANT_ID}::text,
                              'actor', jsonb_build_object('type', 'user', 'id', 'usr_benchfeed')),
           now() - interval '1 day' + g * interval '1 millisecond',
           (1000 + g / 10)::text::xid8
    from generate_series(1, ${events}::int) g`;
  await sql`vacuum analyze webhook_events`;
  return `svc_session=${token}`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function timedPage(url: string, cookie: string): Promise<{ ms: number; count: number; next: string | null; hasMore: boolean }> {
  const started = process.hrtime.bigint();
  const res = await fetch(url, { headers: { cookie } });
  const body = (await res.json()) as { data?: unknown[]; nextCursor?: string | null; hasMore?: boolean };
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (res.status !== 200 || !body.data) {
    throw new Error(`GET ${url}: ${res.status} ${JSON.stringify(body)}`);
  }
  return { ms, count: body.data.length, next: body.nextCursor ?? null, hasMore: body.hasMore === true };
}

/** One full pass: every page in order; the cursor each page was asked with, and the time. */
async function fullPass(base: string, cookie: string): Promise<{ seconds: number; events: number; cursors: (string | null)[] }> {
  const cursors: (string | null)[] = [];
  let cursor: string | null = null;
  let events = 0;
  const started = Date.now();
  for (;;) {
    cursors.push(cursor);
    const p = await timedPage(`${base}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, cookie);
    events += p.count;
    cursor = p.next;
    if (!p.hasMore) {
      return { seconds: (Date.now() - started) / 1000, events, cursors };
    }
  }
}

export async function runEventsFeedBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('events-feed')) {
    return { verdicts: [], results: {} };
  }
  const events = ctx.smoke ? 10_000 : positiveSetting('BENCH_FEED_EVENTS', 100_000);
  const db = await ctx.createDb('feed');
  await ctx.runCli(['migrate'], db.url);
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const encryptionKey = createHash('sha256').update(`bench-feed-${process.pid}`).digest().toString('base64');
  try {
    ctx.log(`events-feed: seeding ${events.toLocaleString('en-US')} events`);
    const cookie = await seed(sql, events);
    const server = await startServerChild(ctx, {
      kind: 'svc',
      label: 'svc-events-feed',
      script: [ctx.cli, 'serve'],
      env: {
        DATABASE_URL: db.url,
        NODE_ENV: 'production',
        ENGINE_ISSUER,
        SVC_ENCRYPTION_KEY: encryptionKey,
        LOG_LEVEL: 'warn',
        WORKER_ENABLED: 'false',
        RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
        RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
      },
      ready: healthy,
    });
    try {
      const results: Record<string, unknown> = {};
      let verdict: Verdict | undefined;
      for (const [label, filter] of [
        ['all types', ''],
        ['types=user.created,session.ended', '&types=user.created,session.ended'],
      ] as const) {
        const base = `${server.url}/v1/events?limit=${PAGE}${filter}`;
        let best: { seconds: number; events: number; cursors: (string | null)[] } | undefined;
        for (let round = 1; round <= ctx.rounds; round++) {
          const pass = await fullPass(base, cookie);
          if (!best || pass.seconds < best.seconds) {
            best = pass;
          }
        }
        const pass = best as { seconds: number; events: number; cursors: (string | null)[] };
        const lastIndex = pass.cursors.length - 1;
        const url = (i: number) => `${base}${pass.cursors[i] ? `&cursor=${encodeURIComponent(pass.cursors[i] as string)}` : ''}`;
        const first: number[] = [];
        const last: number[] = [];
        for (let i = 0; i < REPEATS; i++) {
          first.push((await timedPage(url(0), cookie)).ms);
          last.push((await timedPage(url(lastIndex), cookie)).ms);
        }
        const ratio = median(last) / median(first);
        const eventsPerSecond = pass.events / pass.seconds;
        ctx.log(
          `  ${label}: ${pass.events.toLocaleString('en-US')} events in ${pass.cursors.length} pages, ${fmt(pass.seconds, 2)} s (${fmt(eventsPerSecond, 0)} events/s); ` +
            `page 1 ${fmt(median(first), 1)} ms, page ${lastIndex + 1} ${fmt(median(last), 1)} ms (median of ${REPEATS}), ratio ${fmt(ratio, 2)}`,
        );
        results[label] = {
          events: pass.events,
          pages: pass.cursors.length,
          seconds: pass.seconds,
          eventsPerSecond,
          firstPageMs: median(first),
          lastPageMs: median(last),
          lastPage: lastIndex + 1,
          ratio,
        };
        if (!verdict) {
          verdict = {
            name: `events-feed: page ${lastIndex + 1} / page 1 time <= ${EVENTS_FEED_TARGETS.feedLastPageMaxRatio}`,
            pass: ratio <= EVENTS_FEED_TARGETS.feedLastPageMaxRatio && pass.events === events,
            detail: `${fmt(ratio, 2)} (${fmt(median(last), 1)} ms vs ${fmt(median(first), 1)} ms; ${fmt(eventsPerSecond, 0)} events/s; ${pass.events} of ${events} served)`,
          };
        }
      }
      return { verdicts: verdict ? [verdict] : [], results: { targets: EVENTS_FEED_TARGETS, ...results } };
    } finally {
      await server.stop();
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
}
