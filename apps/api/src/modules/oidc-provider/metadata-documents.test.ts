import { createDatabase, type Database } from '@svc/db/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMetadataDocumentServer } from '../../../../../test/support/metadata-document-server.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import type { RunningServer } from '../../server.ts';

const CALLBACK = 'http://127.0.0.1:53199/callback';
/** A PKCE S256 challenge (any well-formed one: no code is redeemed here). */
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

/**
 * Client ID Metadata Documents (docs/oidc.md, "Client ID Metadata Documents"): an https client_id is
 * fetched under the webhook sender's address rules, validated and cached; every way a document
 * can be wrong is refused with an error page on svc (never a redirect), and no authorization
 * starts for it.
 */
describe('svc OpenID Provider: client metadata documents', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let docs: Awaited<ReturnType<typeof startMetadataDocumentServer>>;

  const good = { client_name: 'Notes agent', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none' };

  beforeAll(async () => {
    // Loopback allowed, as the webhook tests do for their receivers: the documents are on 127.0.0.1.
    server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-metadata-documents' });
    docs = await startMetadataDocumentServer();
    docs.route('/good', { document: good, headers: { 'cache-control': 'max-age=300' } });
    docs.route('/other-id', { document: { ...good, client_id: 'https://agent.example/other' } });
    docs.route('/redirects', { status: 302, headers: { location: '/good' } });
    docs.route('/large', { document: { ...good, client_name: 'x'.repeat(6 * 1024) } });
    docs.route('/slow', { document: good, delayMs: 4_000 });
    docs.route('/not-json', { status: 200, headers: { 'content-type': 'application/json' }, body: '<html>' });
    docs.route('/secret', { document: { ...good, token_endpoint_auth_method: 'client_secret_basic' } });
    docs.route('/key-jwt', { document: { ...good, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } } });
    docs.route('/no-method', { document: { client_name: 'No method', redirect_uris: [CALLBACK] } });
    docs.route('/http-redirect', { document: { ...good, redirect_uris: ['http://agent.example/callback'] } });
    docs.route('/svc-redirect', { document: { ...good, redirect_uris: [`${server.url}/oidc/try/callback`] } });
  });

  afterAll(async () => {
    await docs?.close();
    await database?.close();
    await server?.close();
  });

  function authorizeUrl(base: string, clientId: string, params: Record<string, string> = {}): string {
    return `${base}/oidc/auth?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'openid',
      state: 'st',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      ...params,
    })}`;
  }

  async function interactions(): Promise<number> {
    const [row] = await database.sql<{ n: number }[]>`select count(*)::int as n from oidc_payloads where model = 'Interaction'`;
    return row?.n ?? 0;
  }

  /** An authorization request svc must refuse on its own page: 400, HTML, no redirect, no interaction. */
  async function expectRefused(clientId: string, base = server.url): Promise<string> {
    const before = await interactions();
    const res = await fetch(authorizeUrl(base, clientId), { redirect: 'manual' });
    const html = await res.text();
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await interactions()).toBe(before);
    return html;
  }

  it('advertises client_id_metadata_document_supported in discovery and RFC 8414 metadata', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const metadata = (await (await fetch(`${server.url}${path}`)).json()) as Record<string, unknown>;
      expect(metadata.client_id_metadata_document_supported).toBe(true);
    }
  });

  it('fetches a valid document once, caches it, and starts the authorization', async () => {
    const before = docs.hits.get('/good') ?? 0;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(authorizeUrl(server.url, docs.url('/good')), { redirect: 'manual' });
      await res.body?.cancel();
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toMatch(/\/oidc\/interaction\//);
    }
    // Cache-Control max-age=300: the second request did not fetch again.
    expect(docs.hits.get('/good')).toBe(before + 1);
  });

  it('keeps even a document that says no-store for the lower bound (a minute): no fetch per request', async () => {
    docs.route('/no-store', { document: good, headers: { 'cache-control': 'no-store, max-age=0' } });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(authorizeUrl(server.url, docs.url('/no-store')), { redirect: 'manual' });
      await res.body?.cancel();
      expect(res.status).toBe(303);
    }
    expect(docs.hits.get('/no-store')).toBe(1);
  });

  it('refuses a document whose client_id is not its URL', async () => {
    expect(await expectRefused(docs.url('/other-id'))).toContain('invalid_client');
  });

  it('follows no redirect', async () => {
    const before = docs.hits.get('/good') ?? 0;
    expect(await expectRefused(docs.url('/redirects'))).toContain('invalid_client');
    // Fetched once, although oidc-provider looks the client up again to render the error.
    expect(docs.hits.get('/redirects')).toBe(1);
    expect(docs.hits.get('/good') ?? 0).toBe(before);
  });

  it('refuses a document larger than 5 kB', async () => {
    expect(await expectRefused(docs.url('/large'))).toContain('invalid_client');
  });

  it('gives up on a document that does not arrive in time', async () => {
    const started = Date.now();
    expect(await expectRefused(docs.url('/slow'))).toContain('invalid_client');
    // oidc-provider's deadline (2.5 s), once: the document would have come after 4 s.
    expect(Date.now() - started).toBeLessThan(3_900);
    expect(docs.hits.get('/slow')).toBe(1);
  });

  it('refuses a document that is not JSON', async () => {
    expect(await expectRefused(docs.url('/not-json'))).toContain('invalid_client');
  });

  it('refuses a client that is not public (shared secrets, private_key_jwt)', async () => {
    expect(await expectRefused(docs.url('/secret'))).toContain('invalid_client');
    expect(await expectRefused(docs.url('/key-jwt'))).toContain('token_endpoint_auth_method');
    // Saying nothing is svc's default for every client, `none`: a public client.
    const res = await fetch(authorizeUrl(server.url, docs.url('/no-method')), { redirect: 'manual' });
    await res.body?.cancel();
    expect(res.status).toBe(303);
  });

  it('refuses plain-http redirect URIs off loopback, and redirect URIs on svc itself', async () => {
    expect(await expectRefused(docs.url('/http-redirect'))).toContain('https');
    expect(await expectRefused(docs.url('/svc-redirect'))).toContain('svc itself');
  });

  it('refuses a redirect_uri the document does not list, on svc, without redirecting', async () => {
    const before = await interactions();
    const res = await fetch(authorizeUrl(server.url, docs.url('/good'), { redirect_uri: 'http://127.0.0.1:53199/elsewhere' }), {
      redirect: 'manual',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('invalid_redirect_uri');
    expect(await interactions()).toBe(before);
  });

  it('never reaches a private, loopback, link-local or metadata address without WEBHOOK_ALLOW_PRIVATE', async () => {
    const strict = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    try {
      docs.route('/strict', { document: good });
      const strictDb = createDatabase({ url: strict.databaseUrl, max: 1, applicationName: 'svc-test-metadata-strict' });
      try {
        for (const id of [
          docs.url('/strict'),
          docs.url('/strict').replace('127.0.0.1', 'localhost'),
          'https://169.254.169.254/latest/meta-data',
          'https://10.0.0.1/client',
          'https://[::1]/client',
          'https://metadata.google.internal/client',
        ]) {
          const res = await fetch(authorizeUrl(strict.url, id), { redirect: 'manual' });
          expect(res.status, id).toBe(400);
          expect(await res.text(), id).toContain('invalid_client');
        }
        expect(docs.hits.get('/strict') ?? 0).toBe(0);
        const [row] = await strictDb.sql<{ n: number }[]>`select count(*)::int as n from oidc_payloads`;
        expect(row?.n).toBe(0);
      } finally {
        await strictDb.close();
      }
    } finally {
      await strict.close();
    }
  });

  it('keeps link-local and metadata addresses refused even with WEBHOOK_ALLOW_PRIVATE', async () => {
    await expectRefused('https://169.254.169.254/latest/meta-data');
    await expectRefused('https://metadata.google.internal/client');
  });
});
