import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { atSignIn, DEMO_USER, passwordSignIn } from './support/sign-in.ts';

type Json = Record<string, any>;

/**
 * Claiming the keyless development application in Chromium: a person signs in to an app built
 * against keyless mode (the social button), then a developer opens the claim link from client
 * config, signs in (hosted sign-in, back to the claim page), picks their workspace and sees the
 * secret key once. The application keeps its client id and publishable key, appears on the
 * workspace's Applications page, and the person who signed in earlier is a member there.
 */
describeInChromium('e2e: claiming the keyless development application', () => {
  let server: E2EServer;
  let browser: Browser;
  let app: http.Server;
  let appUrl: string;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    app = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>app</title><p data-testid="app-page">${req.url?.split('?')[0] ?? ''}</p>`);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const context of contexts) {
      await context.close();
    }
    await browser?.close();
    await server?.stop();
    app?.closeAllConnections();
    await new Promise((resolve) => app?.close(resolve));
  });

  async function freshPage(): Promise<Page> {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
    const page = await context.newPage();
    page.on('pageerror', (error) => {
      pageErrors.push(error.stack ?? error.message);
    });
    return page;
  }

  async function keylessConfig(): Promise<Json> {
    const res = await fetch(`${server.url}/v1/client/config?keyless=1`);
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  }

  it('a developer claims the app; keys and client id unchanged, secret shown once, earlier sign-ins become members', async () => {
    const before = await keylessConfig();
    const clientId = before.oidc.clientId as string;
    expect(before.claimUrl).toMatch(/\/keyless\/claim\?application=app_[0-9A-Za-z]{20}&token=[A-Za-z0-9_-]{43}$/);

    // Someone signs in to the app under development (loopback redirect, PKCE, the social button).
    const visitor = await freshPage();
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL(`${server.url}/oidc/auth`);
    for (const [k, v] of Object.entries({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: `${appUrl}/callback`,
      scope: 'openid email',
      state: 'visit',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    })) {
      authorize.searchParams.set(k, v);
    }
    await visitor.goto(authorize.href);
    await visitor.getByTestId('continue-social').click();
    await visitor.waitForURL((url) => url.href.startsWith(`${appUrl}/callback`));

    // The developer opens the claim link: sign-in first, then back on the claim page.
    const page = await freshPage();
    await page.goto(before.claimUrl);
    await page.waitForURL(atSignIn);
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL(`${server.url}/keyless/claim`);
    expect(await page.getByTestId('claim-client-id').textContent()).toBe(clientId);
    expect(await page.getByTestId('claim-publishable-key').textContent()).toBe(before.application.publishableKey);
    expect(await page.getByTestId('claim-signed-in-people').textContent()).toBe('1');
    const workspaces = page.getByTestId('claim-workspace');
    expect(await workspaces.count()).toBe(1);
    const workspaceSlug = (await workspaces.first().getAttribute('data-slug')) as string;
    await workspaces.first().check();
    await page.getByTestId('claim-name').fill('Storefront');
    // The URL the app signed in through, kept registered by the claim.
    expect(await page.getByTestId('claim-url').allTextContents()).toEqual([`${appUrl}/callback`]);
    // How the app signs in is a required choice with no default: the form is not valid without it.
    expect(await page.getByTestId('claim-client-type-public').evaluate((el) => (el as HTMLInputElement).validity.valueMissing)).toBe(true);
    expect(await page.locator('form[action="/keyless/claim"]').evaluate((form) => (form as HTMLFormElement).checkValidity())).toBe(false);
    await page.getByTestId('claim-client-type-public').check();
    await saveScreenshot(page, 'keyless-claim-confirm');
    await page.getByTestId('claim-confirm').click();

    await page.getByTestId('claimed-secret-key').waitFor({ state: 'visible' });
    const secretKey = (await page.getByTestId('claimed-secret-key').textContent()) as string;
    expect(secretKey).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(await page.getByTestId('claimed-client-id').textContent()).toBe(clientId);
    expect(await page.getByTestId('claimed-publishable-key').textContent()).toBe(before.application.publishableKey);
    expect(await page.getByTestId('claimed-members-added').textContent()).toBe('1');
    expect(await page.getByTestId('claimed-client-type').getAttribute('data-client-type')).toBe('public');
    // The copy button puts the secret on the clipboard (svc on 127.0.0.1 is a secure context).
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.getByTestId('claimed-secret-copy').click();
    await page.getByTestId('claimed-secret-copy').filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secretKey);
    await saveScreenshot(page, 'keyless-claim-claimed');

    // The secret works; the publishable key now answers as the workspace's application.
    const backend = await fetch(`${server.url}/v1/backend/application`, { headers: { authorization: `Bearer ${secretKey}` } });
    expect(backend.status).toBe(200);
    const config = (await (
      await fetch(`${server.url}/v1/client/config`, { headers: { 'x-svc-publishable-key': before.application.publishableKey } })
    ).json()) as Json;
    expect(config).toMatchObject({ oidc: { clientId }, organization: { slug: workspaceSlug }, keyless: false, claimUrl: null });

    // Shown once: the claim link now says the application was claimed, and shows no key.
    await page.goto(before.claimUrl);
    expect(await page.getByTestId('claim-error-code').textContent()).toBe('application_already_claimed');
    expect(await page.content()).not.toContain(secretKey);

    // The console's Applications page lists it in the workspace; its name opens its page, whose
    // Connect your app panel gives each framework's agent context.
    await page.goto('/auth/console/applications');
    const row = page.getByTestId('application-row').filter({ hasText: 'Storefront' });
    await row.waitFor({ state: 'visible' });
    expect(await row.getByTestId('application-row-publishable-key').textContent()).toBe(before.application.publishableKey);
    await saveScreenshot(page, 'keyless-claim-console-applications');
    await row.getByTestId('application-row-name').click();
    await page.waitForURL((url) => url.pathname === `/auth/console/applications/${clientId}`);
    const connect = page.getByTestId('application-connect');
    await connect.getByTestId('application-connect-prompt').waitFor();
    // A public application starts on the browser-only framework, with its own values.
    expect(await connect.getByTestId('application-connect-prompt').textContent()).toContain('React');
    expect(await connect.getByTestId('application-connect-prompt').textContent()).toContain(clientId);
    expect(await connect.getByTestId('application-connect-command').textContent()).toContain('framework=react');
    expect(await page.getByTestId('application-oidc-redirect-urls').textContent()).toContain(`${appUrl}/callback`);
    await saveScreenshot(page, 'keyless-claim-console-connect');

    // The person who signed in to it during development is a member of the workspace.
    await page.goto('/auth/console/members');
    const member = page.getByTestId('member-row').filter({ hasText: 'social@svc.local' });
    await member.waitFor({ state: 'visible' });
    expect(await member.getByTestId('member-role').getAttribute('data-role-key')).toBe('org_member');
    expect(await member.getByTestId('member-role').textContent()).toBe('Organization member');

    // Keyless mode goes on with a fresh application.
    const next = await keylessConfig();
    expect(next.oidc.clientId).not.toBe(clientId);
    expect(next.keyless).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
