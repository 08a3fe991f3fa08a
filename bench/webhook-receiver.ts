/**
 * The webhook bench's receiver: one plain node:http server, run as its own process by
 * bench/webhooks.ts, that both sides of a comparison deliver to. It checks every request's
 * Standard Webhooks signature (HMAC-SHA256 of `id.timestamp.body`, node:crypto, so the check
 * costs both sides the same few microseconds), answers 204, and counts webhook-ids.
 *
 *   GET  /stats  { requests, unique, badSignatures, firstAt, lastAt, latencies }
 *   POST /reset  forget everything
 *
 * Times are performance.timeOrigin + performance.now() (ms since the epoch, sub-ms): comparable
 * with the same clock in other processes of this machine. `latencies` holds, for bodies whose
 * data carries `committedAt`, arrival minus committedAt, first arrival of each webhook-id only.
 *
 * Environment: PORT, HOST, WEBHOOK_SECRET (`whsec_...`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const secret = process.env.WEBHOOK_SECRET ?? '';
if (!secret.startsWith('whsec_')) {
  process.stderr.write('webhook-receiver: WEBHOOK_SECRET (whsec_...) is required\n');
  process.exit(1);
}
const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
const port = Number(process.env.PORT ?? 0);
const host = process.env.HOST ?? '127.0.0.1';

const now = () => performance.timeOrigin + performance.now();

let requests = 0;
let badSignatures = 0;
let firstAt = 0;
let lastAt = 0;
let seen = new Set<string>();
let latencies: number[] = [];

function verified(id: string, timestamp: string, signatures: string, body: Buffer): boolean {
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const part of signatures.split(' ')) {
    const [version, value] = part.split(',', 2);
    if (version !== 'v1' || !value) {
      continue;
    }
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) {
      return true;
    }
  }
  return false;
}

function header(req: http.IncomingMessage, name: string): string {
  const value = req.headers[name];
  return typeof value === 'string' ? value : '';
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requests, unique: seen.size, badSignatures, firstAt, lastAt, latencies }));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    requests = 0;
    badSignatures = 0;
    firstAt = 0;
    lastAt = 0;
    seen = new Set();
    latencies = [];
    res.writeHead(204).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = now();
    const body = Buffer.concat(chunks);
    const id = header(req, 'webhook-id');
    if (!verified(id, header(req, 'webhook-timestamp'), header(req, 'webhook-signature'), body)) {
      badSignatures++;
      res.writeHead(400).end();
      return;
    }
    requests++;
    if (firstAt === 0) {
      firstAt = at;
    }
    lastAt = at;
    if (!seen.has(id)) {
      seen.add(id);
      const committedAt = (JSON.parse(body.toString('utf8')) as { data?: { committedAt?: unknown } }).data?.committedAt;
      if (typeof committedAt === 'number') {
        latencies.push(at - committedAt);
      }
    }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, host, () => {
  const address = server.address();
  process.stdout.write(`webhook-receiver listening on ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
