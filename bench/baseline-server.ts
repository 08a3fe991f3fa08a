/**
 * Baseline for the bench: what a typical hand-written Express 5 service would do for the same two
 * routes. No cache: every request looks the application up in PostgreSQL with postgres.js (pool
 * of 10), then answers a JSON body of the same shape and size as svc's.
 *
 * Run as its own process by bench/run.ts: DATABASE_URL, PORT, HOST from the environment.
 */
import { createHash } from 'node:crypto';
import express, { type Response } from 'express';
import postgres from 'postgres';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('baseline: DATABASE_URL is required\n');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 3100);
const host = process.env.HOST ?? '127.0.0.1';
const publicUrl = process.env.PUBLIC_URL ?? `http://${host}:${port}`;
const issuer = process.env.ENGINE_ISSUER ?? 'http://127.0.0.1:7151/application/o/svc/';

const sql = postgres(databaseUrl, { max: 10, connection: { application_name: 'bench-baseline' } });

type Row = {
  id: string;
  slug: string;
  name: string;
  status: 'active' | 'disabled';
  publishable_key: string;
  secret_key_prefix: string;
  org_slug: string;
  org_name: string;
};

async function byPublishableKey(key: string): Promise<Row | undefined> {
  const [row] = await sql<Row[]>`
    select a.id, a.slug, a.name, a.status, a.publishable_key, a.secret_key_prefix, o.slug as org_slug, o.name as org_name
    from applications a join organizations o on o.id = a.tenant_id
    where a.publishable_key = ${key}`;
  return row;
}

async function bySecretHash(hash: string): Promise<Row | undefined> {
  const [row] = await sql<Row[]>`
    select a.id, a.slug, a.name, a.status, a.publishable_key, a.secret_key_prefix, o.slug as org_slug, o.name as org_name
    from applications a join organizations o on o.id = a.tenant_id
    where a.secret_key_hash = ${hash}`;
  return row;
}

function fail(res: Response, status: number, code: string, message: string): void {
  res.status(status).json({ error: { code, message } });
}

const app = express();

app.get('/healthz', async (_req, res) => {
  await sql`select 1`;
  res.json({ status: 'ok' });
});

app.get('/v1/client/config', async (req, res) => {
  const key = req.get('x-svc-publishable-key');
  if (!key || !/^pk_live_[0-9A-Za-z]{24}$/.test(key)) {
    fail(res, 400, 'invalid_publishable_key', 'a valid publishable key is required');
    return;
  }
  const row = await byPublishableKey(key);
  if (!row) {
    fail(res, 404, 'application_not_found', 'no application has this publishable key');
    return;
  }
  if (row.status === 'disabled') {
    fail(res, 409, 'application_disabled', 'this application is disabled');
    return;
  }
  const pk = encodeURIComponent(row.publishable_key);
  res.json({
    application: { id: row.id, slug: row.slug, name: row.name, publishableKey: row.publishable_key, status: row.status },
    organization: { slug: row.org_slug, name: row.org_name },
    auth: {
      signInUrl: `${publicUrl}/signin?publishable_key=${pk}`,
      signUpUrl: `${publicUrl}/signup?publishable_key=${pk}`,
      afterSignInUrl: `${publicUrl}/user`,
      afterSignUpUrl: `${publicUrl}/user`,
    },
    oidc: { issuer, clientId: 'svc' },
    oauth: {
      sharedDevelopment: { mode: 'shared_development', provider: 'google', credentialsRequired: false },
      production: { mode: 'customer_owned', provider: 'google', credentialsRequired: true },
    },
    keyless: false,
  });
});

app.get('/v1/backend/application', async (req, res) => {
  const match = /^Bearer (sk_live_[0-9A-Za-z]{40})$/.exec(req.get('authorization') ?? '');
  if (!match?.[1]) {
    fail(res, 401, 'invalid_secret_key', 'send the secret key as Authorization: Bearer sk_live_...');
    return;
  }
  const row = await bySecretHash(createHash('sha256').update(match[1]).digest('hex'));
  if (!row) {
    fail(res, 401, 'invalid_secret_key', 'the secret key is unknown or has been rotated');
    return;
  }
  if (row.status === 'disabled') {
    fail(res, 409, 'application_disabled', 'this application is disabled');
    return;
  }
  res.json({
    ok: true,
    application: { id: row.id, slug: row.slug, name: row.name, status: row.status, secretKeyPrefix: row.secret_key_prefix },
    organization: { slug: row.org_slug, name: row.org_name },
    checkedAt: new Date().toISOString(),
  });
});

const server = app.listen(port, host, () => {
  process.stdout.write(`baseline listening on http://${host}:${port}\n`);
});

function stop(): void {
  server.close();
  sql.end({ timeout: 2 }).finally(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
