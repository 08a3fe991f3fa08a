import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

const INVITATIONS = '/auth/console/invitations';
/** The invitations page's page size (PAGE_SIZE in the page). */
const PAGE_SIZE = 50;

/**
 * What every console list shares (ListPage, StatusFilter), seen on the invitations page and the
 * plans page: the empty state and its button, no pager on one page, Next and Previous over more
 * than one, the status filter, the workspace guard, and an error shown while svc still retries.
 */
describeInChromium('e2e: console lists', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    await signInAt(page, server.url, INVITATIONS, DEMO_USER);
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
  });

  function expectNoPageErrors() {
    const errors = pageErrors;
    pageErrors = [];
    expect(errors, 'uncaught exceptions in the page').toEqual([]);
  }

  /** A call with the browser's own session (same origin, JSON). */
  function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, any> }> {
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

  const rows = () => page.getByTestId('invitation-row');
  const rowCount = (n: number) => page.waitForFunction((n) => document.querySelectorAll('[data-testid="invitation-row"]').length === n, n);
  const emailsShown = () => rows().evaluateAll((all) => all.map((r) => r.getAttribute('data-email')));

  it('an empty list says what to do next, and its button opens the invite form', async () => {
    await page.goto(INVITATIONS);
    const empty = page.getByTestId('invitations-empty');
    await empty.waitFor({ state: 'visible' });
    expect(await page.getByTestId('invitations-empty-title').textContent()).toBe('No invitations yet.');
    expect(await page.getByTestId('invitations-empty-next').textContent()).toBe(
      'Invite someone: svc shows the one-time link to send them.',
    );
    expect(await page.getByRole('button', { name: 'Invite someone' }).count()).toBe(1);
    // Nothing to page through, and the states before it are gone.
    expect(await page.getByTestId('invitations-pager').count()).toBe(0);
    expect(await page.getByTestId('invitations-loading').count()).toBe(0);
    await saveScreenshot(page, 'console-list-empty');

    await page.getByTestId('invitations-empty-action').click();
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'invitations-create-email');
    await page.keyboard.type('first@example.com');
    await page.getByTestId('invitations-create-submit').click();
    await page.getByTestId('invite-link-dismiss').click();
    await rowCount(1);
    expect(await page.getByTestId('invitations-empty').count()).toBe(0);
    // One row, one page: still no pager.
    expect(await page.getByTestId('invitations-pager').count()).toBe(0);
    expectNoPageErrors();
  });

  it('the status filter narrows the list; a filter that matches nothing offers Show all', async () => {
    const second = await api('POST', '/v1/invitations', { email: 'second@example.com' });
    expect(second.status).toBe(201);
    const revoked = await api('POST', `/v1/invitations/${second.body.invitation.id}/revoke`, {});
    expect(revoked.status).toBe(200);
    await page.goto(INVITATIONS);
    await rowCount(2);

    await chooseOption(page, 'invitations-filter-status', 'revoked');
    await rowCount(1);
    expect(await emailsShown()).toEqual(['second@example.com']);
    await chooseOption(page, 'invitations-filter-status', 'pending');
    await page.locator('[data-testid="invitation-row"][data-email="first@example.com"]').waitFor();
    expect(await emailsShown()).toEqual(['first@example.com']);

    await chooseOption(page, 'invitations-filter-status', 'accepted');
    await page.getByTestId('invitations-empty').waitFor({ state: 'visible' });
    expect(await page.getByTestId('invitations-empty-title').textContent()).toBe('No accepted invitations.');
    expect(await page.getByTestId('invitations-empty-next').textContent()).toBe(
      'Nothing matches the filter: change it, or show everything.',
    );
    await page.getByTestId('invitations-empty').getByRole('button', { name: 'Show all' }).click();
    await rowCount(2);
    expect(await page.getByTestId('invitations-filter-status').textContent()).toContain('Any');
    expectNoPageErrors();
  });

  it('more rows than a page: the pager shows, Next and Previous move between pages, a new filter starts at page 1', async () => {
    const made = await page.evaluate(async (count) => {
      const statuses: number[] = [];
      for (let i = 0; i < count; i++) {
        const res = await fetch('/v1/invitations', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: `bulk-${String(i).padStart(2, '0')}@example.com` }),
        });
        statuses.push(res.status);
      }
      return statuses;
    }, PAGE_SIZE);
    expect(new Set(made)).toEqual(new Set([201]));
    // 52 in all: a full page and 2 more.
    await page.goto(INVITATIONS);
    await rowCount(PAGE_SIZE);

    const pager = page.getByRole('navigation', { name: 'Pages' });
    await pager.waitFor({ state: 'visible' });
    expect(await page.getByTestId('invitations-pager-page').textContent()).toBe('Page 1');
    expect(await pager.getByRole('button', { name: 'Previous' }).isDisabled()).toBe(true);
    expect(await pager.getByRole('button', { name: 'Next' }).isEnabled()).toBe(true);
    const firstPage = await emailsShown();
    await saveScreenshot(page, 'console-list-paged');

    await pager.getByRole('button', { name: 'Next' }).click();
    await rowCount(2);
    expect(await page.getByTestId('invitations-pager-page').textContent()).toBe('Page 2');
    expect(await pager.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
    expect(await pager.getByRole('button', { name: 'Previous' }).isEnabled()).toBe(true);
    const secondPage = await emailsShown();
    expect(secondPage.filter((email) => firstPage.includes(email))).toEqual([]);
    // Newest first: the first two invitations are the oldest.
    expect([...secondPage].sort()).toEqual(['first@example.com', 'second@example.com']);

    await pager.getByRole('button', { name: 'Previous' }).click();
    await rowCount(PAGE_SIZE);
    expect(await page.getByTestId('invitations-pager-page').textContent()).toBe('Page 1');
    expect(await emailsShown()).toEqual(firstPage);

    // From page 2, a status: page 1 of that status (one row, so no pager), not page 2 of it.
    await pager.getByRole('button', { name: 'Next' }).click();
    await page.getByTestId('invitations-pager-page').filter({ hasText: 'Page 2' }).waitFor();
    await rowCount(2);
    await chooseOption(page, 'invitations-filter-status', 'revoked');
    await page.locator('[data-testid="invitation-row"][data-email="second@example.com"]').waitFor();
    await rowCount(1);
    expect(await page.getByTestId('invitations-pager').count()).toBe(0);
    expectNoPageErrors();
  });

  it('inviting an email that is already invited offers Resend and Revoke in the form; an invitation opens its own page', async () => {
    // The newest, so on the first page.
    expect((await api('POST', '/v1/invitations', { email: 'dup@example.com' })).status).toBe(201);
    await page.goto(INVITATIONS);
    await page.getByTestId('invitation-row').first().waitFor();
    const duplicate = async () => {
      await page.getByTestId('invitations-create-open').click();
      await page.locator('input[data-testid="invitations-create-email"]').fill('dup@example.com');
      await page.getByTestId('invitations-create-submit').click();
      const offer = page.getByTestId('invitations-create-duplicate');
      await offer.waitFor({ state: 'visible' });
      expect(await page.getByTestId('invitations-create').getByTestId('error-code').textContent()).toBe('invitation_already_pending');
    };
    const pendingRow = page.locator('[data-testid="invitation-row"][data-email="dup@example.com"][data-status="pending"]');
    const firstId = await pendingRow.getAttribute('data-invitation-id');

    // Revoke: the pending one goes, and the same form then invites afresh.
    await duplicate();
    await saveScreenshot(page, 'console-invite-duplicate');
    await page.getByTestId('invitations-create-duplicate-revoke').click();
    await page.getByTestId('invitations-create-revoked').waitFor({ state: 'visible' });
    expect(await page.getByTestId('invitations-create-duplicate').count()).toBe(0);
    await page.getByTestId('invitations-create-submit').click();
    await page.getByTestId('invite-link-dismiss').click();
    await page.locator(`[data-testid="invitation-row"][data-invitation-id="${firstId}"][data-status="revoked"]`).waitFor();
    const secondId = await pendingRow.getAttribute('data-invitation-id');
    expect(secondId).not.toBe(firstId);

    // Resend: a new link for the pending one, shown once; the old one is revoked.
    await duplicate();
    await page.getByTestId('invitations-create-duplicate-resend').click();
    await page.getByTestId('invitations-created').filter({ hasText: 'New link for dup@example.com' }).waitFor();
    await page.getByTestId('invite-link-dismiss').click();
    await page.locator(`[data-testid="invitation-row"][data-invitation-id="${secondId}"][data-status="revoked"]`).waitFor();
    const thirdId = await pendingRow.getAttribute('data-invitation-id');
    expect(thirdId).not.toBe(secondId);

    // Its email opens its page, at an address of its own; back returns to the list.
    await pendingRow.getByTestId('invitation-email').getByRole('link').click();
    await page.waitForURL(`${server.url}/auth/console/people/invitations/${thirdId}`);
    const detail = page.getByTestId('invitation-detail');
    await detail.waitFor({ state: 'visible' });
    expect(await detail.getAttribute('data-status')).toBe('pending');
    expect(await detail.locator('h2').textContent()).toBe('dup@example.com');
    await page.reload();
    await detail.waitFor({ state: 'visible' });
    await page.goBack();
    await page.waitForURL(`${server.url}/auth/console/people/invitations`);
    await pendingRow.waitFor();
    expectNoPageErrors();
  });

  it('without a workspace the guard stands in for the invite button, the filter and the list', async () => {
    const me = await api('GET', '/v1/me');
    const deleted = await api('DELETE', `/v1/tenants/${me.body.activeWorkspace.id}`, {});
    expect(deleted.status).toBe(200);
    await page.goto(INVITATIONS);
    const guard = page.getByTestId('invitations-no-workspace');
    await guard.waitFor({ state: 'visible' });
    expect(await guard.textContent()).toContain('You are not in a workspace: there are no invitations to show.');
    expect(await page.getByTestId('invitations-create-open').count()).toBe(0);
    expect(await page.getByTestId('invitations-filter-status').count()).toBe(0);
    expect(await page.getByTestId('invitations-empty').count()).toBe(0);
    expect(await page.getByTestId('invitations-loading').count()).toBe(0);
    expectNoPageErrors();
  });

  // Last: it stops the server.
  it('a list whose request fails shows the error at once, while svc still tries again, then offers Try again', async () => {
    await page.goto(INVITATIONS);
    await page.getByTestId('invitations-no-workspace').waitFor({ state: 'visible' });
    // The console fetches a page's code when it is first opened: load the plans page's code (and
    // nothing of its data) while svc still answers, as an admin who opened it earlier has it.
    const entry = await page.evaluate(() => (document.querySelector('script[type="module"][src]') as HTMLScriptElement | null)?.src ?? '');
    const chunk = /plans-page-[\w-]+\.js/.exec(await (await fetch(entry)).text())?.[0];
    expect(chunk).toBeDefined();
    // A string, evaluated in the page as written (a function's import() would be rewritten for Node).
    await page.evaluate(`import(${JSON.stringify(new URL(chunk as string, entry).href)}).then(() => true)`);
    // The plans list has not been fetched in this page yet; with the server gone, every attempt
    // is refused (network_error, which the console retries).
    await server.stop();
    await page.getByTestId('nav-plans').click();
    const panel = page.getByTestId('plans-list').getByTestId('error-panel');
    await panel.waitFor({ state: 'visible' });
    // Still retrying when the error is already on screen: it did not wait for the retries.
    expect(await page.getByTestId('plans-retrying').isVisible()).toBe(true);
    expect(await page.getByTestId('plans-loading').count()).toBe(0);
    expect(await panel.getByTestId('error-code').textContent()).toBe('network_error');
    expect(await panel.locator('h2').textContent()).toBe('Could not load the plans');
    await saveScreenshot(page, 'console-list-error-retrying');
    // Once the retries are spent, the admin may try again.
    await page.getByTestId('plans-retrying').waitFor({ state: 'detached' });
    await panel.getByRole('button', { name: 'Try again' }).waitFor({ state: 'visible' });
    expect(await page.getByTestId('plans-table').count()).toBe(0);
    expectNoPageErrors();
  });
});
