import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_ADMIN, DEMO_USER, signInAt } from './support/sign-in.ts';

const CONSOLE = '/auth/console';

/**
 * The Overview's checklist ticking from what the organization holds, the platform admins'
 * Organizations page opening an organization they are not a member of, and the command palette.
 */
describeInChromium('e2e: console overview, organizations and command palette', () => {
  let server: E2EServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let user: Page;
  let admin: Page;
  let pageErrors: string[] = [];

  async function signedIn(credentials: { email: string; password: string }, path: string): Promise<Page> {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    await signInAt(page, server.url, path, credentials);
    return page;
  }

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    user = await signedIn(DEMO_USER, `${CONSOLE}/`);
    admin = await signedIn(DEMO_ADMIN, `${CONSOLE}/`);
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
  });

  function expectNoPageErrors() {
    const errors = pageErrors;
    pageErrors = [];
    expect(errors, 'uncaught exceptions in the page').toEqual([]);
  }

  /** A call with the page's own session (same origin, JSON). */
  async function must(page: Page, status: number, method: string, path: string, body?: unknown): Promise<Record<string, any>> {
    const answer = await page.evaluate(
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
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status);
    return answer.body;
  }

  const item = (page: Page, key: string) => page.getByTestId(`checklist-${key}`);

  it('the checklist ticks "Create an application" once one exists, and links there until then', async () => {
    await user.goto(`${CONSOLE}/`);
    await item(user, 'applicationCreated').waitFor({ state: 'visible' });
    expect(await item(user, 'applicationCreated').getAttribute('data-done')).toBe('false');
    expect(await user.getByTestId('checklist-applicationCreated-link').getAttribute('href')).toBe(`${CONSOLE}/applications`);
    const before = Number(await user.getByTestId('overview-applications').textContent());

    const me = await must(user, 200, 'GET', '/v1/me');
    await must(user, 201, 'POST', '/v1/applications', {
      organization_slug: me.activeWorkspace.slug,
      name: 'Overview checklist app',
      redirectUrls: ['https://checklist.example/callback'],
      clientType: 'public',
    });

    await user.reload();
    await user.locator('[data-testid="checklist-applicationCreated"][data-done="true"]').waitFor({ state: 'visible' });
    expect(await user.getByTestId('checklist-applicationCreated-link').count()).toBe(0);
    expect(Number(await user.getByTestId('overview-applications').textContent())).toBe(before + 1);
    // The tenant admin reads the audit log: the card is there, with the creation in it.
    await user.locator('[data-testid="overview-activity-entry"][data-action="application.created"]').first().waitFor({ state: 'visible' });
    await saveScreenshot(user, 'console-overview-checklist');
    expectNoPageErrors();
  });

  it('a platform admin searches the organizations and opens one they are not a member of', async () => {
    const me = await must(user, 200, 'GET', '/v1/me');
    const target = me.activeWorkspace as { slug: string; name: string };
    const adminMe = await must(admin, 200, 'GET', '/v1/me');
    expect(adminMe.memberships.map((m: { organization: { slug: string } }) => m.organization.slug)).not.toContain(target.slug);

    await admin.goto(`${CONSOLE}/`);
    await admin.getByTestId('nav-organizations').click();
    await admin.getByTestId('page-organizations').waitFor({ state: 'visible' });
    await admin.getByTestId('organizations-search').fill(target.slug);
    const row = admin.locator(`[data-testid="organization-row"][data-slug="${target.slug}"]`);
    await row.waitFor({ state: 'visible' });
    // The search narrowed the list to what matches.
    await admin.waitForFunction(
      (slug) =>
        [...document.querySelectorAll('[data-testid="organization-row"]')].every((r) => (r.getAttribute('data-slug') ?? '').includes(slug)),
      target.slug,
    );
    expect(Number(await row.getByTestId('organization-members').textContent())).toBeGreaterThan(0);
    await saveScreenshot(admin, 'console-organizations');

    await row.getByTestId('organization-open').click();
    // The Overview is the router's index: /auth/console, with or without the slash.
    await admin.waitForURL((url) => url.pathname.replace(/\/$/, '') === CONSOLE);
    await admin.getByTestId('organization-overview').waitFor({ state: 'visible' });
    await admin.getByTestId('overview-checklist').waitFor({ state: 'visible' });
    await admin.locator('[data-testid="workspace-name"]', { hasText: target.name }).waitFor({ state: 'visible' });
    expect((await must(admin, 200, 'GET', '/v1/me')).activeWorkspace.slug).toBe(target.slug);
    expectNoPageErrors();
  });

  it('anyone else: no Organizations nav item, and the page refuses plainly', async () => {
    await user.goto(`${CONSOLE}/organizations`);
    await user.getByTestId('error-panel').waitFor({ state: 'visible' });
    expect(await user.getByTestId('error-code').textContent()).toBe('forbidden');
    expect(await user.getByTestId('organization-row').count()).toBe(0);
    expect(await user.getByTestId('nav-organizations').count()).toBe(0);
    expectNoPageErrors();
  });

  it('Ctrl+K opens the palette; typing a page name and Enter goes there; Escape closes it', async () => {
    await user.goto(`${CONSOLE}/`);
    await user.getByTestId('organization-overview').waitFor({ state: 'visible' });
    await user.keyboard.press('Control+k');
    const input = user.getByTestId('palette-input');
    await input.waitFor({ state: 'visible' });
    expect(await input.evaluate((el) => el === document.activeElement)).toBe(true);
    // A platform-only page is not offered to a tenant admin.
    expect(await user.getByTestId('palette-page-organizations').count()).toBe(0);
    await user.keyboard.type('Webhook deliveries');
    await user.keyboard.press('Enter');
    await user.waitForURL(`${server.url}${CONSOLE}/webhook-deliveries`);
    await user.getByTestId('page-webhook-deliveries').waitFor({ state: 'visible' });
    expect(await user.getByTestId('palette').count()).toBe(0);

    await user.keyboard.press('Control+k');
    await user.getByTestId('palette-input').waitFor({ state: 'visible' });
    await user.keyboard.press('Escape');
    await user.getByTestId('palette').waitFor({ state: 'detached' });
    expect(new URL(user.url()).pathname).toBe(`${CONSOLE}/webhook-deliveries`);
    expectNoPageErrors();
  });
});
