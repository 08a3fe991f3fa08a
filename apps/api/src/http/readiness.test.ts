import { migrationsApplied, shippedMigrationCount } from '@svc/db/migrate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../test/support/server.ts';
import type { RunningServer } from '../server.ts';

type Readiness = {
  status?: string;
  checks?: Record<string, unknown>;
  error?: { code: string; message: string; checks: Record<string, unknown> };
};

/**
 * /readyz beside /healthz (docs/operations.md "Probes"): ready while the database answers, has
 * every migration this build ships and the in-process worker runs; not ready the moment the
 * process starts shutting down, while requests in flight still finish.
 */
describe('readiness', () => {
  let server: RunningServer & { databaseUrl: string };

  beforeAll(async () => {
    server = await startTestServer({ env: { WORKER_ENABLED: 'true' } });
  });

  afterAll(async () => {
    await server?.close();
  });

  const readyz = async () => {
    const res = await fetch(`${server.url}/readyz`);
    return { status: res.status, body: (await res.json()) as Readiness };
  };

  it('is ready with the database, its migrations and the worker; names each check', async () => {
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: 'ready', checks: { draining: false, database: true, migrations: true, worker: true } },
    });
  });

  it('judges migrations against the ones this build ships: one more than applied is not ready', async () => {
    expect(await migrationsApplied(server.services.sql)).toBe(true);
    expect(await migrationsApplied(server.services.sql, shippedMigrationCount() + 1)).toBe(false);
  });

  it('answers 503 service_unavailable while draining, and shutdown starts by draining', async () => {
    server.services.readiness.draining = true;
    try {
      const { status, body } = await readyz();
      expect(status).toBe(503);
      expect(body.error).toMatchObject({ code: 'service_unavailable', message: 'not ready: shutting down', checks: { draining: true } });
      // Liveness is another question: the process still lives.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      server.services.readiness.draining = false;
    }
    const other = await startTestServer();
    expect(other.services.readiness.draining).toBe(false);
    await other.close();
    expect(other.services.readiness.draining).toBe(true);
  });

  it('is not ready when the in-process worker is not running', async () => {
    const previous = server.services.readiness.workerRunning;
    server.services.readiness.workerRunning = () => false;
    try {
      const { status, body } = await readyz();
      expect(status).toBe(503);
      expect(body.error?.message).toContain('job worker');
      expect(body.error?.checks).toMatchObject({ worker: false, database: true });
    } finally {
      server.services.readiness.workerRunning = previous;
    }
  });
});
