import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../test/support/server.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** What Chromium sends for a page it navigates to. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('an unknown path', () => {
  it('asked for as a page, answers a 404 page with its path escaped and the way to the console', async () => {
    const res = await fetch(`${server.url}/no-such-page/%3Cscript%3E`, { headers: { accept: BROWSER_ACCEPT } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toContain('<h1 data-testid="hosted-heading">Page not found</h1>');
    expect(html).toContain('href="/auth/console/"');
    expect(html).not.toContain('<script>');
    expect(html).toContain('%3Cscript%3E');
    const head = await fetch(`${server.url}/no-such-page`, { method: 'HEAD', headers: { accept: BROWSER_ACCEPT } });
    expect(head.status).toBe(404);
    expect(head.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('answers the JSON 404 to API clients, on the APIs whatever Accept says, and to anything but GET and HEAD', async () => {
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/no-such-page', {}],
      ['GET', '/no-such-page', { accept: '*/*' }],
      ['GET', '/no-such-page', { accept: 'application/json' }],
      ['GET', '/v1/no-such-route', { accept: BROWSER_ACCEPT }],
      ['DELETE', '/no-such-page', { accept: BROWSER_ACCEPT }],
    ];
    for (const [method, path, headers] of cases) {
      const res = await fetch(`${server.url}${path}`, { method, headers });
      expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(404);
      expect(res.headers.get('content-type'), `${method} ${path}`).toMatch(/^application\/json/);
      const body = (await res.json()) as { error: { code: string } };
      expect(body.error.code).toBe('not_found');
    }
    // tRPC answers its own unknown procedure, in its JSON envelope.
    const trpc = await fetch(`${server.url}/trpc/no.such.procedure`, { headers: { accept: BROWSER_ACCEPT } });
    expect(trpc.status).toBe(404);
    expect(trpc.headers.get('content-type')).toMatch(/^application\/json/);
  });
});
