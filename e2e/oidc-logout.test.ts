import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, passwordSignIn } from './support/sign-in.ts';

/**
 * An application signing out through svc (RP-initiated logout) in Chromium: svc serve, its dev
 * engine, and a plain HTTP server on loopback standing for the application (the keyless
 * development application takes any loopback URL). What only a browser shows: svc's CSP lets the
 * confirmation page work (no inline script), and the form's redirects through the engine end on
 * the application.
 */
describeInChromium('e2e: an application signs the person out through svc', () => {
  let server: E2EServer;
  let browser: Browser;
  let app: http.Server;
  let appUrl: string;
  let clientId: string;

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    app = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>app</title><p data-testid="app-page">${req.url?.split('?')[0] ?? ''}</p>`);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    const config = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as { oidc: { clientId: string } };
    clientId = config.oidc.clientId;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    app?.closeAllConnections();
    await new Promise((resolve) => app?.close(resolve));
  });

  /** Signs in to the application in `page` (svc's sign-in, the engine's password page) and redeems the code: its tokens. */
  async function signInToApp(page: Page): Promise<{ id_token: string; refresh_token: string }> {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(8).toString('hex');
    const authorize = new URL(`${server.url}/oidc/auth`);
    for (const [k, v] of Object.entries({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: `${appUrl}/callback`,
      scope: 'openid email offline_access',
      prompt: 'consent',
      state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    })) {
      authorize.searchParams.set(k, v);
    }
    await page.goto(authorize.href);
    await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
    // svc's sign-in page, then the engine's login page (it fails when the engine does not ask).
    await passwordSignIn(page, server.url, DEMO_USER);
    await page.waitForURL((url) => url.href.startsWith(`${appUrl}/callback`));
    const callback = new URL(page.url());
    expect(callback.searchParams.get('state')).toBe(state);
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') as string,
        redirect_uri: `${appUrl}/callback`,
        client_id: clientId,
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { id_token: string; refresh_token: string };
  }

  /** Chromium's refusals by svc's CSP, collected from the page's console. */
  function cspRefusals(page: Page): string[] {
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) {
        refused.push(message.text());
      }
    });
    return refused;
  }

  it('with the ID token as hint: no page on svc; svc and the engine sign the person out and the browser lands on the application with its state', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const refused = cspRefusals(page);
    try {
      const tokens = await signInToApp(page);
      const svcPages: string[] = [];
      page.on('response', (res) => {
        if (res.url().startsWith(server.url) && res.status() === 200 && res.request().resourceType() === 'document') {
          svcPages.push(res.url());
        }
      });
      const end = new URL(`${server.url}/oidc/session/end`);
      end.searchParams.set('id_token_hint', tokens.id_token);
      end.searchParams.set('post_logout_redirect_uri', `${appUrl}/signed-out`);
      end.searchParams.set('state', 'e2e-state');
      await page.goto(end.href);
      await page.waitForURL((url) => url.href.startsWith(`${appUrl}/signed-out`));
      expect(new URL(page.url()).searchParams.get('state')).toBe('e2e-state');
      expect(svcPages, 'pages svc showed').toEqual([]);
      expect(refused, 'CSP refusals in the browser').toEqual([]);

      const refresh = await fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId }),
      });
      expect(((await refresh.json()) as { error?: string }).error).toBe('invalid_grant');
      // The engine's session is gone too: signing in again asks for the password there.
      await signInToApp(page);
    } finally {
      await context.close();
    }
  });

  it('without a hint svc asks; "Sign out of svc" on its page (no script, its CSP) ends both sessions and lands on the application', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const refused = cspRefusals(page);
    try {
      await signInToApp(page);
      const end = new URL(`${server.url}/oidc/session/end`);
      end.searchParams.set('client_id', clientId);
      end.searchParams.set('post_logout_redirect_uri', `${appUrl}/signed-out`);
      end.searchParams.set('state', 'e2e-state-2');
      await page.goto(end.href);
      await page.getByTestId('confirm-logout').waitFor({ state: 'visible' });
      expect(await page.getByTestId('hosted-heading').textContent()).toBe('Also sign out of svc?');
      await saveScreenshot(page, 'oidc-logout-confirm');

      await page.getByTestId('confirm-logout').click();
      await page.waitForURL((url) => url.href.startsWith(`${appUrl}/signed-out`));
      expect(new URL(page.url()).searchParams.get('state')).toBe('e2e-state-2');
      expect(refused, 'CSP refusals in the browser').toEqual([]);
      await signInToApp(page);
    } finally {
      await context.close();
    }
  });
});
