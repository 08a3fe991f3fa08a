import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { atEngine, atSignIn, DEMO_ADMIN, DEMO_USER, ENGINE_FLOWS, passwordSignIn, signInAt } from './support/sign-in.ts';

/** Hosted sign-in and the protected pages, end to end: svc serve, its dev engine, real Chromium. */
/** The console's dark `--surface` (apps/console/src/tokens.css, which hosted pages inline) as CSS reports it. */
const DARK_SURFACE = (() => {
  const tokens = readFileSync(new URL('../apps/console/src/tokens.css', import.meta.url), 'utf8');
  const dark = tokens.slice(tokens.indexOf('prefers-color-scheme: dark'));
  const hex = /--surface: #([0-9a-f]{6});/.exec(dark)?.[1] ?? 'missing';
  return `rgb(${[0, 2, 4].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;
})();

describeInChromium('e2e: hosted sign-in, the console session and /user', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  /** A fresh browser context per flow: no cookie of svc or the engine carries over. */
  async function freshPage(): Promise<Page> {
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
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

  const signInUrl = (returnTo: string) => `${server.url}/signin?return_to=${encodeURIComponent(returnTo)}`;

  /** The console header's identity, once me.get has answered. */
  async function header(page: Page) {
    await page.getByTestId('whoami').waitFor({ state: 'visible' });
    return {
      name: await page.getByTestId('whoami-name').textContent(),
      email: await page.getByTestId('whoami-email').textContent(),
      workspace: await page.getByTestId('workspace-name').textContent(),
      kind: await page.getByTestId('workspace-kind').textContent(),
      admin: await page.getByTestId('platform-admin-badge').count(),
    };
  }

  it('password sign-in: an anonymous deep link goes through /signin and the engine, and comes back to it', async () => {
    const page = await freshPage();
    await page.goto('/auth/console/people/members');
    await page.waitForURL(signInUrl('/auth/console/people/members'));
    expect(await page.getByTestId('hosted-heading').textContent()).toBe('Sign in to svc');
    await saveScreenshot(page, 'auth-signin');
    // The console's look, from the keyboard: the email field's label, and a visible focus ring.
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const style = getComputedStyle(el);
      return {
        id: el.id,
        label: (el as HTMLInputElement).labels?.[0]?.textContent,
        outline: `${style.outlineStyle} ${style.outlineWidth}`,
      };
    });
    expect(focused).toEqual({ id: 'email', label: 'Email', outline: 'solid 2px' });
    await saveScreenshot(page, 'auth-signin-focus');

    await page.locator('#email').fill(DEMO_USER.email);
    await page.getByTestId('continue-email').click();
    await page.waitForURL(atEngine(server.url, ENGINE_FLOWS.login));
    expect(await page.locator('input[name="email"]').inputValue()).toBe(DEMO_USER.email);
    await saveScreenshot(page, 'auth-engine-login');
    await page.locator('input[name="password"]').fill(DEMO_USER.password);
    await page.getByRole('button', { name: 'Log in' }).click();

    await page.waitForURL(`${server.url}/auth/console/people/members`);
    await page.getByTestId('page-members').waitFor({ state: 'visible' });
    expect(await header(page)).toEqual({
      name: DEMO_USER.name,
      email: DEMO_USER.email,
      workspace: `${DEMO_USER.name}'s workspace`,
      kind: 'tenant',
      admin: 0,
    });
    expect(await page.getByTestId('whoami').getAttribute('href')).toBe('/user');
    await saveScreenshot(page, 'auth-password-console-members');
    expectNoPageErrors();
  });

  it('opened on localhost instead of PUBLIC_URL (127.0.0.1): sent to PUBLIC_URL first, signed in, back where the person was going', async () => {
    const page = await freshPage();
    const onLocalhost = new URL(server.url);
    onLocalhost.hostname = 'localhost';
    await page.goto(`${onLocalhost.origin}/auth/console/people/members?from=localhost`);
    await page.waitForURL(signInUrl('/auth/console/people/members?from=localhost'));
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL(`${server.url}/auth/console/people/members?from=localhost`);
    await page.getByTestId('page-members').waitFor({ state: 'visible' });
    expectNoPageErrors();
  });

  it('social sign-in: the social button signs in the engine social identity', async () => {
    const page = await freshPage();
    await page.goto('/auth/console/');
    await page.waitForURL(signInUrl('/auth/console/'));
    await page.getByTestId('continue-social').click();
    await page.waitForURL(`${server.url}/auth/console/`);
    await page.getByTestId('overview').waitFor({ state: 'visible' });
    const who = await header(page);
    expect(who.email).toBe('social@svc.local');
    expect(who.kind).toBe('tenant');
    expect(who.admin).toBe(0);
    await saveScreenshot(page, 'auth-social-console');
    expectNoPageErrors();
  });

  it('sign-up: a new email enrols at the engine and opens a new tenant workspace in the console', async () => {
    const page = await freshPage();
    const email = `new-${Date.now()}@example.com`;
    const name = 'New Person';
    await page.goto('/signup');
    expect(await page.getByTestId('hosted-heading').textContent()).toBe('Sign up for svc');
    // Dark mode: the same card in the dark tokens.
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await page.locator('main').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe(DARK_SURFACE);
    await saveScreenshot(page, 'auth-signup-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await page.locator('main').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(255, 255, 255)');
    await page.locator('#email').fill(email);
    await page.getByTestId('continue-email').click();

    await page.waitForURL(atEngine(server.url, ENGINE_FLOWS.enrollment));
    await page.locator('input[name="email"]').fill(email);
    await page.locator('input[name="name"]').fill(name);
    await page.locator('input[name="password"]').fill('new-person-password');
    await saveScreenshot(page, 'auth-engine-enrollment');
    await page.getByRole('button', { name: 'Sign up' }).click();

    // No return_to: the callback's default is the console.
    await page.waitForURL(`${server.url}/auth/console`);
    expect(await header(page)).toEqual({ name, email, workspace: `${name}'s workspace`, kind: 'tenant', admin: 0 });
    await saveScreenshot(page, 'auth-signup-console');
    expectNoPageErrors();
  });

  it('platform admin: the platform workspace and the Platform admin badge', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/', DEMO_ADMIN);
    expect(await header(page)).toEqual({
      name: DEMO_ADMIN.name,
      email: DEMO_ADMIN.email,
      workspace: 'Platform',
      kind: 'platform',
      admin: 1,
    });
    expect(await page.getByTestId('platform-admin-badge').textContent()).toBe('Platform admin');
    await saveScreenshot(page, 'auth-admin-console');
    expectNoPageErrors();
  });

  it('recovery hand-off: from /user through the engine recovery flow back to /user, still signed in', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/user', DEMO_USER);
    expect(await page.getByTestId('account-email').textContent()).toBe(DEMO_USER.email);
    expect(await page.getByTestId('account-name').textContent()).toBe(DEMO_USER.name);
    expect(await page.getByTestId('account-workspace-kind').textContent()).toBe('(tenant workspace)');
    expect(await page.getByTestId('account-platform-admin').textContent()).toBe('No');
    await saveScreenshot(page, 'auth-user-page');

    await page.getByTestId('account-recovery').click();
    await page.waitForURL(atEngine(server.url, ENGINE_FLOWS.recovery));
    expect(await page.locator('h1').textContent()).toBe('Reset your password');
    await saveScreenshot(page, 'auth-engine-recovery');
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.waitForURL(`${server.url}/user`);
    expect(await page.getByTestId('account-email').textContent()).toBe(DEMO_USER.email);
    await saveScreenshot(page, 'auth-recovery-back-on-user');

    // The console is one click away and knows the same session.
    await page.getByTestId('account-console').click();
    await page.waitForURL(`${server.url}/auth/console/`);
    expect((await header(page)).email).toBe(DEMO_USER.email);
    expectNoPageErrors();
  });

  it('logout: sign out from the console, confirm, land on /signin; the console and /v1/me are closed', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/', DEMO_USER);
    await header(page);

    await page.getByTestId('sign-out').click();
    await page.waitForURL(`${server.url}/auth/logout`);
    await saveScreenshot(page, 'auth-logout-confirm');
    await page.getByTestId('confirm-logout').click();
    await page.waitForURL(atSignIn);
    expect(new URL(page.url()).origin).toBe(server.url);
    await saveScreenshot(page, 'auth-logout-signin');

    await page.goto('/auth/console');
    await page.waitForURL(signInUrl('/auth/console'));
    const me = await page.request.get('/v1/me');
    expect(me.status()).toBe(401);
    expect(((await me.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');

    // The engine session ended too: signing in again asks for the password.
    await page.locator('#email').fill(DEMO_USER.email);
    await page.getByTestId('continue-email').click();
    await page.waitForURL(atEngine(server.url, ENGINE_FLOWS.login));
    await saveScreenshot(page, 'auth-logout-engine-asks-again');
    expectNoPageErrors();
  });

  it('a session that ends while the console is open sends the browser to sign-in, back to the same page', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/people/members', DEMO_USER);
    await header(page);

    // Signed out in another tab of the same browser.
    const other = await page.context().newPage();
    await other.goto('/auth/logout');
    await other.getByTestId('confirm-logout').click();
    await other.waitForURL(atSignIn);
    await other.close();

    // Coming back to the tab re-checks the session (me.get refetches on focus) and gets 401. The
    // console may already be on its way (a refetch of its own): then the page it is leaving takes
    // the event with it, and the navigation below is all that is left to see.
    await page
      .evaluate(() => window.dispatchEvent(new Event('visibilitychange')))
      .catch((error: unknown) => {
        if (!/Execution context was destroyed|navigation/i.test(String(error))) {
          throw error;
        }
      });
    await page.waitForURL(signInUrl('/auth/console/people/members'));
    await saveScreenshot(page, 'auth-session-ended-signin');

    // Signing in again returns to the page that was open.
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL(`${server.url}/auth/console/people/members`);
    expect((await header(page)).email).toBe(DEMO_USER.email);
    expectNoPageErrors();
  });
});
