/**
 * The export-memory baseline (bench/exports.ts): the plainest way to stream the same usage
 * events out of PostgreSQL over HTTP. `GET /?tenant=<id>` answers
 * `COPY (select <the exported usage event columns> ...) TO STDOUT (FORMAT csv, HEADER)` piped to
 * the response (stream backpressure, stops when the client leaves). No authentication, no
 * serialization in Node, no other resources: a floor for time and memory.
 *
 *   DATABASE_URL=... PORT=... node --import tsx bench/export-baseline.ts
 */
import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';

const url = process.env.DATABASE_URL;
const port = Number(process.env.PORT);
if (!url || !Number.isInteger(port)) {
  throw new Error('DATABASE_URL and PORT are required');
}
const sql = postgres(url, { max: 4, onnotice: () => {} });

const server = http.createServer((req, res) => {
  const tenant = new URL(req.url ?? '/', 'http://localhost').searchParams.get('tenant') ?? '';
  // COPY takes no bind parameters: the id is checked to be an id before it is inlined.
  if (!/^ten_[0-9A-Za-z]+$/.test(tenant)) {
    res.writeHead(400).end();
    return;
  }
  const copy = `copy (
      select id, idempotency_key, event_type, quantity, occurred_at, properties, source_id, channel, created_at
      from usage_events where tenant_id = '${tenant}' order by created_at, id
    ) to stdout with (format csv, header)`;
  void (async () => {
    try {
      const readable = await sql.unsafe(copy).readable();
      res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' });
      await pipeline(readable, res);
    } catch (error) {
      process.stderr.write(`export-baseline: ${(error as Error).message}\n`);
      res.destroy();
    }
  })();
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`export-baseline listening on ${port}\n`);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    server.close();
    void sql.end({ timeout: 1 }).finally(() => process.exit(0));
  });
}
