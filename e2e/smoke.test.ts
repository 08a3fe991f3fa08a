import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

const CONSOLE = '/auth/console';

/** Every console page reachable from the left nav: id (data-testid suffix), path, heading. */
const NAV_PAGES = [
  { id: 'applications', path: '/applications', heading: 'Applications' },
  // Members and invitations, a tab each: the nav's /people opens the first tab.
  { id: 'people', path: '/people/members', heading: 'People' },
  { id: 'users', path: '/users', heading: 'Users' },
  { id: 'sessions', path: '/sessions', heading: 'Sessions' },
  { id: 'roles', path: '/roles', heading: 'Roles' },
  { id: 'email-deliveries', path: '/email-deliveries', heading: 'Email deliveries' },
  { id: 'api-keys', path: '/api-keys', heading: 'API keys' },
  { id: 'webhooks', path: '/webhooks', heading: 'Webhooks' },
  { id: 'webhook-deliveries', path: '/webhook-deliveries', heading: 'Webhook deliveries' },
  { id: 'usage', path: '/usage', heading: 'Usage' },
  { id: 'billing', path: '/billing', heading: 'Billing' },
  { id: 'subscription', path: '/subscription', heading: 'Subscription' },
  { id: 'plans', path: '/plans', heading: 'Plans' },
  { id: 'audit-log', path: '/audit-log', heading: 'Audit log' },
  { id: 'exports', path: '/exports', heading: 'Exports' },
  { id: 'settings', path: '/settings', heading: 'Settings' },
  { id: 'domains', path: '/settings/domains', heading: 'Domains' },
  { id: 'directory-sync', path: '/settings/directory-sync', heading: 'Directory sync' },
  { id: 'sso-connections', path: '/settings/sso-connections', heading: 'SSO connections' },
  { id: 'setup-links', path: '/settings/setup-links', heading: 'Setup links' },
  { id: 'third-party-access', path: '/settings/third-party-access', heading: 'Third-party access' },
  // The Authorization section: the product's catalog, read-only for an org admin (roles.read).
  { id: 'api-resources', path: '/authorization/resources', heading: 'API resources' },
  { id: 'product-roles', path: '/authorization/product-roles', heading: 'Product roles' },
] as const;

describeInChromium('e2e smoke: svc serve in real Chromium', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Uncaught exceptions in the page: any one fails the test that caused it. */
  let pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
    // Fail fast with a useful message instead of Playwright's 30 s default per wait.
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    // The console is for signed-in users only (README.md "Sign-in"): every test below shares this session.
    await signInAt(page, server.url, `${CONSOLE}/`, DEMO_USER);
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

  function expectOk(response: Response | null) {
    expect(response, 'navigation produced no response').not.toBeNull();
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-type']).toMatch(/^text\/html/);
  }

  it('serves the landing page with an svc heading', async () => {
    const response = await page.goto('/');
    expectOk(response);
    const h1 = page.locator('h1').first();
    await h1.waitFor({ state: 'visible' });
    expect(await h1.textContent()).toMatch(/svc/i);
    await saveScreenshot(page, 'landing');
    expectNoPageErrors();
  });

  it('loads the console shell and shows the API version from the live service.config query', async () => {
    // httpBatchLink may send service.config alone or batched with the shell's other queries
    // (`/trpc/me.get,service.config`), depending on when the page's chunks load.
    const configResponse = page.waitForResponse((res) => {
      const { pathname } = new URL(res.url());
      return pathname.startsWith('/trpc/') && pathname.slice('/trpc/'.length).split(',').includes('service.config');
    });
    const response = await page.goto(`${CONSOLE}/`);
    expectOk(response);

    // The overview's number must come from the api over /trpc, not from anything baked in.
    const trpc = await configResponse;
    expect(trpc.status()).toBe(200);
    expect(trpc.request().method()).toBe('GET');

    await page.getByTestId('console-shell').waitFor({ state: 'visible' });
    await page.getByTestId('nav').waitFor({ state: 'visible' });
    // The pages in order, then the link to the API docs (in the navigation since the phone layout's menu).
    expect(await page.getByTestId('nav').locator('a').allTextContents()).toEqual([
      'Overview',
      ...NAV_PAGES.map((p) => p.heading),
      'API docs',
    ]);
    await page.getByTestId('overview').waitFor({ state: 'visible' });
    const version = page.getByTestId('service-api-version');
    await version.waitFor({ state: 'visible' });
    expect((await version.textContent())?.trim()).toBe('v1');
    expect(await page.getByTestId('service-engine-kind').textContent()).toBe('development engine');
    expect(await page.getByTestId('service-docs-link').getAttribute('href')).toMatch(/\/docs$/);
    expect(await page.getByTestId('service-openapi-link').getAttribute('href')).toMatch(/\/v1\/openapi\.json$/);
    expect(await page.getByTestId('nav-overview').getAttribute('aria-current')).toBe('page');
    expect(await page.getByTestId('error-panel').count()).toBe(0);
    // The header knows who is signed in (me.get over /trpc).
    await page.getByTestId('whoami').waitFor({ state: 'visible' });
    expect(await page.getByTestId('whoami-email').textContent()).toBe(DEMO_USER.email);

    await saveScreenshot(page, 'console-overview');
    expectNoPageErrors();
  });

  it('navigates client-side between console pages without reloading the document', async () => {
    await page.goto(`${CONSOLE}/`);
    await page.getByTestId('overview').waitFor({ state: 'visible' });
    // Survives only if no full page load happens in between.
    await page.evaluate(() => {
      (window as unknown as { __svcE2eMarker: string }).__svcE2eMarker = 'same-document';
    });

    for (const entry of NAV_PAGES) {
      await page.getByTestId(`nav-${entry.id}`).click();
      await page.waitForURL(`${server.url}${CONSOLE}${entry.path}`);
      const view = page.getByTestId(`page-${entry.id}`);
      await view.waitFor({ state: 'visible' });
      expect(await view.locator('h1').textContent()).toBe(entry.heading);
      expect(await page.getByTestId(`nav-${entry.id}`).getAttribute('aria-current')).toBe('page');
      expect(await page.getByTestId('overview').count()).toBe(0);
      await saveScreenshot(page, `console-${entry.id}`);
    }

    expect(await page.evaluate(() => (window as unknown as { __svcE2eMarker?: string }).__svcE2eMarker)).toBe('same-document');

    await page.goBack();
    await page.waitForURL(`${server.url}${CONSOLE}${NAV_PAGES.at(-2)?.path}`);
    await page.getByTestId(`page-${NAV_PAGES.at(-2)?.id}`).waitFor({ state: 'visible' });
    expectNoPageErrors();
  });

  it('People: the old Members and Invitations addresses open their tab, query kept; the tabs are links with their own URLs', async () => {
    await page.goto(`${CONSOLE}/invitations?from=bookmark`);
    await page.waitForURL(`${server.url}${CONSOLE}/people/invitations?from=bookmark`);
    await page.getByTestId('page-invitations').waitFor({ state: 'visible' });
    expect(await page.getByTestId('people-tab-invitations').getAttribute('aria-current')).toBe('page');
    expect(await page.getByTestId('nav-people').getAttribute('aria-current')).toBe('page');
    await page.goto(`${CONSOLE}/members`);
    await page.waitForURL(`${server.url}${CONSOLE}/people/members`);
    await page.getByTestId('page-members').waitFor({ state: 'visible' });
    await page.getByTestId('people-tab-invitations').click();
    await page.waitForURL(`${server.url}${CONSOLE}/people/invitations`);
    await page.getByTestId('page-invitations').waitFor({ state: 'visible' });
    await page.goBack();
    await page.waitForURL(`${server.url}${CONSOLE}/people/members`);
    await page.getByTestId('page-members').waitFor({ state: 'visible' });
    expectNoPageErrors();
  });

  it('serves the SPA for a deep link and shows the console not-found view, also after reload', async () => {
    const response = await page.goto(`${CONSOLE}/does-not-exist`);
    expectOk(response);
    for (let round = 0; round < 2; round++) {
      await page.getByTestId('console-shell').waitFor({ state: 'visible' });
      const notFound = page.getByTestId('not-found');
      await notFound.waitFor({ state: 'visible' });
      expect(await page.getByTestId('not-found-path').textContent()).toBe('/does-not-exist');
      expect(await page.getByTestId('overview').count()).toBe(0);
      expect(new URL(page.url()).pathname).toBe(`${CONSOLE}/does-not-exist`);
      if (round === 0) {
        await saveScreenshot(page, 'console-not-found');
        expectOk(await page.reload());
      }
    }
    expectNoPageErrors();
  });

  it('shows code, message and request id when the overview query fails', async () => {
    // The one substituted answer in this suite: the api has no switch to make service.config fail,
    // and what is under test here is the console's rendering of our error envelope.
    // httpBatchLink may send service.config alone or batched with the shell's other queries
    // (chunk timing decides): the others get their real answers, service.config the error.
    const refusal = {
      error: {
        code: -32029,
        message: 'Too many requests',
        data: { code: 'rate_limited', httpStatus: 429, requestId: 'req_e2e_body', path: 'service.config' },
      },
    };
    await page.route('**/trpc/**', async (route) => {
      const url = new URL(route.request().url());
      const names = decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf('/') + 1)).split(',');
      const at = names.indexOf('service.config');
      if (at === -1) {
        await route.continue();
        return;
      }
      const answers: unknown[] =
        names.length === 1 ? [refusal] : ((await (await route.fetch()).json()) as unknown[]).map((a, i) => (i === at ? refusal : a));
      await route.fulfill({
        status: names.length === 1 ? 429 : 207,
        contentType: 'application/json',
        headers: { 'x-request-id': 'req_e2e_header' },
        body: JSON.stringify(answers),
      });
    });
    try {
      await page.goto(`${CONSOLE}/`);
      const panel = page.getByTestId('error-panel');
      await panel.waitFor({ state: 'visible' });
      expect(await panel.getByTestId('error-code').textContent()).toBe('rate_limited');
      expect(await panel.getByTestId('error-message').textContent()).toBe('Too many requests');
      expect(await panel.getByTestId('error-request-id').textContent()).toBe('req_e2e_body');
      expect(await page.getByTestId('service-api-version').count()).toBe(0);
      // The shell stays usable around the failure.
      await page.getByTestId('nav').waitFor({ state: 'visible' });
      await saveScreenshot(page, 'console-overview-error');
    } finally {
      await page.unroute('**/trpc/**');
    }
    expectNoPageErrors();
  });
});
