import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDatabase, type Database } from '@svc/db/client';
import { type EmbeddedServer, startEmbeddedPostgres } from '@svc/db/embedded';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/server.ts';
import { type SpawnedServer, spawnServer } from './support/spawn.ts';
import { type SignedIn, seedOrganization, seedSignedIn } from './support/tenancy.ts';

/** DATABASE_TIMEOUT_MS of the server under test. */
const DATABASE_TIMEOUT_MS = 2_000;
/** What "no hang" means here: the setting plus scheduling slack on a shared, busy machine. */
const ANSWER_BOUND_MS = DATABASE_TIMEOUT_MS + 1_500;
/** /healthz must tell a load balancer within a second. */
const HEALTHZ_BOUND_MS = 1_000;
/** Full service (a write, a read, /healthz, a change notified by the database) this soon after it is back. */
const RECOVERY_BOUND_MS = 2_000;
/** Concurrent clients of the load loop. */
const CLIENTS = 12;
/** How long the load runs against the stopped database: past DATABASE_TIMEOUT_MS, so queued waits expire too. */
const OUTAGE_LOAD_MS = DATABASE_TIMEOUT_MS + 1_500;
const DATABASE_UNAVAILABLE = 'the database is unavailable; retry shortly';
const LIMITER_UNAVAILABLE = 'the rate limiter cannot reach its counters; retry shortly';

type Sample = {
  probe: string;
  started: number;
  ended: number;
  status: number;
  code: string | undefined;
  message: string | undefined;
  retryAfter: string | null;
};

type Probe = {
  name: string;
  /** Answers from the application cache, so it may keep answering while the database is down. */
  cached?: boolean;
  /** Its status while the database is up (2xx unless said). */
  up?: number;
  send: (i: number) => Promise<Response>;
};

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

async function sample(probe: Probe, i: number): Promise<Sample> {
  const started = performance.now();
  try {
    const res = await probe.send(i);
    const text = await res.text();
    let error: { code?: string | number; message?: string; data?: { code?: string } } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
    } catch {
      // An HTML page or a redirect: no error body.
    }
    return {
      probe: probe.name,
      started,
      ended: performance.now(),
      status: res.status,
      // /trpc keeps tRPC's envelope: its numeric code, ours under `data`.
      code: error?.data?.code ?? (typeof error?.code === 'string' ? error.code : undefined),
      message: error?.message,
      retryAfter: res.headers.get('retry-after'),
    };
  } catch (err) {
    // A request that hung past the bound (aborted) or a dropped connection.
    return {
      probe: probe.name,
      started,
      ended: performance.now(),
      status: 0,
      code: (err as Error).name,
      message: (err as Error).message,
      retryAfter: null,
    };
  }
}

/**
 * PostgreSQL stopped under load and started again, against a real `svc serve` process: the
 * server this test starts itself on a free port (never the machine's shared one), in a folder
 * PostgreSQL's own OS user can enter.
 */
describe('a database outage is short and clean', () => {
  let dir: string;
  let port: number;
  let pg: EmbeddedServer | undefined;
  let url: string;
  let server: SpawnedServer;
  let database: Database;
  let admin: SignedIn;
  let orgSlug: string;
  let app: { id: string; publishableKey: string; secretKey: string };
  /** A second cached application, changed right after the database is back. */
  let other: { id: string; publishableKey: string };
  let probes: Probe[];

  const startPg = () => startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port, database: 'svc' });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'svc-outage-pg-'));
    // PostgreSQL runs as its own OS user (machines run as root), so it must be able to enter.
    chmodSync(dir, 0o755);
    port = await freePort();
    pg = await startPg();
    url = pg.url;
    server = await spawnServer({
      DATABASE_URL: url,
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
      // The in-process Graphile Worker must ride the outage out too.
      WORKER_ENABLED: 'true',
      // Only the change notification (or the reconnect) can evict a cached application.
      APPLICATION_CACHE_TTL_MS: '600000',
      // X-Forwarded-For picks a fresh rate-limit subject (one proxy hop: the test).
      TRUST_PROXY: '1',
      // Errors and worse only: an unhandled error (a 500) or a fatal one shows in the output.
      LOG_LEVEL: 'error',
    });
    database = createDatabase({ url, max: 1, applicationName: 'svc-test-admin' });
    const org = await seedOrganization(database.db);
    orgSlug = org.slug;
    admin = await seedSignedIn(database.db, { organization: org, roleKey: 'org_admin' });
    const created = await write('POST', '/v1/applications', { organization_slug: orgSlug, name: 'Outage' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    app = { ...(created.body.application as { id: string; publishableKey: string }), secretKey: created.body.secretKey as string };
    const second = await write('POST', '/v1/applications', { organization_slug: orgSlug, name: 'Outage 2' });
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    other = second.body.application as { id: string; publishableKey: string };
    // The load renames this one, so that the two above stay cached until the outage.
    const third = await write('POST', '/v1/applications', { organization_slug: orgSlug, name: 'Renamed' });
    expect(third.status, JSON.stringify(third.body)).toBe(201);
    const renamedId = (third.body.application as { id: string }).id;

    const signal = () => AbortSignal.timeout(ANSWER_BOUND_MS + 2_000);
    const cookie = { cookie: admin.cookie };
    const json = { ...cookie, 'content-type': 'application/json', origin: server.url };
    probes = [
      // GET /v1/me (session read) and the same procedure over /trpc.
      { name: 'GET /v1/me', send: () => fetch(`${server.url}/v1/me`, { headers: cookie, signal: signal() }) },
      { name: 'GET /trpc/me.get', send: () => fetch(`${server.url}/trpc/me.get`, { headers: cookie, signal: signal() }) },
      // The /v1 REST edge: a read and a write.
      {
        name: 'GET /v1/applications',
        send: () => fetch(`${server.url}/v1/applications?organization_slug=${orgSlug}`, { headers: cookie, signal: signal() }),
      },
      {
        name: 'PATCH /v1/applications/{id}',
        send: (i) =>
          fetch(`${server.url}/v1/applications/${renamedId}`, {
            method: 'PATCH',
            headers: json,
            body: JSON.stringify({ name: `Outage ${i}` }),
            signal: signal(),
          }),
      },
      // A tRPC mutation.
      {
        name: 'POST /trpc/roles.create',
        send: (i) =>
          fetch(`${server.url}/trpc/roles.create`, {
            method: 'POST',
            headers: json,
            body: JSON.stringify({
              organization_slug: orgSlug,
              key: `r${i}_${Math.random().toString(36).slice(2, 8)}`,
              name: `R${i}`,
              permissions: [],
            }),
            signal: signal(),
          }),
      },
      // Usage ingestion, by the application's secret key.
      {
        name: 'POST /v1/usage/events',
        send: (i) =>
          fetch(`${server.url}/v1/usage/events`, {
            method: 'POST',
            headers: { authorization: `Bearer ${app.secretKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ eventType: 'api_call', quantity: 1, idempotencyKey: `outage-${i}-${Math.random()}` }),
            signal: signal(),
          }),
      },
      // A hosted page and an auth route (its per-email sign-in budget lives in the database).
      { name: 'GET /user', send: () => fetch(`${server.url}/user`, { headers: cookie, redirect: 'manual', signal: signal() }) },
      {
        name: 'GET /auth/login',
        up: 303,
        send: (i) =>
          fetch(`${server.url}/auth/login?login_hint=outage-${i}-${Math.random().toString(36).slice(2, 8)}@example.com`, {
            redirect: 'manual',
            signal: signal(),
          }),
      },
      // A download (plain Express under /v1): no such export, so 404 while the database is up.
      {
        name: 'GET /v1/exports/{id}/download',
        up: 404,
        send: () => fetch(`${server.url}/v1/exports/exp_00000000000000000000/download`, { headers: cookie, signal: signal() }),
      },
      // Answered from the application cache: these may keep working through the outage.
      {
        name: 'GET /v1/client/config',
        cached: true,
        send: () => fetch(`${server.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': app.publishableKey }, signal: signal() }),
      },
      {
        name: 'GET /v1/backend/application',
        cached: true,
        send: () =>
          fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `Bearer ${app.secretKey}` }, signal: signal() }),
      },
    ];
  }, 120_000);

  afterAll(async () => {
    if (server && server.child.exitCode !== null) {
      console.error(`svc serve exited with ${server.child.exitCode}:\n${server.output().slice(-4_000)}`);
    }
    await database?.close().catch(() => {});
    await server?.stop();
    await pg?.stop();
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const clientConfig = (publishableKey: string) =>
    sample(
      {
        name: 'GET /v1/client/config',
        send: () => fetch(`${server.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': publishableKey } }),
      },
      0,
    );

  async function write(method: string, route: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${server.url}${route}`, {
      method,
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.url, ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ANSWER_BOUND_MS + 2_000),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
  }

  it('answers 503 service_unavailable with Retry-After within DATABASE_TIMEOUT_MS while it is down, and full service within 2 s of its return', async () => {
    // Everything works, and both applications are cached, before the outage.
    expect((await clientConfig(other.publishableKey)).status).toBe(200);
    for (const [i, probe] of probes.entries()) {
      const s = await sample(probe, i);
      if (probe.up === undefined) {
        expect(s.status, `${probe.name} before the outage: ${JSON.stringify(s)}`).toBeGreaterThanOrEqual(200);
        expect(s.status, `${probe.name} before the outage: ${JSON.stringify(s)}`).toBeLessThan(300);
      } else {
        expect(s.status, `${probe.name} before the outage: ${JSON.stringify(s)}`).toBe(probe.up);
      }
    }

    // A modest load: CLIENTS concurrent clients going round the probes, each loop bounded.
    const samples: Sample[] = [];
    let stopLoad = false;
    let n = 0;
    const clients = Array.from({ length: CLIENTS }, async () => {
      for (let round = 0; round < 2_000 && !stopLoad; round++) {
        const i = n++;
        samples.push(await sample(probes[i % probes.length] as Probe, i));
      }
    });
    await new Promise((r) => setTimeout(r, 500));

    const stopAt = performance.now();
    await (pg as EmbeddedServer).stop();
    pg = undefined;
    const stoppedAt = performance.now();
    await new Promise((r) => setTimeout(r, OUTAGE_LOAD_MS));

    // /healthz, on its own connection, says so within a second, however busy the pool is.
    const healthz: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5_000) });
      healthz.push(performance.now() - t);
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error.code).toBe('service_unavailable');
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    stopLoad = true;
    await Promise.all(clients);
    expect(Math.max(...healthz)).toBeLessThan(HEALTHZ_BOUND_MS);

    // Writes from a client the limiter has not counted yet: refused by the limiter itself, not
    // admitted unmetered. A read is admitted uncounted and fails on the database instead.
    const fresh = (k: string) => ({ 'x-forwarded-for': `198.51.100.${k}` });
    const restWrite = await write('POST', '/v1/applications', { organization_slug: orgSlug, name: 'Unmetered' }, fresh('7'));
    const trpcWrite = await write('POST', '/trpc/applications.create', { organization_slug: orgSlug, name: 'Unmetered' }, fresh('8'));
    for (const refused of [restWrite, trpcWrite]) {
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toMatch(/^\d+$/);
      expect(refused.body.error).toMatchObject({ code: 'service_unavailable', message: LIMITER_UNAVAILABLE });
      expect(refused.body.error.requestId).toMatch(/\S/);
    }
    const freshRead = await fetch(`${server.url}/v1/me`, { headers: { cookie: admin.cookie, ...fresh('9') } });
    expect(freshRead.status).toBe(503);
    expect(((await freshRead.json()) as any).error).toMatchObject({ code: 'service_unavailable', message: DATABASE_UNAVAILABLE });

    // Every answer from the moment the database began to stop: in flight then, or sent during.
    const during = samples.filter((s) => s.ended >= stopAt);
    const bad = during.filter((s) => {
      const unavailable = s.status === 503 && s.code === 'service_unavailable' && /^\d+$/.test(s.retryAfter ?? '');
      const cachedOk = probes.find((p) => p.name === s.probe)?.cached && s.status >= 200 && s.status < 300;
      const finishedFirst = s.started < stopAt && s.status > 0 && s.status < 500;
      return !(unavailable || cachedOk || finishedFirst);
    });
    expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
    const sentDuring = during.filter((s) => s.started >= stoppedAt);
    for (const probe of probes.filter((p) => !p.cached)) {
      const answers = sentDuring.filter((s) => s.probe === probe.name);
      expect(answers.length, `${probe.name} was sent during the outage`).toBeGreaterThan(0);
      expect(new Set(answers.map((s) => `${s.status} ${s.code}`)), probe.name).toEqual(new Set(['503 service_unavailable']));
    }
    const durations = during.map((s) => s.ended - s.started);
    expect(Math.max(...durations)).toBeLessThan(ANSWER_BOUND_MS);
    const first503 = Math.min(...during.filter((s) => s.status === 503).map((s) => s.ended));

    // While svc is cut off, the application is disabled: PostgreSQL started on another port
    // only svc does not know, so no process can hear that change's notification.
    const aside = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await freePort(), database: 'svc' });
    const missed = createDatabase({ url: aside.url, max: 1, applicationName: 'svc-test-aside' });
    try {
      await missed.sql`update applications set status = 'disabled' where id = ${app.id}`;
    } finally {
      await missed.close();
      await aside.stop();
    }

    // Back: the same data directory and port. Right away another cached application is
    // disabled; its notification (or the reconnect) must reach the cache too.
    pg = await startPg();
    const upAt = performance.now();
    const changer = createDatabase({ url, max: 1, applicationName: 'svc-test-changer' });
    try {
      await changer.sql`update applications set status = 'disabled' where id = ${other.id}`;
    } finally {
      await changer.close();
    }
    let back: number | undefined;
    let last: Record<string, number | string | undefined> = {};
    for (let round = 0; round < 200 && performance.now() - upAt < RECOVERY_BOUND_MS + 3_000; round++) {
      const [health, read, trpcRead, created, missedChange, notifiedChange] = await Promise.all([
        fetch(`${server.url}/healthz`).then((r) => r.status),
        fetch(`${server.url}/v1/me`, { headers: { cookie: admin.cookie } }).then((r) => r.status),
        fetch(`${server.url}/trpc/me.get`, { headers: { cookie: admin.cookie } }).then((r) => r.status),
        write('POST', '/v1/applications', { organization_slug: orgSlug, name: `Back ${round}` }).then((r) => r.status),
        clientConfig(app.publishableKey).then((s) => s.code),
        clientConfig(other.publishableKey).then((s) => s.code),
      ]);
      last = { health, read, trpcRead, created, missedChange, notifiedChange };
      if (
        health === 200 &&
        read === 200 &&
        trpcRead === 200 &&
        created === 201 &&
        missedChange === 'application_disabled' &&
        notifiedChange === 'application_disabled'
      ) {
        back = performance.now() - upAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(back, `not back to full service: ${JSON.stringify(last)}`).toBeDefined();

    const figures = {
      requestsDuringOutage: during.length,
      firstServiceUnavailableMs: Math.round(first503 - stopAt),
      postgresStopTookMs: Math.round(stoppedAt - stopAt),
      outageAnswerP50Ms: Math.round(percentile(durations, 50)),
      outageAnswerP99Ms: Math.round(percentile(durations, 99)),
      outageAnswerMaxMs: Math.round(Math.max(...durations)),
      healthzMaxMs: Math.round(Math.max(...healthz)),
      backToFullServiceMs: Math.round(back as number),
    };
    console.log(`database outage figures: ${JSON.stringify(figures)}`);
    expect(back).toBeLessThan(RECOVERY_BOUND_MS);
    // The in-process Graphile Worker came back by itself: a job queued now is run.
    const jobs = createDatabase({ url, max: 1, applicationName: 'svc-test-jobs' });
    try {
      const [job] = await jobs.sql<{ id: string }[]>`
        select id from graphile_worker.add_job('maintenance:prune_pending_logins', '{}'::json)`;
      let pending = 1;
      for (let i = 0; i < 150 && pending > 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        [{ pending }] =
          (await jobs.sql`select count(*)::int as pending from graphile_worker.jobs where id = ${job?.id as string}`) as unknown as [
            { pending: number },
          ];
      }
      expect(pending, 'the job queued after the outage was not run').toBe(0);
    } finally {
      await jobs.close();
    }
    // The same process throughout: nothing crashed, nothing restarted.
    expect(server.child.exitCode).toBeNull();
    expect(server.output()).not.toMatch(/unhandled error|unhandled promise rejection|"level":60/);
  }, 60_000);
});
