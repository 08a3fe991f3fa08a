import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { removeEmbeddedPostgres } from '@svc/db/embedded';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { freePort, startTestServer, TEST_ENV } from '../../../test/support/server.ts';
import { REPO_ROOT, runCli, spawnServer } from '../../../test/support/spawn.ts';

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as net.AddressInfo).port;
}

type Created = {
  application: { id: string; slug: string; name: string; status: string; publishableKey: string; secretKeyPrefix: string };
  organization: { id: string; slug: string; name: string };
  publishableKey: string;
  secretKey: string;
};

/** Operator-facing failures are one line on stderr, never a stack trace. */
function expectOneLineError(stderr: string): void {
  expect(stderr).not.toContain('    at ');
  expect(stderr.trim().split('\n')).toHaveLength(1);
}

// Each command is a fresh Node process: seconds apiece when other test files share the machine.
describe('svc command line', { timeout: 120_000 }, () => {
  let databaseUrl: string;
  let env: Record<string, string>;
  let server: Awaited<ReturnType<typeof startTestServer>>;

  async function svc(...args: string[]) {
    return runCli(args, env);
  }

  async function create(...args: string[]): Promise<Created> {
    const r = await svc('apps', 'create', ...args, '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as Created;
  }

  function clientConfig(publishableKey: string) {
    return fetch(`${server.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': publishableKey } });
  }

  function backendApplication(secretKey: string) {
    return fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `Bearer ${secretKey}` } });
  }

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    env = { DATABASE_URL: databaseUrl };
    server = await startTestServer({ databaseUrl });
  });

  afterAll(async () => {
    await server?.close();
  });

  describe('apps create', () => {
    it('prints the application, organization and both keys as JSON', async () => {
      const out = await create('--org', 'acme', '--name', 'Web App');
      expect(out.application.id).toMatch(/^app_[0-9A-Za-z]{20}$/);
      expect(out.application.slug).toBe('web-app');
      expect(out.application.name).toBe('Web App');
      expect(out.application.status).toBe('active');
      expect(out.organization.slug).toBe('acme');
      expect(out.publishableKey).toMatch(/^pk_live_[0-9A-Za-z]{24}$/);
      expect(out.secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
      // The row stores only the display prefix, which is the secret's start.
      expect(out.secretKey.startsWith(out.application.secretKeyPrefix)).toBe(true);
      expect(out.application.secretKeyPrefix.length).toBeLessThan(20);

      // The keys work against a server on the same database.
      const cfg = await clientConfig(out.publishableKey);
      expect(cfg.status).toBe(200);
      const be = await backendApplication(out.secretKey);
      expect(be.status).toBe(200);
      const body = (await be.json()) as { application: { id: string; slug: string }; organization: { slug: string } };
      expect(body.application.id).toBe(out.application.id);
      expect(body.organization.slug).toBe('acme');

      // The database stores a hash, never the raw secret.
      const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ secret_key_hash: string }[]>`select secret_key_hash from applications where id = ${out.application.id}`;
        expect(row?.secret_key_hash).toBeTruthy();
        expect(row?.secret_key_hash).not.toContain(out.secretKey);
        expect(row?.secret_key_hash).not.toBe(out.secretKey);
      } finally {
        await sql.end({ timeout: 1 });
      }
    });

    it('through pnpm, as the README runs it: --json prints JSON alone, a failure one line', { timeout: 180_000 }, async () => {
      // `pnpm svc ... --json | jq .`: no "> svc@ svc ..." banner from pnpm before the document.
      const viaPnpm = async (...args: string[]) => {
        const child = spawn('pnpm', ['svc', ...args], {
          cwd: REPO_ROOT,
          env: { ...process.env, ...TEST_ENV, DATABASE_URL: databaseUrl },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => {
          stdout += d;
        });
        child.stderr.on('data', (d) => {
          stderr += d;
        });
        const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
        return { code, stdout, stderr };
      };
      const created = await viaPnpm('apps', 'create', '--org', 'piped', '--name', 'Piped App', '--json');
      expect(created.stderr).toBe('');
      expect(created.code).toBe(0);
      const out = JSON.parse(created.stdout) as Created;
      expect(out.organization.slug).toBe('piped');
      expect((await backendApplication(out.secretKey)).status).toBe(200);

      const failed = await viaPnpm('apps', 'set-status', 'no-such-app', 'disabled', '--org', 'piped', '--json');
      expect(failed.code).toBe(1);
      expect(failed.stdout).toBe('');
      expect(failed.stderr.trim()).toBe('svc: no application no-such-app');
    });

    it('creating the same name twice in one org suffixes the slug', async () => {
      const first = await create('--org', 'twice', '--name', 'Web App');
      const second = await create('--org', 'twice', '--name', 'Web App');
      expect(first.application.slug).toBe('web-app');
      expect(second.application.slug).toBe('web-app-2');
      expect(second.organization.id).toBe(first.organization.id);
      expect(second.application.id).not.toBe(first.application.id);
      expect(second.publishableKey).not.toBe(first.publishableKey);
      expect(second.secretKey).not.toBe(first.secretKey);
    });

    it('--status disabled creates a disabled application', async () => {
      const out = await create('--org', 'acme', '--name', 'Dormant', '--status', 'disabled');
      expect(out.application.status).toBe('disabled');
      const res = await clientConfig(out.publishableKey);
      expect(res.status).toBe(409);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('application_disabled');
    });

    it('--client-type public creates a public OpenID Connect client; the default is confidential; anything else is refused', async () => {
      const spa = await create('--org', 'clients', '--name', 'SPA', '--client-type', 'public');
      const web = await create('--org', 'clients', '--name', 'Web');
      expect(spa.application).toMatchObject({ clientType: 'public' });
      expect(web.application).toMatchObject({ clientType: 'confidential' });
      // What the provider makes of them: a public client authenticates with nothing, a confidential one with its secret key.
      const token = (clientId: string, auth?: string) =>
        fetch(`${server.url}/oidc/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth ? { authorization: auth } : {}) },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code: 'bogus',
            redirect_uri: 'https://app.example.com/cb',
            code_verifier: 'v'.repeat(43),
            ...(auth ? {} : { client_id: clientId }),
          }),
        }).then(async (res) => ((await res.json()) as { error: string }).error);
      const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
      // A client needs a redirect URL to exist at the provider at all.
      const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
      try {
        await sql`update applications set redirect_urls = array['https://app.example.com/cb'] where id in ${sql([spa.application.id, web.application.id])}`;
      } finally {
        await sql.end({ timeout: 1 });
      }
      await expect.poll(() => token(spa.application.id), { timeout: 1_000, interval: 20 }).toBe('invalid_grant');
      expect(await token(web.application.id)).toBe('invalid_client');
      expect(await token(web.application.id, basic(web.application.id, web.secretKey))).toBe('invalid_grant');

      const r = await svc('apps', 'create', '--org', 'clients', '--name', 'Bad', '--client-type', 'secret', '--json');
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/--client-type/);
      expectOneLineError(r.stderr);
    });

    it('without --name fails with a one-line message and creates nothing', async () => {
      const r = await svc('apps', 'create', '--org', 'nameless', '--json');
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/--name/);
      expectOneLineError(r.stderr);
      const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
      try {
        const rows = await sql`select 1 from organizations where slug = 'nameless'`;
        expect(rows).toHaveLength(0);
      } finally {
        await sql.end({ timeout: 1 });
      }
    });

    it('--name given without a value fails with a one-line message, not a stack trace', async () => {
      const r = await svc('apps', 'create', '--org', 'acme', '--json', '--name');
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/--name/);
      expectOneLineError(r.stderr);
    });

    it('an unknown option fails with a one-line message, not a stack trace', async () => {
      const r = await svc('apps', 'create', '--org', 'acme', '--name', 'Web App', '--colour', 'blue');
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/--colour/);
      expectOneLineError(r.stderr);
    });

    it('an invalid organization slug or a blank name fails with a one-line message', async () => {
      const upper = await svc('apps', 'create', '--org', 'Not A Slug', '--name', 'Web App');
      expect(upper.code).not.toBe(0);
      expectOneLineError(upper.stderr);
      const blank = await svc('apps', 'create', '--org', 'acme', '--name', '   ');
      expect(blank.code).not.toBe(0);
      expect(blank.stderr).toMatch(/name/);
      expectOneLineError(blank.stderr);
    });

    it('an invalid --status fails with a one-line message', async () => {
      const r = await svc('apps', 'create', '--org', 'acme', '--name', 'X', '--status', 'paused');
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/status/);
      expectOneLineError(r.stderr);
    });
  });

  describe('apps set-status', () => {
    it('disabling an application makes a running server answer 409 application_disabled, and enabling restores it', async () => {
      const out = await create('--org', 'status-org', '--name', 'Toggle');
      // Warm the server's cache first, so the test also proves invalidation.
      expect((await clientConfig(out.publishableKey)).status).toBe(200);
      expect((await backendApplication(out.secretKey)).status).toBe(200);

      const off = await svc('apps', 'set-status', out.application.slug, 'disabled', '--org', 'status-org');
      expect(off.stderr).toBe('');
      expect(off.code).toBe(0);
      const res = await clientConfig(out.publishableKey);
      expect(res.status).toBe(409);
      const body = (await res.json()) as { error: { code: string; requestId: string } };
      expect(body.error.code).toBe('application_disabled');
      expect(body.error.requestId).toBeTruthy();
      const be = await backendApplication(out.secretKey);
      expect(be.status).toBe(409);
      expect(((await be.json()) as { error: { code: string } }).error.code).toBe('application_disabled');

      const on = await svc('apps', 'set-status', out.application.id, 'active', '--json');
      expect(on.code).toBe(0);
      expect(JSON.parse(on.stdout)).toMatchObject({ application: { id: out.application.id, status: 'active' } });
      expect((await clientConfig(out.publishableKey)).status).toBe(200);
    });

    it('rejects an unknown status and an unknown application', async () => {
      const bad = await svc('apps', 'set-status', 'web-app', 'paused', '--org', 'acme');
      expect(bad.code).not.toBe(0);
      expectOneLineError(bad.stderr);
      const missing = await svc('apps', 'set-status', 'no-such-app', 'disabled');
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toMatch(/no-such-app/);
      expectOneLineError(missing.stderr);
    });

    it('an ambiguous slug across two orgs is refused without --org; --org disambiguates', async () => {
      const a = await create('--org', 'org-one', '--name', 'Shared Name');
      const b = await create('--org', 'org-two', '--name', 'Shared Name');
      expect(a.application.slug).toBe('shared-name');
      expect(b.application.slug).toBe('shared-name');

      const ambiguous = await svc('apps', 'set-status', 'shared-name', 'disabled');
      expect(ambiguous.code).not.toBe(0);
      expect(ambiguous.stderr).toMatch(/org-one/);
      expect(ambiguous.stderr).toMatch(/org-two/);
      expect(ambiguous.stderr).toMatch(/--org/);
      expectOneLineError(ambiguous.stderr);
      // Nothing changed.
      expect((await clientConfig(a.publishableKey)).status).toBe(200);
      expect((await clientConfig(b.publishableKey)).status).toBe(200);

      const ok = await svc('apps', 'set-status', 'shared-name', 'disabled', '--org', 'org-two', '--json');
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ application: { id: b.application.id, status: 'disabled' } });
      expect((await clientConfig(a.publishableKey)).status).toBe(200);
      expect((await clientConfig(b.publishableKey)).status).toBe(409);

      const rotAmbiguous = await svc('apps', 'rotate-secret', 'shared-name', '--json');
      expect(rotAmbiguous.code).not.toBe(0);
      expect(rotAmbiguous.stdout).toBe('');
      expectOneLineError(rotAmbiguous.stderr);
      expect((await backendApplication(a.secretKey)).status).toBe(200);
    });
  });

  describe('apps rotate-secret', () => {
    it('prints a new secret; the old one gets 401 invalid_secret_key at once and the new one 200', async () => {
      const out = await create('--org', 'rotate-org', '--name', 'Rotating');
      // Warm the cache with the old key.
      expect((await backendApplication(out.secretKey)).status).toBe(200);

      const r = await svc('apps', 'rotate-secret', out.application.id, '--json');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const rotated = JSON.parse(r.stdout) as { secretKey: string };
      expect(rotated.secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
      expect(rotated.secretKey).not.toBe(out.secretKey);

      const old = await backendApplication(out.secretKey);
      expect(old.status).toBe(401);
      expect(((await old.json()) as { error: { code: string } }).error.code).toBe('invalid_secret_key');

      const fresh = await backendApplication(rotated.secretKey);
      expect(fresh.status).toBe(200);
      const body = (await fresh.json()) as { application: { id: string; secretKeyPrefix: string } };
      expect(body.application.id).toBe(out.application.id);
      expect(rotated.secretKey.startsWith(body.application.secretKeyPrefix)).toBe(true);
      expect(JSON.stringify(body)).not.toContain(rotated.secretKey);

      // The publishable key is unchanged by a secret rotation.
      expect((await clientConfig(out.publishableKey)).status).toBe(200);
    });
  });

  describe('apps list, orgs list and apps claim', () => {
    type Json = Record<string, any>;
    async function json(...args: string[]): Promise<Json> {
      const r = await svc(...args, '--json');
      expect(r.stderr, args.join(' ')).toBe('');
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout) as Json;
    }

    // One scenario (about a dozen runs of the command line, each a process of its own).
    it('what apps create makes can be found: apps list shows it in its organization, orgs list shows who is in which', {
      timeout: 180_000,
    }, async () => {
      const out = await create('--org', 'findable', '--name', 'Findable App');
      const listed = await json('apps', 'list', '--org', 'findable');
      expect(listed.data).toEqual([
        expect.objectContaining({
          id: out.application.id,
          slug: 'findable-app',
          clientType: 'confidential',
          keyless: false,
          publishableKey: out.publishableKey,
          organization: expect.objectContaining({ slug: 'findable' }),
        }),
      ]);
      expect(JSON.stringify(listed)).not.toContain(out.secretKey);
      const human = await svc('apps', 'list', '--org', 'findable');
      expect(human.stdout).toContain(`${out.application.id}  findable/findable-app  Findable App  confidential  active`);
      const unknown = await svc('apps', 'list', '--org', 'no-such-org');
      expect(unknown.code).toBe(1);
      expectOneLineError(unknown.stderr);
      expect(unknown.stderr).toContain('no organization no-such-org');

      // A person who signed in has a workspace of their own: --member finds it.
      const { createDatabase } = await import('@svc/db/client');
      const { seedSignedIn } = await import('../../../test/support/tenancy.ts');
      const database = createDatabase({ url: databaseUrl, max: 1, applicationName: 'svc-test-cli-orgs' });
      try {
        const person = await seedSignedIn(database.db, { email: 'Finder@Example.com' });
        const all = await json('orgs', 'list');
        const findable = all.data.find((o: Json) => o.slug === 'findable');
        expect(findable).toMatchObject({ kind: 'tenant', members: [] });
        expect(all.data.some((o: Json) => o.kind === 'keyless')).toBe(false);
        const mine = await json('orgs', 'list', '--member', 'FINDER@example.com');
        expect(mine.data).toEqual([
          expect.objectContaining({
            slug: person.ownWorkspace.slug,
            members: [{ email: 'finder@example.com', roleKey: 'org_admin', status: 'active' }],
          }),
        ]);
        const text = await svc('orgs', 'list', '--member', 'finder@example.com');
        expect(text.stdout).toContain(`${person.ownWorkspace.slug}  `);
        expect(text.stdout).toContain('members: finder@example.com (org_admin)');

        // The keyless application, claimed into that workspace by the operator.
        const keyless = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as Json;
        const marked = await json('apps', 'list');
        expect(marked.data.find((a: Json) => a.id === keyless.application.id)).toMatchObject({ keyless: true });
        const noType = await svc('apps', 'claim', '--org', person.ownWorkspace.slug);
        expect(noType.code).toBe(1);
        expectOneLineError(noType.stderr);
        expect(noType.stderr).toContain('confidential');
        const nowhere = await svc('apps', 'claim', '--org', 'no-such-org', '--client-type', 'public');
        expect(nowhere.code).toBe(1);
        expect(nowhere.stderr).toContain('no organization no-such-org');

        const claimed = await json(
          'apps',
          'claim',
          '--org',
          person.ownWorkspace.slug,
          '--client-type',
          'confidential',
          '--name',
          'Claimed',
        );
        expect(claimed).toMatchObject({
          application: {
            id: keyless.application.id,
            publishableKey: keyless.application.publishableKey,
            clientType: 'confidential',
            name: 'Claimed',
          },
          organization: { slug: person.ownWorkspace.slug },
          membersAdded: 0,
        });
        expect((await backendApplication(claimed.secretKey)).status).toBe(200);
        const after = await json('apps', 'list', '--org', person.ownWorkspace.slug);
        expect(after.data).toEqual([expect.objectContaining({ id: keyless.application.id, keyless: false, clientType: 'confidential' })]);
        const [audit] = await database.sql<{ actor_id: string | null; summary: Json }[]>`
          select actor_id, summary from audit_logs where action = 'application.created' and target_id = ${keyless.application.id}`;
        expect(audit).toMatchObject({ actor_id: null, summary: { claimedFromKeyless: true } });
        // Nothing keyless is left to claim until keyless=1 creates the next one.
        const again = await svc('apps', 'claim', '--org', person.ownWorkspace.slug, '--client-type', 'public');
        expect(again.code).toBe(1);
        expect(again.stderr).toContain('no keyless development application');
      } finally {
        await database.close();
      }
    });
  });

  describe('usage errors', () => {
    it('an unknown command exits non-zero with one line naming it and the commands', async () => {
      const r = await svc('frobnicate');
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/unknown command frobnicate/);
      expect(r.stderr).toMatch(/serve/);
      expect(r.stderr).toMatch(/svc help/);
      expectOneLineError(r.stderr);
    });

    it('an unknown or missing apps subcommand exits non-zero with one line', async () => {
      const r = await svc('apps', 'explode');
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/explode/);
      expect(r.stderr).toMatch(/set-status/);
      expectOneLineError(r.stderr);
      const none = await svc('apps');
      expect(none.code).not.toBe(0);
      expect(none.stderr).toMatch(/apps needs a command/);
      expectOneLineError(none.stderr);
    });

    it('serve takes --no-worker and nothing else: another option fails with one line, before anything starts', async () => {
      const r = await svc('serve', '--workers=0');
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/svc serve takes only --no-worker, not --workers=0/);
      expectOneLineError(r.stderr);
      expect((await svc('help')).stdout).toMatch(/serve \[--no-worker\]/);
    });

    it('help prints the usage and exits 0', async () => {
      const r = await svc('help');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/apps create/);
      expect(r.stderr).toBe('');
    });

    it('missing arguments of set-status and rotate-secret fail with one line each', { timeout: 60_000 }, async () => {
      for (const args of [
        ['apps', 'set-status'],
        ['apps', 'set-status', 'web-app', 'paused'],
        ['apps', 'rotate-secret'],
      ]) {
        const r = await svc(...args);
        expect(r.code, args.join(' ')).not.toBe(0);
        expect(r.stderr).toMatch(/usage: apps/);
        expectOneLineError(r.stderr);
      }
    });

    it('a bad setting fails with one line naming it', async () => {
      const r = await runCli(['apps', 'create', '--org', 'acme', '--name', 'X'], { DATABASE_URL: databaseUrl, PORT: 'eighty' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/PORT/);
      expectOneLineError(r.stderr);
    });
  });

  describe('database failures', () => {
    it('a DATABASE_URL that is not a URL fails with one line naming it', async () => {
      const r = await runCli(['apps', 'create', '--org', 'acme', '--name', 'X'], { DATABASE_URL: 'not a url' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/DATABASE_URL is not a valid PostgreSQL URL/);
      expectOneLineError(r.stderr);
    });

    it('a database that refuses the command fails with one line naming the cause, not a stack', async () => {
      // Its own database: a trigger there refuses every new organization.
      const refusing = await createTestDatabase();
      const sql = postgres(refusing, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`
          create function refuse_organizations() returns trigger language plpgsql as $$
          begin raise exception 'organizations are frozen here' using errcode = 'P0001'; end $$;
          create trigger refuse before insert on organizations for each row execute function refuse_organizations();`);
      } finally {
        await sql.end({ timeout: 1 });
      }
      const r = await runCli(['apps', 'create', '--org', 'frozen', '--name', 'X'], { DATABASE_URL: refusing });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^svc: unexpected error: .*P0001.*organizations are frozen here/);
      expectOneLineError(r.stderr);
    });
  });

  describe('embedded PostgreSQL that cannot start', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'svc-cli-embedded-'));
    });
    afterAll(() => {
      rmSync(dir, { recursive: true, force: true });
    });

    it('a DATA_DIR that is not a folder fails with one line naming DATA_DIR', async () => {
      const file = path.join(dir, 'a-file');
      writeFileSync(file, '');
      const r = await runCli(['apps', 'create', '--org', 'acme', '--name', 'X'], { DATABASE_URL: undefined, DATA_DIR: file });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/DATA_DIR/);
      expectOneLineError(r.stderr);
    });

    it('an EMBEDDED_POSTGRES_PORT in use fails with one line naming it, before any initdb', async () => {
      const busy = net.createServer();
      const port = await listen(busy);
      const dataDir = path.join(dir, 'busy');
      try {
        const r = await runCli(['migrate'], { DATABASE_URL: undefined, DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(port) });
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`port ${port}.*EMBEDDED_POSTGRES_PORT`));
        expectOneLineError(r.stderr);
        expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(false);
      } finally {
        busy.close();
        removeEmbeddedPostgres(path.join(dataDir, 'postgres'));
      }
    });
  });

  describe('unreachable DATABASE_URL', () => {
    for (const command of ['serve', 'migrate'] as const) {
      it(`${command} exits non-zero within 30 s with one line naming DATABASE_URL`, async () => {
        const started = Date.now();
        const r = await runCli([command], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nope' });
        expect(Date.now() - started).toBeLessThan(30_000);
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain('DATABASE_URL');
        expectOneLineError(r.stderr);
      });

      it(`${command} redacts the password of an unreachable DATABASE_URL`, async () => {
        const started = Date.now();
        const r = await runCli([command], { DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/x' });
        expect(Date.now() - started).toBeLessThan(30_000);
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain('DATABASE_URL');
        expect(r.stderr).not.toContain('hunter2');
        expect(r.stdout).not.toContain('hunter2');
        expectOneLineError(r.stderr);
      });
    }

    // A port that accepts TCP but never speaks: the connect timeout must fire.
    it('migrate against a silent TCP port exits non-zero within 30 s naming DATABASE_URL', { timeout: 45_000 }, async () => {
      const sockets = new Set<net.Socket>();
      const silent = net.createServer((s) => {
        sockets.add(s);
      });
      const port = await listen(silent);
      try {
        const r = await runCli(['migrate'], { DATABASE_URL: `postgres://u:hunter2@127.0.0.1:${port}/x` }, { deadlineMs: 30_000 });
        expect(r.timedOut, `svc migrate still running after 30 s; stderr: ${r.stderr}`).toBe(false);
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain('DATABASE_URL');
        expect(r.stderr).not.toContain('hunter2');
        expectOneLineError(r.stderr);
      } finally {
        for (const s of sockets) {
          s.destroy();
        }
        silent.close();
      }
    });

    // A port that answers with something other than PostgreSQL and hangs up (a web server, a
    // proxy): a typo'd port in DATABASE_URL must still be a startup error, not a hang.
    for (const command of ['serve', 'migrate'] as const) {
      it(`${command} against a non-PostgreSQL server exits non-zero within 30 s naming DATABASE_URL`, { timeout: 45_000 }, async () => {
        const web = http.createServer((_req, res) => res.end('not postgres'));
        const port = await listen(web);
        try {
          const r = await runCli([command], { DATABASE_URL: `postgres://u:hunter2@127.0.0.1:${port}/x` }, { deadlineMs: 30_000 });
          expect(r.timedOut, `svc ${command} still running after 30 s; stderr: ${r.stderr}`).toBe(false);
          expect(r.code).not.toBe(0);
          expect(r.stderr).toContain('DATABASE_URL');
          expect(r.stderr).not.toContain('hunter2');
          expectOneLineError(r.stderr);
        } finally {
          web.closeAllConnections();
          web.close();
        }
      });
    }

    it('apps create with an unreachable DATABASE_URL also fails in one line', async () => {
      const r = await runCli(['apps', 'create', '--org', 'x', '--name', 'Y'], { DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/x' });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('DATABASE_URL');
      expect(r.stderr).not.toContain('hunter2');
      expectOneLineError(r.stderr);
    });
  });
});

describe('svc serve in development (NODE_ENV=development, LOG_FORMAT unset)', () => {
  it('prints the demo sign-ins and the keyless quickstart as plain lines, and logs readable lines, requests summarised', {
    timeout: 90_000,
  }, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-cli-dev-'));
    const server = await spawnServer({
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      DATABASE_URL: await createTestDatabase(),
      DATA_DIR: dataDir,
      DEV_ENGINE_PORT: String(await freePort()),
    });
    try {
      expect((await fetch(`${server.url}/v1/config`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      const lines = server.output().split('\n');
      expect(lines).toContain('  admin@svc.local / admin-password  (platform-admins)');
      expect(lines).toContain('  user@svc.local / user-password');
      expect(lines.some((l) => l.startsWith(`sign in at ${server.url}/signin`))).toBe(true);
      expect(lines).toContain(
        `keyless quickstart, no account or key: curl '${server.url}/v1/setup/agent-context?keyless=1&framework=express&format=markdown'`,
      );
      // Log entries are readable lines, not JSON objects, and a request is one short line.
      expect(lines.some((l) => /^\d\d:\d\d:\d\d\.\d{3} INFO {2}identity engine: /.test(l))).toBe(true);
      expect(lines.some((l) => /^\S+ INFO {2}GET \/v1\/config 200 [\d.]+ ms$/.test(l))).toBe(true);
      expect(lines.filter((l) => l.startsWith('{'))).toEqual([]);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
