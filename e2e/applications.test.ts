import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

/**
 * Issue 4's applications page end to end: a tenant admin creates an application in the console
 * (its type and redirect URL asked for; client id, issuer and keys shown, the secret once), opens
 * its own page (/applications/<id>, kept by reload, back and forward), edits its allowlists,
 * rotates its secret (the old one is refused by the API at once) and disables it (client config
 * then answers 409 application_disabled).
 */
describeInChromium('e2e: applications in the console', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
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
  });

  /** What a backend or a browser app does with the keys: plain fetch from Node, no cookie. */
  async function api(path: string, headers: Record<string, string>) {
    const res = await fetch(`${server.url}${path}`, { headers });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }
  const backend = (secretKey: string) => api('/v1/backend/application', { authorization: `Bearer ${secretKey}` });
  const clientConfig = (publishableKey: string) => api('/v1/client/config', { 'x-svc-publishable-key': publishableKey });

  /** Picks an item of the detail's "⋯" menu and confirms its dialog (typing the name when asked). */
  async function confirm(testId: string, typeName?: string) {
    await page.getByTestId('application-detail-actions').click();
    await page.getByTestId('application-detail-actions-menu').getByTestId(testId).click();
    const dialog = page.getByTestId(`${testId}-dialog`);
    await dialog.waitFor({ state: 'visible' });
    if (typeName !== undefined) {
      expect(await dialog.getByTestId(`${testId}-dialog-confirm`).isDisabled()).toBe(true);
      await dialog.getByTestId(`${testId}-dialog-input`).fill(typeName);
    }
    await dialog.getByTestId(`${testId}-dialog-confirm`).click();
    await dialog.waitFor({ state: 'hidden' });
  }

  /** Opens the settings dialog from the detail; `save` submits it and waits for it to close. */
  const openSettings = async () => {
    await page.getByTestId('application-edit-open').click();
    await page.getByTestId('application-settings').waitFor({ state: 'visible' });
  };
  const save = () => page.getByTestId('application-settings-submit').click();
  const saved = async () => {
    await save();
    await page.getByTestId('application-settings').waitFor({ state: 'hidden' });
  };
  /** The URLs of one fact of the detail, each an Identifier. */
  const urls = (testId: string) => page.getByTestId(testId).locator('[data-identifier]').allTextContents();

  it('create an application, edit it, rotate its secret and disable it', async () => {
    await signInAt(page, server.url, '/auth/console/applications', DEMO_USER);
    await page.getByTestId('applications-empty').waitFor({ state: 'visible' });
    await saveScreenshot(page, 'console-applications-empty');

    // Create, from the header's button: the dialog validates with the contracts schema before anything is sent.
    await page.getByTestId('application-create-open').click();
    await page.getByTestId('application-create').waitFor({ state: 'visible' });
    await page.getByTestId('application-slug-input').fill('Not A Slug');
    await page.getByTestId('application-logo-url-input').fill('http://cdn.example.com/logo.png');
    await page.getByTestId('application-create-submit').click();
    await page.getByTestId('application-name-error').waitFor({ state: 'visible' });
    await page.getByTestId('application-slug-error').waitFor({ state: 'visible' });
    expect(await page.getByTestId('application-logo-url-error').textContent()).toMatch(/must be https/);
    await page.getByTestId('application-slug-input').fill('');
    await page.getByTestId('application-logo-url-input').fill('https://cdn.example.com/storefront.svg');
    await page.getByTestId('application-name-input').fill('Storefront');
    // A web server app (the default type) signs people in: it needs the redirect URL of its first sign-in.
    expect(await page.getByTestId('application-create-client-type').textContent()).toMatch(/^Web server app/);
    await page.getByTestId('application-create-submit').click();
    expect(await page.getByTestId('application-redirect-url-error').textContent()).toMatch(/callback/);
    await page.getByTestId('application-redirect-url-input').fill('http://storefront.example.com/auth/callback');
    await page.getByTestId('application-create-submit').click();
    expect(await page.getByTestId('application-redirect-url-error').textContent()).toMatch(/use https/);
    // A machine client has no redirect URL to ask for; back to a web server app.
    await page.getByTestId('application-create-client-type').click();
    await page.getByTestId('application-create-client-type-option-machine').click();
    expect(await page.getByTestId('application-redirect-url-input').count()).toBe(0);
    await page.getByTestId('application-create-client-type').click();
    await page.getByTestId('application-create-client-type-option-web').click();
    await page.getByTestId('application-redirect-url-input').fill('https://storefront.example.com/auth/callback');
    await page.getByTestId('application-create-submit').click();

    const revealed = page.getByTestId('application-revealed');
    await revealed.waitFor({ state: 'visible' });
    const publishableKey = (await page.getByTestId('application-revealed-publishable-key').textContent()) ?? '';
    const firstSecret = (await page.getByTestId('application-secret-value').textContent()) ?? '';
    expect(publishableKey).toMatch(/^pk_live_[0-9A-Za-z]{24}$/);
    expect(firstSecret).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    // What an OpenID Connect library is configured with, beside the keys.
    const applicationId = (await page.getByTestId('application-revealed-client-id').textContent()) ?? '';
    expect(applicationId).toMatch(/^app_[0-9A-Za-z]{20}$/);
    await page.getByTestId('application-revealed-issuer').waitFor({ state: 'visible' });
    expect(await page.getByTestId('application-revealed-issuer').textContent()).toBe(server.url);
    // And the next step: the application's agent context (a prompt for a coding agent), which answers.
    const agentContext = (await page.getByTestId('application-revealed-connect').getByRole('link').getAttribute('href')) ?? '';
    expect(new URL(agentContext).pathname).toBe('/v1/setup/agent-context');
    expect(new URL(agentContext).searchParams.get('publishable_key')).toBe(publishableKey);
    const prompt = await fetch(agentContext);
    expect(prompt.status).toBe(200);
    expect(await prompt.text()).toContain(publishableKey);
    await page.getByTestId('application-secret-copy').click();
    await page.getByTestId('application-secret-copy').filter({ hasText: 'Copied' }).waitFor();
    await page.getByTestId('application-revealed-publishable-key-copy').click();
    // The secret's dialog stays until it is dismissed: Escape does not close it.
    await page.keyboard.press('Escape');
    expect(await revealed.isVisible()).toBe(true);

    // The console is on the new application's own page, with its redirect URL from the dialog.
    const detail = page.getByTestId('application-detail');
    await detail.waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe(`/auth/console/applications/${applicationId}`);
    expect(await page.getByTestId('application-publishable-key').textContent()).toBe(publishableKey);
    expect(await page.getByTestId('application-secret-prefix').textContent()).toBe(`${firstSecret.slice(0, 12)}…`);
    expect(await urls('application-oidc-redirect-urls')).toEqual(['https://storefront.example.com/auth/callback']);
    await saveScreenshot(page, 'console-applications-created');

    // The keys work against the API.
    expect((await backend(firstSecret)).status).toBe(200);
    expect((await clientConfig(publishableKey)).status).toBe(200);

    // Dismissing the secret removes it from the page for good.
    await page.getByTestId('application-secret-dismiss').click();
    await revealed.waitFor({ state: 'hidden' });
    expect(await page.content()).not.toContain(firstSecret);

    // The logo given at creation, in client config and the settings; a credential in it is refused by the field.
    expect((await clientConfig(publishableKey)).body.application.logoUrl).toBe('https://cdn.example.com/storefront.svg');
    expect(await page.getByTestId('application-detail-logo-url').textContent()).toBe('https://cdn.example.com/storefront.svg');
    await openSettings();
    expect(await page.getByTestId('application-logo-url').inputValue()).toBe('https://cdn.example.com/storefront.svg');
    await page.getByTestId('application-logo-url').fill('https://user@cdn.example.com/logo.png');
    await save();
    expect(await page.getByTestId('application-logo-url-error').textContent()).toMatch(/credentials/);
    await page.getByTestId('application-logo-url').fill('');

    // Edit: a bad redirect URL is refused in the form; good ones are saved normalized and deduplicated.
    await page.getByTestId('application-redirect-urls').fill('http://app.example.com/callback');
    await save();
    await page.getByTestId('application-redirect-urls-error').waitFor({ state: 'visible' });
    expect(await page.getByTestId('application-redirect-urls-error').textContent()).toMatch(/https/);
    await page
      .getByTestId('application-redirect-urls')
      .fill('https://app.example.com/callback\nhttps://app.example.com/callback\nhttp://localhost:3000/callback');
    await page.getByTestId('application-allowed-origins').fill('https://app.example.com\nhttp://localhost:3000');
    await page.getByTestId('application-production-provider').fill('github');
    await saved();
    // The detail shows what was stored; the dialog opens again on it.
    await page.getByTestId('application-production-provider-fact').filter({ hasText: 'github' }).waitFor();
    expect(await urls('application-oidc-redirect-urls')).toEqual(['https://app.example.com/callback', 'http://localhost:3000/callback']);
    await openSettings();
    expect(await page.getByTestId('application-redirect-urls').inputValue()).toBe(
      'https://app.example.com/callback\nhttp://localhost:3000/callback',
    );
    await page.getByTestId('application-settings-cancel').click();
    await page.getByTestId('application-settings').waitFor({ state: 'hidden' });
    const config = await clientConfig(publishableKey);
    expect(config.body.oauth.production.provider).toBe('github');
    // The emptied logo field removed the logo.
    expect(config.body.application.logoUrl).toBeNull();
    const context = await api(`/v1/setup/agent-context?publishable_key=${publishableKey}&framework=react`, {});
    expect(context.body.javascriptOrigins).toEqual(['https://app.example.com', 'http://localhost:3000']);
    await saveScreenshot(page, 'console-applications-settings');

    // OpenID Connect: issuer, client id and discovery URL to copy; client type and logout URLs editable.
    await page.getByTestId('application-oidc-issuer').waitFor({ state: 'visible' });
    expect(await page.getByTestId('application-oidc-issuer').textContent()).toBe(server.url);
    expect(await page.getByTestId('application-oidc-client-id').textContent()).toBe(applicationId);
    expect(await page.getByTestId('application-oidc-discovery').textContent()).toBe(`${server.url}/.well-known/openid-configuration`);
    expect(await page.getByTestId('application-oidc-client-type').textContent()).toMatch(/^confidential/);
    await page.getByTestId('application-oidc-discovery-copy').click();
    await page.getByTestId('application-oidc-discovery-copy').click();
    await page.locator('[data-sonner-toast]').filter({ hasText: 'Copied' }).first().waitFor();
    await openSettings();
    await page.getByTestId('application-backchannel-url').fill('http://app.example.com/backchannel');
    await save();
    await page.getByTestId('application-backchannel-url-error').waitFor({ state: 'visible' });
    await page.getByTestId('application-backchannel-url').fill('https://app.example.com/backchannel');
    await page.getByTestId('application-post-logout-urls').fill('https://app.example.com/bye\nhttps://app.example.com/bye');
    await page.getByTestId('application-client-type').click();
    await page.getByTestId('application-client-type-option-public').click();
    await saved();
    await page.getByTestId('application-oidc-client-type').filter({ hasText: 'public' }).waitFor();
    expect(await urls('application-oidc-post-logout-urls')).toEqual(['https://app.example.com/bye']);
    expect(await urls('application-oidc-backchannel-url')).toEqual(['https://app.example.com/backchannel']);
    // The discovery document the console points at names the same issuer.
    const discovery = await api('/.well-known/openid-configuration', {});
    expect(discovery.body.issuer).toBe(server.url);
    await saveScreenshot(page, 'console-applications-oidc');
    expect(await urls('application-oidc-redirect-urls')).toEqual(['https://app.example.com/callback', 'http://localhost:3000/callback']);
    expect(await urls('application-oidc-allowed-origins')).toEqual(['https://app.example.com', 'http://localhost:3000']);

    // Try sign-in: a real authorization of this (now public) application through svc's provider,
    // ending on svc's page with the tokens; the person is signed in to svc, so no sign-in page.
    await page.getByTestId('application-try-sign-in').click();
    await page.getByTestId('try-heading').waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe('/oidc/try/callback');
    expect(await page.getByTestId('try-heading').textContent()).toBe('Signed in to Storefront');
    const claim = (table: string, name: string) => page.getByTestId(table).locator(`tr[data-claim="${name}"] code`).textContent();
    expect(await claim('try-id-token-claims', 'aud')).toBe(applicationId);
    expect(await claim('try-id-token-claims', 'email')).toBe(DEMO_USER.email);
    expect(await claim('try-access-token-claims', 'client_id')).toBe(applicationId);
    expect(await claim('try-userinfo-claims', 'email')).toBe(DEMO_USER.email);
    expect(await page.getByTestId('try-access-token-header').textContent()).toContain('"typ": "at+jwt"');
    await saveScreenshot(page, 'console-applications-try-sign-in');
    await page.getByTestId('try-back').click();
    await page.getByTestId('application-detail').waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe(`/auth/console/applications/${applicationId}`);

    // Rotate: confirmed, the new secret shown once, the old one refused at once.
    await confirm('application-rotate');
    await revealed.waitFor({ state: 'visible' });
    expect(await revealed.locator('.dialog__title').textContent()).toBe('New secret key for Storefront');
    const secondSecret = (await page.getByTestId('application-secret-value').textContent()) ?? '';
    expect(secondSecret).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(secondSecret).not.toBe(firstSecret);
    await page
      .getByTestId('application-secret-prefix')
      .filter({ hasText: secondSecret.slice(0, 12) })
      .waitFor();
    const old = await backend(firstSecret);
    expect(old.status).toBe(401);
    expect(old.body.error.code).toBe('invalid_secret_key');
    expect((await backend(secondSecret)).status).toBe(200);
    await saveScreenshot(page, 'console-applications-rotated');
    await page.getByTestId('application-secret-dismiss').click();
    await revealed.waitFor({ state: 'hidden' });

    // Disable: confirmed by typing the name; the status shows everywhere and the API refuses the keys.
    await confirm('application-disable', 'Storefront');
    await page.getByTestId('application-detail-status').filter({ hasText: 'disabled' }).waitFor();
    const disabled = await clientConfig(publishableKey);
    expect(disabled.status).toBe(409);
    expect(disabled.body.error.code).toBe('application_disabled');
    expect((await backend(secondSecret)).status).toBe(409);
    await page.getByTestId('application-try-sign-in-disabled').waitFor({ state: 'visible' });
    await saveScreenshot(page, 'console-applications-disabled');

    // The page survives a reload (it is the URL).
    await page.reload();
    await page.getByTestId('application-detail-status').filter({ hasText: 'disabled' }).waitFor();

    // Back to the list: its row shows the status and keys (never the secret). The browser's back
    // and forward move between the list and the application's page.
    await page.getByTestId('application-detail-back').click();
    const row = page.getByTestId('application-row').filter({ hasText: 'Storefront' });
    await row.getByTestId('application-row-status').filter({ hasText: 'disabled' }).waitFor();
    expect(await row.getByTestId('application-row-publishable-key').textContent()).toBe(publishableKey);
    expect(await page.getByTestId('applications-table').textContent()).not.toContain(secondSecret);
    expect(await detail.count()).toBe(0);
    await page.goBack();
    await page.getByTestId('application-detail-status').filter({ hasText: 'disabled' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/auth/console/applications/${applicationId}`);
    await page.goForward();
    await row.waitFor({ state: 'visible' });
    expect(new URL(page.url()).pathname).toBe('/auth/console/applications');
    // The name is a link to the page.
    await row.getByTestId('application-row-name').click();
    await page.getByTestId('application-detail-status').filter({ hasText: 'disabled' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/auth/console/applications/${applicationId}`);
    // The address of earlier releases leads to the same page.
    await page.goto(`/auth/console/applications?application=${applicationId}`);
    await page.waitForURL((url) => url.pathname === `/auth/console/applications/${applicationId}`);
    await page.getByTestId('application-detail-back').click();

    // Enable again from the row's menu: the keys work at once. Manage from the menu opens the page.
    await row.getByTestId('application-actions').click();
    await page.getByTestId('application-actions-menu').getByTestId('application-enable').click();
    await page.getByTestId('application-enable-dialog-confirm').click();
    await row.getByTestId('application-row-status').filter({ hasText: 'active' }).waitFor();
    expect((await clientConfig(publishableKey)).status).toBe(200);
    await row.getByTestId('application-actions').click();
    await page.getByTestId('application-actions-menu').getByTestId('application-manage').click();
    await page.getByTestId('application-detail-status').filter({ hasText: 'active' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/auth/console/applications/${applicationId}`);

    expect(await page.getByTestId('error-panel').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
