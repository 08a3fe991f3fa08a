import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../test/support/factories.ts';
import { freePort, startTestServer } from '../../../../test/support/server.ts';
import type { RunningServer } from '../server.ts';

const TOKEN = 'metrics-token-0123456789';

/** One series of the text format: its labels, parsed, and its value. */
function series(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (match) {
      const labels: Record<string, string> = {};
      for (const [, key, value] of (match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)) {
        labels[key as string] = value as string;
      }
      out.push({ labels, value: Number(match[2]) });
    }
  }
  return out;
}

/**
 * Prometheus metrics (docs/operations.md "Metrics"): /metrics on the API's port for a bearer of
 * METRICS_TOKEN, or on METRICS_PORT alone. Requests are counted by route template, and no label
 * carries an id, a key or a path someone made up.
 */
describe('metrics', () => {
  let server: RunningServer & { databaseUrl: string };
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    server = await startTestServer({ env: { METRICS_TOKEN: TOKEN, METRICS_PORT: String(metricsPort) } });
  });

  afterAll(async () => {
    await server?.close();
  });

  const scrape = async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return res.text();
  };

  it('needs the token on the API port: none or another is 401 with the error body', async () => {
    const none = await fetch(`${server.url}/metrics`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
    const wrong = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN.replace('0', '1')}` } });
    expect(wrong.status).toBe(401);
    await wrong.arrayBuffer();
  });

  it('counts requests by route template; ids, keys and made-up paths never become labels', async () => {
    const { application, secretKey, organization } = await seedApplication(server.services.db);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `Bearer ${secretKey}` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const tenant = await fetch(`${server.url}/v1/tenants/${organization.id}`, { headers: { authorization: `Bearer ${secretKey}` } });
    await tenant.arrayBuffer();
    const scan = await fetch(`${server.url}/wp-admin/${application.id}/setup.php`);
    await scan.arrayBuffer();

    const text = await scrape();
    const requests = series(text, 'svc_http_requests_total');
    const backend = requests.find((s) => s.labels.route === '/v1/backend/application' && s.labels.status === '200');
    expect(backend?.value).toBe(3);
    expect(requests.some((s) => s.labels.route === '/v1/tenants/{id}')).toBe(true);
    expect(requests.some((s) => s.labels.route === 'unmatched' && s.labels.status === '404')).toBe(true);
    expect(series(text, 'svc_http_request_duration_seconds_count').some((s) => s.labels.route === '/v1/backend/application')).toBe(true);
    for (const secret of [application.id, organization.id, secretKey, 'wp-admin']) {
      expect(text).not.toContain(secret);
    }
  });

  it('METRICS_PORT serves the same metrics with no token, and nothing else', async () => {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('svc_http_requests_total');
    const other = await fetch(`http://127.0.0.1:${metricsPort}/v1/client/config?keyless=1`);
    expect(other.status).toBe(404);
    await other.arrayBuffer();
  });

  it('reads the job queue per task when scraped', async () => {
    await server.services.sql`select graphile_worker.add_job('email_dispatch', '{}'::json)`;
    const waiting = series(await scrape(), 'svc_jobs_waiting').find((s) => s.labels.task === 'email_dispatch');
    expect(waiting?.value).toBeGreaterThanOrEqual(1);
    expect(series(await scrape(), 'svc_jobs_oldest_waiting_seconds').some((s) => s.labels.task === 'email_dispatch')).toBe(true);
  });

  it("reports the API's database pool: its size, the connections in use and what waits beyond them", async () => {
    const max = server.services.config.databasePoolSize;
    const pool = (text: string, name: string) => series(text, name).find((s) => s.labels.pool === 'svc-api')?.value;
    const idle = await scrape();
    expect(pool(idle, 'svc_db_pool_connections_max')).toBe(max);
    // The pool may be busy with the scrape's own job-queue reads, never with more.
    expect(pool(idle, 'svc_db_pool_waiting')).toBe(0);
    const sleeping = Array.from({ length: max + 3 }, () => server.services.sql`select pg_sleep(0.5)`.then(() => true));
    await new Promise((r) => setTimeout(r, 150));
    const busy = await scrape();
    expect(pool(busy, 'svc_db_pool_in_use')).toBe(max);
    expect(pool(busy, 'svc_db_pool_waiting')).toBeGreaterThanOrEqual(3);
    await Promise.all(sleeping);
    expect(pool(await scrape(), 'svc_db_pool_waiting')).toBe(0);
  });

  it('is off unless a token or a port is set: /metrics is an unknown path', async () => {
    const plain = await startTestServer();
    try {
      const res = await fetch(`${plain.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(404);
      await res.arrayBuffer();
    } finally {
      await plain.close();
    }
  });
});
