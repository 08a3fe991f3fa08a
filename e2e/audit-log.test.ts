import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

const PAGE = '/auth/console/audit-log';

/**
 * The console's audit log: a change made through the API shows up readably (the whole action, the
 * summary as `field: value` lines, the target's name beside its id), filters narrow (the actor by
 * email too), errors show their code.
 */
describeInChromium('e2e: console audit log', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    // An endpoint on loopback (the audit log's long actions are a webhook endpoint's); nothing listens there.
    server = await startServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    await signInAt(page, server.url, PAGE, DEMO_USER);
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

  const rows = () => page.getByTestId('audit-log-row');

  it('shows the entry of a change made in this session: time, actor, action, target, summary', async () => {
    // One mutation with the browser's own session (same origin, JSON, so CSRF checks pass):
    // rename the active workspace.
    const renamed = await page.evaluate(async () => {
      const me = (await (await fetch('/v1/me')).json()) as { activeWorkspace: { id: string; name: string } };
      const res = await fetch(`/v1/tenants/${me.activeWorkspace.id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Demo workspace (renamed)' }),
      });
      return { status: res.status, id: me.activeWorkspace.id, before: me.activeWorkspace.name };
    });
    expect(renamed.status).toBe(200);

    await page.goto(PAGE);
    await page.getByTestId('page-audit-log').waitFor({ state: 'visible' });
    await rows().first().waitFor({ state: 'visible' });
    const first = rows().first();
    expect(await first.getByTestId('audit-log-action').textContent()).toBe('tenant.updated');
    expect(await first.getByTestId('audit-log-actor').textContent()).toContain(DEMO_USER.email);
    expect(await first.getByTestId('audit-log-target').textContent()).toContain(renamed.id);
    expect(await first.getByTestId('audit-log-target-name').textContent()).toBe('Demo workspace (renamed)');
    // The summary reads as text, a line per changed field with its value before and after, not JSON.
    const change = `name: ${renamed.before} → Demo workspace (renamed)`;
    expect(await first.getByTestId('audit-log-summary-line').allTextContents()).toEqual([change]);
    expect(await first.getByTestId('audit-log-summary').textContent()).not.toContain('{');
    expect(await first.getByTestId('audit-log-time').locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    // The row's details: the whole summary and where the request came from.
    await first.getByRole('button', { name: 'Actions for tenant.updated entry' }).click();
    await page.getByRole('menuitem', { name: 'Details…' }).click();
    const detail = page.getByTestId('audit-log-detail');
    await detail.waitFor({ state: 'visible' });
    expect(await detail.getByTestId('audit-log-detail-summary-line').allTextContents()).toEqual([change]);
    expect(await detail.getByTestId('audit-log-detail-json').textContent()).toContain('"Demo workspace (renamed)"');
    expect(await detail.textContent()).toContain(renamed.id);
    await saveScreenshot(page, 'console-audit-log-detail');
    await detail.getByTestId('audit-log-detail-close').click();
    await detail.waitFor({ state: 'detached' });

    // The action opens the same details at an address of their own, which a reload opens again
    // and the browser's back closes; an entry that is not there says so in the dialog.
    const entryId = await first.getAttribute('data-entry-id');
    await first.getByTestId('audit-log-open').click();
    await detail.waitFor({ state: 'visible' });
    expect(new URL(page.url()).search).toBe(`?entry=${entryId}`);
    await page.reload();
    await detail.getByTestId('audit-log-detail-summary-line').first().waitFor({ state: 'visible' });
    expect(await detail.getByTestId('audit-log-detail-summary-line').allTextContents()).toEqual([change]);
    await page.goBack();
    await detail.waitFor({ state: 'detached' });
    expect(new URL(page.url()).search).toBe('');
    await page.goto(`${PAGE}?entry=aud_00000000000000000000`);
    await detail.getByTestId('error-panel').waitFor({ state: 'visible' });
    expect(await detail.getByTestId('error-code').textContent()).toBe('not_found');
    await detail.getByTestId('audit-log-detail-close').click();
    await detail.waitFor({ state: 'detached' });
    expect(new URL(page.url()).search).toBe('');
    // One page: nothing to page through, so no pager.
    expect(await page.getByTestId('audit-log-pager').count()).toBe(0);
    expect(await page.getByTestId('error-panel').count()).toBe(0);
    await saveScreenshot(page, 'console-audit-log');
    expectNoPageErrors();
  });

  it('filters by action (exact and resource.*) and says when nothing matches', async () => {
    await page.goto(PAGE);
    await rows().first().waitFor({ state: 'visible' });
    const total = await rows().count();

    // Filters apply as they are typed, with no button: first to nothing, then back to every entry.
    expect(await page.getByTestId('audit-filter-apply').count()).toBe(0);
    await page.getByTestId('audit-filter-action').fill('invitation.created');
    await page.getByTestId('audit-log-empty').waitFor({ state: 'visible' });
    expect(await page.getByTestId('audit-log-empty').textContent()).toMatch(/No entries match/);
    await saveScreenshot(page, 'console-audit-log-filtered-empty');
    await page.getByTestId('audit-filter-action').fill('tenant.*');
    await rows().first().waitFor({ state: 'visible' });
    expect(await rows().count()).toBe(total);
    const actions = await rows().evaluateAll((all) => all.map((row) => row.getAttribute('data-action') ?? ''));
    expect(actions.every((action) => action.startsWith('tenant.'))).toBe(true);

    // A malformed filter is stopped by the form (the same schema the API uses), not sent: the list stays.
    await page.getByTestId('audit-filter-actor').fill('not-an-id');
    await page
      .getByText("expected a person's email, a user id (usr_...), an API key id (key_...) or a setup link id (setl_...)")
      .waitFor({ state: 'visible' });
    expect(await rows().count()).toBe(total);
    expect(await page.getByTestId('error-panel').count()).toBe(0);

    await page.getByTestId('audit-filter-clear').click();
    await rows().first().waitFor({ state: 'visible' });
    expect(await rows().count()).toBe(total);
    expectNoPageErrors();
  });

  it('shows every action whole, however narrow its column: a long one wraps at its dots', async () => {
    // A long action of svc's own: rotating a webhook endpoint's secret.
    const rotated = await page.evaluate(async () => {
      const headers = { 'content-type': 'application/json' };
      const me = (await (await fetch('/v1/me')).json()) as { activeWorkspace: { slug: string } };
      const created = await fetch('/v1/webhook-endpoints', {
        method: 'POST',
        headers,
        body: JSON.stringify({
          organization_slug: me.activeWorkspace.slug,
          url: 'http://127.0.0.1:9/svc-hooks',
          eventTypes: ['user.created'],
          description: 'CRM sync',
        }),
      });
      const body = (await created.json()) as { endpoint?: { id: string } };
      if (!body.endpoint) {
        return { step: 'create', status: created.status, body };
      }
      const res = await fetch(`/v1/webhook-endpoints/${body.endpoint.id}/rotate-secret?organization_slug=${me.activeWorkspace.slug}`, {
        method: 'POST',
        headers,
        body: '{}',
      });
      return { step: 'rotate', status: res.status, body: await res.json() };
    });
    expect(rotated, JSON.stringify(rotated)).toMatchObject({ step: 'rotate', status: 200 });
    await page.setViewportSize({ width: 1024, height: 800 });
    try {
      await page.goto(PAGE);
      const row = page.locator('[data-testid="audit-log-row"][data-action^="webhook_endpoint."]').first();
      await row.waitFor({ state: 'visible' });
      const actions = page.getByTestId('audit-log-action');
      const cut = await actions.evaluateAll((all) =>
        all
          .filter((el) => {
            const box = el.getBoundingClientRect();
            const cell = (el.closest('td') as HTMLElement).getBoundingClientRect();
            return el.scrollWidth > el.clientWidth + 1 || box.right > cell.right + 1;
          })
          .map((el) => el.textContent),
      );
      expect(cut).toEqual([]);
      const texts = await actions.allTextContents();
      expect(texts).toContain('webhook_endpoint.secret_rotated');
      // The endpoint's entries name it by its host, recorded when it changed.
      const created = page.locator('[data-testid="audit-log-row"][data-action="webhook_endpoint.created"]');
      expect(await created.getByTestId('audit-log-target-name').textContent()).toBe('127.0.0.1:9');
      expect(await created.getByTestId('audit-log-summary-line').allTextContents()).toEqual([
        'host: 127.0.0.1:9',
        'eventTypes: user.created',
      ]);
      await saveScreenshot(page, 'console-audit-log-narrow');
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    expectNoPageErrors();
  });

  it('filters the actor by email as well as by id', async () => {
    await page.goto(PAGE);
    await rows().first().waitFor({ state: 'visible' });
    const total = await rows().count();
    await page.getByTestId('audit-filter-actor').fill(DEMO_USER.email.toUpperCase());
    // Every entry so far is the demo user's own: the same rows, found by their email.
    await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
    await rows().first().waitFor({ state: 'visible' });
    expect(await rows().count()).toBe(total);
    const actors = await page.getByTestId('audit-log-actor').allTextContents();
    expect(actors.every((actor) => actor.includes(DEMO_USER.email))).toBe(true);
    await page.getByTestId('audit-filter-actor').fill('someone.else@example.com');
    await page.getByTestId('audit-log-empty').waitFor({ state: 'visible' });
    await page.getByTestId('audit-filter-clear').click();
    await rows().first().waitFor({ state: 'visible' });
    expectNoPageErrors();
  });
});
