/**
 * Permission check figure (issue 29 "Figures"), run by bench/run.ts:
 *
 * - permission-check: one `svc serve` (NODE_ENV=production, rate limits 1e9/min, limiter on), one
 *   application of the organization `bench` and its secret key. `POST /v1/permissions/check`
 *   asking whether one of BENCH_CHECK_USERS members (1,000; smoke 50), in turn, holds a product
 *   permission of their custom role (every answer `allowed: true`), against
 *   `GET /v1/backend/application` with the same key, on the same server, slices A B B A per round
 *   (best of the rounds each side). Target: the check at least 0.8x the backend route's req/s.
 *   The check is a POST with a JSON body, its input and output schemas and the caller's
 *   application lookup; its standing comes from the per-process cache (after the warmup every
 *   member's is held), as it does in production between changes.
 */
import { createHash, randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { type BenchContext, fmt, healthy, positiveSetting, processCpuMs, startServerChild, type Verdict } from './support.ts';

export const PERMISSION_CHECK_TARGETS = { checkMin: 0.8 };
export const PERMISSION_CHECK_SCENARIOS = ['permission-check'] as const;

export type PermissionCheckBenchContext = BenchContext & { duration: number; warmup: number; connections: number };

const ENGINE_ISSUER = 'http://127.0.0.1:7151/application/o/svc/';
const PERMISSION = 'invoices.read';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const random62 = (n: number) => Array.from(randomBytes(n), (b) => BASE62[b % 62]).join('');

/**
 * A load: one request, or one per body in turn. The bodies are built before the run, so that
 * autocannon sends prebuilt buffers (a `setupRequest` would rebuild every request in the load
 * generator, which shares the machine's cores with the server and would slow this side only).
 */
type Load = { label: string; method: 'GET' | 'POST'; path: string; bodies?: string[] };
type Measurement = { rps: number; p50: number; p99: number; ok: number; failed: number; serverCpuUs: number };

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number);
}

/** One autocannon run; each connection sends the load's bodies in turn. */
function cannon(
  url: string,
  load: Load,
  headers: Record<string, string>,
  seconds: number,
  connections: number,
): Promise<Omit<Measurement, 'serverCpuUs'> & { requests: number }> {
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}${load.path}`,
        connections,
        duration: seconds,
        timeout: 10,
        requests: (load.bodies ?? [undefined]).map((body) => ({ method: load.method, path: load.path, headers, body })),
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

/** The organization's members holding a custom role with the product permission; their ids. */
async function seed(sql: postgres.Sql, users: number): Promise<string[]> {
  const [org] = await sql<{ id: string }[]>`select id from organizations where slug = 'bench'`;
  if (!org) {
    throw new Error('the bench organization is missing');
  }
  const resourceId = `res_${random62(20)}`;
  await sql`insert into api_resources (id, identifier, name) values (${resourceId}, 'https://api.bench.test', 'Bench API')`;
  await sql`
    insert into api_permissions (id, resource_id, name)
    select 'prm_' || substr(md5(g::text), 1, 20), ${resourceId}, 'invoices.' || (array['read', 'create', 'update', 'delete', 'export'])[g]
    from generate_series(1, 5) g`;
  await sql`
    insert into roles (id, tenant_id, key, name, permissions, product_permissions)
    values (${`rol_${random62(20)}`}, ${org.id}, 'billing', 'Billing', '{members.read}', '{invoices.create,invoices.read}')`;
  const ids = await sql<{ id: string }[]>`
    insert into users (id, engine_subject, email, email_verified, name)
    select 'usr_' || lpad(g::text, 20, '0'), 'bench-check-' || g, 'check-' || g || '@example.com', true, 'Member ' || g
    from generate_series(1, ${users}::int) g
    returning id`;
  await sql`
    insert into memberships (tenant_id, user_id, role_key)
    select ${org.id}, u.id, 'billing' from unnest(${sql.array(ids.map((r) => r.id))}::text[]) as u(id)`;
  await sql`vacuum analyze memberships`;
  return ids.map((r) => r.id);
}

export async function runPermissionCheckBenches(
  ctx: PermissionCheckBenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('permission-check')) {
    return { verdicts: [], results: {} };
  }
  const users = ctx.smoke ? 50 : positiveSetting('BENCH_CHECK_USERS', 1_000);
  const db = await ctx.createDb('check');
  await ctx.runCli(['migrate'], db.url);
  const created = JSON.parse(await ctx.runCli(['apps', 'create', '--org', 'bench', '--name', 'Bench backend', '--json'], db.url)) as {
    secretKey: string;
  };
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  let userIds: string[];
  try {
    userIds = await seed(sql, users);
  } finally {
    await sql.end({ timeout: 1 });
  }
  const server = await startServerChild(ctx, {
    kind: 'svc',
    label: 'svc-permission-check',
    script: [ctx.cli, 'serve'],
    env: {
      DATABASE_URL: db.url,
      NODE_ENV: 'production',
      ENGINE_ISSUER,
      SVC_ENCRYPTION_KEY: createHash('sha256').update(`bench-check-${process.pid}`).digest().toString('base64'),
      LOG_LEVEL: 'warn',
      WORKER_ENABLED: 'false',
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
      RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
    },
    ready: healthy,
  });
  try {
    const headers = { authorization: `Bearer ${created.secretKey}`, 'content-type': 'application/json' };
    const backend: Load = { label: 'GET /v1/backend/application', method: 'GET', path: '/v1/backend/application' };
    const check: Load = {
      label: `POST /v1/permissions/check (${users} members in turn)`,
      method: 'POST',
      path: '/v1/permissions/check',
      bodies: userIds.map((id) => `{"userId":"${id}","permission":"${PERMISSION}"}`),
    };
    // Each route answers what it should before it is measured.
    const first = await fetch(`${server.url}${check.path}`, { method: 'POST', headers, body: check.bodies?.[0] });
    const answer = (await first.json()) as { allowed?: boolean; role?: string };
    if (first.status !== 200 || answer.allowed !== true || answer.role !== 'billing') {
      throw new Error(`permission-check: the check answered ${first.status} ${JSON.stringify(answer)}`);
    }
    const backendAnswer = await fetch(`${server.url}${backend.path}`, { headers });
    if (backendAnswer.status !== 200) {
      throw new Error(`permission-check: the backend route answered ${backendAnswer.status} ${await backendAnswer.text()}`);
    }

    ctx.log(
      `permission-check: POST /v1/permissions/check vs GET /v1/backend/application, same server and key, ${ctx.connections} connections, ` +
        `${users} members, slices A B B A per round`,
    );
    const rounds: Record<'backend' | 'check', Measurement[]> = { backend: [], check: [] };
    const measure = async (which: 'backend' | 'check', round: number) => {
      const load = which === 'backend' ? backend : check;
      if (ctx.warmup > 0) {
        await cannon(server.url, load, headers, ctx.warmup, ctx.connections);
      }
      const cpuBefore = processCpuMs(server.child.pid);
      const m = await cannon(server.url, load, headers, ctx.duration, ctx.connections);
      const serverCpuUs = ((processCpuMs(server.child.pid) - cpuBefore) * 1000) / Math.max(1, m.requests);
      rounds[which].push({ rps: m.rps, p50: m.p50, p99: m.p99, ok: m.ok, failed: m.failed, serverCpuUs });
      ctx.log(
        `  round ${round} ${load.label.padEnd(58)} ${fmt(m.rps, 0).padStart(7)} req/s  p50 ${fmt(m.p50, 2)} ms  p99 ${fmt(m.p99, 2)} ms  ` +
          `CPU ${fmt(serverCpuUs, 0)} µs/req${m.failed > 0 ? `  FAILED ${m.failed}` : ''}`,
      );
    };
    for (let round = 1; round <= ctx.rounds; round++) {
      const order: ('backend' | 'check')[] =
        round % 2 === 1 ? ['backend', 'check', 'check', 'backend'] : ['check', 'backend', 'backend', 'check'];
      for (const which of order) {
        await measure(which, round);
      }
    }
    const best = (list: Measurement[]) => {
      const byRps = [...list].sort((a, b) => b.rps - a.rps)[0] as Measurement;
      return {
        ...byRps,
        p50: Math.min(...list.map((m) => m.p50)),
        p99: Math.min(...list.map((m) => m.p99)),
        serverCpuUs: Math.min(...list.map((m) => m.serverCpuUs)),
      };
    };
    const a = best(rounds.backend);
    const b = best(rounds.check);
    const ratio = b.rps / a.rps;
    // The server's CPU per request swings far less than req/s with other work on the machine.
    const cpuRatio = a.serverCpuUs / b.serverCpuUs;
    const clean = [...rounds.backend, ...rounds.check].every((m) => m.failed === 0 && m.ok > 0);
    ctx.log(
      `  best: backend ${fmt(a.rps, 0)} req/s (p99 ${fmt(a.p99, 2)} ms, ${fmt(a.serverCpuUs, 0)} µs CPU/req), ` +
        `check ${fmt(b.rps, 0)} req/s (p99 ${fmt(b.p99, 2)} ms, ${fmt(b.serverCpuUs, 0)} µs CPU/req): ratio ${fmt(ratio, 2)} (by CPU per request ${fmt(cpuRatio, 2)})`,
    );
    const verdict: Verdict = {
      name: `permission-check: check / backend req/s >= ${PERMISSION_CHECK_TARGETS.checkMin}`,
      pass: ratio >= PERMISSION_CHECK_TARGETS.checkMin && clean,
      detail: `${fmt(ratio, 2)} (${fmt(b.rps, 0)} vs ${fmt(a.rps, 0)} req/s; p99 ${fmt(b.p99, 2)} vs ${fmt(a.p99, 2)} ms; CPU/req ratio ${fmt(cpuRatio, 2)})${clean ? '' : '; some requests failed'}`,
    };
    return {
      verdicts: [verdict],
      results: {
        targets: PERMISSION_CHECK_TARGETS,
        users,
        connections: ctx.connections,
        backend: rounds.backend,
        check: rounds.check,
        ratio,
        cpuRatio,
      },
    };
  } finally {
    await server.stop();
  }
}
