import type { Page } from 'playwright-core';

/** The dev engine's pages (apps/dev-engine/src/pages.ts), by path. */
export const ENGINE_FLOWS = {
  login: '/if/flow/default-authentication-flow/',
  enrollment: '/if/flow/default-enrollment-flow/',
  recovery: '/if/flow/default-recovery-flow/',
} as const;

/** svc's hosted sign-in page, whatever return_to it carries. */
export const atSignIn = (url: URL) => url.pathname === '/signin';

/** The browser is on the dev engine's page `flow` (the engine runs on its own port). */
export const atEngine = (baseUrl: string, flow: string) => (url: URL) => url.origin !== new URL(baseUrl).origin && url.pathname === flow;

/**
 * On svc's /signin page: continue with the email, then enter the password on the engine's login
 * page (the email arrives there pre-filled from login_hint). Returns once the engine accepted it
 * and the browser is on its way back through svc's callback.
 */
export async function passwordSignIn(page: Page, baseUrl: string, credentials: { email: string; password: string }): Promise<void> {
  await page.locator('#email').fill(credentials.email);
  await page.getByTestId('continue-email').click();
  await page.waitForURL(atEngine(baseUrl, ENGINE_FLOWS.login));
  const prefilled = await page.locator('input[name="email"]').inputValue();
  if (prefilled !== credentials.email) {
    throw new Error(`the engine login page should have ${credentials.email} pre-filled, has "${prefilled}"`);
  }
  await page.locator('input[name="password"]').fill(credentials.password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/** Opens `path` anonymously, is sent to /signin, signs in with a password and lands back on `path`. */
export async function signInAt(page: Page, baseUrl: string, path: string, credentials: { email: string; password: string }): Promise<void> {
  await page.goto(path);
  await page.waitForURL(atSignIn);
  await passwordSignIn(page, baseUrl, credentials);
  await page.waitForURL(`${baseUrl}${path}`);
}

export const DEMO_USER = { email: 'user@svc.local', password: 'user-password', name: 'Demo User' } as const;
export const DEMO_ADMIN = { email: 'admin@svc.local', password: 'admin-password', name: 'Platform Admin' } as const;
