import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Setup links end to end (docs/enterprise.md "Setup links"): the demo user (an org admin of their
 * workspace) creates a directory-sync link on Settings -> Setup links and copies it once; the IT
 * admin, in a browser of their own without any svc account, opens it, creates the directory and
 * copies the SCIM base URL and token with the page's buttons; a second browser opening the same
 * link is refused with a page that says so; the console then shows the link as opened.
 */
describeInChromium('e2e: setup links', () => {
  let server: E2EServer;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer({ databaseUrl: await createTestDatabase() });
    browser = await launchChromium();
    admin = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    admin.setDefaultTimeout(15_000);
    await admin.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    page = await admin.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
  });

  afterAll(async () => {
    await admin?.close();
    await browser?.close();
    await server?.stop();
  });

  /** A browser of its own: no svc session, no cookie of the admin's. */
  async function freshBrowser(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    return { context, page: await context.newPage() };
  }

  it('a directory link: the IT admin copies the SCIM URL and token; a second browser is refused', async () => {
    await signInAt(page, server.url, '/auth/console/settings/setup-links', DEMO_USER);
    await page.getByTestId('page-setup-links').waitFor({ state: 'visible' });
    await page.getByTestId('setup-links-empty').waitFor({ state: 'visible' });

    await page.getByTestId('setup-link-create-open').click();
    const dialog = page.getByTestId('setup-link-create');
    await dialog.waitFor({ state: 'visible' });
    await chooseOption(page, 'setup-link-purpose', 'directory');
    await chooseOption(page, 'setup-link-expiry', '4');
    await dialog.getByTestId('setup-link-label').fill('Acme IT');
    await dialog.getByRole('button', { name: 'Create link' }).click();
    const revealed = page.getByTestId('setup-link-revealed');
    await revealed.waitFor({ state: 'visible' });
    const url = (await revealed.getByTestId('setup-link-url-value').textContent()) ?? '';
    expect(url).toMatch(new RegExp(`^${server.url}/setup/setl_[0-9A-Za-z]{20}\\?token=[0-9A-Za-z]{43}$`));
    await revealed.getByTestId('setup-link-url-copy').click();
    await page.waitForFunction(async (v) => (await navigator.clipboard.readText()) === v, url);
    await revealed.getByTestId('setup-link-url-dismiss').click();
    const row = page.getByTestId('setup-link');
    await row.waitFor({ state: 'visible' });
    expect(await row.getAttribute('data-status')).toBe('unused');

    // The IT admin, in their own browser, with no svc account.
    const itAdmin = await freshBrowser();
    await itAdmin.page.goto(url);
    await itAdmin.page.getByTestId('setup-purpose').waitFor({ state: 'visible' });
    expect(await itAdmin.page.getByTestId('setup-purpose').getAttribute('data-purpose')).toBe('directory');
    await itAdmin.page.getByTestId('setup-directory-name').fill('Okta');
    await itAdmin.page.getByTestId('setup-directory-create').click();
    const scimUrl = (await itAdmin.page.getByTestId('setup-scim-url').textContent()) ?? '';
    const token = (await itAdmin.page.getByTestId('setup-scim-token').textContent()) ?? '';
    expect(scimUrl).toMatch(new RegExp(`^${server.url}/scim/v2/dir_[0-9A-Za-z]{20}$`));
    expect(token).toMatch(/^scim_[0-9A-Za-z]{40}$/);
    await itAdmin.page.getByTestId('setup-scim-url-copy').click();
    await itAdmin.page.waitForFunction(async (v) => (await navigator.clipboard.readText()) === v, scimUrl);
    await itAdmin.page.getByTestId('setup-scim-token-copy').click();
    await itAdmin.page.waitForFunction(async (v) => (await navigator.clipboard.readText()) === v, token);
    await saveScreenshot(itAdmin.page, 'setup-link-directory');
    // The token the page gave is the directory's: the IdP's first SCIM request passes.
    const scim = await fetch(`${scimUrl}/Users`, { headers: { authorization: `Bearer ${token}` } });
    expect(scim.status).toBe(200);
    // Reloading keeps the page (this browser holds the link) and never shows the token again.
    await itAdmin.page.reload();
    await itAdmin.page.getByTestId('setup-scim-token-prefix').waitFor({ state: 'visible' });
    expect(await itAdmin.page.content()).not.toContain(token);

    // Someone else opens the same link: refused, with a page that says why.
    const other = await freshBrowser();
    const refused = await other.page.goto(url);
    expect(refused?.status()).toBe(409);
    expect(await other.page.getByTestId('hosted-heading').textContent()).toBe('This setup link was opened already');
    expect(await other.page.getByTestId('setup-refusal-code').textContent()).toBe('setup_link_used');
    expect(await other.page.getByTestId('setup-scim-url').count()).toBe(0);
    await saveScreenshot(other.page, 'setup-link-refused');
    await other.context.close();
    await itAdmin.context.close();

    // The console shows it opened.
    await page.reload();
    await page.locator('[data-testid="setup-link"][data-status="opened"]').waitFor({ state: 'visible' });
    expect(pageErrors).toEqual([]);
  });
});
