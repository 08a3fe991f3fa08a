import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { startTestServer } from '../../../test/support/server.ts';
import { runCli } from '../../../test/support/spawn.ts';
import { seedSignedIn } from '../../../test/support/tenancy.ts';

/**
 * `svc resources ...` and `svc product-roles ...`: the product's catalog from the command line,
 * on the database a running server uses, with the API's rules and its one-line errors.
 */

type Json = Record<string, any>;

/** Runs the tasks two at a time (each spawns svc), answers in order. */
async function inPairs<T>(tasks: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < tasks.length; i += 2) {
    out.push(...(await Promise.all(tasks.slice(i, i + 2).map((t) => t()))));
  }
  return out;
}

function expectOneLineError(stderr: string): void {
  expect(stderr).not.toContain('    at ');
  expect(stderr.trim().split('\n')).toHaveLength(1);
}

describe('svc resources and svc product-roles', () => {
  let databaseUrl: string;
  let server: Awaited<ReturnType<typeof startTestServer>>;

  const svc = (...args: string[]) => runCli(args, { DATABASE_URL: databaseUrl });

  async function json(...args: string[]): Promise<Json> {
    const r = await svc(...args, '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as Json;
  }

  async function counts(): Promise<{ resources: number; permissions: number; productRoles: number; audit: number }> {
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ resources: number; permissions: number; product_roles: number; audit: number }[]>`
        select (select count(*)::int from api_resources) as resources, (select count(*)::int from api_permissions) as permissions,
               (select count(*)::int from product_roles) as product_roles,
               (select count(*)::int from audit_logs where tenant_id is null) as audit`;
      return {
        resources: row?.resources ?? -1,
        permissions: row?.permissions ?? -1,
        productRoles: row?.product_roles ?? -1,
        audit: row?.audit ?? -1,
      };
    } finally {
      await sql.end({ timeout: 1 });
    }
  }

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    server = await startTestServer({ databaseUrl });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('resources create registers an API with its permissions, audited as the system; the API serves it', { timeout: 120_000 }, async () => {
    const out = await json(
      'resources',
      'create',
      '--identifier',
      'https://api.example.com',
      '--name',
      'Invoices API',
      '--permission',
      'invoices.read',
      '--permission',
      'invoices.create',
    );
    expect(out.resource.id).toMatch(/^res_[0-9A-Za-z]{20}$/);
    expect(out.resource).toMatchObject({ identifier: 'https://api.example.com', name: 'Invoices API' });
    expect(out.resource.permissions.map((p: Json) => p.name)).toEqual(['invoices.create', 'invoices.read']);

    const platform = await seedSignedIn(server.services.db, { platformAdmin: true });
    const res = await fetch(`${server.url}/v1/api-resources/${out.resource.id}`, { headers: { cookie: platform.cookie } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Json).permissions).toHaveLength(2);

    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ actor_type: string; actor_id: string | null; tenant_id: string | null; user_agent: string }[]>`
        select actor_type, actor_id, tenant_id, user_agent from audit_logs where action = 'api_resource.created' and target_id = ${out.resource.id}`;
      expect(rows).toEqual([{ actor_type: 'system', actor_id: null, tenant_id: null, user_agent: 'svc-cli' }]);
    } finally {
      await sql.end({ timeout: 1 });
    }

    // Human output names what was made.
    const human = await svc(
      'resources',
      'create',
      '--identifier',
      'https://reports.example.com',
      '--name',
      'Reports',
      '--permission',
      'reports.read',
    );
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      /^created Reports \(res_[0-9A-Za-z]{20}\) for https:\/\/reports\.example\.com\npermissions: reports\.read\n$/,
    );
  });

  it('resources list prints every resource, newest first', { timeout: 120_000 }, async () => {
    const out = await json('resources', 'list');
    expect(out.data.map((r: Json) => r.identifier)).toEqual(['https://reports.example.com', 'https://api.example.com']);
    const human = await svc('resources', 'list');
    expect(human.code).toBe(0);
    expect(human.stdout.trim().split('\n')).toHaveLength(2);
    expect(human.stdout).toContain('https://api.example.com  Invoices API  [invoices.create invoices.read]');
  });

  it('refuses bad input with one line and exit 1, storing nothing', { timeout: 300_000 }, async () => {
    const before = await counts();
    const cases: [string[], RegExp][] = [
      [
        ['--identifier', 'https://x.example.com', '--name', 'X', '--permission', 'Invoices.Read'],
        /permissions\.0\.name: a permission name is lower-case/,
      ],
      [['--identifier', 'https://x.example.com', '--name', 'X', '--permission', 'invo\u0456ces.read'], /a permission name is lower-case/],
      [
        ['--identifier', 'https://x.example.com', '--name', 'X', '--permission', 'tenant.read'],
        /tenant\.read cannot be a product permission/,
      ],
      [['--identifier', 'https://x.example.com', '--name', 'X', '--permission', 'invoices.read'], /already has invoices\.read/],
      [['--identifier', 'https://x.example.com', '--name', 'X', '--permission', 'a.b', '--permission', 'a.b'], /a\.b is listed twice/],
      [['--identifier', 'https://x.example.com/#frag', '--name', 'X'], /may not have a fragment/],
      [['--identifier', 'https://user@x.example.com', '--name', 'X'], /may not carry credentials/],
      [['--identifier', 'HTTPS://X.EXAMPLE.COM', '--name', 'X'], /canonical form: https:\/\/x\.example\.com/],
      [['--identifier', 'https://api.example.com/', '--name', 'Again'], /another API resource has the identifier/],
      [['--name', 'X'], /needs --identifier/],
    ];
    // Two at a time: each is a process of its own.
    const results = await inPairs(
      cases.map(
        ([args]) =>
          () =>
            svc('resources', 'create', ...args),
      ),
    );
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i] as Awaited<ReturnType<typeof svc>>;
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(message);
      expectOneLineError(r.stderr);
    }
    const unknown = await svc('resources', 'explode');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown resources command explode/);
    expect(await counts()).toEqual(before);
  });

  it('product-roles create and list: the built-in rows first, then the product roles', { timeout: 300_000 }, async () => {
    const out = await json(
      'product-roles',
      'create',
      '--key',
      'billing_manager',
      '--name',
      'Billing manager',
      '--permission',
      'invoices.create',
      '--permission',
      'invoices.read',
    );
    expect(out.role).toMatchObject({ key: 'billing_manager', builtin: false, permissions: ['invoices.create', 'invoices.read'] });
    const listed = await json('product-roles', 'list');
    expect(listed.data.map((r: Json) => r.key)).toEqual(['org_admin', 'org_member', 'billing_manager']);
    const human = await svc('product-roles', 'list');
    expect(human.stdout).toContain('prl_org_admin  org_admin  Organization admin (built in)  []');
    expect(human.stdout).toContain('billing_manager  Billing manager  [invoices.create invoices.read]');

    const before = await counts();
    const cases: [string[], RegExp][] = [
      [['--key', 'ghost', '--name', 'Ghost', '--permission', 'invoices.delete'], /no API resource declares invoices\.delete/],
      [['--key', 'org_admin', '--name', 'Admin'], /org_admin is a built-in role/],
      [['--key', 'billing_manager', '--name', 'Again'], /the role key billing_manager is taken/],
      [['--key', 'Bad-Key', '--name', 'Bad'], /key: a role key is 2-48 lower-case/],
    ];
    const results = await inPairs(
      cases.map(
        ([args]) =>
          () =>
            svc('product-roles', 'create', ...args),
      ),
    );
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i] as Awaited<ReturnType<typeof svc>>;
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expectOneLineError(r.stderr);
    }
    expect(await counts()).toEqual(before);
  });
});
