import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { chooseOption } from './support/select.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_ADMIN, DEMO_USER, signInAt } from './support/sign-in.ts';

const CONSOLE = '/auth/console';

/**
 * Subscription and Plans pages against a real `svc serve`: a platform admin creates and edits a
 * plan, moves an organization onto it and cancels it; that organization's admin then tries to
 * create an application and a webhook endpoint and sees the 402 explained as a subscription
 * problem, with what to do and a way to the Subscription page; reads keep working; once the
 * platform admin reactivates it, the same create succeeds.
 */
describeInChromium('e2e: subscription and plans in the console', () => {
  let server: E2EServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
  });

  async function signedIn(credentials: { email: string; password: string }, path: string): Promise<Page> {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 1000 } });
    contexts.push(context);
    context.setDefaultTimeout(20_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    await signInAt(page, server.url, `${CONSOLE}${path}`, credentials);
    return page;
  }

  it('a platform admin manages plans and cancels an organization; its admin sees the 402 explained, and reads keep working', async () => {
    // The organization admin: their own workspace, on the default plan, active.
    const user = await signedIn(DEMO_USER, '/subscription');
    const overview = user.getByTestId('subscription-overview');
    await overview.waitFor({ state: 'visible' });
    const slug = (await overview.getAttribute('data-organization-slug')) ?? '';
    expect(slug).not.toBe('');
    expect(await user.getByTestId('subscription-plan-key').textContent()).toBe('free');
    expect(await user.getByTestId('subscription-status').textContent()).toBe('active');
    expect(await user.getByTestId('subscription-seats-used').textContent()).toBe('1');
    expect(await user.getByTestId('subscription-seats-limit').textContent()).toBe('10');
    await user.getByTestId('subscription-ok').waitFor({ state: 'visible' });
    // Not a platform admin: no way to change it here.
    expect(await user.getByTestId('subscription-change-open').count()).toBe(0);
    expect(await user.getByTestId('subscription-picker').count()).toBe(0);
    await saveScreenshot(user, 'subscription-active');

    // The platform admin creates a plan in its dialog (the form checks the limits before sending).
    const admin = await signedIn(DEMO_ADMIN, '/plans');
    await admin.getByTestId('plans-table').waitFor({ state: 'visible' });
    expect(await admin.getByTestId('plans-read-only').count()).toBe(0);
    await admin.getByTestId('plan-create-open').click();
    const create = admin.getByTestId('plan-create');
    await create.waitFor({ state: 'visible' });
    await create.getByTestId('plan-create-key').fill('team');
    await create.getByTestId('plan-create-name').fill('Team');
    await create.getByTestId('plan-create-seats').fill('5');
    await create.getByTestId('plan-create-usage-limits').fill('api_call = -3');
    await create.getByTestId('plan-create-submit').click();
    await create.getByTestId('plan-create-usage-limits-error').waitFor({ state: 'visible' });
    await saveScreenshot(admin, 'plan-create-dialog');
    await create.getByTestId('plan-create-usage-limits').fill('api_call = 1000\nsms.sent = 50');
    // Usage alerts default to 50, 80, 100; out of order they are refused next to the field.
    expect(await create.getByTestId('plan-create-usage-thresholds').inputValue()).toBe('50, 80, 100');
    await create.getByTestId('plan-create-usage-thresholds').fill('80, 50');
    await create.getByTestId('plan-create-submit').click();
    const thresholdsError = create.getByTestId('plan-create-usage-thresholds-error');
    await thresholdsError.waitFor({ state: 'visible' });
    expect(await thresholdsError.textContent()).toContain('ascending');
    await create.getByTestId('plan-create-usage-thresholds').fill('50, 90');
    await create.getByTestId('plan-create-submit').click();
    // Created: the dialog closes, says so, and the plan is in the list.
    await create.waitFor({ state: 'hidden' });
    await admin.locator('[data-sonner-toast]').filter({ hasText: 'Plan Team created' }).waitFor();
    const teamRow = admin.locator('[data-testid="plan-row"][data-plan-key="team"]');
    await teamRow.waitFor({ state: 'visible' });
    expect(await teamRow.getByTestId('plan-key').textContent()).toBe('team');
    expect(await teamRow.getByTestId('plan-seats').textContent()).toBe('5');
    expect(await teamRow.getByTestId('plan-usage-limits').textContent()).toContain('api_call');
    expect(await teamRow.getByTestId('plan-usage-thresholds').textContent()).toBe('50% · 90%');
    // The same key again: the API's 409 plan_key_taken, shown with its code in the dialog, which stays open.
    await admin.getByTestId('plan-create-open').click();
    await create.waitFor({ state: 'visible' });
    expect(await create.getByTestId('plan-create-key').inputValue()).toBe('');
    await create.getByTestId('plan-create-key').fill('team');
    await create.getByTestId('plan-create-name').fill('Team again');
    await create.getByTestId('plan-create-submit').click();
    const taken = create.getByTestId('error-code');
    await taken.waitFor({ state: 'visible' });
    expect(await taken.textContent()).toBe('plan_key_taken');
    await create.getByTestId('plan-create-cancel').click();
    await create.waitFor({ state: 'hidden' });
    expect(await admin.getByTestId('plan-row').filter({ hasText: 'Team again' }).count()).toBe(0);

    // Edit it from its row's menu (the only action: plans are not deleted): a new name and seat limit.
    await teamRow.getByTestId('plan-actions').click();
    expect(await admin.getByTestId('plan-actions-menu').getByRole('menuitem').allTextContents()).toEqual(['Edit…']);
    await admin.getByRole('menuitem', { name: 'Edit…' }).click();
    const edit = admin.getByTestId('plan-edit-dialog');
    await edit.waitFor({ state: 'visible' });
    expect(await edit.getByTestId('plan-edit-key').inputValue()).toBe('team');
    expect(await edit.getByTestId('plan-edit-usage-thresholds').inputValue()).toBe('50, 90');
    await edit.getByTestId('plan-edit-name').fill('Team plus');
    await edit.getByTestId('plan-edit-seats').fill('8');
    await edit.getByTestId('plan-edit-dialog-submit').click();
    await edit.waitFor({ state: 'hidden' });
    await admin.locator('[data-testid="plan-row"][data-plan-key="team"] [data-testid="plan-name"]', { hasText: 'Team plus' }).waitFor();
    expect(await admin.locator('[data-testid="plan-row"][data-plan-key="team"] [data-testid="plan-seats"]').textContent()).toBe('8');
    // The default plan is marked, and its form says it stays the default.
    await admin.locator('[data-testid="plan-row"][data-plan-key="free"] [data-testid="plan-default"]').waitFor();
    await admin.locator('[data-testid="plan-row"][data-plan-key="free"] [data-testid="plan-actions"]').click();
    await admin.getByRole('menuitem', { name: 'Edit…' }).click();
    await edit.getByTestId('plan-edit-default-locked').waitFor({ state: 'visible' });
    await edit.getByTestId('plan-edit-dialog-cancel').click();
    await edit.waitFor({ state: 'hidden' });
    await saveScreenshot(admin, 'plans');

    // The platform admin's own workspace has no subscription: the page asks which organization.
    await admin.getByTestId('nav-subscription').click();
    await admin.getByTestId('subscription-picker-hint').waitFor({ state: 'visible' });
    expect(await admin.getByTestId('subscription-change-open').count()).toBe(0);
    await admin.getByTestId('subscription-picker-slug').fill(slug);
    await admin.getByTestId('subscription-picker-open').click();
    await admin.locator(`[data-testid="subscription-overview"][data-organization-slug="${slug}"]`).waitFor();

    // The Organizations page: an organization's name opens its page, its plan and what it holds
    // without switching the console to it; reload keeps it, back returns to the list.
    await admin.getByTestId('nav-organizations').click();
    await admin.getByTestId('organizations-search').fill(slug);
    const orgRow = admin.locator(`[data-testid="organization-row"][data-slug="${slug}"]`);
    const orgId = (await orgRow.getAttribute('data-organization-id')) ?? '';
    await orgRow.getByTestId('organization-name').click();
    const orgPage = admin.getByTestId('organization-detail');
    await orgPage.waitFor({ state: 'visible' });
    expect(new URL(admin.url()).pathname).toBe(`${CONSOLE}/organizations/${orgId}`);
    expect(await orgPage.getByTestId('organization-detail-slug').textContent()).toBe(slug);
    await admin.reload();
    await orgPage.getByTestId('organization-detail-plan').filter({ hasText: 'Free' }).waitFor();
    expect(Number(await orgPage.getByTestId('organization-detail-members').textContent())).toBeGreaterThan(0);
    // The workspace did not change: the header still names the platform's.
    expect(await admin.getByTestId('workspace-kind').textContent()).toBe('platform');
    await admin.goBack();
    await admin.getByTestId('organizations-search').fill(slug);

    // The header's workspace switcher offers the platform admin organizations it is not a member
    // of, as a tenant admin's offers theirs; and back to the platform's own.
    const platformSlug = await admin.evaluate(
      async () => ((await (await fetch('/v1/me')).json()) as { activeWorkspace: { slug: string } }).activeWorkspace.slug,
    );
    await chooseOption(admin, 'workspace-select', slug);
    await admin.getByTestId('workspace-kind').filter({ hasText: 'tenant' }).waitFor();
    await chooseOption(admin, 'workspace-select', platformSlug);
    await admin.getByTestId('workspace-kind').filter({ hasText: 'platform' }).waitFor();

    // The platform workspace's people are the engine's platform admin group (the API answers 409
    // platform_workspace_managed): Users and Invitations say so instead of offering Add and Invite.
    await admin.getByTestId('nav-users').click();
    await admin.getByTestId('users-managed').waitFor({ state: 'visible' });
    await admin.getByTestId('user-row').first().waitFor({ state: 'visible' });
    expect(await admin.getByTestId('users-create-open').count()).toBe(0);
    expect(await admin.getByTestId('user-actions').count()).toBe(0);
    await admin.getByTestId('nav-people').click();
    await admin.getByTestId('people-tab-invitations').click();
    await admin.getByTestId('invitations-managed').waitFor({ state: 'visible' });
    expect(await admin.getByTestId('invitations-create-open').count()).toBe(0);
    const refused = await admin.evaluate(async () => {
      const res = await fetch('/v1/invitations', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'someone@example.com', roleKey: 'org_member' }),
      });
      return { status: res.status, code: ((await res.json()) as { error?: { code?: string } }).error?.code };
    });
    expect(refused).toEqual({ status: 409, code: 'platform_workspace_managed' });
    await admin.getByTestId('nav-organizations').click();
    await admin.getByTestId('organizations-search').fill(slug);

    // The row menu leads to the subscription too, the organization chosen.
    await orgRow.getByTestId('organization-actions').click();
    await admin.getByRole('menuitem', { name: 'Manage subscription' }).click();
    await admin.waitForURL(`${server.url}${CONSOLE}/subscription?organization=${slug}`);
    await admin.locator(`[data-testid="subscription-overview"][data-organization-slug="${slug}"]`).waitFor();
    expect(await admin.getByTestId('subscription-picker-slug').inputValue()).toBe(slug);
    expect(await admin.getByTestId('subscription-plan-key').textContent()).toBe('free');

    // It moves the organization to Team plus and cancels it, which asks first.
    await admin.getByTestId('subscription-change-open').click();
    const change = admin.getByTestId('subscription-change');
    await change.waitFor({ state: 'visible' });
    await chooseOption(admin, 'subscription-form-plan', 'team');
    await chooseOption(admin, 'subscription-form-status', 'cancelled');
    await change.getByTestId('subscription-change-submit').click();
    const confirmCancel = admin.getByTestId('subscription-cancel-confirm');
    await confirmCancel.waitFor({ state: 'visible' });
    await saveScreenshot(admin, 'subscription-cancel-confirm');
    // Not confirmed: nothing is saved, and the form keeps the choices.
    await admin.getByRole('alertdialog').getByRole('button', { name: 'Keep it', exact: true }).click();
    await confirmCancel.waitFor({ state: 'hidden' });
    expect(await change.isVisible()).toBe(true);
    expect(await admin.locator('[data-testid="subscription-status"][data-status="active"]').count()).toBe(1);
    expect(await admin.getByTestId('subscription-form-status').textContent()).toContain('cancelled');
    await change.getByTestId('subscription-change-submit').click();
    await confirmCancel.click();
    await change.waitFor({ state: 'hidden' });
    await admin.locator('[data-sonner-toast]').filter({ hasText: 'Saved: Team plus, cancelled' }).waitFor();
    await admin.locator('[data-testid="subscription-status"][data-status="cancelled"]').waitFor();
    expect(await admin.getByTestId('subscription-plan-name').textContent()).toBe('Team plus');
    expect(await admin.getByTestId('subscription-plan-key').textContent()).toBe('team');
    expect(await admin.getByTestId('subscription-seats-limit').textContent()).toBe('8');
    expect(await admin.getByTestId('subscription-blocked-code').textContent()).toBe('subscription_inactive');
    expect(await admin.getByTestId('subscription-usage-row').count()).toBe(2);
    await saveScreenshot(admin, 'subscription-cancelled-by-platform-admin');

    // The organization's admin tries to create an application: 402, explained.
    await user.getByTestId('nav-applications').click();
    // Reads still work: the (empty) list is shown.
    await user.getByTestId('applications-empty').waitFor({ state: 'visible' });
    await user.getByTestId('application-create-open').click();
    await user.getByTestId('application-name-input').fill('Blocked app');
    await user.getByTestId('application-redirect-url-input').fill('https://app.example.com/callback');
    await user.getByTestId('application-create-submit').click();
    const appPanel = user.getByTestId('application-create').getByTestId('error-panel');
    await appPanel.waitFor({ state: 'visible' });
    expect(await appPanel.getAttribute('data-subscription-problem')).toBe('true');
    expect(await appPanel.getByTestId('error-code').textContent()).toBe('subscription_inactive');
    expect(await appPanel.textContent()).toContain('402');
    expect(await appPanel.getByTestId('error-subscription-headline').textContent()).toBe(
      "Subscription problem: the organization's subscription is not active",
    );
    expect(await appPanel.getByTestId('error-subscription-help').textContent()).toContain('A platform admin can reactivate it');
    expect(await appPanel.getByTestId('error-message').textContent()).toContain('is cancelled: a platform admin can reactivate it');
    expect(await user.getByTestId('applications-empty').count()).toBe(1);
    await saveScreenshot(user, 'subscription-402-create-application');
    await user.getByTestId('application-create-cancel').click();
    await user.getByTestId('application-create').waitFor({ state: 'hidden' });

    // And a webhook endpoint: the same explanation.
    await user.getByTestId('nav-webhooks').click();
    await user.getByTestId('webhooks-empty').waitFor({ state: 'visible' });
    await user.getByTestId('webhook-create-open').click();
    await user.getByTestId('webhook-create-url').fill('https://hooks.example.com/svc');
    await user.getByTestId('webhook-create-type-user.created').check();
    await user.getByTestId('webhook-create-submit').click();
    const hookPanel = user.getByTestId('webhook-create').getByTestId('error-panel');
    await hookPanel.waitFor({ state: 'visible' });
    expect(await hookPanel.getByTestId('error-code').textContent()).toBe('subscription_inactive');
    await hookPanel.getByTestId('error-subscription').waitFor({ state: 'visible' });
    await saveScreenshot(user, 'subscription-402-create-webhook');

    // The panel leads to the Subscription page, which says why and since when nothing changes.
    await hookPanel.getByTestId('error-subscription-link').click();
    await user.waitForURL(`${server.url}${CONSOLE}/subscription`);
    await user.locator('[data-testid="subscription-blocked"][data-code="subscription_inactive"]').waitFor();
    expect(await user.getByTestId('subscription-blocked-message').textContent()).toContain('platform admin can reactivate it');
    expect(await user.getByTestId('subscription-status').textContent()).toBe('cancelled');
    await saveScreenshot(user, 'subscription-cancelled-seen-by-org-admin');

    // Reactivated by the platform admin (no confirmation for that): the same create goes through at once.
    await admin.getByTestId('subscription-change-open').click();
    await change.waitFor({ state: 'visible' });
    await chooseOption(admin, 'subscription-form-status', 'active');
    await change.getByTestId('subscription-change-submit').click();
    await change.waitFor({ state: 'hidden' });
    expect(await confirmCancel.count()).toBe(0);
    await admin.locator('[data-testid="subscription-status"][data-status="active"]').waitFor();
    await user.getByTestId('nav-applications').click();
    await user.getByTestId('application-create-open').click();
    await user.getByTestId('application-name-input').fill('Allowed app');
    await user.getByTestId('application-redirect-url-input').fill('https://app.example.com/callback');
    await user.getByTestId('application-create-submit').click();
    await user.getByTestId('application-revealed').waitFor({ state: 'visible' });
    // The dialog closed on success: no error left anywhere.
    expect(await user.getByTestId('application-create').count()).toBe(0);
    expect(await user.getByTestId('error-panel').count()).toBe(0);

    expect(pageErrors).toEqual([]);
  });

  it('an organization admin sees plans read-only', async () => {
    const user = await signedIn(DEMO_USER, '/plans');
    await user.getByTestId('plans-table').waitFor({ state: 'visible' });
    await user.getByTestId('plans-read-only').waitFor({ state: 'visible' });
    // No create button and no row menu: nothing here changes a plan.
    expect(await user.getByTestId('plan-create-open').count()).toBe(0);
    expect(await user.getByTestId('plan-actions').count()).toBe(0);
    expect(await user.locator('[data-testid="plan-row"][data-plan-key="free"] [data-testid="plan-seats"]').textContent()).toBe('10');
    await saveScreenshot(user, 'plans-read-only');
    expect(pageErrors).toEqual([]);
  });
});
