import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Exports end to end: `svc serve` with its worker, the demo user's workspace holding a few usage
 * events (one with a formula-leading key); the admin creates a CSV export on the Exports page,
 * watches it complete, downloads it in Chromium (and the JSON beside it) and the files parse.
 */
describeInChromium('e2e: console exports', () => {
  let databaseUrl: string;
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    server = await startServer({ databaseUrl });
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 }, acceptDownloads: true });
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

  function expectNoPageErrors() {
    const errors = pageErrors;
    pageErrors = [];
    expect(errors, 'uncaught exceptions in the page').toEqual([]);
  }

  it('create a CSV export, see it complete, download it (and as JSON): both parse and hold the usage events', async () => {
    await signInAt(page, server.url, '/auth/console/exports', DEMO_USER);
    await page.getByTestId('page-exports').waitFor({ state: 'visible' });
    await page.getByTestId('exports-empty').waitFor({ state: 'visible' });
    expect(await page.getByTestId('nav-exports').getAttribute('aria-current')).toBe('page');

    // Usage events of the demo user's workspace (made at first sign-in), straight into the table.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    let slug: string;
    try {
      const [org] = await sql<{ id: string; slug: string }[]>`
        select o.id, o.slug from organizations o join memberships m on m.tenant_id = o.id join users u on u.id = m.user_id
        where u.email = ${DEMO_USER.email} and o.kind = 'tenant'`;
      if (!org) {
        throw new Error('the demo user has no workspace');
      }
      slug = org.slug;
      await sql`
        insert into usage_events (id, tenant_id, idempotency_key, request_hash, event_type, quantity, occurred_at, channel, created_at)
        select 'uev_e2e' || lpad(g::text, 13, '0'), ${org.id}, case when g = 1 then '=cmd|calc' else 'key-' || g end, md5(g::text),
               'api.call', g, now(), 'usage', now() - interval '1 minute'
        from generate_series(1, 3) g`;
    } finally {
      await sql.end();
    }

    // The empty list's button opens the same dialog as the header's; the format from the styled select.
    await page.getByTestId('exports-empty').getByRole('button', { name: 'Create export' }).click();
    const dialog = page.getByTestId('export-create');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.getByRole('combobox', { name: 'Format' }).textContent()).toContain('JSON');
    await dialog.getByRole('combobox', { name: 'Format' }).click();
    await page.getByRole('option', { name: /^CSV/ }).click();
    expect(await dialog.getByRole('combobox', { name: 'Format' }).textContent()).toContain('CSV');
    await dialog.getByRole('button', { name: 'Create export' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.getByTestId('export-row').first();
    await row.waitFor({ state: 'visible' });
    const exportId = (await row.getAttribute('data-export-id')) ?? '';
    expect(exportId).toMatch(/^exp_[0-9A-Za-z]{20}$/);
    // The queued export is named in the toast, and the row is the CSV one.
    await page.getByText(`Export ${exportId} queued`).waitFor({ state: 'visible' });
    expect(await row.locator('td').nth(1).textContent()).toBe('CSV');
    expect(await page.getByTestId('export-row').count()).toBe(1);
    // The page polls while the worker builds it.
    await page.locator('[data-testid="export-row"][data-status="completed"]').waitFor({ state: 'visible' });
    expect(await row.getByTestId('export-status').textContent()).toBe('completed');
    expect(await row.getByTestId('export-contents').textContent()).toContain('3 usage events');
    expect(await row.getByTestId('export-contents').textContent()).toContain('1 member');
    // Every section the file holds is listed, those added since the page was written included.
    expect(await row.getByTestId('export-contents').textContent()).toMatch(/\d+ invitations?\b/);
    expect(await row.getByTestId('export-contents').textContent()).toMatch(/\d+ sessions?\b/);
    await saveScreenshot(page, 'console-exports');

    const [csvDownload] = await Promise.all([page.waitForEvent('download'), row.getByTestId('export-download').click()]);
    expect(csvDownload.suggestedFilename()).toBe(`svc-export-${slug}-${exportId}.csv`);
    const csv = await readFile((await csvDownload.path()) as string, 'utf8');
    const [header, ...rows] = parse(csv, { record_delimiter: '\r\n' }) as string[][];
    expect(header?.slice(0, 2)).toEqual(['resource', 'id']);
    const key = (header as string[]).indexOf('idempotencyKey');
    const events = rows.filter((r) => r[0] === 'usage_event');
    expect(events.map((r) => r[key])).toEqual(["'=cmd|calc", 'key-2', 'key-3']);
    expect(rows.filter((r) => r[0] === 'member').map((r) => r[(header as string[]).indexOf('email')])).toEqual([DEMO_USER.email]);

    const [jsonDownload] = await Promise.all([page.waitForEvent('download'), row.getByTestId('export-download-other').click()]);
    expect(jsonDownload.suggestedFilename()).toBe(`svc-export-${slug}-${exportId}.json`);
    const doc = JSON.parse(await readFile((await jsonDownload.path()) as string, 'utf8')) as {
      export: { id: string };
      usageEvents: { idempotencyKey: string }[];
    };
    expect(doc.export.id).toBe(exportId);
    expect(doc.usageEvents.map((e) => e.idempotencyKey)).toEqual(['=cmd|calc', 'key-2', 'key-3']);
    // Nothing secret anywhere in either file.
    for (const text of [csv, JSON.stringify(doc)]) {
      expect(text).not.toMatch(/sk_live_|whsec_|svc_inv_/);
    }
    expectNoPageErrors();
  });
});
