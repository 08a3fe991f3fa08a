import type { IncomingMessage, ServerResponse } from 'node:http';
import { createDatabase, type Database } from '@svc/db/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { applyRateLimit, RateLimiter } from './rate-limit.ts';

function fakeRequest(method: string): IncomingMessage {
  return { method, headers: {}, id: 'req_test' } as unknown as IncomingMessage;
}

/** Records what applyRateLimit writes (status, headers, body) without a socket. */
function fakeResponse() {
  const res = {
    statusCode: 200,
    headers: {} as Record<string, string>,
    body: '',
    ended: false,
    setHeader(name: string, value: string) {
      res.headers[name.toLowerCase()] = String(value);
    },
    hasHeader(name: string) {
      return name.toLowerCase() in res.headers;
    },
    end(body: string) {
      res.body = body;
      res.ended = true;
    },
  };
  return res;
}

let database: Database;

beforeAll(async () => {
  database = createDatabase({ url: await createTestDatabase(), max: 10 });
});
afterAll(async () => {
  await database?.close();
});

/** A fixed instant well inside a window, so no test straddles a window boundary. */
const NOW = Math.floor(Date.now() / 60_000) * 60_000 + 5_000;

function limiters(n: number): RateLimiter[] {
  return Array.from({ length: n }, () => new RateLimiter(database.db, pino({ level: 'silent' })));
}

describe('RateLimiter shared through PostgreSQL', () => {
  it('ten processes sharing a key admit close to the limit and never more (round robin)', async () => {
    const group = limiters(10);
    const key = `t:${Math.random()}`;
    let admitted = 0;
    let firstDenied = -1;
    for (let i = 0; i < 600; i++) {
      const d = await (group[i % 10] as RateLimiter).take(key, 600, 1, NOW);
      if (d.allowed) {
        admitted++;
      } else if (firstDenied === -1) {
        firstDenied = i;
      }
    }
    expect(admitted).toBeLessThanOrEqual(600);
    // Leases start at one token and double: idle tokens held by the others stay small.
    expect(admitted).toBeGreaterThanOrEqual(540);
    expect(firstDenied === -1 || firstDenied >= 540).toBe(true);
  });

  it('a concurrent burst across ten processes never exceeds the limit', async () => {
    const group = limiters(10);
    const key = `t:${Math.random()}`;
    const decisions = await Promise.all(Array.from({ length: 400 }, (_, i) => (group[i % 10] as RateLimiter).take(key, 150, 1, NOW)));
    const admitted = decisions.filter((d) => d.allowed).length;
    expect(admitted).toBeLessThanOrEqual(150);
    expect(admitted).toBeGreaterThanOrEqual(120);
  });

  it('a weighted take (a tRPC batch) spends one token per call and is refused whole', async () => {
    const [one] = limiters(1) as [RateLimiter];
    const key = `t:${Math.random()}`;
    expect((await one.take(key, 5, 3, NOW)).allowed).toBe(true);
    expect((await one.take(key, 5, 3, NOW)).allowed).toBe(false);
    expect((await one.take(key, 5, 2, NOW)).allowed).toBe(true);
    expect((await one.take(key, 5, 1, NOW)).allowed).toBe(false);
  });

  it('a new window starts a fresh budget and forgets the old buckets', async () => {
    const [one] = limiters(1) as [RateLimiter];
    const key = `t:${Math.random()}`;
    expect((await one.take(key, 1, 1, NOW)).allowed).toBe(true);
    expect((await one.take(key, 1, 1, NOW)).allowed).toBe(false);
    expect((await one.take(key, 1, 1, NOW + 60_000)).allowed).toBe(true);
  });

  it('fails closed when the counter store is unreachable: nothing is leased, writes answer 503, reads pass uncounted', async () => {
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', timeoutMs: 500 });
    try {
      const limiter = new RateLimiter(broken.db, pino({ level: 'silent' }));
      await expect(limiter.take('t:broken', 100, 1, NOW)).rejects.toMatchObject({ code: 'service_unavailable' });
      // No tokens were granted locally: the next request asks again, and is refused again.
      expect(limiter.takeNow('t:broken', 100, 1, NOW)).toBeUndefined();

      const subject = { scope: 'public', subject: 'broken', limit: 100, cost: 1 } as const;
      for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) {
        const res = fakeResponse();
        const answered = await applyRateLimit(limiter, fakeRequest(method), res as unknown as ServerResponse, subject);
        expect(answered, method).toBe(true);
        expect(res.statusCode, method).toBe(503);
        expect(res.headers['retry-after'], method).toBe('2');
        expect(JSON.parse(res.body).error).toMatchObject({ code: 'service_unavailable', requestId: 'req_test' });
      }
      const read = fakeResponse();
      expect(await applyRateLimit(limiter, fakeRequest('GET'), read as unknown as ServerResponse, subject)).toBe(false);
      expect(read.ended).toBe(false);
    } finally {
      await broken.close();
    }
  });
});
