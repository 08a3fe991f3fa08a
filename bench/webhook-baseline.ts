/**
 * Baseline of the webhook throughput bench: what a plain Node script does to send the same
 * deliveries. It reads the events once (before the clock starts), builds the same body svc sends
 * (`{"id","type","timestamp","data"}`), signs it the Standard Webhooks way with node:crypto and
 * POSTs it with node:http through a keep-alive agent, CONCURRENCY requests in flight. No queue,
 * no claims, no attempt rows: the floor a delivery engine is compared with.
 *
 * Run as its own process by bench/webhooks.ts. Environment: DATABASE_URL, RECEIVER_URL,
 * WEBHOOK_SECRET (`whsec_...`), CONCURRENCY. Prints one JSON line: { sent, failed, seconds, cpuMs }.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import postgres from 'postgres';

const databaseUrl = process.env.DATABASE_URL ?? '';
const receiverUrl = new URL(process.env.RECEIVER_URL ?? '');
const secret = process.env.WEBHOOK_SECRET ?? '';
const concurrency = Number(process.env.CONCURRENCY ?? 10);
const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');

const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
const events = await sql<{ id: string; type: string; created_at: Date; data: string }[]>`
  select id, type, created_at, data::text as data from webhook_events order by created_at, id`;
await sql.end();

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function post(event: (typeof events)[number]): Promise<number> {
  const body = `{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(
    event.created_at.toISOString(),
  )},"data":${event.data}}`;
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', key).update(`${event.id}.${timestamp}.${body}`).digest('base64');
  return new Promise((resolve) => {
    const req = http.request(receiverUrl, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': `v1,${signature}`,
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

let next = 0;
let failed = 0;
const started = performance.now();
const cpuBefore = process.cpuUsage();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < events.length) {
      const event = events[next++] as (typeof events)[number];
      const status = await post(event);
      if (status < 200 || status >= 300) {
        failed++;
      }
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
agent.destroy();
process.stdout.write(`${JSON.stringify({ sent: events.length - failed, failed, seconds, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
