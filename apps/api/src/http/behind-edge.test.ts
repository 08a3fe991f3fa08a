import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '@svc/contracts/errors';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppServices } from '../context.ts';
import { runBehindEdge } from './behind-edge.ts';
import type { Edge } from './edge.ts';

type Logged = { err: unknown; requestId: string };

let server: http.Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/**
 * A real server whose every request runs behind `edge` with `handle`: what the /v1 adapter and
 * the OpenID Provider documents do. Returns its URL and what it logged as unhandled.
 */
async function serve(edge: Edge['run'], handle: (res: http.ServerResponse) => Promise<void>): Promise<{ url: string; logged: Logged[] }> {
  const logged: Logged[] = [];
  const services = {
    logger: { error: (entry: Logged) => logged.push(entry) },
    config: { subscriptionUpgradeUrl: null },
  } as unknown as AppServices;
  const listening = http.createServer((req, res) => runBehindEdge(services, { run: edge }, req, res, req.url ?? '/', () => handle(res)));
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}/`, logged };
}

async function answer(url: string): Promise<{ status: number; body: unknown }> {
  // A request the server never answers fails here, not at the test timeout.
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

describe('runBehindEdge: what the edge and the route answer', () => {
  it('the route runs only when the edge lets it, synchronously or after its own read', async () => {
    let ran = 0;
    const ok = async (res: http.ServerResponse) => {
      ran++;
      res.end('{}');
    };
    for (const edge of [() => true, () => Promise.resolve(true)]) {
      const { url } = await serve(edge, ok);
      expect((await answer(url)).status).toBe(200);
      await new Promise<void>((resolve) => server?.close(() => resolve()));
      server = undefined;
    }
    expect(ran).toBe(2);
    const { url } = await serve((_req, res) => {
      res.statusCode = 429;
      res.end('{}');
      return Promise.resolve(false);
    }, ok);
    expect((await answer(url)).status).toBe(429);
    expect(ran).toBe(2);
  });

  it("an AppError from the edge or the route is answered with its code; anything else is a logged 500, even one thrown before the route's promise exists", async () => {
    const cases: [Edge['run'], (res: http.ServerResponse) => Promise<void>, number, string][] = [
      [() => Promise.reject(new AppError('service_unavailable', 'down')), async () => {}, 503, 'service_unavailable'],
      [() => true, () => Promise.reject(new AppError('forbidden', 'no')), 403, 'forbidden'],
      [
        () => Promise.resolve(true),
        () => {
          throw new Error('thrown synchronously');
        },
        500,
        'internal',
      ],
      [
        () => true,
        () => {
          throw new Error('thrown synchronously');
        },
        500,
        'internal',
      ],
    ];
    for (const [edge, handle, status, code] of cases) {
      const { url, logged } = await serve(edge, handle);
      const { status: got, body } = await answer(url);
      expect(got).toBe(status);
      expect((body as { error: { code: string; requestId: string } }).error.code).toBe(code);
      expect(logged).toHaveLength(status === 500 ? 1 : 0);
      await new Promise<void>((resolve) => server?.close(() => resolve()));
      server = undefined;
    }
  });

  it('a route that fails after it started answering is not answered twice', async () => {
    const { url, logged } = await serve(
      () => Promise.resolve(true),
      async (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
        throw new Error('after the answer');
      },
    );
    expect(await answer(url)).toEqual({ status: 200, body: { ok: true } });
    expect(logged).toHaveLength(1);
  });
});
