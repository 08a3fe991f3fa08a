import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type SmtpCapture, startSmtpCapture } from '../test/support/mail.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Invitation emails end to end: `svc serve` with an SMTP provider (a real smtp-server in this
 * process) and no background sending (WORKER_ENABLED=false, no email worker), so the email waits
 * until the admin presses Process on the Email deliveries page; and a server without a provider,
 * where Process explains email_delivery_disabled.
 */
describeInChromium('e2e: console email deliveries', () => {
  let smtp: SmtpCapture;
  let server: E2EServer;
  let disabled: E2EServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let pageErrors: string[] = [];

  beforeAll(async () => {
    smtp = await startSmtpCapture();
    [server, disabled] = await Promise.all([
      startServer({
        env: {
          WORKER_ENABLED: 'false',
          EMAIL_ENABLED: 'true',
          EMAIL_PROVIDER: 'smtp',
          SMTP_URL: smtp.url,
          EMAIL_FROM: 'svc <invites@svc.example>',
        },
      }),
      startServer(),
    ]);
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
    await disabled?.stop();
    await smtp?.close();
  });

  async function freshPage(baseURL: string): Promise<Page> {
    const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
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

  it('an invitation queues its email; Process sends it with the invite link; the list shows it sent and filters by status', async () => {
    const page = await freshPage(server.url);
    // The demo user administers the workspace made at first sign-in.
    await signInAt(page, server.url, '/auth/console/invitations', DEMO_USER);
    await page.getByTestId('invitations-create-open').click();
    await page.getByTestId('invitations-create-email').fill('new.colleague@example.com');
    await page.getByTestId('invitations-create-submit').click();
    await page.getByTestId('invitations-email-queued').waitFor({ state: 'visible' });
    const inviteLink = (await page.getByTestId('invite-link-value').textContent()) ?? '';
    expect(inviteLink).toMatch(/\/invitations\/accept\?token=svc_inv_/);
    await page.getByTestId('invite-link-dismiss').click();

    await page.getByTestId('nav-email-deliveries').click();
    await page.getByTestId('page-email-deliveries').waitFor({ state: 'visible' });
    const row = page.locator('[data-testid="email-delivery-row"][data-recipient="new.colleague@example.com"]');
    await row.waitFor({ state: 'visible' });
    expect(await row.getByTestId('email-delivery-status').textContent()).toBe('pending');
    expect(await row.getByTestId('email-delivery-attempts').textContent()).toBe('0');
    expect(await row.textContent()).toContain("You're invited to join Demo User's workspace on svc");
    // Nothing is sent until someone processes it.
    expect(smtp.received).toHaveLength(0);

    // The waiting email's row menu: "Send now" attempts this one at once.
    await row.getByRole('button', { name: 'Actions for the email to new.colleague@example.com' }).click();
    const menu = page.getByRole('menu');
    await menu.waitFor({ state: 'visible' });
    expect(await menu.getByRole('menuitem').allTextContents()).toEqual(['Send now']);
    await menu.getByRole('menuitem', { name: 'Send now' }).click();
    await page.getByTestId('email-process-result').waitFor({ state: 'visible' });
    expect(await page.getByTestId('email-process-summary').textContent()).toBe('1 attempted: 1 sent, 0 will be retried, 0 failed.');
    await page.locator('[data-testid="email-delivery-row"][data-status="sent"]').waitFor({ state: 'visible' });
    expect(await row.getByTestId('email-delivery-attempts').textContent()).toBe('1');
    // Sent: nothing left to do with it, so no menu.
    expect(await row.getByTestId('email-delivery-actions').count()).toBe(0);

    const [email] = await smtp.waitFor(1);
    expect(email?.to).toEqual(['new.colleague@example.com']);
    expect(email?.text).toContain(inviteLink);
    expect(email?.html).toContain(`href="${inviteLink}"`);
    // The page never shows the body (the one-time link) of an email.
    const token = new URL(inviteLink).searchParams.get('token') ?? '';
    expect(await page.getByTestId('page-email-deliveries').innerHTML()).not.toContain(token);
    await saveScreenshot(page, 'console-email-deliveries');

    // Status filter: nothing pending any more; the sent one under "sent".
    await chooseOption(page, 'email-deliveries-filter-status', 'pending');
    await page.getByTestId('email-deliveries-empty').waitFor({ state: 'visible' });
    expect(await page.getByTestId('email-deliveries-empty-title').textContent()).toBe('No pending emails.');
    // The empty state's own button lifts the filter.
    await page.getByTestId('email-deliveries-empty-action').click();
    await row.waitFor({ state: 'visible' });
    expect(await page.getByTestId('email-deliveries-filter-status').textContent()).toContain('Any');
    await chooseOption(page, 'email-deliveries-filter-status', 'sent');
    await row.waitFor({ state: 'visible' });
    expect(await page.getByTestId('email-delivery-row').count()).toBe(1);

    // Processing again: nothing due, and it says so.
    await page.getByTestId('email-process').click();
    await page.getByTestId('email-process-summary').filter({ hasText: 'Nothing was due' }).waitFor();
    expect(smtp.received).toHaveLength(1);
    expectNoPageErrors();
  });

  it('without a provider: the invitation page says to copy the link, and Process shows email_delivery_disabled clearly', async () => {
    const page = await freshPage(disabled.url);
    await signInAt(page, disabled.url, '/auth/console/invitations', DEMO_USER);
    await page.getByTestId('invitations-create-open').click();
    await page.getByTestId('invitations-create-email').fill('by.hand@example.com');
    await page.getByTestId('invitations-create-submit').click();
    await page.getByTestId('invitations-email-off').waitFor({ state: 'visible' });
    await page.getByTestId('invite-link').waitFor({ state: 'visible' });
    await page.getByTestId('invite-link-dismiss').click();

    await page.getByTestId('nav-email-deliveries').click();
    await page.getByTestId('email-deliveries-empty').waitFor({ state: 'visible' });
    await page.getByTestId('email-process').click();
    await page.getByTestId('email-disabled-explained').waitFor({ state: 'visible' });
    expect(await page.getByTestId('error-code').textContent()).toBe('email_delivery_disabled');
    expect(await page.getByTestId('email-disabled-explained').textContent()).toContain('Copy the invite link');
    await saveScreenshot(page, 'console-email-deliveries-disabled');
    expectNoPageErrors();
  });
});
