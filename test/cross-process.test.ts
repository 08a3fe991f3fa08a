import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.ts';
import { runCli, type SpawnedServer, spawnServer } from './support/spawn.ts';

/** The figure: a disable or a rotation takes effect on every API process within one second. */
const PROPAGATION_BUDGET_MS = 1_000;

type Created = { application: { id: string; slug: string }; publishableKey: string; secretKey: string };

describe('application changes reach every API process within one second', () => {
  let databaseUrl: string;
  let servers: SpawnedServer[] = [];
  let app: Created;
  let secretKey: string;

  const clientConfig = (s: SpawnedServer) =>
    fetch(`${s.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': app.publishableKey } });
  const backend = (s: SpawnedServer, key: string) =>
    fetch(`${s.url}/v1/backend/application`, { headers: { authorization: `Bearer ${key}` } });

  async function statusAndCode(res: Response): Promise<{ status: number; code: string | undefined }> {
    const body = (await res.json()) as { error?: { code?: string } };
    return { status: res.status, code: body.error?.code };
  }

  /**
   * Polls `probe` on every server until each answers `want`; returns how long that took after
   * `since`. Fails if any server has not converged within the budget.
   */
  async function convergence(
    since: number,
    probe: (s: SpawnedServer) => Promise<{ status: number; code: string | undefined }>,
    want: { status: number; code?: string },
  ): Promise<number> {
    const deadline = since + PROPAGATION_BUDGET_MS + 2_000; // poll a little past the budget to report the real time
    const doneAt = new Map<SpawnedServer, number>();
    const last: Record<string, unknown> = {};
    while (doneAt.size < servers.length && Date.now() < deadline) {
      await Promise.all(
        servers
          .filter((s) => !doneAt.has(s))
          .map(async (s) => {
            const got = await probe(s);
            last[s.url] = got;
            if (got.status === want.status && (want.code === undefined || got.code === want.code)) {
              doneAt.set(s, Date.now());
            }
          }),
      );
      if (doneAt.size < servers.length) {
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    expect(doneAt.size, `servers not converged to ${JSON.stringify(want)}: ${JSON.stringify(last)}`).toBe(servers.length);
    return Math.max(...[...doneAt.values()].map((t) => t - since));
  }

  async function cli(...args: string[]) {
    const r = await runCli(args, { DATABASE_URL: databaseUrl });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r;
  }

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    // A long cache TTL: only the cross-process invalidation (LISTEN/NOTIFY) can make this pass.
    const env = { DATABASE_URL: databaseUrl, APPLICATION_CACHE_TTL_MS: '600000' };
    servers = await Promise.all([spawnServer(env), spawnServer(env)]);
    const created = await cli('apps', 'create', '--org', 'acme', '--name', 'Cross Process', '--json');
    app = JSON.parse(created.stdout) as Created;
    secretKey = app.secretKey;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('both processes answer 200 for client config and the backend check (caches warm)', async () => {
    expect(servers).toHaveLength(2);
    expect(servers[0]?.url).not.toBe(servers[1]?.url);
    for (const s of servers) {
      for (let i = 0; i < 3; i++) {
        expect((await clientConfig(s)).status).toBe(200);
        expect((await backend(s, secretKey)).status).toBe(200);
      }
    }
  });

  it('disabling via the CLI: both answer 409 application_disabled within 1 s, and 200 again within 1 s after re-enabling', async () => {
    await cli('apps', 'set-status', app.application.id, 'disabled');
    const exitedAt = Date.now();
    const disabledMs = await convergence(exitedAt, async (s) => statusAndCode(await clientConfig(s)), {
      status: 409,
      code: 'application_disabled',
    });
    expect(disabledMs).toBeLessThan(PROPAGATION_BUDGET_MS);
    // The backend route reads the same cache; it must agree at once.
    for (const s of servers) {
      expect(await statusAndCode(await backend(s, secretKey))).toEqual({ status: 409, code: 'application_disabled' });
    }

    await cli('apps', 'set-status', app.application.slug, 'active', '--org', 'acme');
    const enabledAt = Date.now();
    const enabledMs = await convergence(enabledAt, async (s) => ({ status: (await clientConfig(s)).status, code: undefined }), {
      status: 200,
    });
    expect(enabledMs).toBeLessThan(PROPAGATION_BUDGET_MS);
    for (const s of servers) {
      expect((await backend(s, secretKey)).status).toBe(200);
    }
  });

  it('rotating the secret via the CLI: the old secret gets 401 on both within 1 s, the new one 200', async () => {
    // Re-warm both caches with the current secret.
    for (const s of servers) {
      expect((await backend(s, secretKey)).status).toBe(200);
    }
    const r = await cli('apps', 'rotate-secret', app.application.id, '--json');
    const rotatedAt = Date.now();
    const newSecret = (JSON.parse(r.stdout) as { secretKey: string }).secretKey;
    expect(newSecret).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(newSecret).not.toBe(secretKey);

    const revokedMs = await convergence(rotatedAt, async (s) => statusAndCode(await backend(s, secretKey)), {
      status: 401,
      code: 'invalid_secret_key',
    });
    expect(revokedMs).toBeLessThan(PROPAGATION_BUDGET_MS);

    const acceptedMs = await convergence(rotatedAt, async (s) => ({ status: (await backend(s, newSecret)).status, code: undefined }), {
      status: 200,
    });
    expect(acceptedMs).toBeLessThan(PROPAGATION_BUDGET_MS);

    // And the old secret stays revoked (no stale cache entry comes back).
    for (const s of servers) {
      expect(await statusAndCode(await backend(s, secretKey))).toEqual({ status: 401, code: 'invalid_secret_key' });
      const ok = await backend(s, newSecret);
      const body = (await ok.json()) as { application: { id: string } };
      expect(body.application.id).toBe(app.application.id);
    }
    secretKey = newSecret;
  });

  it('a change made by one API process is seen by the other: the CLI is not special', async () => {
    // Disable by direct SQL (as another process or an operator would): the trigger must notify.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      for (const s of servers) {
        expect((await clientConfig(s)).status).toBe(200);
      }
      await sql`update applications set status = 'disabled' where id = ${app.application.id}`;
      const at = Date.now();
      const ms = await convergence(at, async (s) => statusAndCode(await clientConfig(s)), { status: 409, code: 'application_disabled' });
      expect(ms).toBeLessThan(PROPAGATION_BUDGET_MS);
      await sql`update applications set status = 'active' where id = ${app.application.id}`;
      const ms2 = await convergence(Date.now(), async (s) => ({ status: (await clientConfig(s)).status, code: undefined }), {
        status: 200,
      });
      expect(ms2).toBeLessThan(PROPAGATION_BUDGET_MS);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
