import { newId } from '@svc/contracts/ids';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

type Json = Record<string, any>;

/** A same-origin JSON call from the signed-in page (the session cookie, the page's Origin). */
async function api(page: Page, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const res = await fetch(path, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    },
    { method, path, body },
  );
}

/**
 * The Usage page against a real `svc serve`: events recorded through the API show up in the
 * chart per type and in this month's counters; a type at its plan limit is called out, and the
 * metering route then answers 402 subscription_limit_exceeded.
 */
describeInChromium('e2e: console usage', () => {
  let server: E2EServer;
  let sql: postgres.Sql;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    server = await startServer({ databaseUrl });
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 1000 } });
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
    await sql?.end({ timeout: 2 });
  });

  it('charts events per type, shows counters against the limits, and calls out a reached limit (402)', async () => {
    await signInAt(page, server.url, '/auth/console/usage', DEMO_USER);
    await page.getByTestId('page-usage').waitFor({ state: 'visible' });
    await page.getByTestId('usage-chart-empty').waitFor({ state: 'visible' });
    const me = await api(page, 'GET', '/v1/me');
    const org = me.json.activeWorkspace as { id: string; slug: string };

    // Three days of usage in the last 72 hours, two types, recorded as the admin (usage.write).
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const events = Array.from({ length: 36 }, (_, i) => ({
      idempotencyKey: `e2e-${i}`,
      eventType: i % 3 === 0 ? 'tokens' : 'api_call',
      quantity: i % 3 === 0 ? 100 : 1 + (i % 4),
      occurredAt: new Date(hour - (i * 2 + 1) * 3_600_000).toISOString(),
    }));
    const recorded = await api(page, 'POST', '/v1/usage/events', { organization_slug: org.slug, events });
    expect(recorded.status).toBe(200);
    const total = (type: string) => events.filter((e) => e.eventType === type).reduce((sum, e) => sum + e.quantity, 0);

    // The plan allows 2 more api_call than this month has used (alerts at the default 50/80/100%).
    const counters = await api(page, 'GET', `/v1/usage?organization_slug=${org.slug}`);
    const limit = ((counters.json.usage as Json[]).find((u) => u.eventType === 'api_call')?.quantity as number) + 2;
    const planId = newId('subscriptionPlan');
    await sql`insert into subscription_plans (id, key, name, seat_limit, usage_limits)
              values (${planId}, 'e2e-metered', 'Metered', 5, ${sql.json({ api_call: limit, exports: 10 })})`;
    await sql`update subscriptions set plan_id = ${planId} where tenant_id = ${org.id}`;
    // Metered up to the limit exactly: accepted, and every threshold is reached by this one request.
    const filled = await api(page, 'POST', '/v1/usage-events', {
      organization_slug: org.slug,
      idempotencyKey: 'e2e-fill',
      eventType: 'api_call',
      quantity: 2,
    });
    expect(filled.status).toBe(201);

    // What an integrator sees next: the metering route refuses more api_call.
    const refused = await api(page, 'POST', '/v1/usage-events', {
      organization_slug: org.slug,
      idempotencyKey: 'e2e-over',
      eventType: 'api_call',
    });
    expect(refused.status).toBe(402);
    expect(refused.json.error.code).toBe('subscription_limit_exceeded');

    // One event sent with a secret key: the list names the key, its id on the line under.
    const ingest = await api(page, 'POST', `/v1/tenants/${org.id}/api-keys`, { name: 'Usage ingest', scopes: ['usage.write'] });
    expect(ingest.status).toBe(201);
    const byKey = await fetch(`${server.url}/v1/usage/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingest.json.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        events: [{ idempotencyKey: 'e2e-key', eventType: 'exports', occurredAt: new Date(hour - 1_800_000).toISOString() }],
      }),
    });
    expect(byKey.status, await byKey.clone().text()).toBe(200);

    await page.reload();
    const chart = page.getByTestId('usage-chart');
    await chart.waitFor({ state: 'visible' });
    // A week is drawn by the day: a bar per UTC day the range touches (the first one partly).
    expect(await chart.getAttribute('data-bucket')).toBe('day');
    const DAY = 86_400_000;
    const to = Math.ceil((Date.now() + 1) / 3_600_000) * 3_600_000;
    expect(Number(await chart.getAttribute('data-buckets'))).toBe(Math.ceil((to - Math.floor((to - 7 * DAY) / DAY) * DAY) / DAY));
    const tokenDays = new Set(events.filter((e) => e.eventType === 'tokens').map((e) => e.occurredAt.slice(0, 10)));
    const series = page.getByTestId('usage-series');
    expect(await series.count()).toBe(3);
    expect(await page.locator('[data-testid="usage-series"][data-event-type="api_call"]').getAttribute('data-total')).toBe(
      String(total('api_call') + 2),
    );
    expect(await page.locator('[data-testid="usage-series"][data-event-type="tokens"]').getAttribute('data-total')).toBe(
      String(total('tokens')),
    );
    // A chart per type, each named, with one row per non-empty day in its text table, and a bar each.
    const tokens = page.locator('[data-testid="usage-series"][data-event-type="tokens"]');
    expect(await tokens.locator('[data-testid="usage-point"]').count()).toBe(tokenDays.size);
    await tokens.locator('.recharts-bar-rectangle').first().waitFor();
    expect(await tokens.locator('.recharts-bar-rectangle').count()).toBe(tokenDays.size);
    expect(await tokens.locator('[role="img"]').getAttribute('aria-label')).toContain(
      `${total('tokens').toLocaleString('en-US')} units in the last 7 days`,
    );
    // Day ticks on a 7-day range: "Nov 20", never with an hour.
    const tickValues = tokens.locator('.recharts-cartesian-axis-tick-value');
    await tickValues.first().waitFor({ state: 'visible' });
    const ticks = (await tickValues.allTextContents()).filter((tick) => !/^[\d.,]+[KM]?$/.test(tick));
    expect(ticks.length).toBeGreaterThan(2);
    for (const tick of ticks) {
      expect(tick).toMatch(/^[A-Z][a-z]{2} \d{1,2}$/);
    }

    const banner = page.getByTestId('usage-limit-reached');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.textContent()).toContain('api_call');
    expect(await banner.textContent()).toContain('402');
    const row = page.locator('[data-testid="usage-counter-row"][data-event-type="api_call"]');
    expect(await row.getAttribute('data-reached')).toBe('true');
    expect(await row.getByTestId('usage-counter-limit').textContent()).toBe(limit.toLocaleString('en-US'));
    await row.getByTestId('usage-counter-reached').waitFor({ state: 'visible' });
    // The plan's thresholds under the bar: all three reached (with their date) for api_call, none for exports.
    const thresholds = row.getByTestId('usage-threshold');
    expect(await thresholds.count()).toBe(3);
    expect(await row.locator('[data-testid="usage-threshold"][data-reached="true"]').count()).toBe(3);
    expect(await thresholds.first().textContent()).toContain('✓ 50%');
    const exportsRow = page.locator('[data-testid="usage-counter-row"][data-event-type="exports"]');
    expect(await exportsRow.getAttribute('data-reached')).toBe('false');
    expect(await exportsRow.locator('[data-testid="usage-threshold"][data-reached="false"]').count()).toBe(3);
    expect(await exportsRow.getByTestId('usage-threshold').first().textContent()).toBe('50% at 5');
    expect(await page.getByTestId('usage-seats-value').textContent()).toBe('1 / 5');
    expect(await page.getByTestId('usage-event-row').count()).toBe(20);
    const sender = page.locator(`[data-testid="usage-event-sender"][data-source-id="${ingest.json.apiKey.id}"]`);
    await sender.locator('.usage-sender__name', { hasText: 'Usage ingest' }).waitFor({ state: 'visible' });
    expect(await sender.locator('[data-identifier]').getAttribute('data-identifier')).not.toBeNull();
    await saveScreenshot(page, 'console-usage');

    // A day is drawn by the hour, as a line.
    await page.getByTestId('usage-range').click();
    await page.getByTestId('usage-range-option-24h').click();
    await page.locator('[data-testid="usage-chart"][data-bucket="hour"][data-buckets="24"]').waitFor({ state: 'visible' });
    await tokens.locator('.recharts-area-curve').waitFor();
    expect(await tokens.locator('.recharts-bar-rectangle').count()).toBe(0);

    // Events instead of quantity, daily buckets over 30 days.
    await page.getByTestId('usage-metric').click();
    await page.getByTestId('usage-metric-option-events').click();
    await page.getByTestId('usage-range').click();
    await page.getByTestId('usage-range-option-30d').click();
    await page.locator('[data-testid="usage-chart"][data-bucket="day"]').waitFor({ state: 'visible' });
    expect(await page.locator('[data-testid="usage-series"][data-event-type="tokens"]').getAttribute('data-total')).toBe('12');
    await page.getByTestId('usage-events-pager-next').click();
    // 38 events (36, the metered fill and the key's): 18 on the second page.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="usage-event-row"]').length === 18);
    await saveScreenshot(page, 'console-usage-daily');

    expect(pageErrors, 'uncaught exceptions in the page').toEqual([]);
    pageErrors = [];
  });
});
