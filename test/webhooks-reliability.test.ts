/**
 * Webhook delivery reliability (issue 5, "Reliability (each a test)"), against real `svc worker`
 * processes and a real local receiver that verifies every delivery with the `standardwebhooks`
 * npm package and records webhook-ids. Events are recorded the way mutations record them
 * (recordEvent in a committed transaction).
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import { type EmbeddedServer, startEmbeddedPostgres } from '@svc/db/embedded';
import { migrateDatabase } from '@svc/db/migrate';
import { recordEvent } from '@svc/db/queries/webhook-events';
import { webhookEndpoints } from '@svc/db/schema/webhooks';
import { createSecretBox } from '@svc/db/secret-box';
import { afterEach, describe, expect, it } from 'vitest';
import { generateWebhookSecret, sealWebhookSecret } from '../packages/jobs/src/webhooks/secrets.ts';
import { createTestDatabase } from './support/db.ts';
import { freePort } from './support/server.ts';
import { REPO_ROOT } from './support/spawn.ts';
import { seedOrganization } from './support/tenancy.ts';
import { type Receiver, startReceiver } from './support/webhook-receiver.ts';
import { type SpawnedWorker, spawnWorker } from './support/worker.ts';

/** One key for seeding and for every worker: the workers must open the secrets sealed here. */
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const box = createSecretBox(Buffer.from(ENCRYPTION_KEY, 'base64'));
const EVENT_TYPE = 'user.created';

type Counts = Record<string, number>;

function workerEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // Short delays: a test must see retries, not wait for the production schedule.
    WEBHOOK_RETRY_SCHEDULE: '0,100,200,500,1s,1s,1s,1s,1s,1s',
    WEBHOOK_TIMEOUT_MS: '2000',
    WORKER_CONCURRENCY: '5',
    SHUTDOWN_TIMEOUT_MS: '10000',
    ...extra,
  };
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: () => string): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) {
      return Date.now() - started;
    }
    if (Date.now() - started > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
    }
    await sleep(50);
  }
}

/** An enabled endpoint of `tenantId` subscribed to EVENT_TYPE, delivering to the receiver. */
async function seedEndpoint(database: Database, receiver: Receiver, tenantId: string, name: string): Promise<string> {
  const id = newId('webhookEndpoint');
  const secret = generateWebhookSecret();
  await database.db.insert(webhookEndpoints).values({
    id,
    tenantId,
    url: receiver.url(name),
    eventTypes: [EVENT_TYPE],
    secretCiphertext: sealWebhookSecret(box, id, secret),
  });
  receiver.addEndpoint(name, secret);
  return id;
}

/** `count` events, `perTransaction` to a committed transaction; returns their ids. */
async function recordEvents(database: Database, tenantId: string, count: number, perTransaction = 10, pauseMs = 0): Promise<string[]> {
  const ids: string[] = [];
  while (ids.length < count) {
    const batch = Math.min(perTransaction, count - ids.length);
    const recorded = await database.db.transaction(async (tx) => {
      const out: string[] = [];
      for (let i = 0; i < batch; i++) {
        const event = await recordEvent(tx, { tenantId, type: EVENT_TYPE, data: { n: ids.length + i } });
        out.push(event.id);
      }
      return out;
    });
    ids.push(...recorded);
    if (pauseMs > 0) {
      await sleep(pauseMs);
    }
  }
  return ids;
}

async function statusCounts(database: Database): Promise<Counts> {
  const rows = await database.sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from webhook_deliveries group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function dueCount(database: Database): Promise<number> {
  const [row] = await database.sql<{ n: number }[]>`
    select count(*)::int as n from webhook_deliveries where status in ('pending', 'retrying')`;
  return row?.n ?? -1;
}

/** How many times each `endpoint/webhook-id` arrived, verified or not. */
function arrivals(receiver: Receiver): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of receiver.requests) {
    const key = `${r.endpoint}/${r.webhookId}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

function duplicates(receiver: Receiver): string[] {
  return [...arrivals(receiver)].filter(([, n]) => n > 1).map(([key]) => key);
}

const sorted = (ids: Iterable<string>) => [...ids].sort();

describe('webhook delivery reliability (real svc worker processes, standardwebhooks verifier)', () => {
  const workers: SpawnedWorker[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  async function startWorker(env: Record<string, string>): Promise<SpawnedWorker> {
    const worker = await spawnWorker(env);
    workers.push(worker);
    return worker;
  }

  async function setup(): Promise<{ database: Database; receiver: Receiver; tenantId: string; url: string }> {
    const url = await createTestDatabase();
    const database = createDatabase({ url, max: 4, applicationName: 'webhooks-reliability-test' });
    const receiver = await startReceiver();
    cleanups.push(
      () => receiver.close(),
      () => database.close(),
    );
    const org = await seedOrganization(database.db);
    return { database, receiver, tenantId: org.id, url };
  }

  /** On failure, what the workers said: the first thing to read. */
  function workerOutput(): string {
    return workers.map((w, i) => `--- worker ${i + 1} ---\n${w.output().slice(-4_000)}`).join('\n');
  }

  afterEach(async () => {
    for (const w of workers.splice(0)) {
      if (w.running()) {
        w.child.kill('SIGKILL');
        await w.exited;
      }
    }
    for (const c of cleanups.splice(0).reverse()) {
      await c().catch(() => {});
    }
  });

  it('SIGKILL mid-delivery: after a restart every delivery ends, none lost, a deduplicating receiver sees each event once', async () => {
    const { database, receiver, tenantId, url } = await setup();
    await seedEndpoint(database, receiver, tenantId, 'a');
    await seedEndpoint(database, receiver, tenantId, 'b');
    // The first few answer at once; then every request is held open, so the kill finds some in flight.
    let answered = 0;
    receiver.setPolicy(() => (++answered <= 10 ? { status: 200 } : { hold: true }));
    const env = workerEnv(url);
    const first = await startWorker(env);
    const events = await recordEvents(database, tenantId, 60);
    await waitFor(
      () => receiver.inFlight() >= 1,
      20_000,
      () => `a held request (received ${receiver.requests.length})\n${workerOutput()}`,
    );
    // Let more sends pile up, well inside WEBHOOK_TIMEOUT_MS (no attempt may time out before the kill).
    await sleep(400);
    const inFlightAtKill = new Set(receiver.inFlightIds());
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    receiver.setPolicy(() => ({ status: 200 }));

    await startWorker(env);
    const recoveryMs = await waitFor(
      async () => (await dueCount(database)) === 0,
      90_000,
      () => `no due deliveries (now ${JSON.stringify(receiver.requests.length)} received)\n${workerOutput()}`,
    );

    const counts = await statusCounts(database);
    const total = events.length * 2;
    expect(counts).toEqual({ succeeded: total });
    const [lost] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_events e cross join webhook_endpoints w
      where not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.endpoint_id = w.id)`;
    expect(lost?.n).toBe(0);
    const [locked] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where locked_until > now()`;
    expect(locked?.n).toBe(0);
    expect(receiver.requests.filter((r) => !r.verified)).toEqual([]);
    // Deduplicating on webhook-id: each event exactly once per endpoint, none missing.
    for (const name of ['a', 'b']) {
      const processed = receiver.processed(name);
      expect(processed).toHaveLength(events.length);
      expect(sorted(processed)).toEqual(sorted(events));
    }
    // The only repeats are the sends the kill interrupted (their outcome was never recorded).
    const repeated = duplicates(receiver);
    expect(repeated.filter((key) => !inFlightAtKill.has(key))).toEqual([]);
    expect(inFlightAtKill.size).toBeGreaterThan(0);
    console.info(
      `SIGKILL: ${inFlightAtKill.size} in flight at the kill, ${repeated.length} sent again after the restart, ` +
        `all ${total} final ${recoveryMs} ms after the new worker started`,
    );
  }, 180_000);

  it('two workers on one database: every delivery succeeds and no webhook-id is sent twice', async () => {
    const { database, receiver, tenantId, url } = await setup();
    await seedEndpoint(database, receiver, tenantId, 'a');
    const env = workerEnv(url);
    await Promise.all([startWorker(env), startWorker(env)]);
    // Some events before and some while both workers are busy, so both compete for the same rows.
    const events = await recordEvents(database, tenantId, 300, 10, 15);
    await waitFor(
      async () => (await dueCount(database)) === 0,
      60_000,
      () => `no due deliveries\n${workerOutput()}`,
    );
    expect(await statusCounts(database)).toEqual({ succeeded: events.length });
    expect(receiver.requests.filter((r) => !r.verified)).toEqual([]);
    expect(receiver.requests).toHaveLength(events.length);
    expect(duplicates(receiver)).toEqual([]);
    expect(sorted(receiver.processed('a'))).toEqual(sorted(events));
    const [attempts] = await database.sql<{ n: number; first: number; ok: number }[]>`
      select count(*)::int as n, count(*) filter (where attempt_number = 1)::int as first,
             count(*) filter (where outcome = 'succeeded')::int as ok
      from webhook_delivery_attempts`;
    expect(attempts).toEqual({ n: events.length, first: events.length, ok: events.length });
  }, 120_000);

  it('SIGTERM during a delivery: the worker exits, the attempt is recorded, nothing is left locked', async () => {
    const { database, receiver, tenantId, url } = await setup();
    await seedEndpoint(database, receiver, tenantId, 'a');
    // Slow but within WEBHOOK_TIMEOUT_MS: a graceful stop can wait for the answer.
    receiver.setPolicy(() => ({ status: 200, delayMs: 1_500 }));
    const env = workerEnv(url, { WEBHOOK_TIMEOUT_MS: '5000' });
    const worker = await startWorker(env);
    const events = await recordEvents(database, tenantId, 30);
    await waitFor(
      () => receiver.inFlight() >= 1,
      20_000,
      () => `a request in flight\n${workerOutput()}`,
    );
    const inFlight = receiver.inFlightIds().map((key) => key.split('/')[1] as string);
    const sentAt = Date.now();
    worker.child.kill('SIGTERM');
    const exit = await Promise.race([worker.exited, sleep(25_000).then(() => 'still running' as const)]);
    expect(exit, workerOutput()).toEqual({ code: 0, signal: null });
    const stopMs = Date.now() - sentAt;

    // Every send the receiver saw has an attempt row with its outcome.
    const received = [...new Set(receiver.requests.map((r) => r.webhookId))];
    expect(received.length).toBeGreaterThan(0);
    const attempts = await database.sql<{ event_id: string; outcome: string; status: string }[]>`
      select d.event_id, a.outcome, d.status
      from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id`;
    const attempted = new Map(attempts.map((a) => [a.event_id, a]));
    for (const id of received) {
      const attempt = attempted.get(id);
      expect(attempt, `attempt of ${id}`).toBeDefined();
      expect(typeof attempt?.outcome).toBe('string');
    }
    for (const id of inFlight) {
      expect(attempted.get(id)?.outcome, `the in-flight attempt of ${id}`).toBe('succeeded');
      expect(attempted.get(id)?.status).toBe('succeeded');
    }
    // Nothing locked: neither Graphile Worker's jobs nor delivery leases.
    const [jobs] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker.jobs where locked_at is not null`;
    expect(jobs?.n, 'locked graphile_worker jobs').toBe(0);
    const [leases] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where locked_until > now()`;
    expect(leases?.n, 'deliveries still leased').toBe(0);

    // A new worker finishes the rest, and nothing the stopped worker sent is sent again.
    receiver.setPolicy(() => ({ status: 200 }));
    await startWorker(env);
    await waitFor(
      async () => (await dueCount(database)) === 0,
      60_000,
      () => `no due deliveries\n${workerOutput()}`,
    );
    expect(await statusCounts(database)).toEqual({ succeeded: events.length });
    expect(duplicates(receiver)).toEqual([]);
    expect(sorted(receiver.processed('a'))).toEqual(sorted(events));
    console.info(`SIGTERM: ${inFlight.length} in flight, worker exited in ${stopMs} ms`);
  }, 120_000);

  it('the database restarted under load: deliveries resume, none lost, each webhook-id seen', async () => {
    // A PostgreSQL of this test's own: the shared one is never restarted.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-webhooks-pg-'));
    // PostgreSQL runs as its own OS user (machines run as root), so it must be able to enter.
    chmodSync(dir, 0o755);
    const dataDir = path.join(dir, 'data');
    const port = await freePort();
    let pg: EmbeddedServer | undefined = await startEmbeddedPostgres({ dataDir, port });
    cleanups.push(async () => {
      await pg?.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const url = pg.url;
    await migrateDatabase(url);
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    // Seeding only; the checks use a client made after the restart (see event-generator.ts for
    // what a connection that lives through the restart can do to its process).
    const seeding = createDatabase({ url, max: 1, applicationName: 'webhooks-restart-seed' });
    const org = await seedOrganization(seeding.db);
    await seedEndpoint(seeding, receiver, org.id, 'a');
    await seeding.close();

    // A supervisor, as in production: starts the worker again whenever it exits, whatever the code.
    const env = workerEnv(url, { LOG_LEVEL: 'info' });
    let supervising = true;
    const exits: string[] = [];
    const supervise = async (): Promise<void> => {
      while (supervising) {
        let worker: SpawnedWorker;
        try {
          worker = await startWorker(env);
        } catch {
          // The database is down: the worker refuses to start. Try again shortly.
          exits.push('refused to start');
          await sleep(250);
          continue;
        }
        const exit = await worker.exited;
        if (supervising) {
          // Why, in a word: the last thing it printed that was not a routine log line.
          const said = worker
            .output()
            .split('\n')
            .filter((line) => line.trim() !== '' && !line.includes('"level":30'))
            .slice(-3)
            .join(' | ')
            .slice(0, 300);
          exits.push(`exited ${exit.code ?? exit.signal}: ${said}`);
        }
      }
    };
    const supervisor = supervise();

    // Events from committed transactions, continuously, by a client application process.
    const generator = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'test/support/event-generator.ts')], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: url, TENANT_ID: org.id, EVENT_TYPE, INTERVAL_MS: '20' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acknowledged: string[] = [];
    let generatorOutput = '';
    let pendingLine = '';
    generator.stdout.on('data', (chunk: Buffer) => {
      const lines = (pendingLine + chunk.toString()).split('\n');
      pendingLine = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('ack ')) {
          acknowledged.push(line.slice(4));
        } else {
          generatorOutput += `${line}\n`;
        }
      }
    });
    generator.stderr.on('data', (chunk: Buffer) => {
      generatorOutput += chunk.toString();
    });
    const generatorExited = new Promise<number | null>((resolve) => generator.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (generator.exitCode === null) {
        generator.kill('SIGKILL');
      }
    });

    await waitFor(
      () => receiver.requests.length >= 30,
      30_000,
      () => `deliveries before the restart (${acknowledged.length} events)\n${generatorOutput}\n${workerOutput()}`,
    );
    const beforeRestart = acknowledged.length;
    await pg.stop();
    pg = undefined;
    await sleep(2_000);
    pg = await startEmbeddedPostgres({ dataDir, port });
    const restartedAt = Date.now();
    // Keep generating until plenty of events were committed after the restart too.
    await waitFor(
      () => acknowledged.length >= beforeRestart + 100,
      30_000,
      () => `events after the restart (${acknowledged.length - beforeRestart})\n${generatorOutput}`,
    );
    generator.kill('SIGTERM');
    expect(await generatorExited, generatorOutput).toBe(0);

    const database = createDatabase({ url, max: 2, applicationName: 'webhooks-restart-check' });
    cleanups.push(() => database.close());
    let lastCounts: Counts = {};
    await waitFor(
      async () => {
        lastCounts = await statusCounts(database);
        return (lastCounts.pending ?? 0) + (lastCounts.retrying ?? 0) === 0;
      },
      90_000,
      () =>
        `no due deliveries after the restart (worker exits ${JSON.stringify(exits)}, ${receiver.requests.length} received, ` +
        `deliveries ${JSON.stringify(lastCounts)})\n${workerOutput()}`,
    );
    const resumedMs = Date.now() - restartedAt;
    supervising = false;
    for (const w of workers) {
      await w.stop();
    }
    await supervisor;

    const [events] = await database.sql<{ ids: string[] }[]>`select coalesce(array_agg(id), '{}') as ids from webhook_events`;
    const inDatabase = new Set(events?.ids ?? []);
    // Every acknowledged commit is there (a commit whose answer was lost may be there as well).
    expect(acknowledged.filter((id) => !inDatabase.has(id))).toEqual([]);
    expect(await statusCounts(database)).toEqual({ succeeded: inDatabase.size });
    expect(receiver.requests.filter((r) => !r.verified)).toEqual([]);
    expect(sorted(receiver.processed('a'))).toEqual(sorted(inDatabase));
    const repeated = duplicates(receiver);
    console.info(
      `database restart: ${inDatabase.size} events (${acknowledged.length} acknowledged; generator ${generatorOutput.trim()}), ` +
        `worker exits ${JSON.stringify(exits)}, ${repeated.length} webhook-id(s) sent more than once, ` +
        `all final ${resumedMs} ms after PostgreSQL was back`,
    );
  }, 240_000);
});
