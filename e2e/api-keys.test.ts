import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * The API-key flow end to end: a tenant admin creates a key in the console's create dialog (the
 * secret is shown once), a backend service uses it against the API, the admin revokes it from the
 * row's menu, confirmed by typing the key's name, and the very same call is then refused. The page
 * is the example every converted console page follows (DataTable, Identifier, FormDialog,
 * RowActions, ConfirmDialog), so its parts are checked here as an admin meets them: keyboard,
 * sorting, a phone's width, the dark scheme.
 */
describeInChromium('e2e: tenant API keys in the console', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
  });

  async function freshPage(): Promise<Page> {
    await context?.close();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    // The copy buttons write to the clipboard; the test reads it back.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** A backend service's call: plain fetch from Node with the key, no cookie. */
  async function asService(secretKey: string, path: string) {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${secretKey}` } });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  /** Opens the create dialog from the page header, fills it and creates; returns the secret shown once. */
  async function createInDialog(page: Page, name: string, scopes: string[]): Promise<string> {
    await page.getByRole('button', { name: 'Create API key' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Create API key' });
    await dialog.waitFor({ state: 'visible' });
    await dialog.getByLabel('Name', { exact: true }).fill(name);
    for (const scope of scopes) {
      await dialog.getByTestId(`api-key-scope-${scope}`).check();
    }
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.waitFor({ state: 'detached' });
    const secret = page.getByTestId('api-key-secret-value');
    await secret.waitFor({ state: 'visible' });
    return (await secret.textContent()) ?? '';
  }

  const rowOf = (page: Page, name: string) =>
    page.getByTestId('api-key-row').filter({ has: page.getByTestId('api-key-name').getByText(name, { exact: true }) });

  it('create a key (secret once), use it against the API, revoke it in the console: the same call is then 401', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/api-keys', DEMO_USER);
    await page.getByTestId('api-keys-empty').waitFor({ state: 'visible' });
    const me = await page.evaluate(async () => (await fetch('/v1/me')).json());
    const orgId = me.activeWorkspace.id as string;
    expect(orgId).toMatch(/^ten_/);

    // The empty list's button opens the create dialog with the name field focused.
    await page.getByTestId('api-keys-empty-action').click();
    const dialog = page.getByRole('dialog', { name: 'Create API key' });
    await dialog.waitFor({ state: 'visible' });
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'api-key-name-input');

    // The form validates with the contracts schema before anything is sent, in the console's words,
    // each message under (or beside) its own field.
    await dialog.getByRole('button', { name: 'Create key' }).click();
    expect(await dialog.getByTestId('api-key-name-error').textContent()).toBe('Enter a name.');
    expect(await dialog.getByTestId('api-key-scopes-error').textContent()).toBe('Choose at least one scope.');
    expect(await dialog.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await saveScreenshot(page, 'api-keys-create-errors');

    // Presets fill the grid; the admin adjusts from there.
    await dialog.getByRole('button', { name: 'Read only' }).click();
    const checked = () =>
      dialog.locator('input[type="checkbox"]:checked').evaluateAll((all) => all.map((box) => (box as HTMLInputElement).value));
    const readScopes = await checked();
    expect(readScopes.length).toBeGreaterThan(2);
    expect(readScopes.every((scope) => scope.endsWith('.read'))).toBe(true);
    // Fixing the scopes clears their error at once.
    await dialog.getByTestId('api-key-scopes-error').waitFor({ state: 'detached' });
    await dialog.getByRole('button', { name: 'None' }).click();
    expect(await checked()).toEqual([]);

    await dialog.getByLabel('Name', { exact: true }).fill('Backend sync');
    // Expiry from the styled select: it opens, the option is picked, the trigger says it.
    await dialog.getByRole('combobox', { name: 'Expires' }).click();
    await page.getByRole('option', { name: 'In 30 days' }).click();
    expect(await dialog.getByRole('combobox', { name: 'Expires' }).textContent()).toContain('In 30 days');
    await dialog.getByTestId('api-key-scope-tenant.read').check();
    await dialog.getByTestId('api-key-scope-members.read').check();
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.waitFor({ state: 'detached' });

    // The secret, once, in a dialog that a stray Escape does not close.
    const revealed = page.getByTestId('api-key-revealed');
    await revealed.waitFor({ state: 'visible' });
    expect(await revealed.getByRole('heading').textContent()).toBe('Key Backend sync created');
    const secret = page.getByTestId('api-key-secret-value');
    const secretKey = (await secret.textContent()) ?? '';
    expect(secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    await page.getByTestId('api-key-secret-copy').click();
    await page.getByTestId('api-key-secret-copy').filter({ hasText: 'Copied' }).waitFor();
    await page.locator('[data-sonner-toast]').filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secretKey);
    await saveScreenshot(page, 'api-keys-secret-shown');
    await page.keyboard.press('Escape');
    expect(await revealed.isVisible()).toBe(true);
    await page.getByTestId('api-key-secret-dismiss').click();
    await revealed.waitFor({ state: 'detached' });

    const row = rowOf(page, 'Backend sync');
    await row.waitFor({ state: 'visible' });
    const keyId = (await row.getAttribute('data-key-id')) ?? '';
    expect(keyId).toMatch(/^key_/);
    expect(await row.getAttribute('data-status')).toBe('active');
    // Identifiers: the whole value in the text, one line, with their own copy button.
    expect(await row.getByTestId('api-key-prefix').textContent()).toBe(secretKey.slice(0, 12));
    expect(await row.getByTestId('api-key-id').textContent()).toBe(keyId);
    expect(await row.getByTestId('api-key-id').getAttribute('data-identifier')).toBe('');
    await row.getByRole('button', { name: 'Copy API key id' }).click();
    await page.waitForFunction(async (id) => (await navigator.clipboard.readText()) === id, keyId);
    expect(await row.getByTestId('api-key-scopes').locator('code').allTextContents()).toEqual(['members.read', 'tenant.read']);
    expect(await row.getByTestId('api-key-last-used').textContent()).toBe('never');
    expect(await row.getByTestId('api-key-expires').textContent()).toBe('in 30 days');

    // A backend service uses it: within its scope and organization it works.
    const ok = await asService(secretKey, `/v1/tenants/${orgId}`);
    expect(ok.status).toBe(200);
    expect(ok.body.id).toBe(orgId);
    // Outside its scopes it is refused.
    const outOfScope = await asService(secretKey, `/v1/tenants/${orgId}/api-keys`);
    expect(outOfScope.status).toBe(403);

    // After a reload the secret is gone for good: only the prefix remains.
    await page.reload();
    await row.waitFor({ state: 'visible' });
    expect(await page.getByTestId('api-key-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secretKey);

    // The row's menu: Rotate… first, Revoke key… last after a separator.
    const actions = row.getByRole('button', { name: 'Actions for Backend sync' });
    await actions.click();
    const menu = page.getByRole('menu');
    await menu.waitFor({ state: 'visible' });
    expect(await menu.getByRole('menuitem').allTextContents()).toEqual(['Rotate…', 'Revoke key…']);
    expect(await menu.locator('[role="separator"] + [role="menuitem"]').textContent()).toBe('Revoke key…');

    // Revoke, confirmed by typing the key's name. Cancel first: nothing happens, focus comes back.
    await menu.getByRole('menuitem', { name: 'Revoke key…' }).click();
    const confirm = page.getByTestId('api-key-revoke-dialog');
    await confirm.waitFor({ state: 'visible' });
    expect(await confirm.getByRole('heading').textContent()).toBe('Revoke the key Backend sync?');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Actions for Backend sync');
    expect(await row.getAttribute('data-status')).toBe('active');

    await actions.click();
    await page.getByRole('menuitem', { name: 'Revoke key…' }).click();
    await confirm.waitFor({ state: 'visible' });
    const revokeButton = confirm.getByRole('button', { name: 'Revoke key' });
    expect(await revokeButton.isDisabled()).toBe(true);
    await confirm.getByTestId('api-key-revoke-dialog-input').fill('Backend');
    expect(await revokeButton.isDisabled()).toBe(true);
    await confirm.getByTestId('api-key-revoke-dialog-input').fill('Backend sync');
    await saveScreenshot(page, 'api-keys-revoke-confirm');
    await revokeButton.click();
    await confirm.waitFor({ state: 'detached' });
    await page.locator('[data-testid="api-key-row"][data-status="revoked"]').filter({ hasText: 'Backend sync' }).waitFor();
    expect(await row.getByTestId('api-key-status').textContent()).toBe('revoked');
    expect(await row.getByRole('button', { name: 'Actions for Backend sync' }).count()).toBe(0);
    await saveScreenshot(page, 'api-keys-revoked');

    const refused = await asService(secretKey, `/v1/tenants/${orgId}`);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_secret_key');
    expect(pageErrors).toEqual([]);
  });

  it('rotate from the keyboard: the new secret is shown once, the old one stops working', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/api-keys', DEMO_USER);
    const me = await page.evaluate(async () => (await fetch('/v1/me')).json());
    const orgId = me.activeWorkspace.id as string;
    const first = await createInDialog(page, 'Rotating', ['tenant.read']);
    await page.getByTestId('api-key-secret-dismiss').click();

    // Menu button, menu and confirmation, all from the keyboard.
    const row = rowOf(page, 'Rotating');
    await row.getByRole('button', { name: 'Actions for Rotating' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('menuitem', { name: 'Rotate…' }).waitFor({ state: 'visible' });
    await page.waitForFunction(() => document.activeElement?.textContent === 'Rotate…');
    await page.keyboard.press('Enter');
    const confirm = page.getByTestId('api-key-rotate-dialog');
    await confirm.waitFor({ state: 'visible' });
    // An alert dialog puts the focus on Cancel first; Tab reaches the confirming button.
    await page.waitForFunction(() => document.activeElement?.textContent === 'Cancel');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');

    await page.getByTestId('api-key-revealed').filter({ hasText: 'New secret for Rotating' }).waitFor();
    const second = (await page.getByTestId('api-key-secret-value').textContent()) ?? '';
    expect(second).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(second).not.toBe(first);
    await saveScreenshot(page, 'api-keys-rotated');
    await page.getByTestId('api-key-secret-dismiss').click();

    expect((await asService(first, `/v1/tenants/${orgId}`)).status).toBe(401);
    expect((await asService(second, `/v1/tenants/${orgId}`)).status).toBe(200);
    expect(pageErrors).toEqual([]);
  });

  it('the table sorts the page on screen, and on a phone scrolls inside its panel without breaking ids', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/api-keys', DEMO_USER);
    const me = await page.evaluate(async () => (await fetch('/v1/me')).json());
    const orgId = me.activeWorkspace.id as string;
    // Keys made through the API, one with a long name: the table must cut it, not grow with it.
    const made = await page.evaluate(async (id) => {
      const statuses: number[] = [];
      for (const name of ['Zebra relay', 'Mango importer', `Aardvark nightly export ${'x'.repeat(60)}`]) {
        const res = await fetch(`/v1/tenants/${id}/api-keys`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name, scopes: ['tenant.read'] }),
        });
        statuses.push(res.status);
      }
      return statuses;
    }, orgId);
    expect(made).toEqual([201, 201, 201]);
    await page.reload();
    const names = () => page.getByTestId('api-key-name').allTextContents();
    await page.getByTestId('api-key-row').first().waitFor();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="api-key-row"]').length >= 3);
    const serverOrder = await names();
    // Newest first from the server: the long one was made last.
    expect(serverOrder[0]).toMatch(/^Aardvark/);

    const header = page.getByRole('columnheader', { name: 'Name' });
    expect(await header.getAttribute('aria-sort')).toBe('none');
    await header.getByRole('button').click();
    expect(await header.getAttribute('aria-sort')).toBe('ascending');
    const ascending = await names();
    expect(ascending).toEqual([...serverOrder].sort((a, b) => a.localeCompare(b)));
    await header.getByRole('button').click();
    expect(await header.getAttribute('aria-sort')).toBe('descending');
    expect(await names()).toEqual([...ascending].reverse());
    // The third click gives back the server's order.
    await header.getByRole('button').click();
    expect(await header.getAttribute('aria-sort')).toBe('none');
    expect(await names()).toEqual(serverOrder);

    /** Cells that overflow, identifiers on more than one line, and whether the page itself scrolls sideways. */
    const layout = () =>
      page.evaluate(() => {
        const overflowing = [...document.querySelectorAll('td')].filter((td) => td.scrollWidth > td.clientWidth + 1).length;
        const wrapped = [...document.querySelectorAll<HTMLElement>('[data-identifier]')].filter((el) => {
          const lineHeight = Number.parseFloat(getComputedStyle(el).lineHeight);
          return el.getBoundingClientRect().height > lineHeight * 1.5 + 4;
        }).length;
        const scroller = document.querySelector('.table-scroll');
        return {
          overflowing,
          wrapped,
          identifiers: document.querySelectorAll('[data-identifier]').length,
          pageScrollsSideways: document.documentElement.scrollWidth > window.innerWidth,
          tableScrolls: scroller ? scroller.scrollWidth > scroller.clientWidth : false,
        };
      });
    const wide = await layout();
    // At 1280 px the table fits its panel; nothing scrolls sideways.
    expect(wide).toMatchObject({ overflowing: 0, wrapped: 0, pageScrollsSideways: false, tableScrolls: false });
    expect(wide.identifiers).toBeGreaterThanOrEqual(6);
    // The long name is cut with an ellipsis, its full text still in the cell.
    const longCell = page.getByTestId('api-key-name').filter({ hasText: 'Aardvark' });
    expect(
      await longCell.evaluate((el) => (el.parentElement as HTMLElement).scrollWidth > (el.parentElement as HTMLElement).clientWidth),
    ).toBe(true);

    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth);
    const phone = await layout();
    expect(phone).toMatchObject({ overflowing: 0, wrapped: 0, pageScrollsSideways: false, tableScrolls: true });
    await saveScreenshot(page, 'api-keys-phone');

    // The dark scheme follows the system: other colours, the same layout rules.
    await page.setViewportSize({ width: 1280, height: 900 });
    const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const light = await background();
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction((before) => getComputedStyle(document.documentElement).backgroundColor !== before, light);
    await saveScreenshot(page, 'api-keys-dark');
    expect(pageErrors).toEqual([]);
  });
});
