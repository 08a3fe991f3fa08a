import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Issue 4's API-key flow end to end: a tenant admin creates a key in the console (the secret is
 * shown once), a backend service uses it against the API, the admin revokes it in the console,
 * and the very same call is then refused.
 */
describeInChromium('e2e: tenant API keys in the console', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
  });

  async function freshPage(): Promise<Page> {
    await context?.close();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  /** A backend service's call: plain fetch from Node with the key, no cookie. */
  async function asService(secretKey: string, path: string) {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${secretKey}` } });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  it('create a key (secret once), use it against the API, revoke it in the console: the same call is then 401', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/api-keys', DEMO_USER);
    await page.getByTestId('api-keys-empty').waitFor({ state: 'visible' });
    const me = await page.evaluate(async () => (await fetch('/v1/me')).json());
    const orgId = me.activeWorkspace.id as string;
    expect(orgId).toMatch(/^ten_/);

    // The form validates with the contracts schema before anything is sent.
    await page.getByTestId('api-key-create').click();
    await page.getByTestId('api-key-name-error').waitFor({ state: 'visible' });
    await page.getByTestId('api-key-scopes-error').waitFor({ state: 'visible' });

    await page.getByTestId('api-key-name-input').fill('Backend sync');
    await page.getByTestId('api-key-scope-tenant.read').check();
    await page.getByTestId('api-key-scope-members.read').check();
    await page.getByTestId('api-key-create').click();

    const secret = page.getByTestId('api-key-secret-value');
    await secret.waitFor({ state: 'visible' });
    const secretKey = (await secret.textContent()) ?? '';
    expect(secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    await page.getByTestId('api-key-secret-copy').click();
    await page.getByTestId('api-key-secret-copy').filter({ hasText: 'Copied' }).waitFor();

    const row = page.getByTestId('api-key-row').filter({ hasText: 'Backend sync' });
    await row.waitFor({ state: 'visible' });
    expect(await row.getAttribute('data-status')).toBe('active');
    expect(await row.getByTestId('api-key-prefix').textContent()).toBe(`${secretKey.slice(0, 12)}…`);
    expect(await row.getByTestId('api-key-scopes').textContent()).toBe('members.readtenant.read');
    expect(await row.getByTestId('api-key-last-used').textContent()).toBe('never');
    await page.evaluate(() => window.scrollTo(0, 0));
    await saveScreenshot(page, 'api-keys-secret-shown');

    // A backend service uses it: within its scope and organization it works.
    const ok = await asService(secretKey, `/v1/tenants/${orgId}`);
    expect(ok.status).toBe(200);
    expect(ok.body.id).toBe(orgId);
    // Outside its scopes it is refused.
    const outOfScope = await asService(secretKey, `/v1/tenants/${orgId}/api-keys`);
    expect(outOfScope.status).toBe(403);

    // After a reload the secret is gone for good: only the prefix remains.
    await page.reload();
    await row.waitFor({ state: 'visible' });
    expect(await page.getByTestId('api-key-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secretKey);

    // Revoke, confirmed in the dialog.
    await row.getByTestId('api-key-revoke').click();
    const dialog = row.getByTestId('api-key-revoke-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.textContent()).toContain('Revoke the key Backend sync?');
    await dialog.getByTestId('confirm').click();
    await page.locator('[data-testid="api-key-row"][data-status="revoked"]').filter({ hasText: 'Backend sync' }).waitFor();
    expect(await row.getByTestId('api-key-status').textContent()).toBe('revoked');
    expect(await row.getByTestId('api-key-revoke').count()).toBe(0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await saveScreenshot(page, 'api-keys-revoked');

    const refused = await asService(secretKey, `/v1/tenants/${orgId}`);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_secret_key');
    expect(pageErrors).toEqual([]);
  });

  it('rotate in the console: the new secret is shown once, the old one stops working', async () => {
    const page = await freshPage();
    await signInAt(page, server.url, '/auth/console/api-keys', DEMO_USER);
    const me = await page.evaluate(async () => (await fetch('/v1/me')).json());
    const orgId = me.activeWorkspace.id as string;
    await page.getByTestId('api-key-name-input').fill('Rotating');
    await page.getByTestId('api-key-scope-tenant.read').check();
    await page.getByTestId('api-key-create').click();
    const secret = page.getByTestId('api-key-secret-value');
    await secret.waitFor({ state: 'visible' });
    const first = (await secret.textContent()) ?? '';

    const row = page.getByTestId('api-key-row').filter({ hasText: 'Rotating' });
    await row.getByTestId('api-key-rotate').click();
    await row.getByTestId('api-key-rotate-dialog').getByTestId('confirm').click();
    await page.getByTestId('api-key-revealed').filter({ hasText: 'New secret for Rotating' }).waitFor();
    const second = (await secret.textContent()) ?? '';
    expect(second).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(second).not.toBe(first);
    await page.evaluate(() => window.scrollTo(0, 0));
    await saveScreenshot(page, 'api-keys-rotated');

    expect((await asService(first, `/v1/tenants/${orgId}`)).status).toBe(401);
    expect((await asService(second, `/v1/tenants/${orgId}`)).status).toBe(200);
    expect(pageErrors).toEqual([]);
  });
});
