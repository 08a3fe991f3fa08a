/**
 * A client application for the database-restart test: commits one transaction that calls
 * recordEvent every INTERVAL_MS, and prints `ack <event id>` once its COMMIT returned, until
 * SIGTERM. Failures (the database is down) are counted and retried; a transaction that gets no
 * answer within TX_TIMEOUT_MS is abandoned with its client and a new client is made.
 *
 * It runs as its own process because postgres.js 3.4.9 can throw from a timer when a connection
 * dies with a write buffered (`Cannot read properties of null (reading 'write')` in nextWrite,
 * porsager/postgres#1154 and #1208), which no caller can catch, and can leave that connection
 * unable to flush again (a query that never settles): neither may take the test runner down.
 *
 * Environment: DATABASE_URL, TENANT_ID, EVENT_TYPE, INTERVAL_MS (default 20), TX_TIMEOUT_MS
 * (default 3000).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase, type Database } from '@svc/db/client';
import { recordEvent } from '@svc/db/queries/webhook-events';

const url = process.env.DATABASE_URL ?? '';
const tenantId = process.env.TENANT_ID ?? '';
const type = process.env.EVENT_TYPE ?? 'user.created';
const intervalMs = Number(process.env.INTERVAL_MS ?? 20);
const txTimeoutMs = Number(process.env.TX_TIMEOUT_MS ?? 3000);

let driverCrashes = 0;
process.on('uncaughtException', (error) => {
  if (error instanceof TypeError && /reading 'write'/.test(error.message)) {
    driverCrashes++;
    return;
  }
  process.stderr.write(`event-generator: ${error.stack ?? error}\n`);
  process.exit(1);
});

let running = true;
process.on('SIGTERM', () => {
  running = false;
});

const newClient = () => createDatabase({ url, max: 1, applicationName: 'event-generator' });
let database: Database = newClient();
let failures = 0;
let abandoned = 0;

while (running) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), txTimeoutMs);
  });
  try {
    const result = await Promise.race([database.db.transaction((tx) => recordEvent(tx, { tenantId, type, data: {} })), timeout]);
    if (result === 'timeout') {
      abandoned++;
      void database.sql.end({ timeout: 0 }).catch(() => {});
      database = newClient();
    } else {
      process.stdout.write(`ack ${result.id}\n`);
    }
  } catch {
    failures++;
    await sleep(100);
  } finally {
    clearTimeout(timer);
  }
  await sleep(intervalMs);
}
process.stdout.write(`done ${JSON.stringify({ failures, abandoned, driverCrashes })}\n`);
await database.close().catch(() => {});
process.exit(0);
