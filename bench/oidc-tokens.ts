/**
 * `BENCH_ONLY=oidc-tokens`: svc's token endpoint (`POST /oidc/token`) against the same
 * oidc-provider configuration on oidc-provider's in-memory adapter, in one run, side by side.
 *
 * svc: a real `svc serve` (NODE_ENV=production, the PostgreSQL adapter). Baseline:
 * bench/oidc-provider-server.ts with OIDC_STORAGE=memory: provider.ts's OpenIdProvider with the
 * same clients (the application, through the application cache), the same account and session
 * checks (PostgreSQL reads), the same signing key and algorithm, only storage in memory, and no
 * Express in front. One confidential application (client_secret_basic with its secret key), one
 * signed-in person with an organization.
 *
 * Codes and refresh tokens are single use (refresh rotates), so each measured run redeems exactly
 * as many as were minted for it just before (autocannon `amount`), through oidc-provider's own
 * models (one grant each, as one sign-in makes): on the baseline by the baseline process itself,
 * for svc by bench/oidc-provider-server.ts with OIDC_STORAGE=postgres on svc's database.
 * Authorization codes live 60 s: a run is sized to finish well within.
 */
import { createHash, randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import postgres from 'postgres';
import type { MintRequest } from './oidc-provider-server.ts';
import { type BenchContext, type Child, fmt, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export const OIDC_TOKEN_SCENARIOS = ['oidc-tokens'] as const;
export const OIDC_TOKEN_TARGETS = { oidcTokensMin: 0.5 };

const REDIRECT_URI = 'https://app.example/callback';

type Measurement = { rps: number; p50: number; p99: number; ok: number; failed: number; seconds: number };
type Grant = 'authorization_code' | 'refresh_token';

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number);
}

/** Exactly `bodies.length` token requests, one body each, `connections` at a time. */
function redeem(url: string, authorization: string, bodies: string[], connections: number): Promise<Measurement> {
  const latencies: number[] = [];
  let next = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}/oidc/token`,
        connections,
        amount: bodies.length,
        timeout: 20,
        requests: [
          {
            method: 'POST',
            path: '/oidc/token',
            headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
            setupRequest: (req: Record<string, unknown>) => ({ ...req, body: bodies[next++ % bodies.length] }),
          },
        ],
      },
      (error: Error | null, result: autocannon.Result) => {
        if (error) {
          reject(error);
          return;
        }
        const sorted = Float64Array.from(latencies).sort();
        const seconds = result.duration > 0 ? result.duration : 1;
        resolve({
          rps: result['2xx'] / seconds,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          ok: result['2xx'],
          failed: result.non2xx + result.errors + result.timeouts,
          seconds,
        });
      },
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
    });
  });
}

type Setup = { clientId: string; secretKey: string; mint: Omit<MintRequest, 'kind' | 'count'>; verifier: string };

/** The application (confidential, one redirect URL) and a signed-in organization admin with a live session. */
async function seed(ctx: BenchContext, databaseUrl: string): Promise<Setup> {
  const created = JSON.parse(
    await ctx.runCli(
      ['apps', 'create', '--org', 'bench', '--name', 'Bench OIDC client', '--client-type', 'confidential', '--json'],
      databaseUrl,
    ),
  ) as { secretKey: string; application: { id: string } };
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`update applications set redirect_urls = ${[REDIRECT_URI]} where id = ${created.application.id}`;
    const [org] = await sql<{ id: string; slug: string }[]>`select id, slug from organizations where slug = 'bench'`;
    if (!org) {
      throw new Error('bench organization missing');
    }
    await sql`
      insert into users (id, engine_subject, email, email_verified, name)
      values ('usr_benchoidc', 'bench-oidc-sub', 'bench-oidc@example.com', true, 'Bench OIDC user')`;
    await sql`insert into memberships (tenant_id, user_id, role_key) values (${org.id}, 'usr_benchoidc', 'org_admin')`;
    await sql`
      insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
      values ('ses_benchoidc', ${createHash('sha256').update(randomBytes(32)).digest('hex')}, 'usr_benchoidc', ${org.id},
              now() + interval '1 day', now() + interval '7 days', now())`;
    const verifier = randomBytes(32).toString('base64url');
    return {
      clientId: created.application.id,
      secretKey: created.secretKey,
      verifier,
      mint: {
        clientId: created.application.id,
        accountId: 'usr_benchoidc',
        sid: 'ses_benchoidc',
        organization: { id: org.id, slug: org.slug },
        redirectUri: REDIRECT_URI,
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
      },
    };
  } finally {
    await sql.end();
  }
}

async function mint(minter: string, setup: Setup, kind: MintRequest['kind'], count: number): Promise<string[]> {
  const res = await fetch(`${minter}/bench/mint`, { method: 'POST', body: JSON.stringify({ ...setup.mint, kind, count }) });
  if (res.status !== 200) {
    throw new Error(`minting ${kind}s answered ${res.status}: ${(await res.text()).slice(0, 500)}`);
  }
  return (await res.json()) as string[];
}

function bodies(setup: Setup, grant: Grant, values: string[]): string[] {
  return values.map((value) =>
    new URLSearchParams(
      grant === 'authorization_code'
        ? { grant_type: grant, code: value, redirect_uri: REDIRECT_URI, code_verifier: setup.verifier }
        : { grant_type: grant, refresh_token: value },
    ).toString(),
  );
}

export async function runOidcTokenBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('oidc-tokens')) {
    return { verdicts: [], results: {} };
  }
  // Per measured run (and as many again to warm up): small enough to redeem within the codes' 60 s.
  const count = Math.round(positiveSetting('BENCH_OIDC_TOKENS', ctx.smoke ? 100 : 1_000));
  const warmup = ctx.smoke ? 0 : Math.round(count / 4);
  const connections = Math.round(positiveSetting('BENCH_OIDC_CONNECTIONS', 16));
  const encryptionKey = randomBytes(32).toString('base64');
  const db = await ctx.createDb('oidc_tokens');
  await ctx.runCli(['migrate'], db.url);
  const setup = await seed(ctx, db.url);
  const authorization = `Basic ${Buffer.from(`${encodeURIComponent(setup.clientId)}:${encodeURIComponent(setup.secretKey)}`).toString('base64')}`;
  const env = {
    DATABASE_URL: db.url,
    NODE_ENV: 'production',
    ENGINE_ISSUER: 'http://127.0.0.1:3001/application/o/svc/',
    SVC_ENCRYPTION_KEY: encryptionKey,
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: 'false',
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
    RATE_LIMIT_SIGNIN_PER_MINUTE: '1000000000',
  };
  const start = (label: string, kind: 'svc' | 'memory' | 'postgres'): Promise<Child & { url: string }> =>
    startServerChild(ctx, {
      kind: kind === 'svc' ? 'svc' : 'other',
      label,
      script: kind === 'svc' ? [ctx.cli, 'serve'] : ['bench/oidc-provider-server.ts'],
      env: kind === 'svc' ? env : { ...env, OIDC_STORAGE: kind },
      ready: healthy,
    });

  const sides = ['in-memory adapter', 'svc'] as const;
  const grants: Grant[] = ['authorization_code', 'refresh_token'];
  const rounds: Record<Grant, Record<(typeof sides)[number], Measurement[]>> = {
    authorization_code: { 'in-memory adapter': [], svc: [] },
    refresh_token: { 'in-memory adapter': [], svc: [] },
  };
  ctx.log(
    `measuring: POST /oidc/token, ${count} authorization-code exchanges then ${count} refresh grants per run ` +
      `(${warmup} of each to warm up), ${connections} connections: svc vs the same provider on oidc-provider's in-memory adapter`,
  );
  for (let round = 1; round <= ctx.rounds; round++) {
    for (const side of sides) {
      // svc's codes are minted into its database by a provider of the same configuration beside it.
      const target = await start(side === 'svc' ? 'svc-oidc-tokens' : 'oidc-provider-memory', side === 'svc' ? 'svc' : 'memory');
      const minter = side === 'svc' ? await start('oidc-minter', 'postgres') : target;
      try {
        for (const grant of grants) {
          const kind = grant === 'authorization_code' ? 'code' : 'refresh';
          if (warmup > 0) {
            await redeem(target.url, authorization, bodies(setup, grant, await mint(minter.url, setup, kind, warmup)), connections);
          }
          const values = await mint(minter.url, setup, kind, count);
          const m = await redeem(target.url, authorization, bodies(setup, grant, values), connections);
          rounds[grant][side].push(m);
          ctx.log(
            `  oidc-tokens          round ${round} ${side.padEnd(18)} ${grant.padEnd(18)} ${fmt(m.rps, 0).padStart(6)} grants/s  ` +
              `p50 ${fmt(m.p50, 1).padStart(6)} ms  p99 ${fmt(m.p99, 1).padStart(6)} ms` +
              (m.failed > 0 ? `  (${m.failed} failed of ${count})` : ''),
          );
        }
      } finally {
        if (minter !== target) {
          await minter.stop();
        }
        await target.stop();
      }
    }
  }

  const verdicts: Verdict[] = [];
  const results: Record<string, unknown> = { count, warmup, connections, rounds };
  for (const grant of grants) {
    const best = (side: (typeof sides)[number]) => {
      const all = rounds[grant][side];
      return { ...[...all].sort((a, b) => b.rps - a.rps)[0], p99: Math.min(...all.map((m) => m.p99)) } as Measurement;
    };
    const memory = best('in-memory adapter');
    const svc = best('svc');
    const failed = sides.some((s) => rounds[grant][s].some((m) => m.failed > 0 || m.ok !== count));
    if (failed && ctx.smoke) {
      throw new Error(`oidc-tokens: some ${grant} grants failed (smoke)`);
    }
    const ratio = svc.rps / memory.rps;
    const label = grant === 'authorization_code' ? 'code exchange' : 'refresh';
    verdicts.push({
      name: `oidc-tokens ${label}: svc grants/s >= ${OIDC_TOKEN_TARGETS.oidcTokensMin}x in-memory`,
      pass: !failed && ratio >= OIDC_TOKEN_TARGETS.oidcTokensMin,
      detail:
        `${fmt(svc.rps, 0)} vs ${fmt(memory.rps, 0)} grants/s = ${fmt(ratio, 2)}x, p99 ${fmt(svc.p99, 1)} vs ${fmt(memory.p99, 1)} ms` +
        (failed ? ' [some grants failed: figures invalid]' : ''),
    });
    results[grant] = { svc, memory, ratio };
  }
  return { verdicts, results };
}
