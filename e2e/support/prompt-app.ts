import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TFramework } from '@svc/contracts/agent-context';
import { createDatabase, type Database } from '@svc/db/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './browser.ts';
import { followPrompt, type Member, type PromptStep, type RunningApp, startApp, tokensFor } from './follow-prompt.ts';
import { type E2EServer, startServer } from './server.ts';
import { DEMO_USER, passwordSignIn } from './sign-in.ts';

export type PromptAppOptions = {
  framework: TFramework;
  /** The framework's default development origin, where the Run command serves the app. */
  origin: string;
  /** The prompt's steps as `file <path>` or section names, in order. */
  steps: string[];
  /** Sections whose commands this machine cannot run as written (see followPrompt). */
  skip?: string[];
  /** Extra environment of the commands and the app (PATH and HOME are always passed). */
  env?: Record<string, string>;
  /** The app serves /api/me that verifies svc's access tokens (server frameworks). */
  verifiesAccessTokens: boolean;
  /**
   * The product's catalog, written before the context is read: one API resource, its
   * permissions, and those the built-in org_admin role grants (the demo person is org_admin of
   * their workspace). Without it the catalog stays empty and the app checks the example name.
   */
  catalog?: ProductCatalog;
  /**
   * The origin a person opens: the URL the Run command prints when it differs from `origin`
   * (Flask and uvicorn print 127.0.0.1 while the redirect URI says localhost), or another name
   * for the same app. The app must send the browser to `origin` before sign-in starts.
   */
  opensAt?: string;
  /** Checks of what the app printed (stdout and stderr), once a person has signed in and out. */
  output?: (output: string) => void;
  /** Further checks of the generated project (the .env, the Run command). */
  inspect?: (project: { dir: string; run: string; steps: PromptStep[]; serverUrl: string; clientId: string }) => void;
};

export type ProductCatalog = { identifier: string; name: string; permissions: string[]; orgAdmin: string[] };

/** The name the context has an app check while no API declares a permission (setup/frameworks/shared.ts). */
const EXAMPLE_PERMISSION = 'invoices.read';

/** The catalog as svc stores it, through the test's database, and org_admin's product permissions. */
async function seedCatalog(sql: Database['sql'], catalog: ProductCatalog): Promise<void> {
  await sql`insert into api_resources (id, identifier, name) values ('res_e2ecatalogresource01', ${catalog.identifier}, ${catalog.name})`;
  for (const [i, name] of catalog.permissions.entries()) {
    await sql`insert into api_permissions (id, resource_id, name) values (${`prm_e2ecatalogpermiss${String(i).padStart(2, '0')}`}, 'res_e2ecatalogresource01', ${name})`;
  }
  await grantOrgAdmin(sql, catalog.orgAdmin);
}

async function grantOrgAdmin(sql: Database['sql'], permissions: string[]): Promise<void> {
  await sql`update product_roles set permissions = ${[...permissions].sort()}::text[] where key = 'org_admin'`;
}

/**
 * The agent context of one framework followed word for word, as its own e2e suite: the prompt's
 * commands run as written and its files written as given in an empty folder, its Run command
 * started; then a person signs in to the generated app in Chromium through svc and the
 * development engine, the protected /profile page shows their email, id, organization, product
 * role, product permissions ("none yet" for none) and whether they hold the one product permission
 * the context named (elements #email, #sub, #org_slug, #org_role, #permissions,
 * #checked_permission, #allowed), "Sign out" ends the app's and svc's sessions through the
 * end-session endpoint, and (server frameworks) /api/me verifies svc's access tokens against the
 * JWKS, answers the role and the check, and refuses forged tokens.
 */
export function describePromptApp(opts: PromptAppOptions): void {
  describeInChromium(`e2e: the ${opts.framework} agent context, followed literally`, () => {
    let server: E2EServer;
    let database: Database;
    let browser: Browser;
    let app: RunningApp | undefined;
    let clientId: string;
    /** The Run command, the environment file and the claim step the context gave before the claim. */
    let run = '';
    let envFile = '';
    let claimStep = '';
    let claimUrl = '';
    /** When svc answered healthy: the scenario's clock starts there. */
    let healthyAt = 0;
    const dir = mkdtempSync(path.join(os.tmpdir(), `svc-${opts.framework}-app-`));
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...opts.env } as NodeJS.ProcessEnv;
    const catalog = opts.catalog;
    /** What the context must name: the catalog's first permission by name, else the example. */
    const checked = catalog ? ([...catalog.permissions].sort()[0] as string) : EXAMPLE_PERMISSION;
    /** The demo person's product permissions as org_admin, sorted as svc stores them. */
    const granted = catalog ? [...catalog.orgAdmin].sort() : [];

    beforeAll(async () => {
      const databaseUrl = await createTestDatabase();
      server = await startServer({ databaseUrl });
      healthyAt = Date.now();
      database = createDatabase({ url: databaseUrl, max: 2, applicationName: `svc-e2e-prompt-${opts.framework}` });
      if (catalog) {
        await seedCatalog(database.sql, catalog);
      }
      browser = await launchChromium();
    });

    afterAll(async () => {
      await app?.stop();
      await browser?.close();
      await database?.close();
      await server?.stop();
      // The app's own workers (Next.js's) may still be flushing their cache as the group ends.
      rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    });

    async function member(): Promise<Member> {
      const [row] = await database.sql<Member[]>`
        select m.user_id, m.tenant_id, o.slug, m.role_key from memberships m
        join organizations o on o.id = m.tenant_id join users u on u.id = m.user_id
        where u.email = ${DEMO_USER.email} and o.kind = 'tenant'`;
      return row as Member;
    }

    it('builds the app from the served prompt with no edits, and it starts on the framework default port', {
      timeout: 420_000,
    }, async () => {
      const res = await fetch(`${server.url}/v1/setup/agent-context?keyless=1&framework=${opts.framework}`);
      expect(res.status).toBe(200);
      const context = (await res.json()) as {
        aiAgentPrompt: string;
        steps: string[];
        claimUrl: string;
        framework: { envFile: string };
        oidc: { issuer: string; clientId: string };
        permissionCheck: { permission: string; source: string; resource: { identifier: string } | null };
      };
      clientId = context.oidc.clientId;
      expect(context.oidc.issuer).toBe(server.url);
      expect(context.permissionCheck).toMatchObject(
        catalog
          ? { permission: checked, source: 'catalog', resource: { identifier: catalog.identifier } }
          : { permission: EXAMPLE_PERMISSION, source: 'example', resource: null },
      );

      const followed = followPrompt(context.aiAgentPrompt, dir, { skip: opts.skip, env });
      const steps = followed.steps;
      run = followed.run;
      envFile = context.framework.envFile;
      claimUrl = context.claimUrl;
      claimStep = context.steps.find((s) => s.startsWith('To claim this application')) ?? '';
      expect(claimStep).toContain(claimUrl);
      expect(context.aiAgentPrompt).toContain(claimStep);
      expect(steps.map((s) => (s.kind === 'file' ? `file ${s.path}` : s.section))).toEqual(opts.steps);
      opts.inspect?.({ dir, run, steps, serverUrl: server.url, clientId });
      app = await startApp(run, dir, opts.origin, { env, timeoutMs: 240_000 });
    });

    it('signs a person in: the protected page shows who they are, their organization, product role and permissions and the permission check; sign-out ends both sessions', {
      timeout: 180_000,
    }, async () => {
      expect(app, 'the app runs').toBeDefined();
      const context = await browser.newContext();
      const page: Page = await context.newPage();
      page.setDefaultTimeout(60_000);
      // Opened where the Run command says (or under another name): on to the redirect URI's
      // host first, then svc's hosted sign-in for this application, the engine, and back.
      const opened = page.waitForRequest((req) => req.url().startsWith(`${opts.origin}/profile`));
      await page.goto(`${opts.opensAt ?? opts.origin}/profile`);
      await opened;
      await page.waitForURL((url) => url.origin === server.url);
      await passwordSignIn(page, server.url, DEMO_USER);
      await page.waitForURL(`${opts.origin}/profile`);
      await page.locator('#org_slug').waitFor();
      // The issue's figure, printed (not asserted): svc healthy -> the prompt followed, the app
      // installed and started -> a person signed in to it.
      console.log(`[figure] ${opts.framework}: svc healthy to first signed-in request ${((Date.now() - healthyAt) / 1000).toFixed(1)} s`);
      const who = await member();
      expect(await page.locator('#email').textContent()).toBe(DEMO_USER.email);
      expect(await page.locator('#sub').textContent()).toBe(who.user_id);
      expect(await page.locator('#org_slug').textContent()).toBe(who.slug);
      expect(await page.locator('#org_role').textContent()).toBe(who.role_key);
      expect(who.role_key).toBe('org_admin');
      // The product's permissions, never svc's own control-plane ones.
      expect(await page.locator('#permissions').textContent()).toBe(granted.join(' ') || 'none yet');
      expect(await page.locator('#checked_permission').textContent()).toBe(checked);
      expect(await page.locator('#allowed').textContent()).toBe(granted.includes(checked) ? 'yes' : 'no');
      await saveScreenshot(page, `agent-prompt-${opts.framework}-profile`);

      // Sign-out through svc's end-session endpoint with the ID token as hint: no page on svc
      // (the hint names the current session), through the engine, back to the app.
      const discovery = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as { end_session_endpoint: string };
      const endSession = page.waitForRequest((req) => req.url().split('?')[0] === discovery.end_session_endpoint);
      const svcPages: string[] = [];
      page.on('response', (res) => {
        if (res.url().startsWith(server.url) && res.status() === 200 && res.request().resourceType() === 'document') {
          svcPages.push(res.url());
        }
      });
      await page
        .getByRole('link', { name: 'Sign out' })
        .or(page.getByRole('button', { name: 'Sign out' }))
        .first()
        .click();
      // RP-initiated logout: the ID token as hint and a return URL on the app.
      const logout = new URL((await endSession).url());
      expect(logout.searchParams.get('id_token_hint')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(new URL(logout.searchParams.get('post_logout_redirect_uri') ?? 'about:blank').origin).toBe(opts.origin);
      await page.waitForURL((url) => url.origin === opts.origin);
      await page
        .getByRole('link', { name: 'Sign in' })
        .or(page.getByRole('button', { name: 'Sign in' }))
        .first()
        .waitFor();
      expect(svcPages, 'pages svc showed during sign-out').toEqual([]);
      // Both sessions ended: the protected page needs a new sign-in at svc.
      await page.goto(`${opts.origin}/profile`);
      await page.waitForURL((url) => url.origin === server.url);
      await page.locator('#email').waitFor();
      await context.close();
      opts.output?.(app?.output() ?? '');
    });

    if (opts.verifiesAccessTokens) {
      it("verifies svc's access token against the JWKS: the right one passes with its role and permission check, others get 401", async () => {
        const { accessToken: token, idToken } = await tokensFor(server.url, clientId);
        const who = await member();
        const ok = await fetch(`${opts.origin}/api/me`, { headers: { authorization: `Bearer ${token}` } });
        expect(ok.status).toBe(200);
        expect(await ok.json()).toEqual({
          sub: who.user_id,
          org_id: who.tenant_id,
          org_slug: who.slug,
          org_role: who.role_key,
          permissions: granted,
          check: { permission: checked, allowed: granted.includes(checked) },
        });

        const [h, p, s] = token.split('.') as [string, string, string];
        const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
        const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, org_role: 'org_admin', org_slug: 'someone-else' })).toString('base64url')}.${s}`;
        for (const [label, headers] of [
          ['no token', {}],
          ['forged claims', { authorization: `Bearer ${forged}` }],
          // Signed by svc, for this client, unexpired: refused only because it is not an access token (typ at+jwt).
          ['an ID token', { authorization: `Bearer ${idToken}` }],
          ['garbage', { authorization: 'Bearer abc.def.ghi' }],
        ] as const) {
          const res = await fetch(`${opts.origin}/api/me`, { headers });
          expect(res.status, label).toBe(401);
        }
      });

      if (catalog) {
        it('answers false for the checked permission once org_admin no longer grants it (the next token)', async () => {
          // org_admin now holds the catalog's other permissions, not the checked one.
          const rest = catalog.permissions.filter((p) => p !== checked).sort();
          expect(granted).toContain(checked);
          await grantOrgAdmin(database.sql, rest);
          try {
            const { accessToken } = await tokensFor(server.url, clientId);
            const res = await fetch(`${opts.origin}/api/me`, { headers: { authorization: `Bearer ${accessToken}` } });
            expect(res.status).toBe(200);
            expect(await res.json()).toMatchObject({
              org_role: 'org_admin',
              permissions: rest,
              check: { permission: checked, allowed: false },
            });
          } finally {
            await grantOrgAdmin(database.sql, granted);
          }
        });
      }
    }

    it("is claimed in Chromium, the claim page's steps are followed, and the app signs the person in again", {
      timeout: 300_000,
    }, async () => {
      expect(app, 'the app runs').toBeDefined();
      // The choice the context named before the claim, by framework.
      const server_ = claimStep.includes('choose "It has a server"');
      expect(server_ || claimStep.includes('choose "It runs only in the browser"'), claimStep).toBe(true);
      const context = await browser.newContext();
      const page: Page = await context.newPage();
      page.setDefaultTimeout(60_000);
      await page.goto(claimUrl);
      await page.waitForURL((url) => url.pathname === '/signin');
      await passwordSignIn(page, server.url, DEMO_USER);
      await page.waitForURL(`${server.url}/keyless/claim`);
      // The URL this app signed in through is the one the claim keeps registered.
      const kept = await page.getByTestId('claim-url').allTextContents();
      expect(kept.filter((url) => url.startsWith(`${opts.origin}/`)).length, kept.join(' ')).toBeGreaterThan(0);
      await page.getByTestId(server_ ? 'claim-client-type-confidential' : 'claim-client-type-public').check();
      await page.getByTestId('claim-confirm').click();
      const secretKey = (await page.getByTestId('claimed-secret-key').textContent()) ?? '';
      expect(secretKey).toMatch(/^sk_live_/);
      const steps = (await page.getByTestId('claimed-step').allTextContents()).join(' ');
      await saveScreenshot(page, `agent-prompt-${opts.framework}-claimed`);
      await context.close();

      if (server_) {
        // The page's steps: the secret key after SVC_SECRET_KEY= in the environment file, then a restart.
        expect(steps).toContain('SVC_SECRET_KEY=');
        expect(steps).toContain('Restart the app');
        const file = path.join(dir, envFile);
        const before = readFileSync(file, 'utf8');
        expect(before).toMatch(/^SVC_SECRET_KEY=$/m);
        writeFileSync(file, before.replace(/^SVC_SECRET_KEY=$/m, `SVC_SECRET_KEY=${secretKey}`));
        await app?.stop();
        app = await startApp(run, dir, opts.origin, { env, timeoutMs: 240_000 });
      } else {
        expect(steps).toContain('Nothing changes in your app');
      }

      // Signed in again, in a fresh browser, through the claimed application.
      const again = await browser.newContext();
      const page2: Page = await again.newPage();
      page2.setDefaultTimeout(60_000);
      await page2.goto(`${opts.origin}/profile`);
      await page2.waitForURL((url) => url.origin === server.url);
      await passwordSignIn(page2, server.url, DEMO_USER);
      await page2.waitForURL(`${opts.origin}/profile`);
      expect(await page2.locator('#email').textContent()).toBe(DEMO_USER.email);
      const [row] = await database.sql<{ client_type: string; is_keyless: boolean }[]>`
        select client_type, is_keyless from applications where id = ${clientId}`;
      expect(row).toEqual({ client_type: server_ ? 'confidential' : 'public', is_keyless: false });
      // Sign-out still returns to the app (its post-logout URL was kept too), through svc's
      // end-session endpoint and without a page there (the hint is the current session's).
      const { end_session_endpoint } = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as {
        end_session_endpoint: string;
      };
      const endSession2 = page2.waitForRequest((req) => req.url().split('?')[0] === end_session_endpoint);
      await page2
        .getByRole('link', { name: 'Sign out' })
        .or(page2.getByRole('button', { name: 'Sign out' }))
        .first()
        .click();
      expect(new URL((await endSession2).url()).searchParams.get('post_logout_redirect_uri')).toMatch(new RegExp(`^${opts.origin}`));
      await page2
        .getByRole('link', { name: 'Sign in' })
        .or(page2.getByRole('button', { name: 'Sign in' }))
        .first()
        .waitFor();
      expect(new URL(page2.url()).origin).toBe(opts.origin);
      await again.close();
    });
  });
}

/** The .env an environment step wrote, as name -> value. */
export function readEnvFile(file: string): Map<string, string> {
  return new Map(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line): [string, string] => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}
