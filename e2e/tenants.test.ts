import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * The organization pages as a tenant admin sees them: the demo user administers the workspace
 * made at their first sign-in.
 */
describeInChromium('e2e: organization settings and members', () => {
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
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** A same-origin JSON call from the page, as the console's own code would make it. */
  function api(page: Page, method: string, path: string, body?: unknown) {
    return page.evaluate(
      async ({ method, path, body }) => {
        const res = await fetch(path, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: await res.json() };
      },
      { method, path, body },
    );
  }

  it('a tenant admin renames the organization, sees its members, and deletes it without losing the session', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/settings', DEMO_USER);
    const workspace = `${DEMO_USER.name}'s workspace`;
    await page.getByTestId('settings-facts').waitFor({ state: 'visible' });
    expect(await page.getByTestId('settings-name').textContent()).toBe(workspace);
    expect(await page.getByTestId('settings-kind').textContent()).toBe('tenant');
    expect(await page.getByTestId('settings-id').textContent()).toMatch(/^ten_[0-9A-Za-z]{20}$/);
    const slug = (await page.getByTestId('settings-slug').textContent()) ?? '';
    expect(slug).toMatch(/^[a-z0-9-]+$/);
    await saveScreenshot(page, 'tenants-settings');

    // Rename, in the dialog from the header's button: the page and the header's workspace name follow.
    await page.getByTestId('settings-edit-open').click();
    expect(await page.getByTestId('settings-slug-input').inputValue()).toBe(slug);
    await page.getByTestId('settings-name-input').fill('Demo Company');
    await page.getByTestId('settings-edit-submit').click();
    await page.getByTestId('settings-edit').waitFor({ state: 'hidden' });
    expect(await page.getByTestId('settings-name').textContent()).toBe('Demo Company');
    await page.getByTestId('workspace-name').filter({ hasText: 'Demo Company' }).waitFor();

    // A malformed slug is caught by the form (the contracts schema); a taken one by the API, with its code.
    await page.getByTestId('settings-edit-open').click();
    expect(await page.getByTestId('settings-name-input').inputValue()).toBe('Demo Company');
    await page.getByTestId('settings-slug-input').fill('Not A Slug');
    await page.getByTestId('settings-edit-submit').click();
    await page.getByTestId('settings-slug-error').waitFor({ state: 'visible' });
    const other = await api(page, 'POST', '/v1/tenants', { name: 'Second Company' });
    expect(other.status).toBe(201);
    await page.getByTestId('settings-slug-input').fill(other.body.slug);
    await page.getByTestId('settings-edit-submit').click();
    await page.getByTestId('settings-edit').getByTestId('error-code').filter({ hasText: 'conflict' }).waitFor();
    await saveScreenshot(page, 'tenants-settings-slug-taken');
    await page.getByTestId('settings-edit-cancel').click();
    await page.getByTestId('settings-edit').waitFor({ state: 'hidden' });
    expect(await page.getByTestId('settings-slug').textContent()).toBe(slug);

    // Two organizations now: the header's switcher moves the session between them, and the page
    // follows (every query is fetched again for the new workspace).
    await page.reload();
    await page.getByTestId('workspace-select').waitFor({ state: 'visible' });
    await chooseOption(page, 'workspace-select', other.body.slug);
    await page.getByTestId('workspace-name').filter({ hasText: 'Second Company' }).waitFor();
    await page.getByTestId('settings-name').filter({ hasText: 'Second Company' }).waitFor();
    await saveScreenshot(page, 'tenants-workspace-switched');
    await chooseOption(page, 'workspace-select', slug);
    await page.getByTestId('workspace-name').filter({ hasText: 'Demo Company' }).waitFor();
    await page.getByTestId('settings-name').filter({ hasText: 'Demo Company' }).waitFor();

    // Members: the demo user, org admin.
    await page.goto('/auth/console/members');
    await page.getByTestId('members-table').waitFor({ state: 'visible' });
    const rows = page.getByTestId('member-row');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getByTestId('member-email').textContent()).toBe(DEMO_USER.email);
    expect(await rows.first().getByTestId('member-role').getAttribute('data-role-key')).toBe('org_admin');
    expect(await rows.first().getByTestId('member-role').textContent()).toBe('Organization admin');
    // One page: nothing to page through, so no pager.
    expect(await page.getByTestId('members-pager').count()).toBe(0);
    await saveScreenshot(page, 'tenants-members');

    // Delete the organization the session is in: the dialog names it; afterwards the session
    // carries on in the other organization.
    await page.goto('/auth/console/settings');
    await page.getByTestId('settings-delete-button').click();
    const dialog = page.getByTestId('settings-delete-button-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.textContent()).toContain(`Delete the organization Demo Company (${slug})?`);
    // The loss is large: the button waits for the organization's name.
    expect(await page.getByTestId('settings-delete-button-dialog-confirm').isDisabled()).toBe(true);
    await page.getByTestId('settings-delete-button-dialog-input').fill('Demo Company');
    await saveScreenshot(page, 'tenants-settings-delete-confirm');
    await page.getByTestId('settings-delete-button-dialog-confirm').click();
    await page.getByTestId('overview').waitFor({ state: 'visible' });
    await page.getByTestId('workspace-name').filter({ hasText: 'Second Company' }).waitFor();

    const list = await api(page, 'GET', '/v1/tenants');
    expect(list.status).toBe(200);
    expect(list.body.data.map((t: { name: string }) => t.name)).toEqual(['Second Company']);
    await page.goto('/auth/console/settings');
    await page.getByTestId('settings-name').filter({ hasText: 'Second Company' }).waitFor();
    await saveScreenshot(page, 'tenants-settings-after-delete');
    expect(pageErrors, 'uncaught exceptions in the page').toEqual([]);
  });
});
