import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../apps/api/src/modules/domains/dns-server.fixtures.ts';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Organization settings -> Domains end to end (docs/enterprise.md "Domains"): `svc serve` asks a
 * DNS server of the test's own. The demo user (an org admin of their workspace) adds a domain,
 * copies the TXT record the page shows, "publishes" it, verifies, chooses auto-join with a role,
 * and deletes the domain after confirming. On Settings -> Third-party access, the admin lists the
 * agents their organization allows (a bad entry is caught before saving) and the choice is kept.
 */
describeInChromium('e2e: console domains and third-party access', () => {
  let databaseUrl: string;
  let dns: TestDnsServer;
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    dns = await startDnsServer();
    databaseUrl = await createTestDatabase();
    server = await startServer({ databaseUrl, env: { DNS_RESOLVER: dns.address, DNS_TIMEOUT_MS: '1000' } });
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
    await dns?.close();
  });

  async function domainRow(domain: string) {
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ verified_at: Date | null; policy: string; auto_join_role_key: string | null }[]>`
        select verified_at, policy, auto_join_role_key from organization_domains where domain = ${domain}`;
      return row;
    } finally {
      await sql.end();
    }
  }

  it('add, copy the TXT record, verify, choose auto-join with a role, delete with confirmation', async () => {
    await signInAt(page, server.url, '/auth/console/settings/domains', DEMO_USER);
    await page.getByTestId('page-domains').waitFor({ state: 'visible' });
    await page.getByTestId('domains-empty').waitFor({ state: 'visible' });
    expect(await page.getByTestId('nav-domains').getAttribute('aria-current')).toBe('page');

    // Bad input: the API's message in the dialog, nothing added.
    await page.getByTestId('domains-add-open').click();
    const dialog = page.getByTestId('domains-add');
    await dialog.waitFor({ state: 'visible' });
    await dialog.getByTestId('domains-add-domain').fill('co.uk');
    await dialog.getByRole('button', { name: 'Add domain' }).click();
    await dialog.getByText('public suffix').waitFor({ state: 'visible' });

    await dialog.getByTestId('domains-add-domain').fill(' Acme-E2E.Example. ');
    await dialog.getByRole('button', { name: 'Add domain' }).click();
    await dialog.waitFor({ state: 'detached' });
    const panel = page.locator('[data-testid="domain"][data-domain="acme-e2e.example"]');
    await panel.waitFor({ state: 'visible' });
    expect(await panel.getAttribute('data-status')).toBe('pending');
    const name = (await panel.getByTestId('domain-record-name').textContent()) ?? '';
    const value = (await panel.getByTestId('domain-record-value').textContent()) ?? '';
    expect(name).toBe('_svc-verification.acme-e2e.example');
    expect(value).toMatch(/^svc-domain-verification=[0-9A-Za-z]{32}$/);

    // The copy button puts the exact value on the clipboard, as the admin pastes it at their DNS host.
    await panel.getByTestId('domain-record-value-copy').click();
    await page.waitForFunction(async (v) => (await navigator.clipboard.readText()) === v, value);

    // Verify before the record exists: still pending, and the page says why.
    await panel.getByTestId('domain-verify').click();
    await panel.getByTestId('domain-check-error').waitFor({ state: 'visible' });
    expect(await panel.getByTestId('domain-check-error').textContent()).toContain('not found');
    expect(await panel.getAttribute('data-status')).toBe('pending');

    dns.records.set(name, [value]);
    await panel.getByTestId('domain-verify').click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="domain"][data-domain="acme-e2e.example"]')?.getAttribute('data-status') === 'verified',
    );
    expect(await panel.getByTestId('domain-status').textContent()).toBe('verified');
    expect((await domainRow('acme-e2e.example'))?.verified_at).not.toBeNull();

    // Policy: auto-join as a member.
    await chooseOption(page, 'domain-policy-select', 'auto_join');
    await chooseOption(page, 'domain-role-select', 'org_member');
    await panel.getByTestId('domain-policy-save').click();
    await page.getByText('Policy of acme-e2e.example saved').waitFor({ state: 'visible' });
    expect(await domainRow('acme-e2e.example')).toMatchObject({ policy: 'auto_join', auto_join_role_key: 'org_member' });
    await saveScreenshot(page, 'domains-verified');

    // Delete: the dialog names the domain and wants it typed.
    await panel.getByTestId('domain-delete').click();
    const confirm = page.getByTestId('domain-delete-dialog');
    await confirm.waitFor({ state: 'visible' });
    expect(await confirm.getByTestId('domain-delete-dialog-confirm').isDisabled()).toBe(true);
    await confirm.getByTestId('domain-delete-dialog-input').fill('acme-e2e.example');
    await confirm.getByTestId('domain-delete-dialog-confirm').click();
    await panel.waitFor({ state: 'detached' });
    await page.getByTestId('domains-empty').waitFor({ state: 'visible' });
    expect(await domainRow('acme-e2e.example')).toBeUndefined();

    expect(pageErrors, 'uncaught exceptions in the page').toEqual([]);
    pageErrors = [];
  });

  it('third-party access: any by default, then only listed agents, a bad entry caught before saving', async () => {
    await page.goto(`${server.url}/auth/console/settings/third-party-access`);
    await page.getByTestId('page-third-party-access').waitFor({ state: 'visible' });
    expect(await page.getByTestId('nav-third-party-access').getAttribute('aria-current')).toBe('page');
    expect(await page.getByTestId('third-party-mode').textContent()).toContain('Any app or agent');

    await chooseOption(page, 'third-party-mode', 'listed');
    const list = page.getByTestId('third-party-clients');
    await list.fill('http://agents.example.com/*');
    await page.getByTestId('third-party-clients-field-error').getByText('Not an https client id').waitFor({ state: 'visible' });
    expect(await page.getByTestId('third-party-save').isDisabled()).toBe(true);
    await list.fill('https://agents.example.com/*\nhttps://claude.example/oauth/client.json');
    await page.getByTestId('third-party-save').click();
    await page.getByText('Third-party access saved').waitFor({ state: 'visible' });

    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ mode: string; clients: string[] }[]>`select mode, clients from third_party_access`;
      expect(row).toEqual({ mode: 'listed', clients: ['https://agents.example.com/*', 'https://claude.example/oauth/client.json'] });
    } finally {
      await sql.end();
    }
    await page.reload();
    await page.getByTestId('third-party-clients').waitFor({ state: 'visible' });
    expect(await page.getByTestId('third-party-clients').inputValue()).toBe(
      'https://agents.example.com/*\nhttps://claude.example/oauth/client.json',
    );

    // A grant the demo user gave an agent (as oidc-provider stores one): listed, then revoked.
    const seed = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [workspace] = await seed<{ id: string; slug: string; user_id: string }[]>`
        select o.id, o.slug, u.id as user_id from organizations o
          join memberships m on m.tenant_id = o.id join users u on u.id = m.user_id
         where u.email = 'user@svc.local' and o.kind = 'tenant' limit 1`;
      const payload = {
        kind: 'Grant',
        accountId: workspace?.user_id,
        clientId: 'https://agents.example.com/notes/client.json',
        openid: { scope: 'openid offline_access' },
        resources: { 'https://mcp.example/mcp': 'notes.read notes.write' },
        organization: { id: workspace?.id, slug: workspace?.slug },
        iat: Math.floor(Date.now() / 1000),
      };
      await seed`insert into oidc_payloads (model, id, payload, expires_at)
        values ('Grant', 'e2e-grant-0000000000000000', ${JSON.stringify(payload)}::text::jsonb, now() + interval '1 day')`;
    } finally {
      await seed.end();
    }
    await page.reload();
    const row = page.locator('[data-testid="connected-app"][data-client-id="https://agents.example.com/notes/client.json"]');
    await row.waitFor({ state: 'visible' });
    expect(await row.getByTestId('connected-app-host').textContent()).toBe('agents.example.com');
    expect(await row.getByTestId('connected-app-user').textContent()).toBe('user@svc.local');
    expect(await row.getByTestId('connected-app-permissions').textContent()).toBe('notes.read, notes.write');
    await saveScreenshot(page, 'third-party-access');
    await row.getByTestId('connected-app-revoke').click();
    await page.getByTestId('connected-app-revoke-dialog-confirm').click();
    await page.getByTestId('connected-apps-empty').waitFor({ state: 'visible' });
    const check = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      expect(await check`select 1 from oidc_payloads where model = 'Grant' and id = 'e2e-grant-0000000000000000'`).toHaveLength(0);
    } finally {
      await check.end();
    }
    expect(pageErrors, 'uncaught exceptions in the page').toEqual([]);
  });
});
