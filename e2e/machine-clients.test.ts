import { generateKeyPairSync } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Machine clients in the console (issue 29 item 5): an org admin creates one with the Machine
 * type (no redirect or origin fields, the product's permissions by API resource), then switches
 * it to private_key_jwt: a pasted private key is refused with the API's message, a public one is
 * saved and shown by kid.
 */
describeInChromium('e2e: machine clients in the console', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    // The product's catalog (its own routes are another piece of work): two APIs; org admins hold invoices.*.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    const id = (prefix: string, tail: string) => `${prefix}_${tail.padStart(20, '0')}`;
    try {
      await sql`insert into api_resources (id, identifier, name) values
        (${id('res', 'invoices')}, 'https://api.invoices.example', 'Invoices'),
        (${id('res', 'reports')}, 'https://api.reports.example', 'Reports')`;
      await sql`insert into api_permissions (id, resource_id, name, description) values
        (${id('prm', '1')}, ${id('res', 'invoices')}, 'invoices.read', 'Read invoices'),
        (${id('prm', '2')}, ${id('res', 'invoices')}, 'invoices.create', 'Create invoices'),
        (${id('prm', '3')}, ${id('res', 'reports')}, 'reports.export', 'Export reports')`;
      await sql`update product_roles set permissions = ${['invoices.create', 'invoices.read']} where key = 'org_admin'`;
    } finally {
      await sql.end({ timeout: 1 });
    }
    server = await startServer({ databaseUrl });
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
  });

  it('create a machine client with permissions, then give it keys for private_key_jwt', async () => {
    await signInAt(page, server.url, '/auth/console/applications', DEMO_USER);
    await page.getByTestId('application-create-open').click();
    await page.getByTestId('application-create').waitFor({ state: 'visible' });
    await page.getByTestId('application-name-input').fill('Nightly billing');
    await page.getByTestId('application-create-client-type').click();
    await page.getByTestId('application-create-client-type-option-machine').click();
    // The product's permissions, by API resource.
    const picker = page.getByTestId('application-create-machine-permissions');
    await picker.getByTestId('application-create-machine-permissions-invoices.read').waitFor({ state: 'visible' });
    expect(await picker.locator('.permission-group__head').allTextContents()).toEqual([
      'Invoices https://api.invoices.example',
      'Reports https://api.reports.example',
    ]);
    // No redirect or origin fields for a machine client.
    expect(await page.getByTestId('application-redirect-urls').count()).toBe(0);
    await saveScreenshot(page, 'console-machine-client-create');
    // One the org admin does not hold: the API refuses it and the dialog says so.
    await picker.getByTestId('application-create-machine-permissions-reports.export').check();
    await page.getByTestId('application-create-submit').click();
    const refusal = page.getByTestId('application-create').getByTestId('error-panel');
    await refusal.waitFor({ state: 'visible' });
    expect(await refusal.getByTestId('error-code').textContent()).toBe('forbidden');
    expect(await refusal.getByTestId('error-message').textContent()).toContain('reports.export');
    await picker.getByTestId('application-create-machine-permissions-reports.export').uncheck();
    await picker.getByTestId('application-create-machine-permissions-invoices.read').check();
    await page.getByTestId('application-create-submit').click();

    const revealed = page.getByTestId('application-revealed');
    await revealed.waitFor({ state: 'visible' });
    expect((await page.getByTestId('application-secret-value').textContent()) ?? '').toMatch(/^sk_live_/);
    await page.getByTestId('application-secret-dismiss').click();
    await revealed.waitFor({ state: 'hidden' });

    // The detail: a machine client, its token endpoint and permissions; nothing about sign-in.
    await page.getByTestId('application-machine').waitFor({ state: 'visible' });
    expect(await page.getByTestId('application-oidc-client-type').textContent()).toMatch(/^machine/);
    expect(await page.getByTestId('application-machine-token-endpoint').textContent()).toBe(`${server.url}/oidc/token`);
    expect(await page.getByTestId('application-machine-permissions').textContent()).toBe('invoices.read');
    expect(await page.getByTestId('application-machine-auth-method').textContent()).toMatch(/^client_secret_basic/);
    expect(await page.getByTestId('application-try-sign-in').count()).toBe(0);
    expect(await page.getByTestId('application-oidc-redirect-urls').count()).toBe(0);
    await saveScreenshot(page, 'console-machine-client-created');

    // Settings: no redirect or origin fields; switch to private_key_jwt.
    await page.getByTestId('application-edit-open').click();
    await page.getByTestId('application-settings').waitFor({ state: 'visible' });
    expect(await page.getByTestId('application-redirect-urls').count()).toBe(0);
    expect(await page.getByTestId('application-allowed-origins').count()).toBe(0);
    await page.getByTestId('application-settings-machine-auth-method').click();
    await page.getByTestId('application-settings-machine-auth-method-option-private_key_jwt').click();
    const jwks = page.getByTestId('application-settings-machine-jwks');
    await jwks.fill('{ "keys": [');
    await page.getByTestId('application-settings-submit').click();
    await page.getByTestId('application-settings-machine-jwks-error').waitFor({ state: 'visible' });
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await jwks.fill(JSON.stringify({ keys: [{ ...pair.privateKey.export({ format: 'jwk' }), kid: 'job-key' }] }));
    await page.getByTestId('application-settings-submit').click();
    const invalid = page.getByTestId('application-settings').getByTestId('error-panel');
    await invalid.waitFor({ state: 'visible' });
    expect(await invalid.getByTestId('error-code').textContent()).toBe('jwks_invalid');
    expect(await invalid.getByTestId('error-message').textContent()).toContain('private key material');
    await jwks.fill(JSON.stringify({ keys: [{ ...pair.publicKey.export({ format: 'jwk' }), kid: 'job-key' }] }, null, 2));
    await page.getByTestId('application-settings-machine-permissions-invoices.create').check();
    await page.getByTestId('application-settings-submit').click();
    await page.getByTestId('application-settings').waitFor({ state: 'hidden' });
    await page.getByTestId('application-machine-auth-method').filter({ hasText: 'private_key_jwt' }).waitFor();
    expect(await page.getByTestId('application-machine-keys').textContent()).toContain('job-key');
    expect(await page.getByTestId('application-machine-permissions').locator('li').allTextContents()).toEqual([
      'invoices.create',
      'invoices.read',
    ]);
    await saveScreenshot(page, 'console-machine-client-keys');

    expect(await page.getByTestId('error-panel').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
