/**
 * `BENCH_ONLY=client-credentials,token-size`: the product's authorization figures (issue 29).
 *
 * client-credentials: `POST /oidc/token` with `grant_type=client_credentials` and
 * `resource=<API identifier>` from a machine client (client_secret_basic with its secret key),
 * svc (a real `svc serve`, NODE_ENV=production: the client from the application cache, the
 * machine client's organization and permissions, the usage event of every token, the signing)
 * against bare oidc-provider (bench/client-credentials-baseline.ts: the same grant, one static
 * client, in memory, same signing algorithm). Tokens are not single use: each run lasts
 * BENCH_DURATION seconds. One process at a time, alternating per round, best round each.
 *
 * token-size: a person holding 100 product permissions (the built-in org_admin role's) signs in
 * with scope `openid email offline_access organization`; the sizes of the ID token, the
 * application's access token and an API's access token (`resource`), and of a machine client's
 * token carrying 100 permissions. Codes are minted as in bench/oidc-tokens.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import postgres from 'postgres';
import type { MintRequest } from './oidc-provider-server.ts';
import { type BenchContext, type Child, fmt, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export const CLIENT_CREDENTIALS_SCENARIOS = ['client-credentials', 'token-size'] as const;
export const CLIENT_CREDENTIALS_TARGETS = { clientCredentialsMin: 0.5, tokenBytesMax: 4096 };

const API = 'https://api.bench.example';
const REDIRECT_URI = 'https://app.example/callback';
const RESOURCES = [
  'invoices',
  'customers',
  'reports',
  'subscriptions',
  'payments',
  'projects',
  'documents',
  'settings',
  'analytics',
  'exports',
];
const ACTIONS = ['read', 'create', 'update', 'delete', 'export', 'approve', 'archive', 'share', 'import', 'manage'];
/** 100 product permissions, `resource.action` as products name them (15.6 characters on average). */
const PERMISSIONS = RESOURCES.flatMap((r) => ACTIONS.map((a) => `${r}.${a}`)).sort();

type Measurement = { rps: number; p50: number; p99: number; ok: number; failed: number };

function measure(url: string, authorization: string, body: string, seconds: number, connections: number): Promise<Measurement> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `${url}/oidc/token`,
        connections,
        duration: seconds,
        timeout: 20,
        requests: [
          { method: 'POST', path: '/oidc/token', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization }, body },
        ],
      },
      (error: Error | null, result: autocannon.Result) => {
        if (error) {
          reject(error);
          return;
        }
        resolve({
          rps: result['2xx'] / (result.duration > 0 ? result.duration : 1),
          p50: result.latency.p50,
          p99: result.latency.p99,
          ok: result['2xx'],
          failed: result.non2xx + result.errors + result.timeouts,
        });
      },
    );
  });
}

type Seeded = {
  machine: { clientId: string; secretKey: string };
  app: { clientId: string; secretKey: string };
  mint: Omit<MintRequest, 'kind' | 'count'>;
  verifier: string;
};

/** The organization, its API and 100 permissions, a machine client, a confidential application and a signed-in org admin. */
async function seed(ctx: BenchContext, databaseUrl: string): Promise<Seeded> {
  const create = async (name: string) =>
    JSON.parse(
      await ctx.runCli(['apps', 'create', '--org', 'bench', '--name', name, '--client-type', 'confidential', '--json'], databaseUrl),
    ) as { secretKey: string; application: { id: string } };
  const machine = await create('Bench machine client');
  const app = await create('Bench web app');
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`insert into api_resources (id, identifier, name) values ('res_benchbenchbenchbenc', ${API}, 'Bench API')`;
    for (const [i, name] of PERMISSIONS.entries()) {
      await sql`insert into api_permissions (id, resource_id, name) values (${`prm_bench${String(i).padStart(15, '0')}`}, 'res_benchbenchbenchbenc', ${name})`;
    }
    await sql`update product_roles set permissions = ${PERMISSIONS} where key = 'org_admin'`;
    await sql`
      update applications set client_type = 'machine', token_endpoint_auth_method = 'client_secret_basic',
        machine_permissions = ${PERMISSIONS}
      where id = ${machine.application.id}`;
    await sql`update applications set redirect_urls = ${[REDIRECT_URI]} where id = ${app.application.id}`;
    const [org] = await sql<{ id: string; slug: string }[]>`select id, slug from organizations where slug = 'bench'`;
    if (!org) {
      throw new Error('bench organization missing');
    }
    await sql`
      insert into users (id, engine_subject, email, email_verified, name)
      values ('usr_benchtokensize', 'bench-size-sub', 'bench-size@example.com', true, 'Bench token size')`;
    await sql`insert into memberships (tenant_id, user_id, role_key) values (${org.id}, 'usr_benchtokensize', 'org_admin')`;
    await sql`
      insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
      values ('ses_benchtokensize', ${createHash('sha256').update(randomBytes(32)).digest('hex')}, 'usr_benchtokensize', ${org.id},
              now() + interval '1 day', now() + interval '7 days', now())`;
    const verifier = randomBytes(32).toString('base64url');
    return {
      machine: { clientId: machine.application.id, secretKey: machine.secretKey },
      app: { clientId: app.application.id, secretKey: app.secretKey },
      verifier,
      mint: {
        clientId: app.application.id,
        accountId: 'usr_benchtokensize',
        sid: 'ses_benchtokensize',
        organization: { id: org.id, slug: org.slug },
        redirectUri: REDIRECT_URI,
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
      },
    };
  } finally {
    await sql.end();
  }
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

async function tokenRequest(url: string, authorization: string, body: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(`${url}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
    body: new URLSearchParams(body),
  });
  const json = (await res.json()) as Record<string, string>;
  if (res.status !== 200) {
    throw new Error(`token request answered ${res.status}: ${JSON.stringify(json)}`);
  }
  return json;
}

export async function runClientCredentialsBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  const cc = wanted('client-credentials');
  const size = wanted('token-size');
  if (!cc && !size) {
    return { verdicts: [], results: {} };
  }
  const seconds = ctx.smoke ? 2 : positiveSetting('BENCH_DURATION', 10);
  const connections = Math.round(positiveSetting('BENCH_CC_CONNECTIONS', 16));
  const db = await ctx.createDb('client_credentials');
  await ctx.runCli(['migrate'], db.url);
  const seeded = await seed(ctx, db.url);
  const env = {
    DATABASE_URL: db.url,
    NODE_ENV: 'production',
    ENGINE_ISSUER: 'http://127.0.0.1:3001/application/o/svc/',
    SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: 'false',
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
    RATE_LIMIT_SIGNIN_PER_MINUTE: '1000000000',
  };
  const startSvc = (): Promise<Child & { url: string }> =>
    startServerChild(ctx, { kind: 'svc', label: 'svc-client-credentials', script: [ctx.cli, 'serve'], env, ready: healthy });
  const verdicts: Verdict[] = [];
  const results: Record<string, unknown> = {};

  if (size) {
    const svc = await startSvc();
    const minter = await startServerChild(ctx, {
      kind: 'other',
      label: 'oidc-minter',
      script: ['bench/oidc-provider-server.ts'],
      env: { ...env, OIDC_STORAGE: 'postgres' },
      ready: healthy,
    });
    try {
      const code = async (apiResource?: string) => {
        const res = await fetch(`${minter.url}/bench/mint`, {
          method: 'POST',
          body: JSON.stringify({ ...seeded.mint, kind: 'code', count: 1, ...(apiResource ? { apiResource } : {}) }),
        });
        const [value] = (await res.json()) as string[];
        return tokenRequest(svc.url, basic(seeded.app.clientId, seeded.app.secretKey), {
          grant_type: 'authorization_code',
          code: value as string,
          redirect_uri: REDIRECT_URI,
          code_verifier: seeded.verifier,
        });
      };
      const own = await code();
      const forApi = await code(API);
      const machine = await tokenRequest(svc.url, basic(seeded.machine.clientId, seeded.machine.secretKey), {
        grant_type: 'client_credentials',
        resource: API,
      });
      const sizes = {
        'ID token': own.id_token?.length ?? Number.NaN,
        "the application's access token": own.access_token?.length ?? Number.NaN,
        "an API's access token (resource)": forApi.access_token?.length ?? Number.NaN,
        "a machine client's access token": machine.access_token?.length ?? Number.NaN,
      };
      for (const [what, bytes] of Object.entries(sizes)) {
        ctx.log(`  token-size           ${what.padEnd(34)} ${String(bytes).padStart(5)} bytes (100 product permissions)`);
        verdicts.push({
          name: `token-size ${what} < ${CLIENT_CREDENTIALS_TARGETS.tokenBytesMax} bytes`,
          pass: bytes < CLIENT_CREDENTIALS_TARGETS.tokenBytesMax,
          detail: `${bytes} bytes with 100 permissions`,
        });
      }
      results.tokenSize = sizes;
    } finally {
      await minter.stop();
      await svc.stop();
    }
  }

  if (cc) {
    // Both sides are asked for all 100 permissions, so both tokens carry the same scope.
    const body = new URLSearchParams({ grant_type: 'client_credentials', resource: API, scope: PERMISSIONS.join(' ') }).toString();
    const authorization = basic(seeded.machine.clientId, seeded.machine.secretKey);
    // `svc` is the default: the plan does not limit machine tokens, so each is issued at once and
    // counted right after (usage/machine-tokens.ts). `svc, limited` runs the same grants under a
    // plan that limits machine_token.issued, where each token waits for its count under the
    // limit's lock; reported beside the target, which is measured on the default.
    const sides = ['bare oidc-provider', 'svc', 'svc, limited'] as const;
    const rounds: Record<(typeof sides)[number], Measurement[]> = { 'bare oidc-provider': [], svc: [], 'svc, limited': [] };
    const limitMachineTokens = async (limited: boolean) => {
      const sql = postgres(db.url, { max: 1, onnotice: () => {} });
      try {
        await sql`
          update subscription_plans set usage_limits = ${JSON.stringify(limited ? { 'machine_token.issued': 1_000_000_000 } : {})}::text::jsonb
          where id = (select plan_id from subscriptions s join organizations o on o.id = s.tenant_id where o.slug = 'bench')`;
      } finally {
        await sql.end();
      }
    };
    ctx.log(`measuring: POST /oidc/token client_credentials + resource, ${seconds} s per run, ${connections} connections`);
    for (let round = 1; round <= ctx.rounds; round++) {
      for (const side of sides) {
        await limitMachineTokens(side === 'svc, limited');
        const target =
          side !== 'bare oidc-provider'
            ? await startSvc()
            : await startServerChild(ctx, {
                kind: 'other',
                label: 'oidc-provider-bare',
                script: ['bench/client-credentials-baseline.ts'],
                env: {
                  BENCH_CC_CLIENT_ID: seeded.machine.clientId,
                  BENCH_CC_CLIENT_SECRET: seeded.machine.secretKey,
                  BENCH_CC_RESOURCE: API,
                  BENCH_CC_SCOPE: PERMISSIONS.join(' '),
                },
                ready: healthy,
              });
        try {
          if (!ctx.smoke) {
            await measure(target.url, authorization, body, Math.min(3, seconds), connections);
          }
          const m = await measure(target.url, authorization, body, seconds, connections);
          rounds[side].push(m);
          ctx.log(
            `  client-credentials   round ${round} ${side.padEnd(20)} ${fmt(m.rps, 0).padStart(6)} grants/s  ` +
              `p50 ${fmt(m.p50, 1).padStart(6)} ms  p99 ${fmt(m.p99, 1).padStart(6)} ms` +
              (m.failed > 0 ? `  (${m.failed} failed)` : ''),
          );
        } finally {
          await target.stop();
        }
      }
    }
    const best = (side: (typeof sides)[number]) => {
      const all = rounds[side];
      return { ...[...all].sort((a, b) => b.rps - a.rps)[0], p99: Math.min(...all.map((m) => m.p99)) } as Measurement;
    };
    const bare = best('bare oidc-provider');
    const svc = best('svc');
    const failed = sides.some((s) => rounds[s].some((m) => m.failed > 0 || m.ok === 0));
    if (failed && ctx.smoke) {
      throw new Error('client-credentials: some grants failed (smoke)');
    }
    const ratio = svc.rps / bare.rps;
    const limited = best('svc, limited');
    ctx.log(
      `  client-credentials   with a plan that limits machine tokens: ${fmt(limited.rps, 0)} grants/s = ${fmt(limited.rps / bare.rps, 2)}x, ` +
        `p99 ${fmt(limited.p99, 1)} ms (reported, no target)`,
    );
    verdicts.push({
      name: `client-credentials: svc grants/s >= ${CLIENT_CREDENTIALS_TARGETS.clientCredentialsMin}x bare oidc-provider`,
      pass: !failed && ratio >= CLIENT_CREDENTIALS_TARGETS.clientCredentialsMin,
      detail:
        `${fmt(svc.rps, 0)} vs ${fmt(bare.rps, 0)} grants/s = ${fmt(ratio, 2)}x, p99 ${fmt(svc.p99, 1)} vs ${fmt(bare.p99, 1)} ms` +
        (failed ? ' [some grants failed: figures invalid]' : ''),
    });
    results.clientCredentials = { svc, bare, ratio, limited: { ...limited, ratio: limited.rps / bare.rps }, rounds };
  }
  return { verdicts, results };
}
