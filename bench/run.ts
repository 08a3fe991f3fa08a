/**
 * `pnpm bench`: svc's public edge against a plain Express 5 + postgres.js baseline, measured side
 * by side in one run (docs/architecture.md section 8).
 *
 * Every target is a real, separate server process on 127.0.0.1 using its own fresh bench_*
 * database. On a small machine the targets would compete for CPU, so only one runs at a time:
 * each comparison alternates A, B, A, B (BENCH_ROUNDS rounds) and keeps the better figure of the
 * rounds for each side (highest req/s, lowest p99).
 *
 *   pnpm bench            full run (~5 minutes)
 *   pnpm bench --smoke    2 s per measurement, no warmup, one round; CI proves it runs
 *
 * Settings (environment): BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 3),
 * BENCH_CONNECTIONS (default 20), BENCH_ROUNDS (default 2), BENCH_LARGE_APPS (default 100000),
 * BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
 * BENCH_ME_CONNECTIONS (default 64, the me scenario's concurrency),
 * BENCH_CPU_PROF=1 (svc servers run with --cpu-prof into bench/results/prof-<timestamp>/),
 * BENCH_READY_SECONDS (default 60, how long a server may take to start on a busy machine),
 * BENCH_KEEP_DBS=1 (the databases the run created are kept, named on stderr, to look into afterwards),
 * BENCH_ONLY=client-config,backend-application,scale,rate-limiter,compiled,metrics,me,audit-pages,oidc-documents,webhook-throughput,webhook-replay,webhook-latency,
 * usage-single,usage-batch,usage-summary,usage-thresholds
 * (subset of scenarios); the webhook scenarios' own settings are in bench/webhooks.ts.
 * Exports: BENCH_ONLY=export-memory (bench/exports.ts; BENCH_EXPORT_EVENTS, default 1000000).
 * OpenID Provider token endpoint: BENCH_ONLY=oidc-tokens (bench/oidc-tokens.ts; BENCH_OIDC_TOKENS, default 1000).
 * The product's authorization: BENCH_ONLY=client-credentials,token-size (bench/client-credentials.ts; BENCH_CC_CONNECTIONS, default 16).
 * Events feed: BENCH_ONLY=events-feed (bench/events-feed.ts; BENCH_FEED_EVENTS, default 100000).
 * Resource servers: BENCH_ONLY=resource-server (bench/resource-server.ts).
 * Client ID Metadata Documents: BENCH_ONLY=metadata-documents (bench/metadata-documents.ts; BENCH_CIMD_ITERATIONS, default 200).
 * Sessions: BENCH_ONLY=session-refusal,backchannel-logout (bench/backchannel.ts; BENCH_BACKCHANNEL_SESSIONS, default 50).
 * Database pool: BENCH_ONLY=pool-steady (bench/pool-queue.ts; BENCH_POOL_QUERIES, default 60000, BENCH_POOL_BATCHES, default 6).
 * Tables at scale: BENCH_ONLY=row-scale (bench/row-scale.ts; BENCH_SCALE_ROWS, default 10000000, BENCH_SCALE_SMALL,
 *   default 100100, BENCH_SCALE_DEEP, default 100000; smoke: 20000, 2000 and 1000).
 * Permission check: BENCH_ONLY=permission-check (bench/permission-check.ts; BENCH_CHECK_USERS, default 1000).
 * SCIM directory sync: BENCH_ONLY=scim-sync,scim-filter (bench/scim.ts; BENCH_SCIM_USERS, default 10000, BENCH_SCIM_MEMBERSHIPS, default 100000).
 * SSO sign-ins: BENCH_ONLY=sso-acs (bench/sso.ts; BENCH_SSO_SIGNINS, default 200).
 * Against a git ref: BENCH_AGAINST=<ref> (e.g. main) measures the fast routes (AGAINST_SCENARIOS,
 *   or those of BENCH_ONLY) on a build of that ref and on this tree, alternately, and passes each
 *   at current/ref >= 0.95 (bench/README.md "Against a git ref").
 *
 * Exit code: 0 in normal mode even when a target fails (FAIL is printed); in smoke mode non-zero
 * only when something crashed (a server that did not start, a measurement with failed requests).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { BACKCHANNEL_SCENARIOS, BACKCHANNEL_TARGETS, runBackchannelBenches } from './backchannel.ts';
import { CLIENT_CREDENTIALS_SCENARIOS, CLIENT_CREDENTIALS_TARGETS, runClientCredentialsBenches } from './client-credentials.ts';
import { EVENTS_FEED_SCENARIOS, EVENTS_FEED_TARGETS, runEventsFeedBenches } from './events-feed.ts';
import { EXPORT_SCENARIOS, EXPORT_TARGETS, runExportBenches } from './exports.ts';
import { METADATA_DOCUMENT_SCENARIOS, runMetadataDocumentBenches } from './metadata-documents.ts';
import { OIDC_TOKEN_SCENARIOS, OIDC_TOKEN_TARGETS, runOidcTokenBenches } from './oidc-tokens.ts';
import { PERMISSION_CHECK_SCENARIOS, PERMISSION_CHECK_TARGETS, runPermissionCheckBenches } from './permission-check.ts';
import { POOL_SCENARIOS, POOL_TARGETS, runPoolBenches } from './pool-queue.ts';
import { RESOURCE_SERVER_SCENARIOS, runResourceServerBenches } from './resource-server.ts';
import { ROW_SCALE_SCENARIOS, runRowScaleBenches } from './row-scale.ts';
import { runScimBenches, SCIM_SCENARIOS, SCIM_TARGETS } from './scim.ts';
import { runSsoBenches, SSO_SCENARIOS, SSO_TARGETS } from './sso.ts';
import { type BenchContext, buildSvc, nodeCommand, nodeCommandFromSource, processCpuMs, READY_SECONDS, SVC_CLI } from './support.ts';
import { runUsageBenches, USAGE_SCENARIOS, USAGE_TARGETS } from './usage.ts';
import { runWebhookBenches, WEBHOOK_SCENARIOS, WEBHOOK_TARGETS } from './webhooks.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = SVC_CLI;
const argv = process.argv.slice(2);
const SMOKE = argv.includes('--smoke');

function numberSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') {
    return fallback;
  }
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new Error(`${name} must be a non-negative number, got ${raw}`);
  }
  return value;
}

const DURATION = SMOKE ? 2 : numberSetting('BENCH_DURATION', 10);
const WARMUP = SMOKE ? 0 : numberSetting('BENCH_WARMUP', 3);
const CONNECTIONS = numberSetting('BENCH_CONNECTIONS', 20);
const ROUNDS = SMOKE ? 1 : Math.max(1, numberSetting('BENCH_ROUNDS', 2));
const LARGE_APPS = Math.max(20, numberSetting('BENCH_LARGE_APPS', SMOKE ? 2_000 : 100_000));
const SMALL_APPS = 10;
const ROTATING_KEYS = Math.min(1_000, LARGE_APPS);
/** Signed-in users whose sessions the `me` scenario spreads its requests over. */
const SESSIONS = SMOKE ? 50 : 1_000;
/** Signed-in users in the database for the `me` scenario (the load uses SESSIONS of them). */
const SESSION_POPULATION = SMOKE ? 2_000 : 100_000;
/**
 * Connections of the `me` scenario, both sides. At 20, GET /v1/me is bound by the database round
 * trip, not by capacity (the server sits ~40% idle while a batch is read), so the figure would
 * compare latencies; 64 saturates both routes and compares what a process can serve.
 */
const ME_CONNECTIONS = numberSetting('BENCH_ME_CONNECTIONS', 64);
/** Audit entries of the bench organization (smoke too: page 100 must exist), and the page size. */
const AUDIT_ENTRIES = 10_000;
const AUDIT_PAGE_SIZE = 50;
const AUDIT_DEEP_PAGE = 100;
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
/** The fast GET routes BENCH_AGAINST compares (every one unless BENCH_ONLY names some). */
const AGAINST_SCENARIOS = ['client-config', 'backend-application', 'me', 'audit-pages', 'oidc-documents', 'tenant-read'];
/** BENCH_AGAINST: the git ref whose build the fast routes are measured against (ref vs this tree). */
const AGAINST = process.env.BENCH_AGAINST || undefined;
const ONLY = (process.env.BENCH_ONLY || (AGAINST ? AGAINST_SCENARIOS.join(',') : '')).split(',').filter(Boolean);
if (AGAINST && ONLY.some((s) => !AGAINST_SCENARIOS.includes(s))) {
  throw new Error(`BENCH_AGAINST compares the fast routes only: BENCH_ONLY must be among ${AGAINST_SCENARIOS.join(',')}`);
}
/** The ref's worktree, built (prepareAgainst), while BENCH_AGAINST runs. */
let againstRoot: string | undefined;
const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const HUGE = '1000000000';
/** One key per bench run for every svc process it starts. */
const BENCH_ENCRYPTION_KEY = randomBytes(32).toString('base64');
const HOST = '127.0.0.1';
const ENGINE_ISSUER = 'http://127.0.0.1:7151/application/o/svc/';

const TARGETS = {
  clientConfigRps: 1.3,
  backendRps: 1.3,
  scaleMin: 0.9,
  scaleMax: 1.1,
  rateLimiterMin: 0.85,
  meMin: 0.8,
  auditPagesMin: 0.8,
  oidcDocumentsMin: 0.8,
  tenantReadMin: 0.7,
  metricsMin: 0.95,
};

const adminHost = new URL(ADMIN_URL).hostname;
if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(adminHost)) {
  throw new Error(`BENCH_PG_URL must point at this machine (127.0.0.1), got ${adminHost}`);
}

const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
const runId = `${stamp.replace('-', '_')}_${process.pid}`.toLowerCase();
const resultsDir = path.join(ROOT, 'bench', 'results');
const profDir = path.join(resultsDir, `prof-${stamp}`);

// ---------------------------------------------------------------------------------------------
// Processes

const children = new Set<ChildProcess>();

type Output = { text: () => string };

function capture(child: ChildProcess): Output {
  let buffer = '';
  const add = (chunk: Buffer) => {
    buffer = (buffer + chunk.toString()).slice(-8_000);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return { text: () => buffer };
}

/** Runs the svc command line to completion; resolves stdout, rejects with the output on failure. */
function runCli(args: string[], databaseUrl: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeCommand(ROOT, [CLI, ...args], []), {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', NODE_ENV: 'development' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      children.delete(child);
      if (code === 0) {
        resolve(stdout);
      } else {
        reject(new Error(`svc ${args.join(' ')} exited with ${code}:\n${stderr}${stdout}`));
      }
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

type TargetSpec = {
  /** Short label printed in the table. */
  label: string;
  /** svc, the Express baseline (baseline-server.ts) or the node:http control-plane baseline (control-baseline.ts). */
  kind: 'svc' | 'baseline' | 'control-baseline';
  databaseUrl: string;
  env?: Record<string, string>;
  /** Values (publishable keys, session cookies) a `rotate` load spreads its requests over, in turn. */
  rotateKeys?: string[];
  /** svc from its TypeScript sources through tsx instead of the compiled build (the compiled scenario). */
  fromSource?: boolean;
  /** The checkout whose build runs (default: this one; BENCH_AGAINST: the ref's worktree). */
  root?: string;
};

/** Milliseconds from spawn to the first 200 of /healthz, per target label (the compiled scenario reports them). */
const startTimes = new Map<string, number[]>();

type Running = { url: string; stop: () => Promise<void>; output: Output; child: ChildProcess };

let profiles = 0;

async function startTarget(spec: TargetSpec): Promise<Running> {
  const port = await freePort();
  const url = `http://${HOST}:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: spec.databaseUrl,
    PORT: String(port),
    HOST,
    PUBLIC_URL: url,
    NODE_ENV: 'production',
    ENGINE_ISSUER,
    // Production refuses to start without it; these servers never read back a sealed value.
    SVC_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
    KEYLESS_ENABLED: 'true',
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: 'false',
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_PUBLIC_PER_MINUTE: HUGE,
    RATE_LIMIT_BACKEND_PER_MINUTE: HUGE,
    ...spec.env,
  };
  // One directory per server process: every thread (tsx's loader worker too) writes a profile.
  const prof =
    CPU_PROF && spec.kind === 'svc'
      ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profDir, `${spec.label.replace(/[^\w.-]+/g, '_')}-${++profiles}`)}`]
      : [];
  const script = { svc: [CLI, 'serve'], baseline: ['bench/baseline-server.ts'], 'control-baseline': ['bench/control-baseline.ts'] }[
    spec.kind
  ];
  const spawnedAt = Date.now();
  const root = spec.root ?? ROOT;
  const command = spec.fromSource ? nodeCommandFromSource(root, ['serve'], prof) : nodeCommand(root, script, prof);
  const child = spawn(process.execPath, command, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const output = capture(child);
  let exited: number | null | undefined;
  const exitedPromise = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exited = code ?? (signal ? -1 : null);
      children.delete(child);
      resolve();
    });
  });
  const stop = async () => {
    if (exited !== undefined) {
      return;
    }
    child.kill('SIGTERM');
    const killed = await Promise.race([exitedPromise.then(() => true), sleep(10_000).then(() => false)]);
    if (!killed) {
      child.kill('SIGKILL');
      await exitedPromise;
    }
  };
  const deadline = Date.now() + READY_SECONDS * 1000;
  for (;;) {
    if (exited !== undefined) {
      throw new Error(`${spec.label} exited (${exited}) before it was healthy:\n${output.text()}`);
    }
    try {
      const res = await fetch(`${url}/healthz`);
      await res.arrayBuffer();
      if (res.status === 200) {
        startTimes.set(spec.label, [...(startTimes.get(spec.label) ?? []), Date.now() - spawnedAt]);
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${spec.label} was not healthy within ${READY_SECONDS} s:\n${output.text()}`);
    }
    await sleep(100);
  }
  return { url, stop, output, child };
}

// ---------------------------------------------------------------------------------------------
// Databases

type BenchDb = { name: string; url: string };

function dbUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
const createdDbs: string[] = [];

async function createDb(suffix: string): Promise<BenchDb> {
  const name = `bench_${runId}_${suffix}`;
  await admin.unsafe(`create database "${name}"`);
  createdDbs.push(name);
  return { name, url: dbUrl(name) };
}

async function dropDbs(): Promise<void> {
  if (process.env.BENCH_KEEP_DBS === '1') {
    process.stderr.write(`bench: BENCH_KEEP_DBS=1 keeps ${createdDbs.join(', ')}\n`);
    return;
  }
  for (const name of createdDbs.splice(0)) {
    try {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
    } catch (error) {
      process.stderr.write(`bench: could not drop ${name}: ${(error as Error).message}\n`);
    }
  }
}

type CreatedApp = { publishableKey: string; secretKey: string; application: { id: string; slug: string } };

/**
 * Adds `count` applications (spread over organizations of 100) with one INSERT ... SELECT.
 * Keys follow the real formats (md5 hex digits are base62 characters).
 */
async function seedApplications(url: string, count: number): Promise<void> {
  if (count <= 0) {
    return;
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const orgs = Math.max(1, Math.ceil(count / 100));
    await sql`
      insert into organizations (id, slug, name)
      select 'ten_' || substr(md5('org' || g), 1, 20), 'bench-org-' || g, 'Bench org ' || g
      from generate_series(1, ${orgs}::int) g`;
    await sql`
      insert into applications
        (id, tenant_id, slug, name, status, publishable_key, secret_key_hash, secret_key_prefix,
         redirect_urls, allowed_origins, oauth, is_keyless)
      select 'app_' || substr(md5('app' || g), 1, 20),
             'ten_' || substr(md5('org' || ((g - 1) % ${orgs}::int + 1)), 1, 20),
             'bench-app-' || g,
             'Bench app ' || g,
             'active',
             'pk_live_' || substr(md5('pk' || g), 1, 24),
             encode(sha256(convert_to(s.secret, 'UTF8')), 'hex'),
             substr(s.secret, 1, 12),
             '{}'::text[], '{}'::text[], '{}'::jsonb, false
      from generate_series(1, ${count}::int) g,
           lateral (select 'sk_live_' || substr(md5('sk' || g) || md5('sk2' || g), 1, 40) as secret) s`;
    await sql`analyze organizations`;
    await sql`analyze applications`;
  } finally {
    await sql.end();
  }
}

/**
 * A tenant API key of the bench organization with `tenant.read`, created by one of its org admins,
 * as POST /v1/tenants/{id}/api-keys leaves it (the secret's SHA-256 and display prefix stored).
 * Returns the organization's id and the key's secret.
 */
async function seedTenantApiKey(url: string): Promise<{ tenantId: string; secret: string }> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [org] = await sql<{ id: string }[]>`select id from organizations where slug = 'bench'`;
    if (!org) {
      throw new Error('no bench organization');
    }
    const secret = `sk_live_${createHash('sha256').update(`bench-key-${runId}`).digest('hex').slice(0, 40)}`;
    await sql`
      insert into users (id, engine_subject, email, email_verified, name)
      values ('usr_benchkeycreator', 'bench-key-creator', 'bench-key-creator@example.com', true, 'Bench key creator')`;
    await sql`insert into memberships (tenant_id, user_id, role_key) values (${org.id}, 'usr_benchkeycreator', 'org_admin')`;
    await sql`
      insert into api_keys (id, tenant_id, name, scopes, secret_hash, secret_prefix, created_by_user_id)
      values ('key_benchtenantread', ${org.id}, 'Bench reader', ${['tenant.read']}, ${createHash('sha256').update(secret).digest('hex')},
              ${secret.slice(0, 12)}, 'usr_benchkeycreator')`;
    return { tenantId: org.id, secret };
  } finally {
    await sql.end();
  }
}

/**
 * `population` signed-in users of the bench organization, each with a live session, the way a
 * sign-in leaves them (user, membership, session row holding the token's SHA-256); returns the
 * cookies of the first `count`, which the load rotates over. The tables hold production-like
 * numbers of rows so PostgreSQL plans the session read as it would in production (with a few
 * hundred rows it prefers sequential scans).
 */
async function seedSessions(url: string, count: number, population: number): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const tokens = Array.from({ length: count }, (_, i) => createHash('sha256').update(`bench-session-${runId}-${i}`).digest('hex'));
    // Session tokens are 32 base32 characters: hex digits a-f and 2-7 are in that alphabet.
    const cookies = tokens.map((t) => t.replace(/[0189]/g, '2').slice(0, 32));
    const [org] = await sql<{ id: string }[]>`select id from organizations where slug = 'bench'`;
    if (!org) {
      throw new Error('bench organization missing');
    }
    const total = Math.max(count, population);
    await sql`
      insert into users (id, engine_subject, email, email_verified, name)
      select 'usr_bench' || g, 'bench-sub-' || g, 'bench' || g || '@example.com', true, 'Bench user ' || g
      from generate_series(1, ${total}::int) g`;
    await sql`
      insert into memberships (tenant_id, user_id, role_key)
      select ${org.id}, 'usr_bench' || g, 'org_admin' from generate_series(1, ${total}::int) g`;
    await sql`
      insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
      select 'ses_bench' || c.n, encode(sha256(convert_to(c.token, 'UTF8')), 'hex'), 'usr_bench' || c.n, ${org.id},
             now() + interval '1 day', now() + interval '7 days', now()
      from unnest(${cookies}::text[]) with ordinality as c(token, n)`;
    await sql`
      insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
      select 'ses_bench' || g, encode(sha256(convert_to('bench-other-' || g, 'UTF8')), 'hex'), 'usr_bench' || g, ${org.id},
             now() + interval '1 day', now() + interval '7 days', now()
      from generate_series(${count + 1}::int, ${total}::int) g`;
    await sql`analyze users`;
    await sql`analyze memberships`;
    await sql`analyze sessions`;
    return cookies.map((token) => `svc_session=${token}`);
  } finally {
    await sql.end();
  }
}

/**
 * The `audit-pages` data: AUDIT_ENTRIES audit entries of the bench organization, one every
 * 3 ms in runs that share a millisecond (so page boundaries fall inside ties), as many again in
 * other organizations and some platform-level ones interleaved as noise, and one org admin
 * session of the bench organization. Returns its cookie.
 */
async function seedAuditLog(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [org] = await sql<{ id: string }[]>`select id from organizations where slug = 'bench'`;
    if (!org) {
      throw new Error('bench organization missing');
    }
    const token = createHash('sha256')
      .update(`bench-audit-${runId}`)
      .digest('hex')
      .replace(/[0189]/g, '2')
      .slice(0, 32);
    await sql`
      insert into users (id, engine_subject, email, email_verified, name)
      values ('usr_benchaudit', 'bench-audit-sub', 'bench-audit@example.com', true, 'Bench auditor')`;
    await sql`insert into memberships (tenant_id, user_id, role_key) values (${org.id}, 'usr_benchaudit', 'org_admin')`;
    await sql`
      insert into sessions (id, token_hash, user_id, active_tenant_id, expires_at, absolute_expires_at, last_seen_at)
      values ('ses_benchaudit', encode(sha256(convert_to(${token}, 'UTF8')), 'hex'), 'usr_benchaudit', ${org.id},
              now() + interval '1 day', now() + interval '7 days', now())`;
    const actions = ['tenant.updated', 'user.created', 'user.updated', 'api_key.created', 'role.updated', 'invitation.created'];
    // Eight rows per 3 ms tick, four of them the bench organization's: ties at every page boundary.
    await sql`
      insert into audit_logs (id, tenant_id, actor_type, actor_id, actor_label, action, target_type, target_id,
                              ip_address, user_agent, request_id, summary, created_at)
      select 'aud_' || substr(md5('aud' || g), 1, 20),
             case when g % 2 = 0 then ${org.id}
                  when g % 41 = 1 then null
                  else 'ten_' || substr(md5('noise' || (g % 17)), 1, 20) end,
             'user', 'usr_' || substr(md5('actor' || (g % 13)), 1, 20), 'someone' || (g % 13) || '@example.com',
             (${actions}::text[])[1 + g % ${actions.length}::int], 'user', 'usr_' || substr(md5('target' || (g % 97)), 1, 20),
             '127.0.0.1', 'bench', 'req_' || substr(md5('req' || g), 1, 20),
             jsonb_build_object('changes', jsonb_build_object('name', 'Bench ' || g)),
             timestamptz '2025-01-01 00:00:00+00' + ((g / 8) * 3) * interval '1 millisecond'
      from generate_series(1, ${AUDIT_ENTRIES * 2}::int) g`;
    await sql`analyze audit_logs`;
    return `svc_session=${token}`;
  } finally {
    await sql.end();
  }
}

/**
 * The cursor that opens page `page` of the bench organization's log, found the way a client
 * finds it: by following nextCursor from page 1 on a running server.
 */
async function auditCursor(target: TargetSpec, cookie: string, page: number): Promise<string> {
  const running = await startTarget(target);
  try {
    let cursor: string | undefined;
    for (let i = 1; i < page; i++) {
      const res = await fetch(
        `${running.url}/v1/audit-logs?limit=${AUDIT_PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { headers: { cookie } },
      );
      const body = (await res.json()) as { nextCursor?: string | null };
      if (res.status !== 200 || !body.nextCursor) {
        throw new Error(`audit-pages: page ${i} answered ${res.status} without a next cursor: ${JSON.stringify(body).slice(0, 300)}`);
      }
      cursor = body.nextCursor;
    }
    if (!cursor) {
      throw new Error('audit-pages: no cursor');
    }
    return cursor;
  } finally {
    await running.stop();
  }
}

async function publishableKeys(url: string, limit: number): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ publishable_key: string }[]>`
      select publishable_key from applications where status = 'active' and not is_keyless
      order by md5(id) limit ${limit}`;
    return rows.map((r) => r.publishable_key);
  } finally {
    await sql.end();
  }
}

async function countApplications(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from applications`;
    return row?.n ?? 0;
  } finally {
    await sql.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Load

type Load = {
  /** Short label printed in the table. */
  label: string;
  path: string;
  /** Fixed headers. */
  headers?: Record<string, string>;
  /** Rotate a header (default X-SVC-Publishable-Key) over the target's `rotateKeys`, one per request. */
  rotate?: boolean;
  rotateHeader?: string;
  /** Concurrent connections for this load (default BENCH_CONNECTIONS). */
  connections?: number;
};

type Measurement = {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationSeconds: number;
  /**
   * CPU (user + system) the target server process spent per request during the measured run, in
   * microseconds: steadier than req/s on a machine shared with other work, and comparable across
   * runs and commits (the load generator's own CPU is not in it).
   */
  serverCpuUs: number;
};

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) {
    return Number.NaN;
  }
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

function cannon(
  url: string,
  load: Load,
  keys: string[] | undefined,
  seconds: number,
  record: boolean,
): Promise<Omit<Measurement, 'serverCpuUs'>> {
  let index = 0;
  const requests = keys
    ? [
        {
          method: 'GET' as const,
          path: load.path,
          setupRequest: (req: { headers?: Record<string, string> }) => {
            const key = keys[index++ % keys.length] as string;
            return { ...req, headers: { ...req.headers, [load.rotateHeader ?? 'x-svc-publishable-key']: key } };
          },
        },
      ]
    : undefined;
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}${load.path}`,
        connections: load.connections ?? CONNECTIONS,
        duration: seconds,
        headers: load.headers ?? {},
        requests,
        timeout: 10,
      },
      (error: Error | null, result: autocannon.Result) => {
        if (error) {
          reject(error);
          return;
        }
        const sorted = Float64Array.from(latencies).sort();
        const ok = result['2xx'];
        const durationSeconds = result.duration > 0 ? result.duration : seconds;
        resolve({
          rps: ok / durationSeconds,
          p50: percentile(sorted, 50),
          p90: percentile(sorted, 90),
          p99: percentile(sorted, 99),
          max: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : Number.NaN,
          requests: result.requests.total,
          ok,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          durationSeconds,
        });
      },
    );
    if (record) {
      instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
        latencies.push(responseTime);
      });
    }
  });
}

async function measure(running: Running, load: Load, keys: string[] | undefined): Promise<Measurement> {
  if (WARMUP > 0) {
    await cannon(running.url, load, keys, WARMUP, false);
  }
  const cpuBefore = processCpuMs(running.child.pid);
  const m = await cannon(running.url, load, keys, DURATION, true);
  return { ...m, serverCpuUs: ((processCpuMs(running.child.pid) - cpuBefore) * 1000) / Math.max(1, m.requests) };
}

/** One request before the load: the route answers 200 with the expected body. */
async function checkRoute(
  url: string,
  load: Load,
  keys: string[] | undefined,
  expect: (body: unknown) => boolean,
  label: string,
): Promise<void> {
  const headers = { ...load.headers, ...(keys ? { [load.rotateHeader ?? 'x-svc-publishable-key']: keys[0] as string } : {}) };
  const res = await fetch(`${url}${load.path}`, { headers });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  if (res.status !== 200 || !expect(body)) {
    throw new Error(`${label} ${load.path} answered ${res.status} ${text.slice(0, 300)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Comparisons

type Side = { target: TargetSpec; rounds: Measurement[]; best?: Measurement };
type Comparison = {
  scenario: string;
  load: string;
  sides: [Side, Side];
};

function bestOf(rounds: Measurement[]): Measurement {
  const byRps = [...rounds].sort((a, b) => b.rps - a.rps)[0] as Measurement;
  const lowestP99 = Math.min(...rounds.map((r) => r.p99));
  const lowestP50 = Math.min(...rounds.map((r) => r.p50));
  const lowestCpu = Math.min(...rounds.map((r) => r.serverCpuUs));
  return { ...byRps, p99: lowestP99, p50: lowestP50, serverCpuUs: lowestCpu };
}

/**
 * Measures every load on two targets, one server process at a time, alternating A, B, A, B.
 * Each load is checked once for a 200 with the expected body before it is measured.
 */
async function compare(
  scenario: string,
  targets: [TargetSpec, TargetSpec],
  loads: { load: Load; expect: (body: unknown) => boolean }[],
): Promise<Comparison[]> {
  // BENCH_AGAINST: the svc side against the ref's build (unless this is that comparison already).
  if (againstRoot && targets[0].root === undefined) {
    return compareAgainst(scenario, targets[1], loads);
  }
  const comparisons: Comparison[] = loads.map(({ load }) => ({
    scenario,
    load: load.label,
    sides: [
      { target: targets[0], rounds: [] },
      { target: targets[1], rounds: [] },
    ],
  }));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [sideIndex, target] of targets.entries()) {
      const running = await startTarget(target);
      try {
        for (const [loadIndex, { load, expect }] of loads.entries()) {
          const keys = load.rotate ? target.rotateKeys : undefined;
          if (load.rotate && (!keys || keys.length === 0)) {
            throw new Error(`${target.label}: no keys to rotate over`);
          }
          await checkRoute(running.url, load, keys, expect, target.label);
          const m = await measure(running, load, keys);
          (comparisons[loadIndex] as Comparison).sides[sideIndex]?.rounds.push(m);
          log(
            `  ${scenario.padEnd(20)} round ${round} ${target.label.padEnd(22)} ${load.label.padEnd(22)} ` +
              `${fmt(m.rps, 0).padStart(7)} req/s  p99 ${fmt(m.p99, 2).padStart(6)} ms  server ${fmt(m.serverCpuUs, 0).padStart(4)} us CPU/req` +
              (m.non2xx + m.errors + m.timeouts > 0 ? `  (non-2xx ${m.non2xx}, errors ${m.errors}, timeouts ${m.timeouts})` : ''),
          );
        }
      } finally {
        await running.stop();
      }
    }
  }
  for (const c of comparisons) {
    for (const side of c.sides) {
      side.best = bestOf(side.rounds);
    }
  }
  return comparisons;
}

/**
 * Two routes of one server, side by side: each round starts the target once and measures A then
 * B on it (B then A on even rounds), so both see the same process, database and machine state.
 */
async function compareRoutes(
  scenario: string,
  target: TargetSpec,
  routes: [{ load: Load; expect: (body: unknown) => boolean }, { load: Load; expect: (body: unknown) => boolean }],
): Promise<Comparison[]> {
  if (againstRoot) {
    return compareAgainst(scenario, target, routes);
  }
  const comparison: Comparison = {
    scenario,
    load: scenario,
    sides: [
      { target: { ...target, label: routes[0].load.label }, rounds: [] },
      { target: { ...target, label: routes[1].load.label }, rounds: [] },
    ],
  };
  for (let round = 1; round <= ROUNDS; round++) {
    const running = await startTarget(target);
    try {
      const order = round % 2 === 1 ? [0, 1] : [1, 0];
      for (const sideIndex of order) {
        const { load, expect } = routes[sideIndex] as (typeof routes)[number];
        const keys = load.rotate ? target.rotateKeys : undefined;
        await checkRoute(running.url, load, keys, expect, target.label);
        const m = await measure(running, load, keys);
        comparison.sides[sideIndex]?.rounds.push(m);
        log(
          `  ${scenario.padEnd(20)} round ${round} ${load.label.padEnd(45)} ` +
            `${fmt(m.rps, 0).padStart(7)} req/s  p99 ${fmt(m.p99, 2).padStart(6)} ms  server ${fmt(m.serverCpuUs, 0).padStart(4)} us CPU/req` +
            (m.non2xx + m.errors + m.timeouts > 0 ? `  (non-2xx ${m.non2xx}, errors ${m.errors}, timeouts ${m.timeouts})` : ''),
        );
      }
    } finally {
      await running.stop();
    }
  }
  for (const side of comparison.sides) {
    side.best = bestOf(side.rounds);
  }
  return [comparison];
}

/** Loads BENCH_AGAINST has measured already (the oidc scenarios share GET /v1/client/config). */
const measuredAgainst = new Set<string>();

/**
 * BENCH_AGAINST: the scenario's svc loads on the ref's build and on this tree's, the same target
 * otherwise (database, keys, settings), alternating ref, current, ref, current as `compare` does.
 */
function compareAgainst(
  scenario: string,
  svc: TargetSpec,
  loads: { load: Load; expect: (body: unknown) => boolean }[],
): Promise<Comparison[]> {
  const fresh = loads.filter(({ load }) => !measuredAgainst.has(load.label));
  for (const { load } of fresh) {
    measuredAgainst.add(load.label);
  }
  if (fresh.length === 0) {
    return Promise.resolve([]);
  }
  return compare(
    scenario,
    [
      { ...svc, label: `svc ${AGAINST}`, root: againstRoot },
      { ...svc, label: 'svc (this tree)' },
    ],
    fresh,
  );
}

/**
 * A worktree of BENCH_AGAINST outside the repository (the OS temp directory), installed from the
 * warm pnpm store (offline) and built by its own bench/support.ts `buildSvc`, as the ref builds.
 */
function prepareAgainst(ref: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-against-'));
  log(`setup: ${ref} in ${dir} (git worktree, pnpm install --offline, build) ...`);
  execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { cwd: ROOT, stdio: 'inherit' });
  againstRoot = dir;
  execFileSync('pnpm', ['install', '--frozen-lockfile', '--offline'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', "(await import('./bench/support.ts')).buildSvc(process.cwd())"],
    { cwd: dir, stdio: 'inherit' },
  );
  return dir;
}

/** BENCH_AGAINST's verdicts: each load's req/s on this tree at least 0.95x the ref's (the rounds' noise). */
function againstVerdicts(comparisons: Comparison[]): Verdict[] {
  return comparisons.map((c) => {
    const ref = c.sides[0].best as Measurement;
    const current = c.sides[1].best as Measurement;
    const ratio = current.rps / ref.rps;
    const clean = c.sides.every((s) => s.rounds.every((r) => failures(r) === 0 && r.ok > 0));
    return {
      name: `${c.load}: this tree >= 0.95x ${AGAINST}`,
      pass: clean && ratio >= 0.95,
      detail:
        `${fmt(current.rps, 0)} vs ${fmt(ref.rps, 0)} req/s = ${fmt(ratio, 3)}x; p99 ${fmt(current.p99, 2)} vs ${fmt(ref.p99, 2)} ms; ` +
        `CPU ${fmt(current.serverCpuUs, 0)} vs ${fmt(ref.serverCpuUs, 0)} us/req${clean ? '' : ' [some requests failed: figures invalid]'}`,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Output

function loadAverage(): string {
  return os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

function fmt(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

type Verdict = { name: string; pass: boolean; detail: string };

function failures(m: Measurement): number {
  return m.non2xx + m.errors + m.timeouts;
}

function printTable(comparisons: Comparison[]): void {
  const header = [
    'scenario'.padEnd(20),
    'target'.padEnd(24),
    'req/s'.padStart(8),
    'rounds req/s'.padStart(16),
    'p50 ms'.padStart(8),
    'p99 ms'.padStart(8),
    'max ms'.padStart(8),
    'non-2xx/err'.padStart(12),
    'ratio'.padStart(7),
    'us CPU/req'.padStart(11),
  ].join(' ');
  log('');
  log(header);
  log('-'.repeat(header.length));
  for (const c of comparisons) {
    const [a, b] = c.sides;
    for (const [i, side] of [a, b].entries()) {
      const m = side.best as Measurement;
      const ratio = i === 1 ? `${fmt(m.rps / (a.best as Measurement).rps, 2)}x` : '';
      log(
        [
          (i === 0 ? c.load : '').padEnd(20),
          side.target.label.padEnd(24),
          fmt(m.rps, 0).padStart(8),
          side.rounds
            .map((r) => fmt(r.rps, 0))
            .join(' / ')
            .padStart(16),
          fmt(m.p50, 2).padStart(8),
          fmt(m.p99, 2).padStart(8),
          fmt(m.max, 1).padStart(8),
          String(side.rounds.reduce((s, r) => s + failures(r), 0)).padStart(12),
          ratio.padStart(7),
          fmt(m.serverCpuUs, 0).padStart(11),
        ].join(' '),
      );
    }
  }
}

function verdicts(comparisons: Comparison[]): Verdict[] {
  const out: Verdict[] = [];
  const find = (load: string) => comparisons.find((c) => c.load === load);
  const clean = (c: Comparison) => c.sides.every((s) => s.rounds.every((r) => failures(r) === 0 && r.ok > 0));
  const dirty = (c: Comparison) => (clean(c) ? '' : ' [some requests failed: figures invalid]');

  for (const [load, name, target] of [
    ['client-config', 'client-config', TARGETS.clientConfigRps],
    ['backend-application', 'backend-application', TARGETS.backendRps],
  ] as const) {
    const c = find(load);
    if (!c) {
      continue;
    }
    const base = c.sides[0].best as Measurement;
    const svc = c.sides[1].best as Measurement;
    const ratio = svc.rps / base.rps;
    out.push({
      name: `${name}: svc req/s >= ${target}x baseline`,
      pass: clean(c) && ratio >= target,
      detail: `${fmt(svc.rps, 0)} vs ${fmt(base.rps, 0)} req/s = ${fmt(ratio, 2)}x${dirty(c)}`,
    });
    out.push({
      name: `${name}: svc p99 <= baseline p99`,
      pass: clean(c) && svc.p99 <= base.p99,
      detail: `${fmt(svc.p99, 2)} ms vs ${fmt(base.p99, 2)} ms${dirty(c)}`,
    });
  }
  const scale = find('scale');
  if (scale) {
    const small = scale.sides[0].best as Measurement;
    const large = scale.sides[1].best as Measurement;
    const ratio = large.rps / small.rps;
    const inBand = ratio >= TARGETS.scaleMin && ratio <= TARGETS.scaleMax;
    out.push({
      name: `scale: req/s with ${LARGE_APPS.toLocaleString('en-US')} apps >= ${TARGETS.scaleMin}x with ${SMALL_APPS}`,
      pass: clean(scale) && ratio >= TARGETS.scaleMin,
      detail: `${fmt(large.rps, 0)} vs ${fmt(small.rps, 0)} req/s = ${fmt(ratio, 2)}x${inBand ? '' : ' (outside 0.9..1.1)'}${dirty(scale)}`,
    });
  }
  const me = find('me');
  if (me) {
    const backend = me.sides[0].best as Measurement;
    const session = me.sides[1].best as Measurement;
    const ratio = session.rps / backend.rps;
    out.push({
      name: `me: GET /v1/me req/s >= ${TARGETS.meMin}x /v1/backend/application`,
      pass: clean(me) && ratio >= TARGETS.meMin,
      detail: `${fmt(session.rps, 0)} vs ${fmt(backend.rps, 0)} req/s = ${fmt(ratio, 2)}x${dirty(me)}`,
    });
  }
  const audit = find('audit-pages');
  if (audit) {
    const first = audit.sides[0].best as Measurement;
    const deep = audit.sides[1].best as Measurement;
    const ratio = deep.rps / first.rps;
    out.push({
      name: `audit-pages: page ${AUDIT_DEEP_PAGE} req/s >= ${TARGETS.auditPagesMin}x page 1`,
      pass: clean(audit) && ratio >= TARGETS.auditPagesMin,
      detail: `${fmt(deep.rps, 0)} vs ${fmt(first.rps, 0)} req/s = ${fmt(ratio, 2)}x (p99 ${fmt(deep.p99, 2)} vs ${fmt(first.p99, 2)} ms)${dirty(audit)}`,
    });
  }
  for (const load of ['oidc-discovery', 'oidc-jwks']) {
    const c = find(load);
    if (!c) {
      continue;
    }
    const config = c.sides[0].best as Measurement;
    const document = c.sides[1].best as Measurement;
    const ratio = document.rps / config.rps;
    out.push({
      name: `${load}: req/s >= ${TARGETS.oidcDocumentsMin}x GET /v1/client/config`,
      pass: clean(c) && ratio >= TARGETS.oidcDocumentsMin,
      detail: `${fmt(document.rps, 0)} vs ${fmt(config.rps, 0)} req/s = ${fmt(ratio, 2)}x, p99 ${fmt(document.p99, 2)} vs ${fmt(config.p99, 2)} ms${dirty(c)}`,
    });
  }
  const tenantRead = find('tenant-read');
  if (tenantRead) {
    const base = tenantRead.sides[0].best as Measurement;
    const svc = tenantRead.sides[1].best as Measurement;
    const ratio = svc.rps / base.rps;
    out.push({
      name: `tenant-read: GET /v1/tenants/{id} (API key) req/s >= ${TARGETS.tenantReadMin}x node:http baseline`,
      pass: clean(tenantRead) && ratio >= TARGETS.tenantReadMin,
      detail: `${fmt(svc.rps, 0)} vs ${fmt(base.rps, 0)} req/s = ${fmt(ratio, 2)}x, p99 ${fmt(svc.p99, 2)} vs ${fmt(base.p99, 2)} ms${dirty(tenantRead)}`,
    });
  }
  const compiled = find('compiled tenant-read');
  if (compiled) {
    const tsx = compiled.sides[0].best as Measurement;
    const built = compiled.sides[1].best as Measurement;
    const perCpuSecond = (m: Measurement) => 1e6 / Math.max(1, m.serverCpuUs);
    const ratio = perCpuSecond(built) / perCpuSecond(tsx);
    const start = (label: string) => Math.min(...(startTimes.get(label) ?? [Number.NaN]));
    out.push({
      name: "compiled: requests per CPU second, compiled no slower than through tsx (>= 0.95x, the rounds' noise)",
      pass: clean(compiled) && ratio >= 0.95,
      detail:
        `${fmt(perCpuSecond(built), 0)} vs ${fmt(perCpuSecond(tsx), 0)} req per CPU s = ${fmt(ratio, 2)}x ` +
        `(${fmt(built.rps, 0)} vs ${fmt(tsx.rps, 0)} req/s); start to healthy ${fmt(start('svc compiled'), 0)} vs ${fmt(start('svc through tsx'), 0)} ms${dirty(compiled)}`,
    });
  }
  const metrics = find('metrics tenant-read');
  if (metrics) {
    const off = metrics.sides[0].best as Measurement;
    const on = metrics.sides[1].best as Measurement;
    const ratio = on.rps / off.rps;
    out.push({
      name: `metrics: tenant-read req/s with metrics on >= ${TARGETS.metricsMin}x off`,
      pass: clean(metrics) && ratio >= TARGETS.metricsMin,
      detail: `${fmt(on.rps, 0)} vs ${fmt(off.rps, 0)} req/s = ${fmt(ratio, 2)}x (CPU ${fmt(on.serverCpuUs, 0)} vs ${fmt(off.serverCpuUs, 0)} us/req)${dirty(metrics)}`,
    });
  }
  const limiter = find('rate-limiter');
  if (limiter) {
    const off = limiter.sides[0].best as Measurement;
    const on = limiter.sides[1].best as Measurement;
    const ratio = on.rps / off.rps;
    out.push({
      name: `rate-limiter: req/s with limiting on >= ${TARGETS.rateLimiterMin}x off`,
      pass: clean(limiter) && ratio >= TARGETS.rateLimiterMin,
      detail: `${fmt(on.rps, 0)} vs ${fmt(off.rps, 0)} req/s = ${fmt(ratio, 2)}x (limiter costs ${fmt((1 - ratio) * 100, 1)}%)${dirty(limiter)}`,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Main

const expectClientConfig = (pk?: string) => (body: unknown) => {
  const b = body as { application?: { publishableKey?: string }; organization?: { slug?: string } };
  return (
    typeof b?.application?.publishableKey === 'string' &&
    (pk === undefined || b.application.publishableKey === pk) &&
    typeof b.organization?.slug === 'string'
  );
};
const expectBackend = (body: unknown) => {
  const b = body as { ok?: boolean; application?: { secretKeyPrefix?: string } };
  return b?.ok === true && typeof b.application?.secretKeyPrefix === 'string';
};

const expectMe = (body: unknown) => {
  const b = body as { user?: { email?: string }; activeWorkspace?: { slug?: string } };
  return typeof b?.user?.email === 'string' && b.activeWorkspace?.slug === 'bench';
};

/** A full page of the bench organization's log (`first`: the id the page must start with). */
const expectAuditPage = (first?: string) => (body: unknown) => {
  const b = body as { data?: { id?: string }[]; nextCursor?: string | null };
  return (
    Array.isArray(b?.data) &&
    b.data.length === AUDIT_PAGE_SIZE &&
    typeof b.nextCursor === 'string' &&
    (first === undefined || b.data[0]?.id === first)
  );
};

/** svc's OpenID Provider discovery document: its issuer is the server's PUBLIC_URL. */
const expectDiscovery = (body: unknown) => {
  const b = body as { issuer?: string; jwks_uri?: string };
  return typeof b?.issuer === 'string' && b.jwks_uri === `${b.issuer}/oidc/jwks`;
};
const expectJwks = (body: unknown) => {
  const b = body as { keys?: { kid?: string; d?: string }[] };
  return Array.isArray(b?.keys) && b.keys.length > 0 && b.keys.every((k) => typeof k.kid === 'string' && k.d === undefined);
};

const EDGE_SCENARIOS = [
  'client-config',
  'backend-application',
  'scale',
  'me',
  'audit-pages',
  'oidc-documents',
  'tenant-read',
  'compiled',
  'metrics',
  'rate-limiter',
];
/** How many keys the scale scenario rotated over (for the results file). */
let rotatingKeys = 0;

function wanted(scenario: string): boolean {
  return ONLY.length === 0 || ONLY.includes(scenario);
}

/** The HTTP edge scenarios (everything but the webhook ones), on their own two databases. */
async function edgeBenches(): Promise<Comparison[]> {
  // One tenant API key for every scenario that reads with one (its user and organization are seeded once).
  let seededKey: ReturnType<typeof seedTenantApiKey> | undefined;
  const tenantKey = () => {
    seededKey ??= seedTenantApiKey(small.url);
    return seededKey;
  };
  log('setup: creating databases and running migrations ...');
  const small = await createDb('small');
  const large = await createDb('large');
  await Promise.all([runCli(['migrate'], small.url), runCli(['migrate'], large.url)]);
  const [createdSmall] = await Promise.all([
    runCli(['apps', 'create', '--org', 'bench', '--name', 'Bench client', '--json'], small.url).then((o) => JSON.parse(o) as CreatedApp),
    runCli(['apps', 'create', '--org', 'bench', '--name', 'Bench client', '--json'], large.url),
  ]);
  const seedStart = Date.now();
  await Promise.all([seedApplications(small.url, SMALL_APPS - 1), seedApplications(large.url, LARGE_APPS - 1)]);
  const [smallCount, largeCount] = await Promise.all([countApplications(small.url), countApplications(large.url)]);
  const smallKeys = await publishableKeys(small.url, SMALL_APPS);
  const largeKeys = await publishableKeys(large.url, ROTATING_KEYS);
  log(
    `setup: ${small.name} has ${smallCount} applications, ${large.name} has ${largeCount.toLocaleString('en-US')} ` +
      `(seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s); known app ${createdSmall.application.slug} ${createdSmall.publishableKey}`,
  );
  log('');

  const pk = createdSmall.publishableKey;
  const baseline: TargetSpec = { label: 'baseline (express+pg)', kind: 'baseline', databaseUrl: small.url };
  const svc: TargetSpec = { label: 'svc', kind: 'svc', databaseUrl: small.url };
  const clientConfig: Load = { label: 'client-config', path: '/v1/client/config', headers: { 'x-svc-publishable-key': pk } };
  const backend: Load = {
    label: 'backend-application',
    path: '/v1/backend/application',
    headers: { authorization: `Bearer ${createdSmall.secretKey}` },
  };

  const comparisons: Comparison[] = [];
  rotatingKeys = largeKeys.length;
  const edgeLoads = [
    ...(wanted('client-config') ? [{ load: clientConfig, expect: expectClientConfig(pk) }] : []),
    ...(wanted('backend-application') ? [{ load: backend, expect: expectBackend }] : []),
  ];
  if (edgeLoads.length > 0) {
    log('measuring: svc vs baseline (client-config, backend-application)');
    comparisons.push(...(await compare('edge', [baseline, svc], edgeLoads)));
  }
  if (wanted('scale')) {
    log(
      `measuring: scale (${SMALL_APPS} apps, rotating ${smallKeys.length} keys vs ${LARGE_APPS} apps, rotating ${largeKeys.length} keys)`,
    );
    comparisons.push(
      ...(await compare(
        'scale',
        [
          { label: `svc, ${SMALL_APPS} apps`, kind: 'svc', databaseUrl: small.url, rotateKeys: smallKeys },
          { label: `svc, ${LARGE_APPS.toLocaleString('en-US')} apps`, kind: 'svc', databaseUrl: large.url, rotateKeys: largeKeys },
        ],
        [{ load: { label: 'scale', path: '/v1/client/config', rotate: true }, expect: expectClientConfig() }],
      )),
    );
  }
  if (wanted('me')) {
    const cookies = await seedSessions(small.url, SESSIONS, SESSION_POPULATION);
    log(
      `measuring: GET /v1/me (${cookies.length} of ${SESSION_POPULATION.toLocaleString('en-US')} sessions in turn) vs GET /v1/backend/application, same server, ${ME_CONNECTIONS} connections`,
    );
    comparisons.push(
      ...(await compareRoutes('me', { ...svc, rotateKeys: cookies }, [
        { load: { ...backend, label: 'GET /v1/backend/application', connections: ME_CONNECTIONS }, expect: expectBackend },
        {
          load: { label: 'GET /v1/me (session cookie)', path: '/v1/me', rotate: true, rotateHeader: 'cookie', connections: ME_CONNECTIONS },
          expect: expectMe,
        },
      ])),
    );
  }
  if (wanted('audit-pages')) {
    const cookie = await seedAuditLog(small.url);
    const cursor = await auditCursor(svc, cookie, AUDIT_DEEP_PAGE);
    // The entry page 100 must open with: the (created_at desc, id desc) order, counted in SQL.
    const sql = postgres(small.url, { max: 1, onnotice: () => {} });
    const [deep] = await sql<{ id: string }[]>`
      select a.id from audit_logs a join organizations o on o.id = a.tenant_id and o.slug = 'bench'
      order by a.created_at desc, a.id desc offset ${(AUDIT_DEEP_PAGE - 1) * AUDIT_PAGE_SIZE} limit 1`;
    await sql.end();
    const path = `/v1/audit-logs?limit=${AUDIT_PAGE_SIZE}`;
    log(
      `measuring: GET /v1/audit-logs page 1 vs page ${AUDIT_DEEP_PAGE} (${AUDIT_ENTRIES.toLocaleString('en-US')} entries of one ` +
        `organization among ${(AUDIT_ENTRIES * 2).toLocaleString('en-US')}, limit ${AUDIT_PAGE_SIZE}), same server`,
    );
    comparisons.push(
      ...(await compareRoutes('audit-pages', svc, [
        { load: { label: 'GET /v1/audit-logs page 1', path, headers: { cookie } }, expect: expectAuditPage() },
        {
          load: {
            label: `GET /v1/audit-logs page ${AUDIT_DEEP_PAGE}`,
            path: `${path}&cursor=${encodeURIComponent(cursor)}`,
            headers: { cookie },
          },
          expect: expectAuditPage(deep?.id),
        },
      ])),
    );
  }
  if (wanted('oidc-documents')) {
    log('measuring: OpenID Provider discovery and JWKS vs GET /v1/client/config, same server');
    const config = { load: { ...clientConfig, label: 'GET /v1/client/config' }, expect: expectClientConfig(pk) };
    comparisons.push(
      ...(await compareRoutes('oidc-discovery', svc, [
        config,
        { load: { label: 'GET /.well-known/openid-configuration', path: '/.well-known/openid-configuration' }, expect: expectDiscovery },
      ])),
      ...(await compareRoutes('oidc-jwks', svc, [config, { load: { label: 'GET /oidc/jwks', path: '/oidc/jwks' }, expect: expectJwks }])),
    );
  }
  if (wanted('tenant-read')) {
    const { tenantId, secret } = await tenantKey();
    log('measuring: GET /v1/tenants/{id} with a tenant API key, svc vs node:http + postgres.js doing the same key check and read');
    comparisons.push(
      ...(await compare(
        'tenant-read',
        [{ label: 'baseline (node:http+pg)', kind: 'control-baseline', databaseUrl: small.url }, svc],
        [
          {
            load: { label: 'tenant-read', path: `/v1/tenants/${tenantId}`, headers: { authorization: `Bearer ${secret}` } },
            expect: (body) => (body as { id?: string; slug?: string })?.id === tenantId && (body as { slug?: string }).slug === 'bench',
          },
        ],
      )),
    );
  }
  if (wanted('compiled')) {
    const { tenantId, secret } = await tenantKey();
    log(
      'measuring: GET /v1/tenants/{id} with a tenant API key, svc from its sources through tsx vs compiled (pnpm build), and each start to healthy',
    );
    comparisons.push(
      ...(await compare(
        'compiled',
        [
          { label: 'svc through tsx', kind: 'svc', databaseUrl: small.url, fromSource: true },
          { label: 'svc compiled', kind: 'svc', databaseUrl: small.url },
        ],
        [
          {
            load: { label: 'compiled tenant-read', path: `/v1/tenants/${tenantId}`, headers: { authorization: `Bearer ${secret}` } },
            expect: (body) => (body as { id?: string })?.id === tenantId,
          },
        ],
      )),
    );
  }
  if (wanted('metrics')) {
    const { tenantId, secret } = await tenantKey();
    log('measuring: GET /v1/tenants/{id} with a tenant API key, metrics off vs on (METRICS_TOKEN set: every request counted and timed)');
    comparisons.push(
      ...(await compare(
        'metrics',
        [
          { label: 'svc, metrics off', kind: 'svc', databaseUrl: small.url },
          { label: 'svc, metrics on', kind: 'svc', databaseUrl: small.url, env: { METRICS_TOKEN: 'bench-metrics-token-0123456789' } },
        ],
        [
          {
            load: { label: 'metrics tenant-read', path: `/v1/tenants/${tenantId}`, headers: { authorization: `Bearer ${secret}` } },
            expect: (body) => (body as { id?: string })?.id === tenantId,
          },
        ],
      )),
    );
  }
  if (wanted('rate-limiter')) {
    log('measuring: rate limiter (client-config with RATE_LIMIT_ENABLED=false vs true, limits 1e9/min)');
    comparisons.push(
      ...(await compare(
        'rate-limiter',
        [
          { label: 'svc, limiter off', kind: 'svc', databaseUrl: small.url, env: { RATE_LIMIT_ENABLED: 'false' } },
          { label: 'svc, limiter on', kind: 'svc', databaseUrl: small.url, env: { RATE_LIMIT_ENABLED: 'true' } },
        ],
        [{ load: { ...clientConfig, label: 'rate-limiter' }, expect: expectClientConfig(pk) }],
      )),
    );
  }

  return comparisons;
}

async function main(): Promise<number> {
  const started = Date.now();
  buildSvc(ROOT);
  if (AGAINST) {
    prepareAgainst(AGAINST);
  }
  log(`svc bench${SMOKE ? ' (smoke)' : ''}: node ${process.version}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}`);
  log(
    `  ${CONNECTIONS} connections, warmup ${WARMUP} s, measure ${DURATION} s, ${ROUNDS} round(s) alternating, ` +
      `best of rounds per side (highest req/s, lowest p50/p99); latency from every response (sub-ms).`,
  );
  log(
    `  svc: node ${nodeCommand(ROOT, [CLI], []).join(' ')} (the compiled build, apps/api/bin/svc's flags), NODE_ENV=production, LOG_LEVEL=warn, ` +
      'WORKER_ENABLED=false, rate limits 1e9/min (limiter on unless stated).',
  );
  log('  baseline: Express 5, postgres.js (pool 10), one join query per request, no cache.');
  log(`  load average at start: ${loadAverage()} (on ${os.cpus().length} cores; anything else running skews the figures)`);
  log('');

  const comparisons: Comparison[] = EDGE_SCENARIOS.some(wanted) ? await edgeBenches() : [];
  // What every scenario module gets (bench/support.ts BenchContext).
  const scenarioContext: BenchContext = {
    root: ROOT,
    cli: CLI,
    smoke: SMOKE,
    rounds: ROUNDS,
    children,
    createDb,
    runCli,
    freePort,
    log,
    profileArgs: (kind, label) =>
      CPU_PROF && kind === 'svc' ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profDir, `${label}-${++profiles}`)}`] : [],
  };
  const usage = USAGE_SCENARIOS.some(wanted)
    ? await runUsageBenches({ ...scenarioContext, duration: DURATION, warmup: WARMUP }, wanted)
    : { verdicts: [], results: {} };
  const exportBenches = EXPORT_SCENARIOS.some(wanted) ? await runExportBenches(scenarioContext, wanted) : { verdicts: [], results: {} };
  const webhooks = WEBHOOK_SCENARIOS.some(wanted) ? await runWebhookBenches(scenarioContext, wanted) : { verdicts: [], results: {} };
  const oidcTokens = OIDC_TOKEN_SCENARIOS.some(wanted) ? await runOidcTokenBenches(scenarioContext, wanted) : { verdicts: [], results: {} };
  const clientCredentials = CLIENT_CREDENTIALS_SCENARIOS.some(wanted)
    ? await runClientCredentialsBenches(scenarioContext, wanted)
    : { verdicts: [], results: {} };
  const backchannel = BACKCHANNEL_SCENARIOS.some(wanted)
    ? await runBackchannelBenches(scenarioContext, wanted)
    : { verdicts: [], results: {} };
  const eventsFeed = EVENTS_FEED_SCENARIOS.some(wanted)
    ? await runEventsFeedBenches(scenarioContext, wanted)
    : { verdicts: [], results: {} };
  const pool = POOL_SCENARIOS.some(wanted) ? await runPoolBenches(scenarioContext, wanted) : { verdicts: [], results: {} };
  const sso = SSO_SCENARIOS.some(wanted) ? await runSsoBenches(scenarioContext, wanted) : { verdicts: [], results: {} };
  const permissionCheck = PERMISSION_CHECK_SCENARIOS.some(wanted)
    ? await runPermissionCheckBenches({ ...scenarioContext, duration: DURATION, warmup: WARMUP, connections: CONNECTIONS }, wanted)
    : { verdicts: [], results: {} };
  const scim = SCIM_SCENARIOS.some(wanted)
    ? await runScimBenches({ ...scenarioContext, duration: DURATION, warmup: WARMUP }, wanted)
    : { verdicts: [], results: {} };
  const resourceServer = RESOURCE_SERVER_SCENARIOS.some(wanted)
    ? await runResourceServerBenches(scenarioContext, wanted)
    : { verdicts: [], results: {} };
  const metadataDocuments = METADATA_DOCUMENT_SCENARIOS.some(wanted)
    ? await runMetadataDocumentBenches(scenarioContext, wanted)
    : { verdicts: [], results: {} };
  const rowScale = ROW_SCALE_SCENARIOS.some(wanted)
    ? await runRowScaleBenches({ ...scenarioContext, duration: DURATION, warmup: WARMUP }, wanted)
    : { verdicts: [], results: {} };

  if (comparisons.length > 0) {
    printTable(comparisons);
  }
  const noisy = comparisons.flatMap((c) =>
    c.sides
      .filter((side) => side.rounds.length > 1)
      .map((side) => {
        const rps = side.rounds.map((r) => r.rps);
        return { what: `${c.load} / ${side.target.label}`, spread: 1 - Math.min(...rps) / Math.max(...rps) };
      })
      .filter((n) => n.spread > 0.15),
  );
  if (noisy.length > 0) {
    log('');
    log(`noise: rounds of the same target disagree by more than 15% (other load on the machine? load average now ${loadAverage()}):`);
    for (const n of noisy) {
      log(`  ${n.what}: ${(n.spread * 100).toFixed(0)}%`);
    }
    log('  ratios may be off by as much; rerun on a quiet machine or raise BENCH_ROUNDS.');
  }
  const results = [...(AGAINST ? againstVerdicts(comparisons) : verdicts(comparisons)), ...webhooks.verdicts, ...usage.verdicts];
  log('');
  results.push(
    ...exportBenches.verdicts,
    ...oidcTokens.verdicts,
    ...clientCredentials.verdicts,
    ...backchannel.verdicts,
    ...eventsFeed.verdicts,
    ...pool.verdicts,
    ...sso.verdicts,
    ...permissionCheck.verdicts,
    ...scim.verdicts,
    ...resourceServer.verdicts,
    ...metadataDocuments.verdicts,
    ...rowScale.verdicts,
  );
  log('summary');
  for (const v of results) {
    log(`  ${v.pass ? 'PASS' : 'FAIL'}  ${v.name.padEnd(58)} ${v.detail}`);
  }
  const failed = results.filter((v) => !v.pass);
  log('');
  if (failed.length > 0) {
    log(`!!!!! ${failed.length} of ${results.length} targets FAILED${SMOKE ? ' (smoke mode: figures are not meaningful)' : ''} !!!!!`);
  } else {
    log(`all ${results.length} targets passed${SMOKE ? ' (smoke mode: figures are not meaningful)' : ''}`);
  }

  mkdirSync(resultsDir, { recursive: true });
  const file = path.join(resultsDir, `${stamp}${SMOKE ? '-smoke' : ''}.json`);
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        startedAt: new Date(started).toISOString(),
        smoke: SMOKE,
        loadAverageAtEnd: os.loadavg(),
        machine: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, platform: process.platform },
        settings: {
          connections: CONNECTIONS,
          warmupSeconds: WARMUP,
          durationSeconds: DURATION,
          rounds: ROUNDS,
          largeApps: LARGE_APPS,
          smallApps: SMALL_APPS,
          rotatingKeys,
        },
        targets: {
          ...TARGETS,
          ...WEBHOOK_TARGETS,
          ...USAGE_TARGETS,
          ...OIDC_TOKEN_TARGETS,
          ...CLIENT_CREDENTIALS_TARGETS,
          ...POOL_TARGETS,
        },
        comparisons: comparisons.map((c) => ({
          scenario: c.scenario,
          load: c.load,
          ratio: (c.sides[1].best as Measurement).rps / (c.sides[0].best as Measurement).rps,
          sides: c.sides.map((s) => ({ target: s.target.label, env: s.target.env ?? {}, best: s.best, rounds: s.rounds })),
        })),
        webhooks: webhooks.results,
        exports: { targets: EXPORT_TARGETS, ...exportBenches.results },
        sessions: { targets: BACKCHANNEL_TARGETS, ...backchannel.results },
        sso: { targets: SSO_TARGETS, ...sso.results },
        eventsFeed: { targets: EVENTS_FEED_TARGETS, ...eventsFeed.results },
        permissionCheck: { targets: PERMISSION_CHECK_TARGETS, ...permissionCheck.results },
        scim: { targets: SCIM_TARGETS, ...scim.results },
        usage: usage.results,
        oidcTokens: oidcTokens.results,
        clientCredentials: clientCredentials.results,
        pool: pool.results,
        ...resourceServer.results,
        ...metadataDocuments.results,
        rowScale: rowScale.results,
        verdicts: results,
      },
      null,
      2,
    )}\n`,
  );
  log(`results written to ${path.relative(ROOT, file)}${CPU_PROF ? `; CPU profiles in ${path.relative(ROOT, profDir)}` : ''}`);
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);

  const crashed = comparisons.some((c) => c.sides.some((s) => s.rounds.some((r) => r.ok === 0 || failures(r) > r.requests * 0.01)));
  if (SMOKE && crashed) {
    log('smoke: some measurements had failed requests');
    return 1;
  }
  return 0;
}

async function cleanup(): Promise<void> {
  for (const child of children) {
    child.kill('SIGKILL');
  }
  await sleep(children.size > 0 ? 500 : 0);
  if (againstRoot) {
    try {
      execFileSync('git', ['worktree', 'remove', '--force', againstRoot], { cwd: ROOT, stdio: 'ignore' });
    } catch (error) {
      process.stderr.write(`bench: could not remove the worktree ${againstRoot}: ${(error as Error).message}\n`);
    }
  }
  await dropDbs();
  await admin.end({ timeout: 2 });
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) {
      return;
    }
    interrupted = true;
    process.stderr.write(`bench: ${signal}, stopping servers and dropping bench databases\n`);
    void cleanup().finally(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error) => {
    process.stderr.write(`bench crashed: ${(error as Error).stack ?? error}\n`);
    await cleanup();
    process.exit(SMOKE ? 1 : 2);
  });
