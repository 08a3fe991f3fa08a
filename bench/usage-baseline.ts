/**
 * The naive usage handler of the usage-ingest scenarios (issue 6 "Figures"): what a
 * straightforward Express 5 + postgres.js service does with POST /v1/usage/events. Per request,
 * one transaction: `INSERT ... ON CONFLICT (tenant_id, idempotency_key) DO NOTHING RETURNING`
 * and, on a conflict, a read of the existing row to answer the replay; a batch inserts its events
 * one statement at a time in that one transaction. Secret keys are resolved once and kept in a
 * Map (so the comparison is about writing, not authenticating). It writes less than svc: no
 * hourly totals, webhook event, billing queue or subscription check.
 *
 * Run as its own process by bench/usage.ts: DATABASE_URL, PORT, HOST and BASELINE_POOL (default
 * 20, svc's pool size) from the environment.
 */
import { createHash, randomBytes } from 'node:crypto';
import express from 'express';
import postgres from 'postgres';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('usage-baseline: DATABASE_URL is required\n');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 3200);
const host = process.env.HOST ?? '127.0.0.1';
const sql = postgres(databaseUrl, {
  max: Number(process.env.BASELINE_POOL ?? 20),
  connection: { application_name: 'bench-usage-baseline' },
});

const tenants = new Map<string, string>();

async function tenantOf(authorization: string | undefined): Promise<string | undefined> {
  const secret = /^Bearer (sk_live_[0-9A-Za-z]{40})$/.exec(authorization ?? '')?.[1];
  if (!secret) {
    return undefined;
  }
  const hash = createHash('sha256').update(secret).digest('hex');
  let tenant = tenants.get(hash);
  if (tenant === undefined) {
    const [row] = await sql<
      { tenant_id: string }[]
    >`select tenant_id from applications where secret_key_hash = ${hash} and status = 'active'`;
    if (!row) {
      return undefined;
    }
    tenant = row.tenant_id;
    tenants.set(hash, tenant);
  }
  return tenant;
}

type EventBody = { idempotencyKey?: unknown; eventType?: unknown; quantity?: unknown; properties?: unknown };
type Row = {
  id: string;
  idempotency_key: string;
  event_type: string;
  quantity: string;
  occurred_at: Date;
  properties: unknown;
  created_at: Date;
};

function view(row: Row) {
  return {
    id: row.id,
    idempotencyKey: row.idempotency_key,
    eventType: row.event_type,
    quantity: Number(row.quantity),
    occurredAt: row.occurred_at.toISOString(),
    properties: row.properties,
    createdAt: row.created_at.toISOString(),
  };
}

async function insertOne(tx: postgres.TransactionSql, tenantId: string, e: EventBody) {
  const id = `uev_${randomBytes(15).toString('base64url').slice(0, 20)}`;
  const hash = createHash('sha256')
    .update(JSON.stringify([e.eventType, e.quantity ?? 1, e.properties ?? {}]))
    .digest('hex');
  // The key first (usage_events is partitioned by month and cannot hold its uniqueness), then the event.
  const [claimed] = await tx`
    insert into usage_event_keys (tenant_id, idempotency_key, event_id) values (${tenantId}, ${String(e.idempotencyKey)}, ${id})
    on conflict (tenant_id, idempotency_key) do nothing
    returning event_id`;
  const [inserted] = claimed
    ? await tx<Row[]>`
    insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, properties, channel)
    values (${id}, ${tenantId}, ${String(e.idempotencyKey)}, ${hash}, ${String(e.eventType)}, ${Number(e.quantity ?? 1)}, now(),
            ${tx.json((e.properties ?? {}) as postgres.JSONValue)}, 'usage')
    returning id, idempotency_key, event_type, quantity, occurred_at, properties, created_at`
    : [];
  if (inserted) {
    return { event: view(inserted), duplicate: false };
  }
  const [existing] = await tx<Row[]>`
    select id, idempotency_key, event_type, quantity, occurred_at, properties, created_at
    from usage_events where tenant_id = ${tenantId} and idempotency_key = ${String(e.idempotencyKey)}`;
  return { event: view(existing as Row), duplicate: true };
}

const app = express();
app.use(express.json({ limit: '1mb' }));

app.get('/healthz', async (_req, res) => {
  await sql`select 1`;
  res.json({ status: 'ok' });
});

app.post('/v1/usage/events', async (req, res) => {
  const tenantId = await tenantOf(req.get('authorization'));
  if (!tenantId) {
    res.status(401).json({ error: { code: 'invalid_secret_key', message: 'send the secret key as Authorization: Bearer sk_live_...' } });
    return;
  }
  const body = req.body as EventBody & { events?: EventBody[] };
  const events = Array.isArray(body.events) ? body.events : [body];
  if (events.length === 0 || events.some((e) => typeof e.idempotencyKey !== 'string' || typeof e.eventType !== 'string')) {
    res.status(400).json({ error: { code: 'validation_failed', message: 'idempotencyKey and eventType are required' } });
    return;
  }
  const results = await sql.begin(async (tx) => {
    const out = [];
    for (const e of events) {
      out.push(await insertOne(tx, tenantId, e));
    }
    return out;
  });
  if (Array.isArray(body.events)) {
    res.status(200).json({ results });
    return;
  }
  const [first] = results;
  res.status(first?.duplicate ? 200 : 201).json(first);
});

const server = app.listen(port, host, () => {
  process.stdout.write(`usage-baseline listening on http://${host}:${port}\n`);
});

function stop(): void {
  server.close();
  sql.end({ timeout: 2 }).finally(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
