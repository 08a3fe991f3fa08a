import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

type Received = { endpoint: string; webhookId: string; verified: boolean; payload?: unknown };

/**
 * A receiver on 127.0.0.1: `/hooks/<name>` verifies each request with the `standardwebhooks` npm
 * package and the secret registered for `<name>`, and answers 500 while `<name>` is failing.
 */
async function startReceiver(failing: ReadonlySet<string>) {
  const secrets = new Map<string, Webhook>();
  const requests: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const endpoint = /^\/hooks\/([^/?]+)/.exec(req.url ?? '')?.[1] ?? '';
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      const received: Received = { endpoint, webhookId: headers['webhook-id'], verified: false };
      try {
        received.payload = secrets.get(endpoint)?.verify(Buffer.concat(chunks).toString('utf8'), headers);
        received.verified = received.payload !== undefined;
      } catch {
        received.verified = false;
      }
      requests.push(received);
      const status = !received.verified ? 400 : failing.has(endpoint) ? 500 : 200;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (name: string) => `http://127.0.0.1:${port}/hooks/${name}`,
    addEndpoint: (name: string, secret: string) => secrets.set(name, new Webhook(secret)),
    requests,
    /** Verified webhook-ids of `name`, each once (what a receiver deduplicating on webhook-id processes). */
    processed: (name: string) => [...new Set(requests.filter((r) => r.endpoint === name && r.verified).map((r) => r.webhookId))],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * Issue 5's console flow for webhooks: an admin creates an endpoint pointed at a local receiver
 * (the signing secret shown once), sends a test event and watches its delivery succeed in the
 * deliveries page, attempts included; a receiver that fails gets a failed delivery, which Retry
 * delivers once the receiver is back. The receiver verifies every request with the
 * `standardwebhooks` npm package and the secret the console showed.
 */
describeInChromium('e2e: webhooks in the console', () => {
  let server: E2EServer;
  let sql: postgres.Sql;
  let receiver: Receiver;
  let browser: Browser;
  let context: BrowserContext | undefined;
  const pageErrors: string[] = [];
  /** Endpoints (by receiver name) that answer 500 for now. */
  const failing = new Set<string>();

  beforeAll(async () => {
    receiver = await startReceiver(failing);
    const databaseUrl = await createTestDatabase();
    server = await startServer({
      databaseUrl,
      // The receiver is on loopback; one attempt per delivery, so a failure is final at once.
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0' },
    });
    // Only to seed events of the past (the replay test); everything else goes through the console.
    sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await sql?.end({ timeout: 1 });
    await server?.stop();
    await receiver?.close();
  });

  async function freshPage(): Promise<Page> {
    await context?.close();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(20_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** Creates an endpoint for receiver path `name` in the create dialog; returns its id and the secret shown. */
  async function createEndpoint(page: Page, name: string, description: string): Promise<{ id: string; secret: string }> {
    await page.getByTestId('webhook-create-open').click();
    await page.getByTestId('webhook-create-url').fill(receiver.url(name));
    await page.getByTestId('webhook-create-description').fill(description);
    await page.getByTestId('webhook-create-type-user.created').check();
    await page.getByTestId('webhook-create-submit').click();
    const revealed = page.getByTestId('webhook-secret-revealed');
    await revealed.waitFor({ state: 'visible' });
    const secret = (await page.getByTestId('webhook-secret-value').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = (await page.getByTestId('webhook-secret-endpoint').getAttribute('data-endpoint-id')) ?? '';
    expect(id).toMatch(/^wh_[0-9A-Za-z]{20}$/);
    receiver.addEndpoint(name, secret);
    await page.getByTestId('webhook-secret-dismiss').click();
    await revealed.waitFor({ state: 'detached' });
    return { id, secret };
  }

  const rowOf = (page: Page, id: string) => page.locator(`[data-testid="webhook-row"][data-endpoint-id="${id}"]`);

  /** Opens the row's "⋯" menu and picks the item `testId` (the menu is portalled: found on the page). */
  async function pick(page: Page, id: string, testId: string): Promise<void> {
    await rowOf(page, id).getByTestId('webhook-actions').click();
    await page.getByTestId('webhook-actions-menu').getByTestId(testId).click();
  }

  /** The toast of a test event sent to the endpoint named `name`, with its "Open delivery" button. */
  const testToast = (page: Page, name: string) => page.locator('[data-sonner-toast]', { hasText: `Test event queued for ${name}` });

  it('create (secret once), send a test, see it delivered with its attempt; a failed delivery is retried from the console', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/webhooks', DEMO_USER);
    await page.getByTestId('webhooks-empty').waitFor({ state: 'visible' });

    // The form (a dialog from the header's button) checks the contracts schema before anything is sent.
    await page.getByTestId('webhook-create-open').click();
    await page.getByTestId('webhook-create-submit').click();
    await page.getByTestId('webhook-create-url-error').waitFor({ state: 'visible' });
    await page.getByTestId('webhook-create-event-types-error').waitFor({ state: 'visible' });
    // The API's URL rules: a metadata address is refused with its code.
    await page.getByTestId('webhook-create-url').fill('http://169.254.169.254/latest');
    await page.getByTestId('webhook-create-type-user.created').check();
    await page.getByTestId('webhook-create-submit').click();
    const refused = page.getByTestId('webhook-create').getByTestId('error-code');
    await refused.waitFor({ state: 'visible' });
    expect(await refused.textContent()).toBe('webhook_url_not_allowed');
    await page.getByTestId('webhook-create-type-user.created').uncheck();

    // Create: the secret is shown once.
    await page.getByTestId('webhook-create-url').fill(receiver.url('good'));
    await page.getByTestId('webhook-create-description').fill('Good receiver');
    await page.getByTestId('webhook-create-type-user.created').check();
    await page.getByTestId('webhook-create-type-role.created').check();
    await page.getByTestId('webhook-create-submit').click();
    await page.getByTestId('webhook-secret-revealed').waitFor({ state: 'visible' });
    const secret = (await page.getByTestId('webhook-secret-value').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const goodId = (await page.getByTestId('webhook-secret-endpoint').getAttribute('data-endpoint-id')) ?? '';
    receiver.addEndpoint('good', secret);
    const good = rowOf(page, goodId);
    await good.waitFor({ state: 'visible' });
    expect(await good.getByTestId('webhook-url').textContent()).toBe(receiver.url('good'));
    // The chips that fit, then "+N more": every name is in the row.
    expect(await good.getByTestId('webhook-event-types').locator('code').allTextContents()).toEqual(['role.created', 'user.created']);
    expect(await good.getByTestId('webhook-status').textContent()).toBe('enabled');
    await page.evaluate(() => window.scrollTo(0, 0));
    await saveScreenshot(page, 'webhooks-secret-shown');
    // Only its own button closes it: Escape leaves the secret on screen.
    await page.keyboard.press('Escape');
    expect(await page.getByTestId('webhook-secret-revealed').isVisible()).toBe(true);

    // After a reload the secret is gone for good.
    await page.reload();
    await good.waitFor({ state: 'visible' });
    expect(await page.getByTestId('webhook-secret-revealed').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);

    // Send a test event; follow the toast to its delivery.
    await pick(page, goodId, 'webhook-test');
    await testToast(page, 'Good receiver').getByRole('button', { name: 'Open delivery' }).click();
    await page.getByTestId('page-webhook-deliveries').waitFor({ state: 'visible' });
    const detail = page.getByTestId('delivery-detail');
    await detail.getByTestId('delivery-detail-status').filter({ hasText: 'succeeded' }).waitFor();
    const attempt = detail.getByTestId('delivery-attempt');
    expect(await attempt.count()).toBe(1);
    expect(await attempt.first().getAttribute('data-outcome')).toBe('succeeded');
    expect(await attempt.first().getByTestId('delivery-attempt-status').textContent()).toBe('200');
    expect(await detail.getByTestId('delivery-event-data').textContent()).toContain(goodId);
    // The receiver verified it with the secret the console showed (standardwebhooks).
    const delivered = receiver.requests.filter((r) => r.endpoint === 'good');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.verified).toBe(true);
    expect(delivered[0]?.payload).toMatchObject({ type: 'webhook.test', data: { id: goodId } });
    const row = page.locator(`[data-testid="delivery-row"][data-delivery-id="${await detail.getAttribute('data-delivery-id')}"]`);
    await row.filter({ has: page.locator('[data-testid="delivery-status"]', { hasText: 'succeeded' }) }).waitFor();
    expect(await page.content()).not.toContain('whsec_');
    await saveScreenshot(page, 'webhook-delivery-succeeded');
    // The detail is a dialog: Escape closes it and takes the delivery out of the URL.
    await page.keyboard.press('Escape');
    await page.getByTestId('delivery-detail-dialog').waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.get('delivery')).toBeNull();

    // A receiver that fails: the delivery ends failed (WEBHOOK_RETRY_SCHEDULE=0: one attempt).
    await page.getByTestId('nav-webhooks').click();
    failing.add('flaky');
    const flaky = await createEndpoint(page, 'flaky', 'Flaky receiver');
    const flakyRow = rowOf(page, flaky.id);
    await flakyRow.waitFor();
    await pick(page, flaky.id, 'webhook-test');
    await testToast(page, 'Flaky receiver').waitFor();
    await pick(page, flaky.id, 'webhook-deliveries');
    await page.getByTestId('page-webhook-deliveries').waitFor({ state: 'visible' });
    await page
      .getByTestId('deliveries-filter-endpoint')
      .filter({ hasText: receiver.url('flaky') })
      .waitFor();
    const failed = page.locator('[data-testid="delivery-row"][data-status="failed"]');
    await failed.waitFor();
    expect(await page.getByTestId('delivery-row').count()).toBe(1);
    expect(await failed.getByTestId('delivery-attempts').textContent()).toBe('1');
    expect(await failed.getByTestId('delivery-last').textContent()).toContain('500');
    await saveScreenshot(page, 'webhook-delivery-failed');

    // The receiver is back: Retry sends it again, and it succeeds with a second attempt.
    failing.delete('flaky');
    const deliveryId = (await failed.getAttribute('data-delivery-id')) ?? '';
    await failed.getByTestId('delivery-actions').click();
    await page.getByTestId('delivery-actions-menu').getByTestId('delivery-retry').click();
    // Retry re-sends, so it asks first: nothing goes out until it is confirmed.
    const retryDialog = page.getByTestId('delivery-retry-dialog');
    await retryDialog.waitFor();
    expect(await retryDialog.textContent()).toContain(receiver.url('flaky'));
    expect(receiver.requests.filter((r) => r.endpoint === 'flaky')).toHaveLength(1);
    await retryDialog.getByTestId('delivery-retry-dialog-confirm').click();
    await retryDialog.waitFor({ state: 'detached' });
    const retried = page.locator(`[data-testid="delivery-row"][data-delivery-id="${deliveryId}"][data-status="succeeded"]`);
    await retried.waitFor();
    expect(await retried.getByTestId('delivery-attempts').textContent()).toBe('2');
    await retried.getByTestId('delivery-actions').click();
    await page.getByTestId('delivery-actions-menu').getByTestId('delivery-view').click();
    expect(new URL(page.url()).searchParams.get('delivery')).toBe(deliveryId);
    const attempts = page.getByTestId('delivery-detail').getByTestId('delivery-attempt');
    await attempts.nth(1).waitFor();
    // The filter still shows the endpoint (the list of endpoints loaded after it was set).
    await page
      .getByTestId('deliveries-filter-endpoint')
      .filter({ hasText: receiver.url('flaky') })
      .waitFor();
    expect(await attempts.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-outcome')))).toEqual(['http_error', 'succeeded']);
    expect(receiver.processed('flaky')).toHaveLength(1);
    expect(receiver.requests.filter((r) => r.endpoint === 'flaky').every((r) => r.verified)).toBe(true);
    await saveScreenshot(page, 'webhook-delivery-retried');
    // Close leaves the list (and the URL) as it was, without the delivery.
    await page.getByTestId('delivery-detail-close').click();
    await page.getByTestId('delivery-detail-dialog').waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.get('delivery')).toBeNull();
    expect(new URL(page.url()).searchParams.get('endpoint_id')).toBe(flaky.id);

    // Filters: status=failed shows nothing now.
    // Each filter applies as soon as it changes, with no Apply button.
    await chooseOption(page, 'deliveries-filter-status', 'failed');
    await page.getByTestId('deliveries-empty').waitFor();
    expect(new URL(page.url()).searchParams.get('status')).toBe('failed');
    await page.getByTestId('deliveries-filter-clear').click();
    await page.getByTestId('delivery-row').first().waitFor();
    await page.getByTestId('deliveries-filter-event-type').click();
    await page.getByTestId('deliveries-filter-event-type-option-invitation.revoked').click();
    await page.getByTestId('deliveries-empty').waitFor();
    expect(new URL(page.url()).searchParams.get('event_type')).toBe('invitation.revoked');
    expect(pageErrors).toEqual([]);
  });

  it('an endpoint answering 500 shows Failing, and its failed deliveries are retried together from one confirmed action', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/webhooks', DEMO_USER);
    await page.getByTestId('page-webhooks').waitFor({ state: 'visible' });
    failing.add('down');
    const down = await createEndpoint(page, 'down', 'Down receiver');
    await rowOf(page, down.id).waitFor();
    expect(await rowOf(page, down.id).getByTestId('webhook-health').textContent()).toBe('no deliveries');
    for (let i = 0; i < 2; i++) {
      await pick(page, down.id, 'webhook-test');
      await testToast(page, 'Down receiver').nth(i).waitFor();
    }
    const sentTo = () => receiver.requests.filter((r) => r.endpoint === 'down' && r.verified).length;
    /** Reloads the list until the row's health says `failing` (the list is read once per visit). */
    const healthOnceFailing = async (failingNow: boolean) => {
      const health = rowOf(page, down.id).getByTestId('webhook-health');
      for (let tries = 0; ; tries++) {
        await page.reload();
        await health.waitFor();
        if ((await health.getAttribute('data-failing')) === String(failingNow)) {
          return health;
        }
        expect(tries, 'the health to change').toBeLessThan(60);
        await page.waitForTimeout(250);
      }
    };
    // WEBHOOK_RETRY_SCHEDULE=0: each delivery fails at its one attempt.
    const health = await healthOnceFailing(true);
    expect(sentTo()).toBe(2);
    await health.getByTestId('webhook-failing').waitFor();
    expect(await health.getByTestId('webhook-success-rate').textContent()).toBe('0% delivered');
    expect(await health.getByTestId('webhook-last-error').textContent()).toContain('HTTP 500');
    await saveScreenshot(page, 'webhook-endpoint-failing');

    // Its name opens its own page (/webhooks/<id>): the facts and the health, kept by a reload;
    // the browser's back returns to the list.
    await rowOf(page, down.id).getByTestId('webhook-name').click();
    const detail = page.getByTestId('webhook-detail');
    await detail.waitFor();
    expect(new URL(page.url()).pathname).toBe(`/auth/console/webhooks/${down.id}`);
    expect(await detail.getByTestId('webhook-detail-id').textContent()).toBe(down.id);
    expect(await detail.getByTestId('webhook-detail-url').textContent()).toBe(receiver.url('down'));
    expect(await detail.getByTestId('webhook-detail-event-types').textContent()).toBe('user.created');
    await page.reload();
    await detail.getByTestId('webhook-failing').waitFor();
    expect(await detail.getByTestId('webhook-last-error').textContent()).toContain('HTTP 500');
    expect(await detail.getByTestId('webhook-detail-deliveries').getAttribute('href')).toBe(
      `/auth/console/webhook-deliveries?endpoint_id=${down.id}`,
    );
    await saveScreenshot(page, 'webhook-endpoint-detail');
    await page.goBack();
    await rowOf(page, down.id).waitFor();
    expect(new URL(page.url()).pathname).toBe('/auth/console/webhooks');

    // The receiver is fixed: one confirmed action sends both again; nothing goes out before the confirmation.
    failing.delete('down');
    await pick(page, down.id, 'webhook-retry-failed');
    const dialog = page.getByTestId('webhook-retry-failed-dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('(2 in the last 24 hours)');
    expect(sentTo()).toBe(2);
    await dialog.getByTestId('webhook-retry-failed-dialog-confirm').click();
    await dialog.waitFor({ state: 'detached' });
    await page.locator('[data-sonner-toast]', { hasText: '2 deliveries of Down receiver queued again' }).waitFor();
    const recovered = await healthOnceFailing(false);
    expect(await recovered.getByTestId('webhook-failing').count()).toBe(0);
    expect(sentTo()).toBe(4);
    // Each delivery was sent again with its own webhook-id: the receiver processed two events, not four.
    expect(receiver.processed('down')).toHaveLength(2);
    expect(pageErrors).toEqual([]);
  });

  it('edit, disable and enable, rotate (new secret once, both signatures during the grace period), delete', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/webhooks', DEMO_USER);
    const { id, secret: first } = await createEndpoint(page, 'managed', 'Managed receiver');
    const row = rowOf(page, id);

    // Edit: description and event types.
    await pick(page, id, 'webhook-edit');
    const edit = page.getByTestId('webhook-edit-form');
    await edit.waitFor();
    await edit.getByTestId('webhook-edit-description').fill('Renamed receiver');
    await edit.getByTestId('webhook-edit-type-api_key.created').check();
    await edit.getByTestId('webhook-edit-submit').click();
    await edit.waitFor({ state: 'detached' });
    await row.getByTestId('webhook-description').filter({ hasText: 'Renamed receiver' }).waitFor();
    expect(await row.getByTestId('webhook-event-types').locator('code').allTextContents()).toEqual(['api_key.created', 'user.created']);

    // Disable (confirmed): no test can be sent; enable again.
    await pick(page, id, 'webhook-disable');
    const dialog = page.getByTestId('webhook-disable-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.getByRole('heading').textContent()).toBe('Disable the endpoint Renamed receiver?');
    await dialog.getByTestId('webhook-disable-dialog-confirm').click();
    await page.locator(`[data-testid="webhook-row"][data-endpoint-id="${id}"][data-enabled="false"]`).waitFor();
    expect(await row.getByTestId('webhook-status').getAttribute('data-reason')).toBe('by an admin');
    await row.getByTestId('webhook-actions').click();
    const menu = page.getByTestId('webhook-actions-menu');
    expect(await menu.getByTestId('webhook-test').getAttribute('aria-disabled')).toBe('true');
    expect(await menu.getByTestId('webhook-replay').getAttribute('aria-disabled')).toBe('true');
    await saveScreenshot(page, 'webhooks-disabled');
    await menu.getByTestId('webhook-enable').click();
    await page.locator(`[data-testid="webhook-row"][data-endpoint-id="${id}"][data-enabled="true"]`).waitFor();

    // Rotate (confirmed): a new secret, shown once; deliveries carry both signatures for now.
    await pick(page, id, 'webhook-rotate');
    await page.getByTestId('webhook-rotate-dialog-confirm').click();
    await page.getByTestId('webhook-secret-revealed').waitFor({ state: 'visible' });
    const second = (await page.getByTestId('webhook-secret-value').textContent()) ?? '';
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    await row.locator('[data-testid="webhook-secret-rotated"][data-grace="true"]').waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await saveScreenshot(page, 'webhooks-rotated');
    await page.getByTestId('webhook-secret-dismiss').click();
    // A receiver still holding the old secret verifies the next delivery, and so does one with the new.
    await pick(page, id, 'webhook-test');
    await testToast(page, 'Renamed receiver').waitFor();
    await expect.poll(() => receiver.requests.filter((r) => r.endpoint === 'managed').length, { timeout: 15_000 }).toBe(1);
    expect(receiver.requests.find((r) => r.endpoint === 'managed')?.verified).toBe(true);
    receiver.addEndpoint('managed', second);
    await pick(page, id, 'webhook-test');
    await expect.poll(() => receiver.requests.filter((r) => r.endpoint === 'managed').length, { timeout: 15_000 }).toBe(2);
    expect(receiver.requests.filter((r) => r.endpoint === 'managed').every((r) => r.verified)).toBe(true);

    // Delete, confirmed by typing the endpoint's description: the button waits for it.
    await pick(page, id, 'webhook-delete');
    const remove = page.getByTestId('webhook-delete-dialog');
    await remove.waitFor({ state: 'visible' });
    expect(await remove.getByTestId('webhook-delete-dialog-confirm').isDisabled()).toBe(true);
    await remove.getByTestId('webhook-delete-dialog-input').fill('Renamed receiver');
    await remove.getByTestId('webhook-delete-dialog-confirm').click();
    await row.waitFor({ state: 'detached' });
    expect(pageErrors).toEqual([]);
  });

  it('replays a time range of events to an endpoint, then one replayed event again from its delivery, each confirmed', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/webhooks', DEMO_USER);
    const { id } = await createEndpoint(page, 'replayed', 'Replayed receiver');
    const row = rowOf(page, id);

    // Events of the demo user's organization from before the endpoint existed: two in the range, one before it.
    const [org] = await sql<{ id: string }[]>`
      select m.tenant_id as id from memberships m join users u on u.id = m.user_id
      join organizations o on o.id = m.tenant_id
      where u.email = ${DEMO_USER.email} and o.kind = 'tenant' limit 1`;
    expect(org).toBeDefined();
    const hour = 3_600_000;
    const now = Date.now();
    const seed = async (n: string, at: number) => {
      const eventId = `evt_e2ereplay${n.padStart(11, '0')}`;
      await sql`insert into webhook_events (id, tenant_id, type, data, created_at)
        values (${eventId}, ${org?.id ?? ''}, 'user.created', ${sql.json({ object: 'user', id: `usr_${n}` })}, ${new Date(at)})`;
      return eventId;
    };
    const inRange = [await seed('1', now - 1.5 * hour), await seed('2', now - 1.25 * hour)];
    await seed('3', now - 3 * hour);
    const local = (at: number) => {
      const d = new Date(at);
      const pad = (v: number) => String(v).padStart(2, '0');
      return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
    };

    // The range form: nothing is sent before the dialog is confirmed.
    await row.waitFor();
    await pick(page, id, 'webhook-replay');
    const form = page.getByTestId('webhook-replay-form');
    await form.getByTestId('webhook-replay-from').fill(local(now - 2 * hour));
    await form.getByTestId('webhook-replay-to').fill(local(now - hour));
    await page.getByTestId('webhook-replay-submit').click();
    const dialog = page.getByTestId('webhook-replay-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.textContent()).toContain(receiver.url('replayed'));
    await saveScreenshot(page, 'webhook-replay-confirm');
    expect(receiver.requests.filter((r) => r.endpoint === 'replayed')).toEqual([]);
    await dialog.getByTestId('webhook-replay-dialog-confirm').click();
    const queued = form.getByTestId('webhook-replay-queued');
    await queued.waitFor();
    expect(await queued.getAttribute('data-count')).toBe('2');
    await expect.poll(() => receiver.processed('replayed').sort(), { timeout: 15_000 }).toEqual([...inRange].sort());
    expect(receiver.requests.filter((r) => r.endpoint === 'replayed').every((r) => r.verified)).toBe(true);

    // Its deliveries, labelled as replays; Replay of one of them queues a third delivery, same webhook-id.
    await form.getByTestId('webhook-replay-deliveries').click();
    await page.getByTestId('page-webhook-deliveries').waitFor({ state: 'visible' });
    const replayed = page.locator('[data-testid="delivery-row"]', { has: page.getByTestId('delivery-replay') });
    await expect.poll(() => replayed.count()).toBe(2);
    await replayed.first().getByTestId('delivery-open').click();
    const detail = page.getByTestId('delivery-detail');
    const firstId = await detail.getAttribute('data-delivery-id');
    await page.getByTestId('delivery-detail-dialog').getByTestId('delivery-replay-button').click();
    const replayDialog = page.getByTestId('delivery-replay-dialog');
    await replayDialog.waitFor();
    expect(await replayDialog.textContent()).toContain(receiver.url('replayed'));
    expect(receiver.requests.filter((r) => r.endpoint === 'replayed')).toHaveLength(2);
    await replayDialog.getByTestId('delivery-replay-dialog-confirm').click();
    await page.locator(`[data-testid="delivery-detail"]:not([data-delivery-id="${firstId}"])`).waitFor();
    await detail.getByTestId('delivery-detail-status').filter({ hasText: 'succeeded' }).waitFor();
    await expect.poll(() => receiver.requests.filter((r) => r.endpoint === 'replayed').length, { timeout: 15_000 }).toBe(3);
    expect(receiver.processed('replayed').sort()).toEqual([...inRange].sort());
    await saveScreenshot(page, 'webhook-delivery-replayed');
    expect(pageErrors).toEqual([]);
  });
});
