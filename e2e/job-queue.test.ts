import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_ADMIN, DEMO_USER, signInAt } from './support/sign-in.ts';

const PAGE = '/auth/console/job-queue';
const SECRET = `sk_live_${'Zz9'.repeat(10)}`;

/**
 * The platform admins' job queue page against a real `svc serve` (worker running): jobs of tasks
 * the worker has no handler for stay where the test puts them, so the page shows known state.
 */
describeInChromium('e2e: console job queue', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let pageErrors: string[] = [];
  /** The seeded job a dead worker left locked. */
  let stuckJobId = '';

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    server = await startServer({ databaseUrl });
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      await sql`select graphile_worker.add_job('e2e:unhandled', '{}'::json, run_at => now() - interval '3 minutes')`;
      await sql`select graphile_worker.add_job('e2e:unhandled', '{}'::json, run_at => now() + interval '1 hour')`;
      const [failed] = await sql<{ id: string }[]>`select (graphile_worker.add_job('e2e:failing', '{}'::json)).id::text as id`;
      await sql`update graphile_worker._private_jobs
        set attempts = max_attempts, last_error = ${`upstream said 401 for Bearer ${SECRET}`}
        where id = ${failed?.id ?? '0'}::bigint`;
      const [locked] = await sql<{ id: string }[]>`select (graphile_worker.add_job('e2e:stuck', '{}'::json)).id::text as id`;
      stuckJobId = locked?.id ?? '0';
      await sql`update graphile_worker._private_jobs
        set attempts = 1, locked_at = now() - interval '90 seconds', locked_by = 'worker-e2e'
        where id = ${locked?.id ?? '0'}::bigint`;
    } finally {
      await sql.end({ timeout: 1 });
    }
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
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  function expectNoPageErrors() {
    const errors = pageErrors;
    pageErrors = [];
    expect(errors, 'uncaught exceptions in the page').toEqual([]);
  }

  it('a platform admin sees counts, the failure with its secret masked and the locked job, and can refresh', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, PAGE, DEMO_ADMIN);
    await page.getByTestId('page-job-queue').waitFor({ state: 'visible' });
    await page.getByTestId('nav-job-queue').waitFor({ state: 'visible' });

    const unhandled = page.locator('[data-testid="job-queue-count-row"][data-task="e2e:unhandled"]');
    await unhandled.waitFor({ state: 'visible' });
    expect(await unhandled.locator('td').allTextContents()).toEqual(['e2e:unhandled', '1', '1', '0', '0', '2']);
    expect(await page.getByTestId('job-queue-oldest-waiting').textContent()).toMatch(/oldest e2e:unhandled, due 3m \d+s ago/);

    const error = page.getByTestId('job-queue-failure-error');
    expect(await error.textContent()).toBe('upstream said 401 for Bearer sk_live_[redacted]');
    expect(await page.content()).not.toContain(SECRET);

    // By its id: the server's own worker may be holding a job of its own at this moment (a
    // webhooks:dispatch run lingering after the sign-in's events), listed too.
    const lockedRow = page.locator(`[data-testid="job-queue-locked-row"][data-job-id="${stuckJobId}"]`);
    expect(await lockedRow.textContent()).toContain('worker-e2e');
    expect(await lockedRow.textContent()).toContain('e2e:stuck');

    // The task filter applies as soon as a task is picked: the failures and locked jobs of that task only.
    const filter = page.getByRole('combobox', { name: 'Failures and locked jobs of' });
    expect(await filter.textContent()).toContain('Every task');
    await filter.click();
    await page.getByRole('option', { name: 'e2e:stuck' }).click();
    await page.getByTestId('job-queue-failures').getByText('No failed jobs of this task.').waitFor({ state: 'visible' });
    expect(await lockedRow.count()).toBe(1);
    // On a wide screen the locked table's headings are whole (the page checks meet this table
    // only when a job happens to be locked).
    await page.setViewportSize({ width: 1440, height: 900 });
    const cutHeadings = await page
      .getByTestId('job-queue-locked-table')
      .locator('th')
      .evaluateAll((cells) => cells.filter((th) => th.scrollWidth > th.clientWidth).map((th) => th.textContent));
    expect(cutHeadings).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
    await filter.click();
    await page.getByRole('option', { name: 'e2e:failing' }).click();
    await page.getByTestId('job-queue-locked').getByText('No job of this task is locked.').waitFor({ state: 'visible' });
    expect(await page.getByTestId('job-queue-failure-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-task')))).toEqual([
      'e2e:failing',
    ]);
    await filter.click();
    await page.getByRole('option', { name: 'Every task' }).click();
    await lockedRow.waitFor({ state: 'visible' });

    await page.getByTestId('job-queue-refresh').click();
    await page.getByRole('button', { name: 'Refresh' }).waitFor({ state: 'visible' });
    expect(await page.getByTestId('error-panel').count()).toBe(0);
    await saveScreenshot(page, 'console-job-queue');
    expectNoPageErrors();
  });

  it('anyone else: no nav item, and the page shows the 403', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, PAGE, DEMO_USER);
    await page.getByTestId('error-panel').waitFor({ state: 'visible' });
    expect(await page.getByTestId('error-code').textContent()).toBe('forbidden');
    await page.getByTestId('nav-overview').waitFor({ state: 'visible' });
    await page.getByTestId('whoami').waitFor({ state: 'visible' });
    expect(await page.getByTestId('nav-job-queue').count()).toBe(0);
    expectNoPageErrors();
  });
});
