/**
 * SCIM directory sync figures (issue 33 "Figures"), run by bench/run.ts:
 *
 * - scim-sync: one `svc serve` (NODE_ENV=production, rate limits 1e9/min), an organization with a
 *   verified domain and a directory. BENCH_SCIM_USERS (10,000; smoke 500) `POST /Users` of new
 *   people at that domain, BENCH_SCIM_CONCURRENCY (8) in flight, as an identity provider's initial
 *   sync sends them: each creates the person, an active membership (seat claimed) and the SCIM
 *   user, audited and evented, in one transaction, and logs the request. Figure: users/s over the
 *   whole sync. Target >= 200 users/s.
 * - scim-filter: the same directory grown to BENCH_SCIM_MEMBERSHIPS (100,000; smoke 5,000)
 *   provisioned memberships (the rest inserted by SQL), then `GET /Users?filter=userName eq "..."`
 *   rotating over 1,000 names, against `GET /Users/{id}` (a primary-key read of the same users),
 *   same server, BENCH_SCIM_CONNECTIONS (4) connections, A B B A per round, best round each.
 *   Target: the filter's p99 < 20 ms (the ratio to the read by id printed beside it).
 */
import { createHash, randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { type BenchContext, fmt, healthy, positiveSetting, processCpuMs, startServerChild, type Verdict } from './support.ts';

export const SCIM_TARGETS = { syncUsersPerSecondMin: 200, filterP99MaxMs: 20 };
export const SCIM_SCENARIOS = ['scim-sync', 'scim-filter'] as const;

export type ScimBenchContext = BenchContext & { duration: number; warmup: number };

const ENGINE_ISSUER = 'http://127.0.0.1:7151/application/o/svc/';
const DOMAIN = 'bench-directory.example';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const random62 = (n: number) => Array.from(randomBytes(n), (b) => BASE62[b % 62]).join('');

type Measurement = { rps: number; p50: number; p99: number; ok: number; failed: number; serverCpuUs: number };

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number);
}

function cannon(url: string, paths: string[], headers: Record<string, string>, seconds: number, connections: number) {
  const latencies: number[] = [];
  return new Promise<Omit<Measurement, 'serverCpuUs'> & { requests: number }>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}${paths[0]}`,
        connections,
        duration: seconds,
        timeout: 10,
        requests: paths.map((path) => ({ method: 'GET', path, headers })),
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
          requests: result.requests.total,
        });
      },
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
    });
  });
}

/** The organization `bench` (made by `svc apps create`), its verified domain and a directory; the directory's id and token. */
async function seedDirectory(sql: postgres.Sql): Promise<{ tenantId: string; directoryId: string; token: string }> {
  const [org] = await sql<{ id: string }[]>`select id from organizations where slug = 'bench'`;
  if (!org) {
    throw new Error('the bench organization is missing');
  }
  await sql`
    insert into organization_domains (id, tenant_id, domain, verification_token, verified_at)
    values (${`dom_${random62(20)}`}, ${org.id}, ${DOMAIN}, ${random62(32)}, now())`;
  // No seat limit: the figure is the sync's, not the free plan's ten seats.
  await sql`update subscription_plans set seat_limit = null where id in (select plan_id from subscriptions where tenant_id = ${org.id})`;
  const directoryId = `dir_${random62(20)}`;
  const token = `scim_${random62(40)}`;
  await sql`
    insert into scim_directories (id, tenant_id, name, token_hash, token_prefix)
    values (${directoryId}, ${org.id}, 'Bench directory', ${createHash('sha256').update(token).digest('hex')}, ${token.slice(0, 11)})`;
  return { tenantId: org.id, directoryId, token };
}

/** Grows the directory to `total` provisioned memberships by SQL (people, memberships, SCIM users). */
async function growTo(sql: postgres.Sql, opts: { tenantId: string; directoryId: string; from: number; total: number }): Promise<void> {
  if (opts.total <= opts.from) {
    return;
  }
  await sql`
    with people as (
      insert into users (id, email, email_verified, name)
      select 'usr_b' || lpad(g::text, 19, '0'), 'seeded-' || g || '@' || ${DOMAIN}, false, 'Seeded ' || g
      from generate_series(${opts.from + 1}::int, ${opts.total}::int) g
      returning id, email
    ), joined as (
      insert into memberships (tenant_id, user_id, role_key) select ${opts.tenantId}, id, 'org_member' from people returning user_id
    )
    insert into scim_users (id, tenant_id, directory_id, user_id, user_name, external_id, email)
    select 'dsu_b' || substr(p.id, 6), ${opts.tenantId}, ${opts.directoryId}, p.id, p.email, 'ext-' || substr(p.id, 6), p.email
    from people p`;
  await sql`vacuum analyze users, memberships, scim_users`;
}

export async function runScimBenches(
  ctx: ScimBenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!SCIM_SCENARIOS.some(wanted)) {
    return { verdicts: [], results: {} };
  }
  const users = ctx.smoke ? 500 : positiveSetting('BENCH_SCIM_USERS', 10_000);
  const memberships = ctx.smoke ? 5_000 : positiveSetting('BENCH_SCIM_MEMBERSHIPS', 100_000);
  const concurrency = positiveSetting('BENCH_SCIM_CONCURRENCY', 8);
  const connections = positiveSetting('BENCH_SCIM_CONNECTIONS', 4);
  const db = await ctx.createDb('scim');
  await ctx.runCli(['migrate'], db.url);
  await ctx.runCli(['apps', 'create', '--org', 'bench', '--name', 'Bench backend', '--json'], db.url);
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const verdicts: Verdict[] = [];
  const results: Record<string, unknown> = { targets: SCIM_TARGETS };
  try {
    const { tenantId, directoryId, token } = await seedDirectory(sql);
    const server = await startServerChild(ctx, {
      kind: 'svc',
      label: 'svc-scim',
      script: [ctx.cli, 'serve'],
      env: {
        DATABASE_URL: db.url,
        NODE_ENV: 'production',
        ENGINE_ISSUER,
        SVC_ENCRYPTION_KEY: createHash('sha256').update(`bench-scim-${process.pid}`).digest().toString('base64'),
        LOG_LEVEL: 'warn',
        WORKER_ENABLED: 'false',
        RATE_LIMIT_ENABLED: 'true',
        RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
        RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
      },
      ready: healthy,
    });
    const base = `${server.url}/scim/v2/${directoryId}`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' };
    try {
      let created = 0;
      if (wanted('scim-sync') || wanted('scim-filter')) {
        ctx.log(`scim-sync: ${users} POST /Users, ${concurrency} in flight (a provider's initial sync)`);
        const cpuBefore = processCpuMs(server.child.pid);
        const started = performance.now();
        let next = 0;
        let failed = 0;
        let firstFailure = '';
        const worker = async () => {
          while (next < users) {
            const n = ++next;
            const res = await fetch(`${base}/Users`, {
              method: 'POST',
              headers,
              body: JSON.stringify({
                schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
                userName: `person-${n}@${DOMAIN}`,
                externalId: `00u${n}`,
                name: { givenName: 'Person', familyName: String(n) },
                emails: [{ primary: true, type: 'work', value: `person-${n}@${DOMAIN}` }],
                active: true,
              }),
            });
            const text = await res.text();
            if (res.status === 201) {
              created++;
            } else {
              failed++;
              firstFailure ||= `${res.status} ${text.slice(0, 200)}`;
            }
          }
        };
        await Promise.all(Array.from({ length: concurrency }, worker));
        const seconds = (performance.now() - started) / 1000;
        const perSecond = created / seconds;
        const cpuMsPerUser = (processCpuMs(server.child.pid) - cpuBefore) / Math.max(1, created);
        ctx.log(
          `  ${created} users in ${fmt(seconds, 1)} s: ${fmt(perSecond, 0)} users/s, server CPU ${fmt(cpuMsPerUser, 2)} ms/user` +
            `${failed > 0 ? `  FAILED ${failed} (${firstFailure})` : ''}`,
        );
        results.sync = { users, created, failed, seconds, perSecond, cpuMsPerUser, concurrency };
        if (wanted('scim-sync')) {
          verdicts.push({
            name: `scim-sync: initial sync >= ${SCIM_TARGETS.syncUsersPerSecondMin} users/s`,
            pass: perSecond >= SCIM_TARGETS.syncUsersPerSecondMin && failed === 0,
            detail: `${fmt(perSecond, 0)} users/s (${created} users in ${fmt(seconds, 1)} s, ${concurrency} in flight)${failed ? `; ${failed} failed` : ''}`,
          });
        }
      }
      if (wanted('scim-filter')) {
        await growTo(sql, { tenantId, directoryId, from: created, total: memberships });
        const [count] = await sql<{ n: number }[]>`select count(*)::int as n from memberships where tenant_id = ${tenantId}`;
        const sample = await sql<{ id: string; user_name: string }[]>`
          select id, user_name from scim_users where directory_id = ${directoryId} order by random() limit 1000`;
        const byName = sample.map(
          (r) => `/scim/v2/${directoryId}/Users?filter=${encodeURIComponent(`userName eq "${r.user_name.toUpperCase()}"`)}`,
        );
        const byId = sample.map((r) => `/scim/v2/${directoryId}/Users/${r.id}`);
        const probe = await fetch(`${server.url}${byName[0]}`, { headers });
        const answer = (await probe.json()) as { totalResults?: number };
        if (probe.status !== 200 || answer.totalResults !== 1) {
          throw new Error(`scim-filter: the filter answered ${probe.status} ${JSON.stringify(answer).slice(0, 200)}`);
        }
        ctx.log(`scim-filter: userName eq vs GET /Users/{id}, ${count?.n} memberships, ${connections} connections, A B B A per round`);
        const rounds: Record<'id' | 'filter', Measurement[]> = { id: [], filter: [] };
        const measure = async (which: 'id' | 'filter', round: number) => {
          const paths = which === 'id' ? byId : byName;
          if (ctx.warmup > 0) {
            await cannon(server.url, paths, headers, ctx.warmup, connections);
          }
          const cpuBefore = processCpuMs(server.child.pid);
          const m = await cannon(server.url, paths, headers, ctx.duration, connections);
          const serverCpuUs = ((processCpuMs(server.child.pid) - cpuBefore) * 1000) / Math.max(1, m.requests);
          rounds[which].push({ ...m, serverCpuUs });
          ctx.log(
            `  round ${round} ${(which === 'id' ? 'GET /Users/{id}' : 'GET /Users?filter=userName eq').padEnd(32)} ${fmt(m.rps, 0).padStart(6)} req/s  ` +
              `p50 ${fmt(m.p50, 2)} ms  p99 ${fmt(m.p99, 2)} ms  CPU ${fmt(serverCpuUs, 0)} µs/req${m.failed > 0 ? `  FAILED ${m.failed}` : ''}`,
          );
        };
        for (let round = 1; round <= ctx.rounds; round++) {
          const order: ('id' | 'filter')[] = round % 2 === 1 ? ['id', 'filter', 'filter', 'id'] : ['filter', 'id', 'id', 'filter'];
          for (const which of order) {
            await measure(which, round);
          }
        }
        const best = (list: Measurement[]) => ({
          ...([...list].sort((a, b) => b.rps - a.rps)[0] as Measurement),
          p50: Math.min(...list.map((m) => m.p50)),
          p99: Math.min(...list.map((m) => m.p99)),
        });
        const a = best(rounds.id);
        const b = best(rounds.filter);
        const clean = [...rounds.id, ...rounds.filter].every((m) => m.failed === 0 && m.ok > 0);
        ctx.log(
          `  best: by id ${fmt(a.rps, 0)} req/s (p99 ${fmt(a.p99, 2)} ms), filter ${fmt(b.rps, 0)} req/s (p99 ${fmt(b.p99, 2)} ms): ratio ${fmt(b.rps / a.rps, 2)}`,
        );
        results.filter = { memberships: count?.n, connections, id: rounds.id, filter: rounds.filter, ratio: b.rps / a.rps };
        verdicts.push({
          name: `scim-filter: userName eq p99 < ${SCIM_TARGETS.filterP99MaxMs} ms with ${count?.n} memberships`,
          pass: b.p99 < SCIM_TARGETS.filterP99MaxMs && clean,
          detail: `p99 ${fmt(b.p99, 2)} ms (p50 ${fmt(b.p50, 2)} ms, ${fmt(b.rps, 0)} req/s; by id: p99 ${fmt(a.p99, 2)} ms, ${fmt(a.rps, 0)} req/s; ratio ${fmt(b.rps / a.rps, 2)})${clean ? '' : '; some requests failed'}`,
        });
      }
    } finally {
      await server.stop();
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
  return { verdicts, results };
}
