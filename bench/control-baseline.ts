/**
 * Baseline of the bench's tenant-read scenario: what a hand-written service would do for
 * `GET /v1/tenants/{id}` with a tenant API key, on plain node:http and postgres.js (pool of 10,
 * svc's default). It does what svc does per request, no more: the key read by its SHA-256
 * (svc keeps nothing across requests, so a revocation counts on the next one), the creator's
 * standing (user status, membership role, custom role permissions, platform admin), the
 * organization read, the same checks (live key, same organization, `tenant.read` within the
 * key's scopes and its creator's permissions) and the same JSON. No rate limit, no request log,
 * no error body beyond status and code.
 *
 * Run as its own process by bench/run.ts: DATABASE_URL, PORT, HOST from the environment.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import postgres from 'postgres';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('control-baseline: DATABASE_URL is required\n');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 3100);
const host = process.env.HOST ?? '127.0.0.1';
const sql = postgres(databaseUrl, { max: 10, connection: { application_name: 'bench-control-baseline' } });

const SECRET = /^sk_live_[0-9A-Za-z]{40}$/;
const TENANT_PATH = /^\/v1\/tenants\/([^/]+)$/;

type Key = { tenant_id: string; scopes: string[]; revoked_at: Date | null; expires_at: Date | null; created_by_user_id: string | null };
type Standing = { status: string; role_key: string | null; role_permissions: string[] | null; is_platform_admin: boolean };
type Organization = { id: string; slug: string; name: string; kind: string; created_at: Date; updated_at: Date };

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

async function readTenant(authorization: string | undefined, id: string): Promise<[number, unknown]> {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
  if (!token || !SECRET.test(token)) {
    return [401, { error: { code: 'invalid_secret_key' } }];
  }
  const hash = createHash('sha256').update(token).digest('hex');
  const [key] = await sql<Key[]>`
    select tenant_id, scopes, revoked_at, expires_at, created_by_user_id from api_keys where secret_hash = ${hash} limit 1`;
  if (!key || key.revoked_at || (key.expires_at && key.expires_at.getTime() <= Date.now()) || !key.created_by_user_id) {
    return [401, { error: { code: 'invalid_secret_key' } }];
  }
  const [standing] = await sql<Standing[]>`
    select u.status, m.role_key, r.permissions as role_permissions,
           exists (select 1 from memberships pm join organizations po on po.id = pm.tenant_id
                   where pm.user_id = u.id and pm.status = 'active' and po.kind = 'platform' and pm.role_key = 'org_admin') as is_platform_admin
    from users u
    left join memberships m on m.user_id = u.id and m.tenant_id = ${key.tenant_id} and m.status = 'active'
    left join roles r on r.tenant_id = ${key.tenant_id} and r.key = m.role_key
    where u.id = ${key.created_by_user_id} limit 1`;
  if (standing?.status !== 'active' || !standing.role_key) {
    return [401, { error: { code: 'invalid_secret_key' } }];
  }
  const [organization] = await sql<Organization[]>`
    select id, slug, name, kind, created_at, updated_at from organizations where id = ${id}`;
  if (!organization || organization.kind === 'keyless' || organization.id !== key.tenant_id) {
    return [404, { error: { code: 'not_found' } }];
  }
  const creatorHolds = standing.role_key === 'org_admin' || (standing.role_permissions ?? []).includes('tenant.read');
  if (!key.scopes.includes('tenant.read') || !creatorHolds) {
    return [403, { error: { code: 'forbidden' } }];
  }
  return [
    200,
    {
      id: organization.id,
      slug: organization.slug,
      name: organization.name,
      kind: organization.kind,
      createdAt: organization.created_at.toISOString(),
      updatedAt: organization.updated_at.toISOString(),
    },
  ];
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  if (url === '/healthz') {
    sql`select 1`.then(
      () => send(res, 200, { status: 'ok' }),
      () => send(res, 503, { status: 'down' }),
    );
    return;
  }
  const match = req.method === 'GET' ? TENANT_PATH.exec(url.split('?')[0] as string) : null;
  if (!match) {
    send(res, 404, { error: { code: 'not_found' } });
    return;
  }
  readTenant(req.headers.authorization, decodeURIComponent(match[1] as string)).then(
    ([status, body]) => send(res, status, body),
    (error: unknown) => {
      process.stderr.write(`control-baseline: ${String(error)}\n`);
      send(res, 500, { error: { code: 'internal' } });
    },
  );
});

server.listen(port, host);
process.on('SIGTERM', () => {
  server.close();
  void sql.end({ timeout: 1 }).then(() => process.exit(0));
});
