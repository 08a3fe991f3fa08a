import type { TJobQueueOverview } from '@svc/contracts/job-queue';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { PLATFORM_ONLY_MESSAGE } from '../access/authorize.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

/** In the payload only: the overview must never return it. */
const PAYLOAD_MARKER = 'payload-marker-7f3a';
const LEAKED_SECRET = `sk_live_${'A1b2C3d4'.repeat(4)}`;

const ids: Record<string, string> = {};

async function addJob(task: string, runAt: string): Promise<string> {
  const rows = await server.services.db.execute<{ id: string }>(sql`
    select (graphile_worker.add_job(${task}::text, json_build_object('secret', ${PAYLOAD_MARKER}::text), run_at => ${sql.raw(runAt)})).id::text as id`);
  const id = rows[0]?.id;
  if (!id) {
    throw new Error('add_job returned nothing');
  }
  return id;
}

beforeAll(async () => {
  server = await startTestServer();
  const db = server.services.db;
  ids.oldest = await addJob('test:waiting', "now() - interval '10 minutes'");
  ids.waiting = await addJob('test:waiting', 'now()');
  ids.scheduled = await addJob('test:scheduled', "now() + interval '1 hour'");
  ids.failed = await addJob('test:failing', "now() - interval '1 minute'");
  ids.locked = await addJob('test:locked', "now() - interval '5 minutes'");
  // What the worker leaves behind: attempts used up with the error it threw (long, quoting a key),
  // and a job held by a worker for two minutes.
  await db.execute(sql`update graphile_worker._private_jobs
    set attempts = max_attempts, last_error = ${`request failed: Authorization: Bearer ${LEAKED_SECRET} ${'x'.repeat(3000)}`}
    where id = ${ids.failed}::bigint`);
  await db.execute(sql`update graphile_worker._private_jobs
    set attempts = 1, locked_at = now() - interval '2 minutes', locked_by = 'worker-test-1'
    where id = ${ids.locked}::bigint`);
});
afterAll(async () => {
  await server?.close();
});

type Headers = { cookie?: string; authorization?: string };

async function get(headers: Headers) {
  const res = await fetch(`${server.url}/v1/platform/jobs`, { headers: { ...headers } });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as TJobQueueOverview & { error?: { code: string; message: string } } };
}

describe('GET /v1/platform/jobs', () => {
  it('answers a platform admin with counts per task and state, the oldest waiting job, failures and locked jobs', async () => {
    const admin = await seedSignedIn(server.services.db, { platformAdmin: true });
    const { status, body, text } = await get({ cookie: admin.cookie });
    expect(status, text).toBe(200);

    const counts = Object.fromEntries(body.counts.map((c) => [c.task, c]));
    expect(counts['test:waiting']).toEqual({ task: 'test:waiting', waiting: 2, scheduled: 0, locked: 0, failed: 0, total: 2 });
    expect(counts['test:scheduled']).toEqual({ task: 'test:scheduled', waiting: 0, scheduled: 1, locked: 0, failed: 0, total: 1 });
    expect(counts['test:failing']).toEqual({ task: 'test:failing', waiting: 0, scheduled: 0, locked: 0, failed: 1, total: 1 });
    expect(counts['test:locked']).toEqual({ task: 'test:locked', waiting: 0, scheduled: 0, locked: 1, failed: 0, total: 1 });

    expect(body.oldestWaiting).toMatchObject({ id: ids.oldest, task: 'test:waiting' });
    expect(body.oldestWaiting?.ageSeconds).toBeGreaterThanOrEqual(599);
    expect(body.oldestWaiting?.ageSeconds).toBeLessThan(900);

    expect(body.failures).toHaveLength(1);
    const [failure] = body.failures;
    expect(failure).toMatchObject({ id: ids.failed, task: 'test:failing', attempts: 25, maxAttempts: 25 });
    expect(failure?.lastError).toMatch(/^request failed: Authorization: Bearer sk_live_\[redacted\] x+$/);
    expect(failure?.lastError).toHaveLength(500);

    expect(body.locked).toHaveLength(1);
    expect(body.locked[0]).toMatchObject({ id: ids.locked, task: 'test:locked', lockedBy: 'worker-test-1', attempts: 1 });
    expect(body.locked[0]?.lockedSeconds).toBeGreaterThanOrEqual(119);
    expect(Date.parse(body.generatedAt) - Date.parse(body.locked[0]?.lockedAt ?? '')).toBeGreaterThanOrEqual(119_000);

    // Neither the payload nor the secret leaves the server, in any field.
    expect(text).not.toContain(PAYLOAD_MARKER);
    expect(text).not.toContain(LEAKED_SECRET);
    expect(text).not.toContain('payload');
  });

  it('answers the same over tRPC', async () => {
    const admin = await seedSignedIn(server.services.db, { platformAdmin: true });
    const res = await fetch(`${server.url}/trpc/jobQueue.overview`, { headers: { cookie: admin.cookie } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { data: TJobQueueOverview } };
    expect(body.result.data.failures.map((f) => f.id)).toEqual([ids.failed]);
  });

  it('an empty queue has no oldest waiting job', async () => {
    const empty = await startTestServer();
    try {
      const admin = await seedSignedIn(empty.services.db, { platformAdmin: true });
      const res = await fetch(`${empty.url}/v1/platform/jobs`, { headers: { cookie: admin.cookie } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as TJobQueueOverview;
      expect(body).toMatchObject({ counts: [], oldestWaiting: null, failures: [], locked: [] });
    } finally {
      await empty.close();
    }
  });

  it('refuses everyone else: anonymous 401, org admins and other users 403 with one message, API keys 403', async () => {
    expect((await get({})).status).toBe(401);
    expect((await get({ cookie: 'svc_session=not-a-session' })).status).toBe(401);

    const org = await seedOrganization(server.services.db);
    const orgAdmin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
    const plain = await seedSignedIn(server.services.db);
    for (const who of [orgAdmin, plain]) {
      const { status, body } = await get({ cookie: who.cookie });
      expect(status).toBe(403);
      expect(body.error).toMatchObject({ code: 'forbidden', message: PLATFORM_ONLY_MESSAGE });
      expect(JSON.stringify(body)).not.toContain('test:');
    }

    const key = await seedApiKey(server.services.db, { tenantId: org.id, scopes: ['audit.read', 'users.read'] });
    const viaKey = await get({ authorization: key.authorization });
    expect(viaKey.status).toBe(403);
    expect(viaKey.body.error?.code).toBe('forbidden');

    const trpc = await fetch(`${server.url}/trpc/jobQueue.overview`, { headers: { cookie: orgAdmin.cookie } });
    expect(trpc.status).toBe(403);
  });
});
