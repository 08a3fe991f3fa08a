import { afterEach, describe, expect, it } from 'vitest';
import { createWebhookSender, EXCERPT_BYTES, sanitizeExcerpt, type WebhookSender } from './sender.ts';
import { endlessBody, hang, type Receiver, startReceiver } from './test-receivers.ts';

const BODY = '{"id":"evt_1","type":"user.created","timestamp":"2026-01-01T00:00:00.000Z","data":{}}';
const HEADERS = { 'content-type': 'application/json', 'webhook-id': 'evt_1' };

describe('webhook sender against real local receivers', () => {
  const receivers: Receiver[] = [];
  const senders: WebhookSender[] = [];

  async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  }
  function sender(opts: { allowPrivate?: boolean; timeoutMs?: number } = {}): WebhookSender {
    const s = createWebhookSender({ allowPrivate: opts.allowPrivate ?? true, timeoutMs: opts.timeoutMs ?? 2_000 });
    senders.push(s);
    return s;
  }

  afterEach(async () => {
    for (const s of senders.splice(0)) {
      s.close();
    }
    for (const r of receivers.splice(0)) {
      await r.close();
    }
  });

  it('a 2xx is a success; the body and headers arrive as sent, over kept-alive connections', async () => {
    const r = await receiver((_req, res) => res.writeHead(204).end());
    const s = sender();
    for (let i = 0; i < 10; i++) {
      const result = await s.send({ url: `${r.url}/hook?x=1`, headers: HEADERS, body: BODY });
      expect(result).toMatchObject({ outcome: 'succeeded', statusCode: 204, error: null, responseExcerpt: null });
    }
    expect(r.requests).toHaveLength(10);
    expect(r.requests[0]).toMatchObject({ method: 'POST', url: '/hook?x=1', body: BODY });
    expect(r.requests[0]?.headers['webhook-id']).toBe('evt_1');
    expect(r.requests[0]?.headers['content-length']).toBe(String(Buffer.byteLength(BODY)));
    // Keep-alive: ten sequential deliveries, not ten connections. undici's pool may open a second
    // connection while the first one's first request is still marked in flight; then no more.
    expect(r.connections()).toBeLessThanOrEqual(2);
    for (let i = 0; i < 10; i++) {
      await s.send({ url: `${r.url}/hook?x=1`, headers: HEADERS, body: BODY });
    }
    expect(r.connections()).toBeLessThanOrEqual(2);
  });

  it('500 is an http_error with the status and a sanitized excerpt', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('boom\r\nsecret whsec_c2VjcmV0c2VjcmV0 and sk_live_AbCdEf123\u0000\u001b[31m red\u2028line');
    });
    const result = await sender().send({ url: r.url, headers: HEADERS, body: BODY });
    expect(result.outcome).toBe('http_error');
    expect(result.statusCode).toBe(500);
    expect(result.error).toContain('500');
    expect(result.responseExcerpt).toBe('boom secret whsec_*** and sk_live_*** [31m red line');
  });

  it('410 is gone', async () => {
    const r = await receiver((_req, res) => res.writeHead(410).end('gone'));
    const result = await sender().send({ url: r.url, headers: HEADERS, body: BODY });
    expect(result).toMatchObject({ outcome: 'gone', statusCode: 410, responseExcerpt: 'gone' });
  });

  it('a redirect is not followed: outcome redirect, and the target receives nothing', async () => {
    const target = await receiver();
    const r = await receiver((_req, res) => res.writeHead(307, { location: `${target.url}/elsewhere` }).end());
    const result = await sender().send({ url: r.url, headers: HEADERS, body: BODY });
    expect(result).toMatchObject({ outcome: 'redirect', statusCode: 307 });
    expect(r.requests).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(target.requests).toHaveLength(0);
  });

  it('a receiver that never answers costs the timeout and no more', async () => {
    const r = await receiver(hang);
    const started = Date.now();
    const result = await sender({ timeoutMs: 300 }).send({ url: r.url, headers: HEADERS, body: BODY });
    const elapsed = Date.now() - started;
    expect(result).toMatchObject({ outcome: 'timeout', statusCode: null });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    expect(result.durationMs).toBeGreaterThanOrEqual(290);
  });

  it('a 2xx whose body never finishes is still a success, decided by its status, within the timeout', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
    });
    const started = Date.now();
    const result = await sender({ timeoutMs: 300 }).send({ url: r.url, headers: HEADERS, body: BODY });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(result).toMatchObject({ outcome: 'succeeded', statusCode: 200, error: null, responseExcerpt: 'partial' });
  });

  it('a 10 MB answer is cut off: bounded time, no 10 MB per delivery in memory, a 1 KiB excerpt', async () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 'a');
    const r = await receiver((_req, res) => {
      res.on('error', () => {});
      res.writeHead(200, { 'content-length': String(big.length) });
      res.end(big);
    });
    const s = sender();
    const before = process.memoryUsage();
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 20 }, () => s.send({ url: r.url, headers: HEADERS, body: BODY })));
    const elapsed = Date.now() - started;
    const after = process.memoryUsage();
    for (const result of results) {
      expect(result.outcome).toBe('succeeded');
      expect(result.responseExcerpt).toHaveLength(EXCERPT_BYTES);
    }
    expect(elapsed).toBeLessThan(2_000);
    // Reading each answer in full would hold 200 MB; the cap keeps it to 64 KiB each.
    const grown = after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers);
    expect(grown).toBeLessThan(20 * 1024 * 1024);
  });

  it('an endless answer is cut off at the cap, long before the timeout; its status decides', async () => {
    const ok = await receiver(endlessBody(200));
    const failing = await receiver(endlessBody(503));
    const s = sender({ timeoutMs: 5_000 });
    const started = Date.now();
    const [a, b] = await Promise.all([
      s.send({ url: ok.url, headers: HEADERS, body: BODY }),
      s.send({ url: failing.url, headers: HEADERS, body: BODY }),
    ]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(a).toMatchObject({ outcome: 'succeeded', statusCode: 200, error: null });
    expect(b).toMatchObject({ outcome: 'http_error', statusCode: 503 });
    expect(b.error).toContain('cut off after 64 KiB');
    expect(a.responseExcerpt).toBe('x'.repeat(EXCERPT_BYTES));
  });

  it('a receiver that drops the connection before answering is connection_failed after one fresh try', async () => {
    const r = await receiver((_req, res) => res.socket?.destroy());
    const result = await sender().send({ url: r.url, headers: HEADERS, body: BODY });
    expect(result).toMatchObject({ outcome: 'connection_failed', statusCode: null, responseExcerpt: null });
    expect(result.error).toMatch(/^connection (reset|closed) by the receiver/);
    // The first try and the one retry on a fresh connection, no more.
    expect(r.requests).toHaveLength(2);
    expect(r.connections()).toBe(2);
  });

  it('the fresh try after a dropped connection still answers to the abort signal', async () => {
    let seen = 0;
    const r = await receiver((req, res) => {
      seen++;
      if (seen === 1) {
        res.socket?.destroy();
      } else {
        hang(req, res);
      }
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const result = await sender({ timeoutMs: 10_000 }).send({ url: r.url, headers: HEADERS, body: BODY, signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(result).toMatchObject({ outcome: 'interrupted', statusCode: null });
    expect(r.requests).toHaveLength(2);
  });

  it('nothing listening is connection_failed', async () => {
    const r = await receiver();
    await r.close();
    receivers.pop();
    const result = await sender().send({ url: r.url, headers: HEADERS, body: BODY });
    expect(result).toMatchObject({ outcome: 'connection_failed', statusCode: null });
    expect(result.error).toContain('ECONNREFUSED');
  });

  it('without WEBHOOK_ALLOW_PRIVATE, loopback by IP, by name and over IPv6, and the metadata address are refused before connecting', async () => {
    const r = await receiver(undefined, '::');
    const s = sender({ allowPrivate: false });
    for (const url of [
      `http://127.0.0.1:${r.port}/`,
      `http://localhost:${r.port}/`,
      `http://[::1]:${r.port}/`,
      `http://[::ffff:127.0.0.1]:${r.port}/`,
      // Loopback wrapped in NAT64, 6to4, IPv4-compatible and IPv4-translated forms.
      `http://[64:ff9b::7f00:1]:${r.port}/`,
      `http://[2002:7f00:1::1]:${r.port}/`,
      `http://[::127.0.0.1]:${r.port}/`,
      `http://[::ffff:0:7f00:1]:${r.port}/`,
      'http://169.254.169.254/latest/meta-data/',
    ]) {
      const result = await s.send({ url, headers: HEADERS, body: BODY });
      expect(result.outcome, url).toBe('address_not_allowed');
    }
    expect(r.connections()).toBe(0);
    expect(r.requests).toHaveLength(0);
    // The same receiver is reachable when private addresses are allowed (the refusal above is the guard's).
    const allowing = sender({ allowPrivate: true });
    for (const url of [`http://localhost:${r.port}/`, `http://[::1]:${r.port}/`]) {
      expect((await allowing.send({ url, headers: HEADERS, body: BODY })).outcome, url).toBe('succeeded');
    }
    expect(r.requests).toHaveLength(2);
  });

  it('the metadata address and names stay refused even with WEBHOOK_ALLOW_PRIVATE, also inside NAT64 and 6to4', async () => {
    for (const url of [
      'http://169.254.169.254/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[2002:a9fe:a9fe::1]/',
      // By name too, whatever a resolver would answer for it.
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://Metadata.Google.Internal./',
    ]) {
      const result = await sender({ allowPrivate: true }).send({ url, headers: HEADERS, body: BODY });
      expect(result.outcome, url).toBe('address_not_allowed');
    }
  });

  it('an abort signal interrupts an attempt still waiting for its status', async () => {
    const r = await receiver(hang);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const result = await sender({ timeoutMs: 10_000 }).send({ url: r.url, headers: HEADERS, body: BODY, signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(result).toMatchObject({ outcome: 'interrupted', statusCode: null });
  });

  it('sanitizeExcerpt keeps at most 1 KiB of text', () => {
    expect(sanitizeExcerpt(Buffer.alloc(5_000, 'b'))).toHaveLength(EXCERPT_BYTES);
    expect(sanitizeExcerpt(Buffer.from('  a\tb\u0007c  '))).toBe('a b c');
  });
});
