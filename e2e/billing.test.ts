import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ProviderServer, startStripeServer } from '../packages/jobs/src/billing/test-provider-servers.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Billing handoff end to end: `svc serve` (worker included, logging at debug) with a Stripe test
 * key whose SDK is pointed at a local recording server, and no Razorpay or Paddle key. The admin
 * connects Stripe and maps event types on the Billing page; usage sent to the real ingestion
 * route reaches the recording server through the worker; a failed sync log is retried from the
 * page; the unconfigured provider's log is skipped with the reason. The key appears nowhere: not
 * in the page, not in the server's output.
 */
describeInChromium('e2e: console billing', () => {
  const STRIPE_KEY = `sk_test_${randomBytes(16).toString('hex')}`;
  let stripe: ProviderServer;
  let server: E2EServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let pageErrors: string[] = [];

  beforeAll(async () => {
    stripe = await startStripeServer();
    server = await startServer({ env: { STRIPE_SECRET_KEY: STRIPE_KEY, STRIPE_API_BASE: stripe.url, LOG_LEVEL: 'debug' } });
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
    await stripe?.close();
  });

  async function freshPage(baseURL: string): Promise<Page> {
    const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 1100 } });
    context.setDefaultTimeout(20_000);
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** Presses the sync logs' Refresh until `selector` shows (the list refreshes by itself only while a log is queued). */
  async function refreshUntil(page: Page, selector: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!(await page.locator(selector).isVisible())) {
      if (Date.now() > deadline) {
        throw new Error(`${selector} did not show within 20 s`);
      }
      await page.getByTestId('billing-sync-refresh').click();
      await page.waitForTimeout(500);
    }
  }

  it('shows adapter status, connects Stripe, maps usage, syncs it through the worker, retries a failed log, and never shows the key', async () => {
    const page = await freshPage(server.url);
    await signInAt(page, server.url, '/auth/console/billing', DEMO_USER);
    await page.getByTestId('page-billing').waitFor({ state: 'visible' });

    // Adapter status, from the server's environment only.
    const adapter = (provider: string) => page.getByTestId(`billing-adapter-${provider}`);
    await adapter('stripe').waitFor({ state: 'visible' });
    expect(await adapter('stripe').getAttribute('data-configured')).toBe('true');
    expect(await adapter('stripe').getAttribute('data-mode')).toBe('sandbox');
    expect(await adapter('razorpay').getAttribute('data-configured')).toBe('false');
    expect(await adapter('paddle').textContent()).toContain('not configured');

    // A live connection on a test key is refused, clearly.
    await page.getByTestId('billing-connect-account').fill('cus_E2E123');
    await page.getByTestId('billing-connect-mode').selectOption('live');
    await page.getByTestId('billing-connect-submit').click();
    const refusal = page.getByTestId('billing-connections').getByText('a live connection would send usage to the wrong account');
    await refusal.waitFor({ state: 'visible' });
    // Connect in the key's mode.
    await page.getByTestId('billing-connect-mode').selectOption('');
    await page.getByTestId('billing-connect-submit').click();
    const connection = page.locator('[data-testid="billing-connection"][data-provider="stripe"]');
    await connection.waitFor({ state: 'visible' });
    expect(await connection.getAttribute('data-status')).toBe('connected');
    expect(await connection.getByTestId('billing-connection-mode').textContent()).toBe('sandbox');

    // Mappings: Stripe for api.request, Paddle (not configured here) for exports.created.
    await page.getByTestId('billing-mapping-event-type').fill('api.request');
    await page.getByTestId('billing-mapping-item-input').fill('api_requests');
    await page.getByTestId('billing-mapping-submit').click();
    await page.locator('[data-testid="billing-mapping"][data-event-type="api.request"]').waitFor({ state: 'visible' });
    await page.getByTestId('billing-mapping-provider').selectOption('paddle');
    await page.getByTestId('billing-mapping-event-type').fill('exports.created');
    await page.getByTestId('billing-mapping-item-input').fill('pri_01EXPORTS');
    await page.getByTestId('billing-mapping-submit').click();
    await page.locator('[data-testid="billing-mapping"][data-provider="paddle"]').waitFor({ state: 'visible' });

    // Usage through the real ingestion route; Stripe refuses the first record.
    stripe.script(400);
    const ingested = await page.evaluate(async () => {
      const me = (await (await fetch('/v1/me')).json()) as { activeWorkspace: { slug: string } };
      const res = await fetch('/v1/usage/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          organization_slug: me.activeWorkspace.slug,
          events: [
            { idempotencyKey: 'e2e-billing-1', eventType: 'api.request', quantity: 3 },
            { idempotencyKey: 'e2e-billing-2', eventType: 'exports.created' },
          ],
        }),
      });
      return res.status;
    });
    expect(ingested).toBe(200);

    const stripeRow = page.locator('[data-testid="billing-sync-row"]', { hasText: 'api.request' });
    const paddleRow = page.locator('[data-testid="billing-sync-row"]', { hasText: 'exports.created' });
    // The worker syncs in the background: Refresh until both outcomes show.
    await refreshUntil(page, '[data-testid="billing-sync-row"][data-status="failed"]');
    await refreshUntil(page, '[data-testid="billing-sync-row"][data-status="skipped"]');
    expect(await stripeRow.getByTestId('billing-sync-reason').textContent()).toContain('Stripe refused it (400 resource_missing)');
    expect(await paddleRow.getByTestId('billing-sync-reason').textContent()).toBe(
      'Paddle is not configured on this svc (PADDLE_API_KEY unset)',
    );
    expect(stripe.requests).toHaveLength(1);

    // Retry the failed one: the worker sends it again and Stripe takes it.
    await stripeRow.getByTestId('billing-sync-retry').click();
    await page.locator('[data-testid="billing-sync-row"][data-status="succeeded"]').waitFor({ state: 'visible' });
    expect(stripe.requests).toHaveLength(2);
    const form = new URLSearchParams(stripe.requests[1]?.body);
    expect(form.get('payload[value]')).toBe('3');
    expect(form.get('payload[stripe_customer_id]')).toBe('cus_E2E123');
    expect(stripe.requests[1]?.headers['idempotency-key']).toBe(stripe.requests[0]?.headers['idempotency-key']);
    expect(await stripeRow.getByTestId('billing-sync-attempts').textContent()).toBe('1');
    await saveScreenshot(page, 'console-billing');

    // Status filter.
    await chooseOption(page, 'billing-sync-filter-status', 'skipped');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="billing-sync-row"]').length === 1);
    expect(await page.locator('[data-testid="billing-sync-row"]').getAttribute('data-status')).toBe('skipped');
    await chooseOption(page, 'billing-sync-filter-status', 'queued');
    await page.getByTestId('billing-sync-empty').waitFor({ state: 'visible' });
    expect(await page.getByTestId('billing-sync-empty-title').textContent()).toBe('No queued sync logs.');

    // The key is nowhere: not in the page, not in what the server logged at debug level.
    expect(await page.content()).not.toContain(STRIPE_KEY);
    expect(server.output()).not.toContain(STRIPE_KEY);
    expect(server.output()).not.toContain(STRIPE_KEY.slice(8));
    expect(pageErrors, 'uncaught exceptions in the page').toEqual([]);
    pageErrors = [];
  });
});
