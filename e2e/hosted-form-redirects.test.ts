import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase, type Database } from '@svc/db/client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../test/support/db.ts';
import { seedApplication } from '../test/support/factories.ts';
import { describeInChromium, launchChromium, saveScreenshot } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, passwordSignIn } from './support/sign-in.ts';

/**
 * The hosted pages of an authorization whose forms end on the application, in Chromium. Chrome
 * applies the page's CSP form-action to every redirect after a submit, so a form on svc whose
 * answer ends on the application's redirect_uri (another origin) is blocked unless that page's
 * form-action names the application's origin. svc serve, its dev engine, and a plain HTTP server
 * on another loopback port standing for the application (its registered redirect URI).
 */
describeInChromium("e2e: svc's hosted forms end on the application", () => {
  let server: E2EServer;
  let database: Database;
  let browser: Browser;
  let app: http.Server;
  let appUrl: string;
  let clientId: string;
  let appOrg: { id: string; slug: string };
  let publishableKey: string;
  /** The bodies of the form posts the application received (response_mode=form_post). */
  const posted: URLSearchParams[] = [];

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    server = await startServer({ databaseUrl });
    database = createDatabase({ url: databaseUrl, max: 2, applicationName: 'svc-e2e-hosted-forms' });
    app = http.createServer(async (req, res) => {
      if (req.method === 'POST') {
        let body = '';
        for await (const chunk of req) {
          body += chunk;
        }
        posted.push(new URLSearchParams(body));
      }
      res.writeHead(req.url === '/favicon.ico' ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>app</title><p data-testid="app-page">${req.url?.split('?')[0] ?? ''}</p>`);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    const created = await seedApplication(database.db, { name: 'Team App', clientType: 'public', redirectUrls: [`${appUrl}/callback`] });
    clientId = created.application.id;
    appOrg = { id: created.organization.id, slug: created.organization.slug };
    publishableKey = created.publishableKey;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await database?.close();
    await server?.stop();
    app?.closeAllConnections();
    await new Promise((resolve) => app?.close(resolve));
  });

  /** A fresh browser context whose pages record every CSP refusal Chrome reports. */
  async function openContext(): Promise<{ context: BrowserContext; page: Page; refused: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) {
        refused.push(message.text());
      }
    });
    return { context, page, refused };
  }

  type Authorization = { url: string; verifier: string; state: string };

  function authorization(params: Record<string, string> = {}, base = `${server.url}/oidc/auth`): Authorization {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(8).toString('hex');
    const url = new URL(base);
    for (const [k, v] of Object.entries({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: `${appUrl}/callback`,
      scope: 'openid email organization',
      state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      ...params,
    })) {
      url.searchParams.set(k, v);
    }
    return { url: url.href, verifier, state };
  }

  /**
   * Waits until the browser is on the application's callback; fails at once with Chrome's message
   * when the CSP refused the navigation (a blocked form redirect leaves the browser where it was).
   */
  async function landOnCallback(page: Page, refused: string[]): Promise<URL> {
    let stop = false;
    const cspRefusal = (async () => {
      while (!stop && refused.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (refused.length > 0) {
        throw new Error(`Chrome refused the navigation: ${refused.join(' | ')}`);
      }
    })();
    try {
      await Promise.race([page.waitForURL((url) => url.href.startsWith(`${appUrl}/callback`)), cspRefusal]);
    } finally {
      stop = true;
    }
    expect(refused, 'CSP refusals in the browser').toEqual([]);
    return new URL(page.url());
  }

  /** Redeems the callback's code (public client, PKCE): the access token's and ID token's claims. */
  async function redeem(started: Authorization, callback: URL): Promise<{ access: Record<string, unknown>; id: Record<string, unknown> }> {
    expect(callback.searchParams.get('state')).toBe(started.state);
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') as string,
        redirect_uri: `${appUrl}/callback`,
        client_id: clientId,
        code_verifier: started.verifier,
      }),
    });
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { access_token: string; id_token: string };
    const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
    return { access: claims(tokens.access_token), id: claims(tokens.id_token) };
  }

  /** The form-action sources of the CSP of the page at `url` (fetched with the browser's cookies). */
  async function formActionOf(context: BrowserContext, url: string): Promise<string[]> {
    const res = await context.request.get(url, { maxRedirects: 0 });
    const csp = res.headers()['content-security-policy'] ?? '';
    const directive = csp.split(';').find((d) => d.trim().startsWith('form-action')) ?? '';
    return directive.trim().split(/\s+/).slice(1);
  }

  it('a person in two organizations picks one on the hosted page and lands on the application with a code for it', async () => {
    const { context, page, refused } = await openContext();
    try {
      // First sign-in: the person's own workspace is their only organization, no choice to make.
      const first = authorization();
      await page.goto(first.url);
      await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
      await passwordSignIn(page, server.url, DEMO_USER);
      await redeem(first, await landOnCallback(page, refused));

      // Now a member of the application's organization too: two to choose from.
      await database.sql`
        insert into memberships (tenant_id, user_id, role_key)
        select ${appOrg.id}, id, 'org_member' from users where email = ${DEMO_USER.email}`;
      const started = authorization();
      await page.goto(started.url);
      await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
      const choices = page.getByTestId('pick-organization');
      expect(await choices.count()).toBe(2);
      expect(await page.getByTestId('hosted-heading').textContent()).toBe('Continue to Team App as');
      // The picker page lets its form end on the application's origin, and on no other.
      expect(await formActionOf(context, page.url())).toContain(appUrl);
      await saveScreenshot(page, 'oidc-organization-pick');

      await page.locator(`[data-testid="pick-organization"][data-slug="${appOrg.slug}"]`).click();
      const callback = await landOnCallback(page, refused);
      expect(callback.searchParams.get('code')).toBeTruthy();
      const { access, id } = await redeem(started, callback);
      expect(access).toMatchObject({ org_id: appOrg.id, org_slug: appOrg.slug, org_role: 'org_member' });
      expect(id).toMatchObject({ org_id: appOrg.id, org_slug: appOrg.slug, email: DEMO_USER.email });
    } finally {
      await context.close();
    }
  });

  it('the sign-in hand-off: with a session left at the engine, its form ends on the application in one go', async () => {
    const { context, page, refused } = await openContext();
    try {
      const first = authorization({ scope: 'openid email' });
      await page.goto(first.url);
      await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
      await passwordSignIn(page, server.url, DEMO_USER);
      await redeem(first, await landOnCallback(page, refused));

      // The svc session is gone (signed out of svc, expired), the engine's is not: svc's sign-in
      // page again, and its form goes to the engine, which sends the browser straight back to
      // svc's callback, the interaction, and on to the application.
      await context.clearCookies({ name: 'svc_session' });
      const started = authorization({ scope: 'openid email' });
      await page.goto(started.url);
      await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
      expect(await page.getByTestId('hosted-heading').textContent()).toBe('Sign in to Team App');
      await page.locator('#email').fill(DEMO_USER.email);
      await page.getByTestId('continue-email').click();
      const { id } = await redeem(started, await landOnCallback(page, refused));
      expect(id).toMatchObject({ email: DEMO_USER.email, aud: clientId });
    } finally {
      await context.close();
    }
  });

  it('response_mode=form_post: the page that posts the code to the application may do so, at sign-in and under single sign-on', async () => {
    const { context, page, refused } = await openContext();
    try {
      for (const signIn of [true, false]) {
        const started = authorization({ scope: 'openid email', response_mode: 'form_post' });
        const before = posted.length;
        await page.goto(started.url);
        if (signIn) {
          await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
          await passwordSignIn(page, server.url, DEMO_USER);
        }
        await landOnCallback(page, refused);
        await expect.poll(() => posted.length).toBe(before + 1);
        const body = posted[before] as URLSearchParams;
        const callback = new URL(`${appUrl}/callback`);
        callback.searchParams.set('code', body.get('code') ?? '');
        callback.searchParams.set('state', body.get('state') ?? '');
        const { id } = await redeem(started, callback);
        expect(id).toMatchObject({ email: DEMO_USER.email, aud: clientId });
      }
    } finally {
      await context.close();
    }
  });

  it("svc's hosted sign-in of an application (publishable_key, return_to): with a session left at the engine, it ends on the application", async () => {
    const { context, page, refused } = await openContext();
    try {
      const hosted = `${server.url}/signin?publishable_key=${publishableKey}&return_to=${encodeURIComponent(`${appUrl}/callback`)}`;
      await page.goto(hosted);
      await passwordSignIn(page, server.url, DEMO_USER);
      await landOnCallback(page, refused);

      await context.clearCookies({ name: 'svc_session' });
      await page.goto(hosted);
      expect(await page.getByTestId('hosted-heading').textContent()).toBe('Sign in to Team App');
      await page.locator('#email').fill(DEMO_USER.email);
      await page.getByTestId('continue-email').click();
      await landOnCallback(page, refused);
      expect((await context.cookies(server.url)).some((c) => c.name === 'svc_session')).toBe(true);
    } finally {
      await context.close();
    }
  });

  it('a redirect_uri named to the hosted page itself does not widen its form-action', async () => {
    const { context, page } = await openContext();
    try {
      const started = authorization({ scope: 'openid email' });
      await page.goto(started.url);
      await page.waitForURL((url) => url.origin === server.url && url.pathname.startsWith('/oidc/interaction/'));
      const own = await formActionOf(context, page.url());
      expect(own).toContain(appUrl);
      const tampered = new URL(page.url());
      tampered.searchParams.set('redirect_uri', 'https://evil.example/callback');
      await page.goto(tampered.href);
      expect(await page.getByTestId('hosted-heading').textContent()).toBe('Sign in to Team App');
      const after = await formActionOf(context, tampered.href);
      expect(after).toEqual(own);
      expect(after.join(' ')).not.toContain('evil.example');
    } finally {
      await context.close();
    }
  });
});
