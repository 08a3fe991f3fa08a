/**
 * Sessions are one thing (`BENCH_ONLY=session-refusal,backchannel-logout`): what ending a svc
 * session costs the applications signed in through it, measured across real processes.
 *
 * Two `svc serve` processes A and B on one fresh database (NODE_ENV=test: each runs its
 * development engine, the only engine a bench can sign people in through; LOG_LEVEL=warn), A with
 * its worker. One confidential application whose backchannelLogoutUrl is a receiver in this
 * process (plain node:http, answers 200, notes each token's arrival by sid). For each of
 * BENCH_BACKCHANNEL_SESSIONS sessions (50; smoke 5), one after the other: a fresh engine sign-in
 * on A, an authorization code flow with offline_access on A, one refresh on B (it works), then
 * POST /auth/logout on A, then refreshes on B until one answers invalid_grant.
 *
 * - session-refusal: logout answered on A (the revocation committed) -> B's first invalid_grant
 *   (max < 1 s), and no refresh honoured by B after that answer.
 * - backchannel-logout: logout answered on A (committed) -> the logout token at the receiver
 *   (p95 < 2 s), with the worker running.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CreatedApplication, createApplication } from '../apps/api/src/modules/applications/service.ts';
import { createDatabase } from '../packages/db/src/client.ts';
import { browseToRedirect, CookieJar } from '../test/support/oidc-browser.ts';
import { type BenchContext, fmt, HOST, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export const BACKCHANNEL_SCENARIOS = ['session-refusal', 'backchannel-logout'] as const;
export const BACKCHANNEL_TARGETS = { refusalMaxMs: 1_000, logoutP95MaxMs: 2_000 };

const REDIRECT = 'http://127.0.0.1:53119/callback';

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) {
    return Number.NaN;
  }
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** The application's back end: each logout token's arrival time, by sid. */
async function startReceiver(): Promise<{ url: string; arrivals: Map<string, number>; close: () => Promise<void> }> {
  const arrivals = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      const at = performance.now();
      const token = new URLSearchParams(body).get('logout_token') ?? '';
      const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString() || '{}') as { sid?: string };
      if (payload.sid && !arrivals.has(payload.sid)) {
        arrivals.set(payload.sid, at);
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  return {
    url: `http://${HOST}:${(server.address() as AddressInfo).port}`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Tokens = { refreshToken: string; sid: string };

/** A fresh engine sign-in on `svcUrl`, then the application's code flow with offline_access there. */
async function signIn(svcUrl: string, app: CreatedApplication): Promise<{ jar: CookieJar; tokens: Tokens }> {
  const jar = new CookieJar();
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const url = new URL(`${svcUrl}/oidc/auth`);
  url.search = new URLSearchParams({
    client_id: app.application.id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid offline_access',
    prompt: 'consent',
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  const { callback } = await browseToRedirect(jar, url, { svcUrl, redirectUri: REDIRECT });
  const code = callback.searchParams.get('code');
  if (!code || callback.searchParams.get('state') !== state) {
    throw new Error(`no code at the callback: ${callback.href}`);
  }
  const body = await token(svcUrl, app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
  if (!body.refresh_token || !body.id_token) {
    throw new Error(`code exchange answered ${JSON.stringify(body)}`);
  }
  const claims = JSON.parse(Buffer.from(body.id_token.split('.')[1] ?? '', 'base64url').toString()) as { sid: string };
  return { jar, tokens: { refreshToken: body.refresh_token, sid: claims.sid } };
}

async function token(svcUrl: string, app: CreatedApplication, params: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(`${svcUrl}/oidc/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${app.application.id}:${app.secretKey}`).toString('base64')}`,
    },
    body: new URLSearchParams(params).toString(),
  });
  return (await res.json()) as Record<string, string>;
}

export async function runBackchannelBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  const sessions = ctx.smoke ? 5 : positiveSetting('BENCH_BACKCHANNEL_SESSIONS', 50);
  const db = await ctx.createDb('backchannel');
  await ctx.runCli(['migrate'], db.url);
  const receiver = await startReceiver();
  const encryptionKey = randomBytes(32).toString('base64');
  const env = (worker: boolean) => ({
    DATABASE_URL: db.url,
    NODE_ENV: 'test',
    DEV_ENGINE_PORT: '0',
    SVC_ENCRYPTION_KEY: encryptionKey,
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: worker ? 'true' : 'false',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    RATE_LIMIT_SIGNIN_PER_MINUTE: '1000000',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    RATE_LIMIT_BACKEND_PER_MINUTE: '1000000000',
  });
  // One after the other: two starting at once (each with its engine) compete for a small machine.
  const a = await startServerChild(ctx, { kind: 'svc', label: 'svc-a', script: [ctx.cli, 'serve'], env: env(true), ready: healthy });
  const b = await startServerChild(ctx, { kind: 'svc', label: 'svc-b', script: [ctx.cli, 'serve'], env: env(false), ready: healthy }).catch(
    async (error: unknown) => {
      await a.stop();
      throw error;
    },
  );
  const database = createDatabase({ url: db.url, max: 1, applicationName: 'svc-bench-backchannel' });
  const refusals: number[] = [];
  const logouts: number[] = [];
  let lost = 0;
  /** Refreshes B honoured after A answered the logout (each one a failure of cross-process revocation). */
  let honoured = 0;
  const roundTrips: number[] = [];
  try {
    const app = await createApplication(database.db, {
      organizationSlug: 'bench',
      name: 'Bench back-channel',
      clientType: 'confidential',
      redirectUrls: [REDIRECT],
      backchannelLogoutUrl: `${receiver.url}/backchannel`,
    });
    for (let i = 0; i < sessions; i++) {
      const { jar, tokens } = await signIn(a.url, app);
      const before = await token(b.url, app, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
      if (!before.refresh_token) {
        throw new Error(`refresh on B before the logout answered ${JSON.stringify(before)}`);
      }
      const sent = performance.now();
      const out = await jar.fetch(`${a.url}/auth/logout`, { method: 'POST', headers: { origin: a.url } });
      const committed = performance.now();
      if (out.status !== 303) {
        throw new Error(`logout on A answered ${out.status}`);
      }
      roundTrips.push(committed - sent);
      for (;;) {
        const after = await token(b.url, app, { grant_type: 'refresh_token', refresh_token: before.refresh_token });
        if (after.error === 'invalid_grant') {
          refusals.push(performance.now() - committed);
          break;
        }
        honoured++;
        if (performance.now() - sent > 10_000) {
          throw new Error(`B still honours the refresh token 10 s after the logout: ${JSON.stringify(after)}`);
        }
      }
      const deadline = performance.now() + 15_000;
      while (!receiver.arrivals.has(tokens.sid) && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
      }
      const arrived = receiver.arrivals.get(tokens.sid);
      if (arrived === undefined) {
        lost++;
      } else {
        logouts.push(arrived - committed);
      }
    }
  } finally {
    await database.close();
    await Promise.all([a.stop(), b.stop()]);
    await receiver.close();
  }
  refusals.sort((x, y) => x - y);
  roundTrips.sort((x, y) => x - y);
  logouts.sort((x, y) => x - y);
  const refusal = {
    p50: percentile(refusals, 50),
    p95: percentile(refusals, 95),
    max: refusals.at(-1) ?? Number.NaN,
    honoured,
    logoutRoundTripP50: percentile(roundTrips, 50),
  };
  const logout = { p50: percentile(logouts, 50), p95: percentile(logouts, 95), max: logouts.at(-1) ?? Number.NaN, lost };
  ctx.log(
    `  session-refusal      ${sessions} sessions: logout answered on A -> invalid_grant on B p50 ${fmt(refusal.p50, 1)} ms, p95 ${fmt(refusal.p95, 1)} ms, max ${fmt(refusal.max, 1)} ms; refreshes honoured after it: ${honoured} (logout round trip p50 ${fmt(refusal.logoutRoundTripP50, 1)} ms)`,
  );
  ctx.log(
    `  backchannel-logout   ${sessions} sessions: logout committed -> logout token received p50 ${fmt(logout.p50, 1)} ms, p95 ${fmt(logout.p95, 1)} ms, max ${fmt(logout.max, 1)} ms, lost ${lost}`,
  );
  const verdicts: Verdict[] = [];
  if (wanted('session-refusal')) {
    verdicts.push({
      name: `session-refusal: revocation -> refresh refused on another process < ${BACKCHANNEL_TARGETS.refusalMaxMs} ms (max)`,
      pass: honoured === 0 && refusal.max < BACKCHANNEL_TARGETS.refusalMaxMs,
      detail: `p50 ${fmt(refusal.p50, 1)} ms, p95 ${fmt(refusal.p95, 1)} ms, max ${fmt(refusal.max, 1)} ms over ${sessions}, ${honoured} honoured after`,
    });
  }
  if (wanted('backchannel-logout')) {
    verdicts.push({
      name: `backchannel-logout: revocation -> logout token p95 < ${BACKCHANNEL_TARGETS.logoutP95MaxMs} ms`,
      pass: lost === 0 && logout.p95 < BACKCHANNEL_TARGETS.logoutP95MaxMs,
      detail: `p50 ${fmt(logout.p50, 1)} ms, p95 ${fmt(logout.p95, 1)} ms, max ${fmt(logout.max, 1)} ms, ${lost} lost of ${sessions}`,
    });
  }
  return { verdicts, results: { sessions, refusalMs: refusal, logoutMs: logout } };
}
