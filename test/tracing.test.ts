import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.ts';
import { type SpawnedServer, spawnServer } from './support/spawn.ts';

type OtlpValue = { stringValue?: string; intValue?: string | number };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
};

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};

/**
 * OpenTelemetry (docs/operations.md "Traces"): a real `svc serve` with OTEL_EXPORTER_OTLP_ENDPOINT
 * set sends its spans over OTLP/HTTP to a local receiver standing in for a collector; each span
 * of a request carries its request id, and the request's log line carries its trace id.
 */
describe('traces over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
  const spans: OtlpSpan[] = [];
  /** Every path the receiver was sent to. */
  const posted: string[] = [];
  let receiver: http.Server;
  let server: SpawnedServer;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        posted.push(req.url ?? '');
        if (req.url === '/v1/traces') {
          const parsed = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
          for (const r of parsed.resourceSpans) {
            for (const s of r.scopeSpans) {
              spans.push(...s.spans);
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as AddressInfo;
    server = await spawnServer({
      DATABASE_URL: await createTestDatabase(),
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  it('a request becomes a server span with its request id, its child spans carry it too, and its log line the trace id', {
    timeout: 60_000,
  }, async () => {
    // An Express route (the edge, then Express's middleware as child spans).
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id') as string;
    expect(requestId).toBeTruthy();
    const deadline = Date.now() + 20_000;
    const ofRequest = () => spans.filter((s) => attribute(s, 'svc.request_id') === requestId);
    while (!ofRequest().some((s) => s.kind === 2) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const mine = ofRequest();
    // SpanKind.SERVER is 2 in OTLP: node:http's span of the incoming request.
    const serverSpan = mine.find((s) => s.kind === 2);
    expect(serverSpan, `spans received: ${JSON.stringify(spans.map((s) => [s.name, s.kind, s.attributes]))}`).toBeDefined();
    expect(serverSpan?.name).toMatch(/^GET/);
    expect(attribute(serverSpan as OtlpSpan, 'http.response.status_code') ?? attribute(serverSpan as OtlpSpan, 'http.status_code')).toBe(
      200,
    );
    // Children (Express's middleware and route) in the same trace, with the request id.
    const children = spans.filter((s) => s.traceId === serverSpan?.traceId && s.spanId !== serverSpan?.spanId);
    expect(children.length).toBeGreaterThan(0);
    for (const child of children) {
      expect(attribute(child, 'svc.request_id'), child.name).toBe(requestId);
    }
    // The access log line of this request names the trace.
    await new Promise((r) => setTimeout(r, 200));
    const line = server
      .output()
      .split('\n')
      .find((l) => l.includes(`"requestId":"${requestId}"`));
    expect(line, server.output().slice(-2000)).toBeDefined();
    expect(JSON.parse(line as string)).toMatchObject({ msg: 'request', trace_id: serverSpan?.traceId });
  });

  it('sends traces only: no metrics or logs of the SDK to the endpoint, even at shutdown, when it flushes', {
    timeout: 30_000,
  }, async () => {
    await server.stop();
    expect(posted.length).toBeGreaterThan(0);
    expect([...new Set(posted)]).toEqual(['/v1/traces']);
  });
});
