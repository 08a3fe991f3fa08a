import { randomBytes } from 'node:crypto';
import { createDatabase, type Database } from '@svc/db/client';
import { addJob } from '@svc/db/jobs';
import { createSecretBox } from '@svc/db/secret-box';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { type JobLogger, startWorker, WORKER_APPLICATION_NAME, type WorkerHandle } from './runner.ts';

const TASK = 'maintenance:prune_rate_limits' as const;

/** What startWorker needs for webhook deliveries; these tests record none. */
const WORKER_DEPS = {
  secretBox: createSecretBox(randomBytes(32)),
  webhooks: { allowPrivate: false, timeoutMs: 1_000, retryScheduleMs: [0], secretGraceMs: 0 },
};

type JobRow = {
  id: string;
  task_identifier: string;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  locked_at: Date | null;
  payload?: unknown;
};

/** A logger that records what Graphile Worker says, so tests can see completions as they happen. */
function recordingLogger() {
  const lines: { level: 'debug' | 'info' | 'error'; msg: string }[] = [];
  const listeners = new Set<() => void>();
  const push = (level: 'debug' | 'info' | 'error') => (_obj: object, msg: string) => {
    lines.push({ level, msg });
    for (const l of listeners) {
      l();
    }
  };
  const logger: JobLogger = { debug: push('debug'), info: push('info'), error: push('error') };
  /** Job ids in "Completed task <id> (...) with success" lines, once per line. */
  const completed = () =>
    lines.flatMap((l) => {
      const m = /^Completed task (\d+) \(/.exec(l.msg);
      return m ? [m[1] as string] : [];
    });
  const failed = () =>
    lines.flatMap((l) => {
      const m = /^Failed task (\d+) \(/.exec(l.msg);
      return m ? [m[1] as string] : [];
    });
  return { logger, lines, completed, failed, onLine: (fn: () => void) => listeners.add(fn) };
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

function currentWindowStart(): number {
  return Math.floor(Date.now() / 1000 / 60) * 60;
}

describe('packages/jobs against real PostgreSQL', () => {
  let url: string;
  let database: Database;
  const workers: WorkerHandle[] = [];

  async function jobs(): Promise<JobRow[]> {
    return database.sql<JobRow[]>`
      select id::text as id, task_identifier, attempts, max_attempts, last_error, locked_at
      from graphile_worker.jobs order by id`;
  }

  /** Our jobs only: a worker's crontab may add its own prune job at a 5-minute boundary. */
  async function jobsByIds(ids: string[]): Promise<JobRow[]> {
    if (ids.length === 0) {
      return [];
    }
    return database.sql<JobRow[]>`
      select id::text as id, task_identifier, attempts, max_attempts, last_error, locked_at
      from graphile_worker.jobs where id = any(${ids}::bigint[]) order by id`;
  }

  async function counterKeys(): Promise<string[]> {
    const rows = await database.sql<{ key: string }[]>`select key from rate_limit_counters order by key`;
    return rows.map((r) => r.key);
  }

  async function start(logger: JobLogger, concurrency = 5): Promise<WorkerHandle> {
    const worker = await startWorker({ connectionString: url, db: database.db, logger, concurrency, pollInterval: 50, ...WORKER_DEPS });
    workers.push(worker);
    return worker;
  }

  async function stop(worker: WorkerHandle): Promise<void> {
    const i = workers.indexOf(worker);
    if (i >= 0) {
      workers.splice(i, 1);
    }
    await worker.stop();
  }

  beforeAll(async () => {
    url = await createTestDatabase();
    database = createDatabase({ url, max: 5, applicationName: 'svc-jobs-test' });
  });

  afterEach(async () => {
    for (const w of workers.splice(0)) {
      await w.stop().catch(() => {});
    }
    await database.sql`delete from graphile_worker._private_jobs`;
    await database.sql`delete from rate_limit_counters`;
  });

  afterAll(async () => {
    await database?.close();
  });

  it('survives its idle connections being closed by the server, and holds none once stop() resolves', async () => {
    const backends = async () => {
      const [row] = await database.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name = ${WORKER_APPLICATION_NAME}`;
      return row?.n ?? -1;
    };
    const rec = recordingLogger();
    const worker = await start(rec.logger);
    await waitFor(async () => (await backends()) > 0, 5_000, 'the worker to connect');
    // What a restarting or stopping PostgreSQL does to idle connections: an unhandled pool error
    // here would crash the process (and fail this run).
    await database.sql`select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and application_name = ${WORKER_APPLICATION_NAME}`;
    await addJob(database.db, TASK, { keepSeconds: 120 });
    await waitFor(async () => (await jobs()).length === 0 && rec.completed().length > 0, 10_000, 'a job after the connections were closed');
    await stop(worker);
    // Nothing left for a database stopped next (svc's shutdown order) to close under it.
    expect(await backends()).toBe(0);
  });

  it('a job enqueued in a transaction that rolls back does not exist', async () => {
    let seenInside = -1;
    await expect(
      database.db.transaction(async (tx) => {
        // The mutation the job belongs to: it must vanish with the job.
        await tx.execute(sql`insert into rate_limit_counters (key, window_start, granted) values ('public:rolled-back', 0, 1)`);
        await addJob(tx, TASK, { keepSeconds: 120 });
        const rows = (await tx.execute(sql`select count(*)::int as n from graphile_worker._private_jobs`)) as unknown as { n: number }[];
        seenInside = rows[0]?.n ?? -1;
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // The job was really added inside the transaction (so its absence below means something).
    expect(seenInside).toBe(1);
    const [after] = await database.sql<{ n: number }[]>`select count(*)::int as n from graphile_worker._private_jobs`;
    expect(after?.n).toBe(0);
    expect(await jobs()).toEqual([]);
    expect(await counterKeys()).not.toContain('public:rolled-back');
  });

  it('a committed job runs: old counters deleted, the current window kept, the job row gone', async () => {
    const now = currentWindowStart();
    await database.sql`
      insert into rate_limit_counters (key, window_start, granted) values
        ('public:ancient', ${now - 86_400}, 5),
        ('public:hour-old', ${now - 3_600}, 7),
        ('public:ten-minutes-old', ${now - 600}, 2),
        ('public:current', ${now}, 3),
        ('backend:current', ${now}, 1)`;
    await database.db.transaction(async (tx) => {
      await addJob(tx, TASK, { keepSeconds: 120 });
    });
    const queued = await jobs();
    expect(queued).toHaveLength(1);
    expect(queued[0]?.task_identifier).toBe(TASK);
    const jobId = queued[0]?.id as string;

    const rec = recordingLogger();
    const started = Date.now();
    await start(rec.logger);
    await waitFor(async () => (await jobsByIds([jobId])).length === 0, 5_000, 'the prune job to complete');
    expect(Date.now() - started).toBeLessThan(5_000);

    expect(await counterKeys()).toEqual(['backend:current', 'public:current']);
    expect(rec.completed()).toContain(jobId);
    expect(rec.failed()).toEqual([]);
  });

  it('the pending-login prune deletes expired sign-ins and keeps live ones', async () => {
    await database.sql`
      insert into pending_logins (handle_hash, state, nonce, code_verifier, return_to, expires_at) values
        ('expired', 's', 'n', 'v', '/', now() - interval '1 minute'),
        ('live', 's', 'n', 'v', '/', now() + interval '5 minutes')`;
    await database.db.transaction(async (tx) => {
      await addJob(tx, 'maintenance:prune_pending_logins', {});
    });
    const [job] = await jobs();
    await start(recordingLogger().logger);
    await waitFor(async () => (await jobsByIds([job?.id as string])).length === 0, 5_000, 'the pending-login prune');
    const left = await database.sql<{ handle_hash: string }[]>`select handle_hash from pending_logins`;
    expect(left.map((r) => r.handle_hash)).toEqual(['live']);
  });

  it('the OpenID Provider prune deletes expired artifacts and long-retired keys, and keeps the rest', async () => {
    await database.sql`
      insert into oidc_payloads (model, id, payload, expires_at) values
        ('AuthorizationCode', 'expired', '{}', now() - interval '1 minute'),
        ('RefreshToken', 'live', '{}', now() + interval '5 minutes'),
        ('ReplayDetection', 'forever', '{}', null)`;
    await database.sql`
      insert into oidc_signing_keys (kid, alg, private_key_ciphertext, public_jwk, created_at, superseded_at) values
        ('long-retired', 'RS256', 'v1.a.b.c', '{}', now() - interval '30 days', now() - interval '8 days'),
        ('recently-retired', 'RS256', 'v1.a.b.c', '{}', now() - interval '2 days', now() - interval '1 day'),
        ('current', 'RS256', 'v1.a.b.c', '{}', now() - interval '1 day', null)`;
    await database.db.transaction(async (tx) => {
      await addJob(tx, 'maintenance:prune_oidc', {});
    });
    const [job] = await jobs();
    await start(recordingLogger().logger);
    await waitFor(async () => (await jobsByIds([job?.id as string])).length === 0, 5_000, 'the OpenID Provider prune');
    const payloads = await database.sql<{ id: string }[]>`select id from oidc_payloads order by id`;
    expect(payloads.map((r) => r.id)).toEqual(['forever', 'live']);
    const keys = await database.sql<{ kid: string }[]>`select kid from oidc_signing_keys order by kid`;
    expect(keys.map((r) => r.kid)).toEqual(['current', 'recently-retired']);
  });

  it('a job with a run_at in the future is not run early', async () => {
    const now = currentWindowStart();
    await database.sql`insert into rate_limit_counters (key, window_start, granted) values ('public:old', ${now - 3_600}, 1)`;
    await database.db.transaction(async (tx) => {
      await addJob(tx, TASK, {}, { runAt: new Date(Date.now() + 3_600_000) });
    });
    const rec = recordingLogger();
    await start(rec.logger);
    await new Promise((r) => setTimeout(r, 1_000));
    const rows = await jobs();
    expect(rows.filter((j) => j.task_identifier === TASK && j.attempts === 0)).toHaveLength(1);
    expect(await counterKeys()).toContain('public:old');
  });

  it('graceful shutdown after all 20 jobs completed leaves zero jobs (no completion lost)', async () => {
    await database.db.transaction(async (tx) => {
      for (let i = 0; i < 20; i++) {
        await addJob(tx, TASK, { keepSeconds: 120 + i });
      }
    });
    const ids = (await jobs()).map((j) => j.id);
    expect(ids).toHaveLength(20);

    const rec = recordingLogger();
    const worker = await start(rec.logger);
    // Processed = the worker reported each of our jobs as completed. Stop at once: completions
    // must already be committed, or be flushed by the graceful stop.
    await waitFor(() => ids.every((id) => rec.completed().includes(id)), 10_000, 'all 20 jobs to be processed');
    await stop(worker);

    expect(await jobsByIds(ids)).toEqual([]);
    // Each job ran exactly once.
    for (const id of ids) {
      expect(rec.completed().filter((c) => c === id)).toHaveLength(1);
    }
  });

  it('stopping mid-queue loses no completion: completed jobs are gone, the rest run once on the next worker', async () => {
    await database.db.transaction(async (tx) => {
      for (let i = 0; i < 20; i++) {
        await addJob(tx, TASK, { keepSeconds: 120 + i });
      }
    });
    const ids = (await jobs()).map((j) => j.id);
    expect(ids).toHaveLength(20);

    const first = recordingLogger();
    let stopRequested = false;
    let stopping: Promise<void> | undefined;
    const worker = await startWorker({
      connectionString: url,
      db: database.db,
      logger: first.logger,
      concurrency: 4,
      pollInterval: 50,
      ...WORKER_DEPS,
    });
    workers.push(worker);
    // Begin the graceful stop the moment the first completion is reported, while other jobs are
    // in flight and their completions not yet written.
    first.onLine(() => {
      if (!stopRequested && first.completed().length > 0) {
        // Set before stop(): stop() logs synchronously, which calls back into this listener.
        stopRequested = true;
        stopping = worker.stop();
      }
    });
    await waitFor(() => stopping !== undefined, 10_000, 'the first completion');
    await stopping;
    workers.splice(workers.indexOf(worker), 1);

    const doneByFirst = first.completed().filter((id) => ids.includes(id));
    expect(doneByFirst.length).toBeGreaterThan(0);
    const left = await jobsByIds(ids);
    // Every job the first worker completed is deleted; none is left locked by the stopped worker.
    expect(left.map((j) => j.id).filter((id) => doneByFirst.includes(id))).toEqual([]);
    expect(left.filter((j) => j.locked_at !== null)).toEqual([]);
    expect(left).toHaveLength(20 - doneByFirst.length);

    const second = recordingLogger();
    await start(second.logger);
    await waitFor(async () => (await jobsByIds(ids)).length === 0, 10_000, 'the second worker to finish the queue');
    const all = [...doneByFirst, ...second.completed().filter((id) => ids.includes(id))];
    // Exactly once each: a lost completion would show up as a second run of the same job.
    expect(all.sort()).toEqual([...ids].sort());
  });

  it('a payload that fails zod parsing fails the job with last_error instead of succeeding', async () => {
    const now = currentWindowStart();
    await database.sql`insert into rate_limit_counters (key, window_start, granted) values ('public:old', ${now - 3_600}, 1)`;
    await database.db.transaction(async (tx) => {
      await addJob(tx, TASK, { keepSeconds: 'soon' } as never, { maxAttempts: 1 });
      await addJob(tx, TASK, { keepSeconds: -5 }, { maxAttempts: 1 });
    });
    const ids = (await jobs()).map((j) => j.id);
    expect(ids).toHaveLength(2);

    const rec = recordingLogger();
    await start(rec.logger);
    await waitFor(
      async () => (await jobsByIds(ids)).every((j) => j.attempts >= 1 && j.locked_at === null),
      5_000,
      'both jobs to be attempted',
    );
    const rows = await jobsByIds(ids);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.attempts).toBe(1);
      expect(row.last_error).toBeTruthy();
      expect(row.last_error).toMatch(/keepSeconds/);
    }
    expect(rec.completed().filter((id) => ids.includes(id))).toEqual([]);
    expect(rec.failed().sort()).toEqual([...ids].sort());
    // The task stopped at the parse: nothing was pruned.
    expect(await counterKeys()).toContain('public:old');
  });
});

describe('the crontab', () => {
  it('parses, names only tasks that exist, and summarizes usage five minutes after every hour with a day of catch-up', async () => {
    const { parseCrontab } = await import('graphile-worker');
    const { CRONTAB } = await import('./runner.ts');
    const { ZTaskPayloads } = await import('@svc/db/jobs');
    const items = parseCrontab(CRONTAB);
    for (const item of items) {
      expect(Object.keys(ZTaskPayloads)).toContain(item.task);
    }
    const summary = items.find((i) => i.task === 'usage:summarize');
    expect(summary?.match({ min: 5, hour: 13, date: 2, month: 3, dow: 1 })).toBe(true);
    expect(summary?.match({ min: 0, hour: 13, date: 2, month: 3, dow: 1 })).toBe(false);
    expect(summary?.options.backfillPeriod).toBe(86_400_000);
  });
});
