import http from 'node:http';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization } from '../../../../../test/support/tenancy.ts';
import { roomInWindow } from '../../../../../test/support/window.ts';

type Reply = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** One request on a fresh connection; `from` binds another loopback address (another client IP). */
function request(base: string, path: string, opts: { headers?: Record<string, string>; from?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, base), { headers: opts.headers, localAddress: opts.from, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const scopeOf = (reply: Reply) => /^"(public|backend)";/.exec(String(reply.headers.ratelimit ?? ''))?.[1];

/**
 * docs/architecture.md section 7: "per key on backend routes". A service calling the control plane with a
 * tenant API key spends that key's budget (RATE_LIMIT_BACKEND_PER_MINUTE), not its IP's public
 * one; a key that does not authenticate (unknown, revoked, expired) earns no budget of its own.
 */
describe('tenant API keys are rate limited per key (backend 3/min, public 5/min)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_BACKEND_PER_MINUTE: '3', RATE_LIMIT_PUBLIC_PER_MINUTE: '5' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('two keys from one IP each get 3 passes then 429, on /v1 and /trpc alike, and leave the IP budget alone', {
    timeout: 90_000,
  }, async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const a = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const b = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'] });
    const rest = (secret: string) =>
      request(server.url, `/v1/tenants/${org.id}`, { headers: { authorization: `Bearer ${secret}` }, from: '127.0.0.21' });
    const trpc = (secret: string) =>
      request(server.url, `/trpc/tenants.get?input=${encodeURIComponent(JSON.stringify({ id: org.id }))}`, {
        headers: { authorization: `Bearer ${secret}` },
        from: '127.0.0.21',
      });

    await roomInWindow(15);
    for (let i = 1; i <= 3; i++) {
      const reply = await rest(a.secretKey);
      expect(reply.status, `key A request ${i}: ${reply.body}`).toBe(200);
      expect(reply.headers['ratelimit-policy']).toBe('"backend";q=3;w=60');
      expect(reply.headers.ratelimit).toMatch(new RegExp(`^"backend";r=${3 - i};t=\\d+$`));
    }
    const limited = await rest(a.secretKey);
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body).error.code).toBe('rate_limited');
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(scopeOf(limited)).toBe('backend');

    // Key B has its own budget, spent over /trpc this time.
    for (let i = 1; i <= 3; i++) {
      const reply = await trpc(b.secretKey);
      expect(reply.status, `key B request ${i}: ${reply.body}`).toBe(200);
      expect(scopeOf(reply)).toBe('backend');
    }
    expect((await trpc(b.secretKey)).status).toBe(429);

    // Eight key requests came from this IP, yet its public budget (5) is untouched.
    const pub = await request(server.url, '/v1/config', { from: '127.0.0.21' });
    expect(pub.status).toBe(200);
    expect(pub.headers.ratelimit).toMatch(/^"public";r=4;/);

    // Counters are per key id, never a secret.
    const sql = postgres(server.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const keys = (await sql<{ key: string }[]>`select key from rate_limit_counters`).map((r) => r.key);
      expect(keys).toEqual(expect.arrayContaining([`backend:${a.id}`, `backend:${b.id}`]));
      expect(keys.join('\n')).not.toContain('sk_live_');
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('revoked, expired and unknown keys spend the IP budget: rotating them earns nothing', { timeout: 90_000 }, async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const revoked = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], revoked: true });
    const expired = await seedApiKey(db, { tenantId: org.id, scopes: ['tenant.read'], expiresAt: new Date(Date.now() - 1000) });
    const bearers = [revoked.secretKey, expired.secretKey, `sk_live_${'U'.repeat(40)}`, `sk_live_${'V'.repeat(40)}`];

    await roomInWindow(15);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const reply = await request(server.url, `/v1/tenants/${org.id}`, {
        headers: { authorization: `Bearer ${bearers[i % bearers.length]}` },
        from: '127.0.0.22',
      });
      statuses.push(reply.status);
      expect(scopeOf(reply)).toBe('public');
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5)).toEqual([429, 429, 429]);
  });
});
