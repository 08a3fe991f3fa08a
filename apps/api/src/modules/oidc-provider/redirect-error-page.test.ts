import { createDatabase, type Database } from '@svc/db/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { oidcErrorPage } from './error-page.ts';

/**
 * The page svc answers for an unregistered redirect_uri or post_logout_redirect_uri: it names the
 * URL sent, and outside production where to register it (the application's console page); the
 * URL sent is text, never a link, whatever it holds.
 */

let server: Awaited<ReturnType<typeof startTestServer>>;
let database: Database;

beforeAll(async () => {
  server = await startTestServer();
  database = createDatabase({ url: server.databaseUrl, max: 1, applicationName: 'svc-test-redirect-error' });
});
afterAll(async () => {
  await database?.close();
  await server?.close();
});

const REGISTERED = 'http://localhost:3000/auth/callback';

function authorize(clientId: string, redirectUri: string): URL {
  const url = new URL(`${server.url}/oidc/auth`);
  url.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: 'openid',
    state: 's',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  return url;
}

const testIds = (html: string, id: string) => [...html.matchAll(new RegExp(`data-testid="${id}"[^>]*>([^<]*)<`, 'g'))].map((m) => m[1]);
const hrefs = (html: string) => [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);

describe('an unregistered redirect URI, in development', () => {
  it('names the URL sent, what is registered, and links to the application page in the console', async () => {
    const { application } = await seedApplication(database.db, { redirectUrls: [REGISTERED], clientType: 'public' });
    const sent = 'http://127.0.0.1:3000/auth/callback';
    const res = await fetch(authorize(application.id, sent), { redirect: 'manual' });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain('invalid_redirect_uri');
    expect(testIds(html, 'unregistered-url')).toEqual([sent]);
    expect(testIds(html, 'registered-url')).toEqual([REGISTERED]);
    expect(html).toContain('Redirect URLs');
    expect(hrefs(html)).toContain(`/auth/console/applications/${application.id}`);
  });

  it('a hostile redirect_uri is shown escaped and never becomes a link: the only links are svc paths', async () => {
    const { application } = await seedApplication(database.db, { redirectUrls: [REGISTERED] });
    for (const sent of ['https://evil.example/"><script>alert(1)</script>', 'javascript:alert(document.cookie)', '//evil.example/cb']) {
      const res = await fetch(authorize(application.id, sent), { redirect: 'manual' });
      expect(res.status, sent).toBe(400);
      const html = await res.text();
      expect(html).not.toContain('<script>alert');
      expect(html).not.toContain('href="javascript:');
      for (const href of hrefs(html)) {
        // Favicon, the console page: paths on svc, never `//host`.
        expect(href, sent).toMatch(/^\/(?!\/)/);
      }
      expect(html).toContain('data-testid="unregistered-url"');
    }
  });

  it('an application with none registered says so; svc’s own try callback is not listed as the app’s', async () => {
    const { application } = await seedApplication(database.db);
    const html = await (await fetch(authorize(application.id, 'http://localhost:5173/callback'), { redirect: 'manual' })).text();
    expect(testIds(html, 'registered-url')).toEqual([]);
    expect(html).toContain('None is registered yet');
    expect(html).not.toContain('/oidc/try/callback');
  });

  it('the keyless application: only loopback URLs, claim to use another; no console link', async () => {
    const config = (await (await fetch(`${server.url}/v1/client/config?keyless=1`)).json()) as { oidc: { clientId: string } };
    const res = await fetch(authorize(config.oidc.clientId, 'https://app.example.com/callback'), { redirect: 'manual' });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(testIds(html, 'unregistered-url')).toEqual(['https://app.example.com/callback']);
    expect(html).toContain('accepts only http URLs on this machine');
    expect(html).not.toContain('data-testid="register-link"');
  });

  it('an unregistered post-logout URL at sign-out: the same, for Post-logout redirect URLs', async () => {
    const { application } = await seedApplication(database.db, {
      redirectUrls: [REGISTERED],
      postLogoutRedirectUrls: ['http://localhost:3000/'],
    });
    const url = new URL(`${server.url}/oidc/session/end`);
    url.search = new URLSearchParams({ client_id: application.id, post_logout_redirect_uri: 'http://localhost:4000/' }).toString();
    // A browser's Accept: oidc-provider answers JSON to anything else.
    const res = await fetch(url, { redirect: 'manual', headers: { accept: 'text/html' } });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(testIds(html, 'unregistered-url')).toEqual(['http://localhost:4000/']);
    expect(testIds(html, 'registered-url')).toEqual(['http://localhost:3000/']);
    expect(html).toContain('Post-logout redirect URLs');
    expect(hrefs(html)).toContain(`/auth/console/applications/${application.id}`);
  });
});

describe('in production', () => {
  it('names the URL only: no console link, no registered URLs', () => {
    const html = oidcErrorPage(
      { error: 'invalid_redirect_uri', error_description: "redirect_uri did not match any of the client's registered redirect_uris" },
      'sign-in',
      {
        sent: { kind: 'redirect', url: 'https://app.example.com/cb' },
        hint: { kind: 'none' },
      },
    );
    expect(testIds(html, 'unregistered-url')).toEqual(['https://app.example.com/cb']);
    expect(html).not.toContain('register-link');
    expect(html).not.toContain('console');
  });
});
