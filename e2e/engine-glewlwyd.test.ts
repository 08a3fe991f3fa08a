import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../test/support/server.ts';
import { chromiumAvailable, describeWhenInstalled, launchChromium, saveScreenshot } from './support/browser.ts';
import { GLEWLWYD_USERS, type Glewlwyd, type GlewlwydUser, glewlwydMissing, startGlewlwyd, svcSettingsFor } from './support/glewlwyd.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { atSignIn } from './support/sign-in.ts';

/**
 * svc on an engine nobody here wrote: glewlwyd 2.7 from Debian (e2e/support/glewlwyd.ts), with
 * ENGINE_KIND unset (inferred generic from its issuer) and one hand-off URL (MFA setup: its profile
 * page). One glewlwyd and one svc for the whole file, in Chromium: password sign-in and the
 * workspace its `groups` claim picks, sign-out ending glewlwyd's session too (the password is
 * asked again), an invitation, the account hand-offs svc offers there, and an application's single
 * sign-on and RP-initiated logout through svc and glewlwyd. docs/engine-generic.md.
 */
const missing = chromiumAvailable() ? glewlwydMissing() : 'Chromium not found (apt-get install -y chromium)';

describeWhenInstalled('e2e: svc on glewlwyd, a generic OIDC engine', missing, () => {
  let engine: Glewlwyd;
  let server: E2EServer;
  let browser: Browser;
  let app: http.Server;
  let appUrl: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    const port = await freePort();
    engine = await startGlewlwyd({ svcUrl: `http://127.0.0.1:${port}` });
    server = await startServer({
      env: { PORT: String(port), ...svcSettingsFor(engine), ENGINE_MFA_SETUP: `${engine.url}/profile.html`, LOG_LEVEL: 'info' },
    });
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
    await engine?.stop();
    app?.closeAllConnections();
    await new Promise((resolve) => app?.close(resolve));
  });

  async function freshPage(): Promise<Page> {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    contexts.push(context);
    return context.newPage();
  }

  const atGlewlwydLogin = (url: URL) => url.origin === engine.url && url.pathname === '/login.html';

  /** On svc's /signin: the email, then glewlwyd's login page (username pre-filled from login_hint) and the password. */
  async function glewlwydSignIn(page: Page, user: GlewlwydUser): Promise<void> {
    await page.locator('#email').fill(user.email);
    await page.getByTestId('continue-email').click();
    await page.waitForURL(atGlewlwydLogin);
    await page.locator('#password').waitFor({ state: 'visible' });
    expect(await page.locator('#username').inputValue()).toBe(user.username);
    await page.locator('#password').fill(user.password);
    await page.locator('#loginbut').click();
    // glewlwyd then greets the person ("Connection to svc") and continues on a click.
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  /** glewlwyd accepted the id_token_hint (its page names the session) and asks the person to confirm there. */
  async function glewlwydConfirmsLogout(page: Page): Promise<void> {
    await page.waitForURL((url) => atGlewlwydLogin(url) && url.searchParams.get('prompt') === 'end_session');
    expect(new URL(page.url()).searchParams.get('sid')).toBeTruthy();
    await page.getByRole('button', { name: 'Logout' }).click();
  }

  it('logs what it inferred and what it does not offer on this engine', () => {
    expect(server.output()).toMatch(
      /identity engine: generic; svc does not offer recovery, email_verification, passkey_setup, signup, social/,
    );
    expect(server.output()).toContain('issuer shape (ENGINE_KIND unset)');
    // The engine's ID token (a JWT) is never logged.
    expect(server.output()).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\./);
  });

  it('signs in with the groups claim choosing the workspace; sign-out ends the engine session (password asked again)', async () => {
    const page = await freshPage();
    await page.goto('/auth/console/');
    await page.waitForURL(atSignIn);
    // Only what glewlwyd offers: no social button, no sign-up link.
    expect(await page.getByTestId('continue-social').count()).toBe(0);
    expect(await page.getByTestId('switch-intent').count()).toBe(0);
    await glewlwydSignIn(page, GLEWLWYD_USERS.admin);
    await page.waitForURL(`${server.url}/auth/console/`);
    await page.getByTestId('workspace-name').waitFor({ state: 'visible' });
    expect(await page.getByTestId('workspace-name').textContent()).toBe('Platform');

    // The account page: the one hand-off configured, opening glewlwyd's profile page in a new tab.
    await page.goto('/user');
    expect(await page.getByTestId('account-platform-admin').textContent()).toBe('Yes');
    for (const absent of ['account-recovery', 'account-verify-email', 'account-passkeys']) {
      expect(await page.getByTestId(absent).count(), absent).toBe(0);
    }
    const [profile] = await Promise.all([page.context().waitForEvent('page'), page.getByTestId('account-mfa').click()]);
    await profile.waitForURL((url) => url.origin === engine.url && url.pathname === '/profile.html');
    await profile.close();
    await saveScreenshot(page, 'glewlwyd-account');

    // Sign out through svc: glewlwyd gets the ID token as id_token_hint and sends the browser back.
    await page.getByTestId('sign-out').click();
    await glewlwydConfirmsLogout(page);
    await page.waitForURL(atSignIn);
    expect((await page.request.get('/v1/me')).status()).toBe(401);
    // glewlwyd's session is over: signing in again asks for the password.
    await glewlwydSignIn(page, GLEWLWYD_USERS.admin);
    await page.waitForURL((url) => url.origin === server.url && !atSignIn(url));
  });

  it('an invitation to the email glewlwyd vouches for is accepted', async () => {
    // Bob is in no platform group: his own tenant workspace, as its admin.
    const bob = await freshPage();
    await bob.goto('/auth/console/');
    await bob.waitForURL(atSignIn);
    await glewlwydSignIn(bob, GLEWLWYD_USERS.user);
    await bob.waitForURL(`${server.url}/auth/console/`);
    await bob.getByTestId('workspace-name').waitFor({ state: 'visible' });
    expect(await bob.getByTestId('workspace-name').textContent()).toBe("Bob User's workspace");
    const created = await bob.request.post('/v1/invitations', {
      headers: { origin: server.url },
      data: { email: GLEWLWYD_USERS.admin.email, roleKey: 'org_member' },
    });
    expect(created.status()).toBe(201);
    const { inviteLink } = (await created.json()) as { inviteLink: string };

    const ada = await freshPage();
    await ada.goto(inviteLink);
    // glewlwyd offers no sign-up through svc: only "Sign in".
    expect(await ada.getByTestId('invitation-sign-up').count()).toBe(0);
    await ada.getByTestId('invitation-sign-in').click();
    await ada.waitForURL(atSignIn);
    await glewlwydSignIn(ada, GLEWLWYD_USERS.admin);
    await ada.getByTestId('accept-invitation').click();
    await ada.waitForURL((url) => url.pathname.startsWith('/auth/console'));
    const me = (await (await ada.request.get('/v1/me')).json()) as { memberships: { organization: { name: string } }[] };
    expect(me.memberships.map((m) => m.organization.name)).toContain("Bob User's workspace");
  });

  it("an application signs in through svc and glewlwyd, and its logout ends svc's and glewlwyd's sessions", async () => {
    const config = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as { oidc: { clientId: string } };
    const clientId = config.oidc.clientId;
    const page = await freshPage();

    async function signInToApp(): Promise<string> {
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URL(`${server.url}/oidc/auth`);
      for (const [k, v] of Object.entries({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: `${appUrl}/callback`,
        scope: 'openid email',
        state: 'app-state',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      })) {
        authorize.searchParams.set(k, v);
      }
      await page.goto(authorize.href);
      await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
      await glewlwydSignIn(page, GLEWLWYD_USERS.user);
      await page.waitForURL((url) => url.href.startsWith(`${appUrl}/callback`));
      const res = await fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: new URL(page.url()).searchParams.get('code') as string,
          redirect_uri: `${appUrl}/callback`,
          client_id: clientId,
          code_verifier: verifier,
        }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { id_token: string }).id_token;
    }

    const idToken = await signInToApp();
    const end = new URL(`${server.url}/oidc/session/end`);
    end.searchParams.set('id_token_hint', idToken);
    end.searchParams.set('post_logout_redirect_uri', `${appUrl}/signed-out`);
    end.searchParams.set('state', 'bye');
    await page.goto(end.href);
    const confirm = page.getByTestId('confirm-logout');
    // svc's own end-session may or may not ask before a valid id_token_hint (docs/oidc.md).
    await Promise.race([confirm.waitFor({ state: 'visible' }).then(() => confirm.click()), page.waitForURL((url) => atGlewlwydLogin(url))]);
    await glewlwydConfirmsLogout(page);
    await page.waitForURL((url) => url.href.startsWith(`${appUrl}/signed-out`));
    expect(new URL(page.url()).searchParams.get('state')).toBe('bye');
    // Both sessions are over: the application's next sign-in asks for the password at glewlwyd.
    await signInToApp();
  });
});
