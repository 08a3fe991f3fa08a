import http from 'node:http';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.ts';
import { seedApplication } from './support/factories.ts';
import { startTestServer } from './support/server.ts';
import { type SpawnedServer, spawnServer } from './support/spawn.ts';
import { roomInWindow, secondsLeftInWindow } from './support/window.ts';

type Reply = { status: number; headers: http.IncomingHttpHeaders; body: string };

/**
 * One request on a fresh connection. `from` binds the client socket to another loopback address,
 * so a test can act as several client IPs (the public limit is per IP) against one server.
 */
function request(
  base: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; from?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(path, base),
      { method: opts.method ?? 'GET', headers: opts.headers, localAddress: opts.from, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const RATE_LIMIT_HEADER = /^"(public|backend)";r=(\d+);t=(\d+)$/;

function parseRateLimit(reply: Reply): { scope: string; remaining: number; reset: number } {
  const value = String(reply.headers.ratelimit ?? '');
  const m = RATE_LIMIT_HEADER.exec(value);
  expect(m, `RateLimit header ${JSON.stringify(value)}`).not.toBeNull();
  return {
    scope: (m as RegExpExecArray)[1] as string,
    remaining: Number((m as RegExpExecArray)[2]),
    reset: Number((m as RegExpExecArray)[3]),
  };
}

function expect429(reply: Reply, limit: number, scope: 'public' | 'backend'): void {
  expect(reply.status).toBe(429);
  expect(reply.headers['content-type']).toMatch(/application\/json/);
  const retryAfter = String(reply.headers['retry-after']);
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  // Retry-After points at the next window (the window is aligned to the minute).
  expect(Math.abs(Number(retryAfter) - secondsLeftInWindow())).toBeLessThanOrEqual(2);
  expect(reply.headers['ratelimit-policy']).toBe(`"${scope}";q=${limit};w=60`);
  const rl = parseRateLimit(reply);
  expect(rl.scope).toBe(scope);
  expect(rl.remaining).toBe(0);
  const body = JSON.parse(reply.body) as { error: { code: string; message: string; requestId: string } };
  expect(body.error.code).toBe('rate_limited');
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(typeof body.error.requestId).toBe('string');
  expect(body.error.requestId.length).toBeGreaterThan(0);
}

describe('public routes: per IP, RATE_LIMIT_PUBLIC_PER_MINUTE=5 (one process)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '5' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('5 requests pass with the policy headers, the 6th is 429 with Retry-After and the error body', { timeout: 60_000 }, async () => {
    await roomInWindow(5);
    for (let i = 1; i <= 5; i++) {
      const reply = await request(server.url, '/v1/config');
      expect(reply.status, `request ${i}`).toBe(200);
      expect(reply.headers['ratelimit-policy']).toBe('"public";q=5;w=60');
      const rl = parseRateLimit(reply);
      expect(rl.scope).toBe('public');
      expect(rl.remaining).toBe(5 - i);
      expect(rl.reset).toBeGreaterThanOrEqual(1);
      expect(rl.reset).toBeLessThanOrEqual(60);
      expect(reply.headers['retry-after']).toBeUndefined();
    }
    const sixth = await request(server.url, '/v1/config');
    expect429(sixth, 5, 'public');

    // The limit is per IP, not per route: other public routes and unknown routes are limited too.
    expect429(await request(server.url, '/v1/client/config?keyless=1'), 5, 'public');
    expect429(await request(server.url, '/v1/no-such-route'), 5, 'public');
    // Still limited on a later try in the same window.
    expect429(await request(server.url, '/v1/config'), 5, 'public');
  });

  it('/healthz, /readyz and CORS preflights are never limited', { timeout: 60_000 }, async () => {
    // This IP is already over its limit from the previous test (same window) or gets there now.
    await roomInWindow(5);
    for (let i = 0; i < 6; i++) {
      await request(server.url, '/v1/config');
    }
    expect((await request(server.url, '/v1/config')).status).toBe(429);
    for (let i = 0; i < 20; i++) {
      const health = await request(server.url, '/healthz');
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toEqual({ status: 'ok' });
      // A load balancer's health check: a 429 here would take a healthy process out of rotation.
      const ready = await request(server.url, '/readyz');
      expect(ready.status).toBe(200);
      expect(JSON.parse(ready.body)).toMatchObject({ status: 'ready' });
    }
    const preflight = await request(server.url, '/v1/client/config', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-svc-publishable-key',
      },
    });
    expect(preflight.status).toBe(204);
  });

  it('another client IP has its own budget', { timeout: 60_000 }, async () => {
    await roomInWindow(5);
    for (let i = 0; i < 6; i++) {
      await request(server.url, '/v1/config');
    }
    expect((await request(server.url, '/v1/config')).status).toBe(429);
    const other = await request(server.url, '/v1/config', { from: '127.0.0.9' });
    expect(other.status).toBe(200);
    expect(parseRateLimit(other).remaining).toBe(4);
  });
});

describe('tRPC batches cost one token per procedure they run, however the commas are encoded (RATE_LIMIT_PUBLIC_PER_MINUTE=12)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  const LIMIT = 12;
  const NAME = 'service.config';

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_PER_MINUTE: String(LIMIT) } });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Batches of `size` procedures whose names are joined by `comma`, each from its own client IP. */
  async function spend(from: string, size: number, comma: string | string[]): Promise<{ statuses: number[]; ran: number[] }> {
    const separators = Array.isArray(comma) ? comma : [comma];
    const path = `/trpc/${Array.from({ length: size }, (_, i) => `${i ? separators[(i - 1) % separators.length] : ''}${NAME}`).join('')}?batch=1`;
    const statuses: number[] = [];
    const ran: number[] = [];
    for (let i = 0; i < Math.ceil(LIMIT / size) + 1; i++) {
      const reply = await request(server.url, path, { from });
      statuses.push(reply.status);
      // What tRPC ran: one result per procedure.
      ran.push(reply.status === 200 ? (JSON.parse(reply.body) as unknown[]).length : 0);
    }
    return { statuses, ran };
  }

  it.each([
    ['plain commas', '127.0.1.1', ','],
    ['%2C', '127.0.1.2', '%2C'],
    ['%2c', '127.0.1.3', '%2c'],
    ['mixed , %2C %2c', '127.0.1.4', [',', '%2C', '%2c']],
  ])('a batch of 4 with %s runs 4 and spends 4: 3 batches pass, the 4th is 429', { timeout: 60_000 }, async (_name, from, comma) => {
    await roomInWindow(10);
    const { statuses, ran } = await spend(from, 4, comma);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(ran.slice(0, 3)).toEqual([4, 4, 4]);
  });

  it('a batch of 6 with %2C spends 6: 2 batches pass, the 3rd is 429', { timeout: 60_000 }, async () => {
    await roomInWindow(10);
    const { statuses, ran } = await spend('127.0.1.5', 6, '%2C');
    expect(statuses).toEqual([200, 200, 429]);
    expect(ran.slice(0, 2)).toEqual([6, 6]);
  });

  it('double-encoded commas are one (unknown) procedure to tRPC, and cost one', { timeout: 60_000 }, async () => {
    await roomInWindow(10);
    const reply = await request(server.url, `/trpc/${NAME}%252C${NAME}?batch=1`, { from: '127.0.1.6' });
    expect(reply.status).toBe(404);
    expect(parseRateLimit(reply).remaining).toBe(LIMIT - 1);
  });

  it('a batch over the size cap is refused whole with 400 before anything runs, for one token', { timeout: 60_000 }, async () => {
    await roomInWindow(10);
    const reply = await request(server.url, `/trpc/${Array.from({ length: 21 }, () => NAME).join('%2C')}?batch=1`, { from: '127.0.1.7' });
    expect(reply.status).toBe(400);
    expect(parseRateLimit(reply).remaining).toBe(LIMIT - 1);
  });
});

describe('backend routes: per key, RATE_LIMIT_BACKEND_PER_MINUTE=3 (one process)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_BACKEND_PER_MINUTE: '3' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('two secret keys each get 3 passes, then 429, independently of each other and of the IP', { timeout: 60_000 }, async () => {
    const a = await seedApplication(server.services.db);
    const b = await seedApplication(server.services.db);
    const call = (secret: string) => request(server.url, '/v1/backend/application', { headers: { authorization: `Bearer ${secret}` } });

    await roomInWindow(5);
    for (let i = 1; i <= 3; i++) {
      const reply = await call(a.secretKey);
      expect(reply.status, `key A request ${i}`).toBe(200);
      expect(reply.headers['ratelimit-policy']).toBe('"backend";q=3;w=60');
      expect(parseRateLimit(reply)).toMatchObject({ scope: 'backend', remaining: 3 - i });
    }
    expect429(await call(a.secretKey), 3, 'backend');

    // Key B is untouched by key A's spending, though both come from the same IP.
    for (let i = 1; i <= 3; i++) {
      const reply = await call(b.secretKey);
      expect(reply.status, `key B request ${i}`).toBe(200);
      expect(parseRateLimit(reply)).toMatchObject({ scope: 'backend', remaining: 3 - i });
    }
    expect429(await call(b.secretKey), 3, 'backend');
    expect429(await call(a.secretKey), 3, 'backend');

    // The IP's public budget (100000 in tests) is separate from the keys' budgets.
    const pub = await request(server.url, '/v1/config');
    expect(pub.status).toBe(200);
    expect(pub.headers['ratelimit-policy']).toMatch(/^"public";/);

    // Counter keys never hold a raw secret.
    const sql = postgres(server.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ key: string }[]>`select key from rate_limit_counters`;
      const keys = rows.map((r) => r.key).join('\n');
      expect(keys).not.toContain(a.secretKey);
      expect(keys).not.toContain(b.secretKey);
      expect(keys).not.toContain('sk_live_');
      expect(rows.filter((r) => r.key.startsWith('backend:'))).toHaveLength(2);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe('backend routes cannot be used to evade the per-IP limit', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '5', RATE_LIMIT_BACKEND_PER_MINUTE: '3' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  // A key that is not a well-formed secret key is no key: counting it "per key" would give every
  // made-up bearer value a fresh budget (and a fresh counter row), so one client could send any
  // number of requests by changing the header each time.
  it('one client rotating made-up bearer values is still limited', { timeout: 60_000 }, async () => {
    await roomInWindow(5);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const reply = await request(server.url, '/v1/backend/application', {
        headers: { authorization: `Bearer not-a-key-${i}` },
        from: '127.0.0.5',
      });
      statuses.push(reply.status);
    }
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses).toContain(429);
  });
});

describe('the limit holds across two API processes on one database', () => {
  let databaseUrl: string;
  let pair: SpawnedServer[] = [];
  let bigPair: SpawnedServer[] = [];
  const BIG_LIMIT = 200;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, RATE_LIMIT_PUBLIC_PER_MINUTE: '10' };
    const bigEnv = { DATABASE_URL: databaseUrl, RATE_LIMIT_PUBLIC_PER_MINUTE: String(BIG_LIMIT) };
    [pair, bigPair] = await Promise.all([
      Promise.all([spawnServer(env), spawnServer(env)]),
      Promise.all([spawnServer(bigEnv), spawnServer(bigEnv)]),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...pair, ...bigPair].map((s) => s.stop()));
  });

  it('30 sequential requests alternating between the processes: exactly the first 10 pass', { timeout: 60_000 }, async () => {
    await roomInWindow(10);
    const replies: Reply[] = [];
    for (let i = 0; i < 30; i++) {
      replies.push(await request((pair[i % 2] as SpawnedServer).url, '/v1/config', { from: '127.0.0.2' }));
    }
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    // Each process reports what it knows of the shared counter: an estimate that may lag by the
    // tokens another process holds, but starts near the limit and ends at zero.
    const remaining = replies.slice(0, 10).map((r) => parseRateLimit(r).remaining);
    expect(remaining[0]).toBeGreaterThanOrEqual(8);
    expect(remaining[9]).toBe(0);
    expect(remaining.every((r) => r >= 0 && r <= 9)).toBe(true);
    for (const r of replies.slice(10)) {
      expect429(r, 10, 'public');
    }
  });

  it('a concurrent burst of 30 split across the processes: exactly 10 pass', { timeout: 60_000 }, async () => {
    await roomInWindow(10);
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) => request((pair[i % 2] as SpawnedServer).url, '/v1/config', { from: '127.0.0.3' })),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    // Both processes served some of the burst and both refused some of it.
    for (const [index] of pair.entries()) {
      const mine = statuses.filter((_, i) => i % 2 === index);
      expect(mine).toContain(429);
    }
    // The shared counter shows exactly the limit granted for this client.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ granted: number }[]>`select granted from rate_limit_counters where key = 'public:127.0.0.3'`;
      expect(rows).toHaveLength(1);
      expect(rows[0]?.granted).toBeGreaterThanOrEqual(10);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it(`with a larger limit (${BIG_LIMIT}, leased in blocks) a burst never exceeds it and the window yields exactly the limit`, {
    timeout: 60_000,
  }, async () => {
    await roomInWindow(15);
    const burst = await Promise.all(
      Array.from({ length: 300 }, (_, i) => request((bigPair[i % 2] as SpawnedServer).url, '/v1/config', { from: '127.0.0.4' })),
    );
    const burstOk = burst.filter((r) => r.status === 200).length;
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    expect(burstOk).toBeLessThanOrEqual(BIG_LIMIT);
    // Leases are what a process holds unspent; the burst spends nearly all of the budget.
    expect(burstOk).toBeGreaterThan(BIG_LIMIT * 0.8);

    // Keep asking both until each has refused: tokens one process leased are still spent, and
    // the window's total is then exactly the limit.
    let total = burstOk;
    const refused = new Set<number>();
    for (let i = 0; refused.size < 2 && i < 2 * BIG_LIMIT; i++) {
      const which = i % 2;
      const reply = await request((bigPair[which] as SpawnedServer).url, '/v1/config', { from: '127.0.0.4' });
      if (reply.status === 200) {
        total++;
      } else {
        expect(reply.status).toBe(429);
        refused.add(which);
      }
    }
    expect(refused.size).toBe(2);
    expect(total).toBe(BIG_LIMIT);
  });
});
