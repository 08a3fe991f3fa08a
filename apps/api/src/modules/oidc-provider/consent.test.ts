import { createHash, randomBytes } from 'node:crypto';
import { createDatabase, type Database } from '@svc/db/client';
import { CookieJar } from '@svc/dev-engine/cookie-jar';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startMetadataDocumentServer } from '../../../../../test/support/metadata-document-server.ts';
import { browseToRedirect } from '../../../../../test/support/oidc-browser.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedSignedIn } from '../../../../../test/support/tenancy.ts';
import type { RunningServer } from '../../server.ts';

const CALLBACK = 'http://127.0.0.1:53198/callback';
const NOTES = 'https://mcp.notes.example/mcp';

/**
 * Third-party clients and consent (docs/oidc.md, "Third-party clients and consent"): a client
 * identified by its metadata document gets a consent page; what the person allows is remembered
 * in a grant, asked again only for more; a permission the person does not hold is never
 * granted; a denial is access_denied at the client; applications still see no such page.
 */
describe('svc OpenID Provider: consent of third-party clients', () => {
  let server: RunningServer & { databaseUrl: string };
  let database: Database;
  let docs: Awaited<ReturnType<typeof startMetadataDocumentServer>>;
  let app: Awaited<ReturnType<typeof seedApplication>>;
  let agent: string;
  let jwks: ReturnType<typeof createRemoteJWKSet>;

  beforeAll(async () => {
    server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_SIGNIN_PER_MINUTE: '1000' } });
    database = createDatabase({ url: server.databaseUrl, max: 2, applicationName: 'svc-test-consent' });
    docs = await startMetadataDocumentServer();
    docs.route('/agent', {
      document: {
        client_name: 'Notes <agent>',
        client_uri: 'https://agent.example',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
      },
    });
    agent = docs.url('/agent');
    jwks = createRemoteJWKSet(new URL(`${server.url}/oidc/jwks`));
    app = await seedApplication(database.db, { clientType: 'public', redirectUrls: [CALLBACK] });
    const sql = database.sql;
    await sql`insert into api_resources (id, identifier, name) values ('res_notesnotesnotesnote', ${NOTES}, 'Notes MCP')`;
    await sql`insert into api_permissions (id, resource_id, name, description) values
      ('prm_nreadnreadnreadnread', 'res_notesnotesnotesnote', 'notes.read', 'Read your notes'),
      ('prm_nwritenwritenwriten', 'res_notesnotesnotesnote', 'notes.write', 'Write notes'),
      ('prm_ndeletendeletendele', 'res_notesnotesnotesnote', 'notes.delete', 'Delete notes')`;
    await sql`insert into roles (id, tenant_id, key, name, permissions, product_permissions) values
      ('rol_writerwriterwriterwr', ${app.organization.id}, 'writer', 'Writer', '{tenant.read}', '{notes.read,notes.write}')`;
    // The person's first sign-in (through the application) creates them; then they are a writer.
    await authorize(new CookieJar(), { clientId: app.application.id, scope: 'openid' });
    await sql`insert into memberships (tenant_id, user_id, role_key)
      select ${app.organization.id}, id, 'writer' from users where email = 'user@svc.local'`;
  });

  afterAll(async () => {
    await docs?.close();
    await database?.close();
    await server?.close();
  });

  /** An authorization with PKCE through the browser, then the code redeemed as a public client. */
  async function authorize(
    jar: CookieJar,
    opts: { clientId?: string; scope: string; resource?: string; consent?: 'allow' | 'deny'; organization?: string | null },
  ) {
    const verifier = randomBytes(32).toString('base64url');
    const clientId = opts.clientId ?? agent;
    const params = new URLSearchParams({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: opts.scope,
      state: 'the-state',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    if (opts.resource) {
      params.set('resource', opts.resource);
    }
    if (opts.organization !== null && app?.organization) {
      params.set('organization', opts.organization ?? app.organization.slug);
    }
    const browsed = await browseToRedirect(jar, `${server.url}/oidc/auth?${params}`, {
      svcUrl: server.url,
      redirectUri: CALLBACK,
      consent: opts.consent,
    });
    const code = browsed.callback.searchParams.get('code');
    if (!code) {
      return { browsed, token: undefined, refreshToken: undefined };
    }
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
        client_id: clientId,
        ...(opts.resource ? { resource: opts.resource } : {}),
      }),
    });
    const body = (await res.json()) as { access_token?: string; refresh_token?: string; error?: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    return { browsed, token: body.access_token, refreshToken: body.refresh_token };
  }

  /** The agent's refresh token redeemed for the notes API, as a public client. */
  async function redeemRefresh(refreshToken: string | undefined) {
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken as string, client_id: agent, resource: NOTES }),
    });
    return { status: res.status, body: (await res.json()) as { error?: string; error_description?: string; access_token?: string } };
  }

  function consentPageOf(pages: string[]): string {
    const page = pages.find((p) => p.includes('data-testid="consent-allow"'));
    if (!page) {
      throw new Error('no consent page was shown');
    }
    return page;
  }

  it('shows the consent page; allowing grants exactly what was asked, for the MCP server, in the organization', async () => {
    const jar = new CookieJar();
    const { browsed, token } = await authorize(jar, { scope: 'notes.read notes.write', resource: NOTES, consent: 'allow' });
    expect(browsed.steps).toContain('consent');
    // The sign-in before it names the client's host beside the name its document chose.
    const host = new URL(agent).host;
    expect(browsed.pages.find((p) => p.includes('name="login_hint"'))).toContain(`Sign in to Notes &#60;agent&#62; (${host})`);
    const page = consentPageOf(browsed.pages);
    expect(page).toContain(`data-testid="consent-client-host">127.0.0.1:${new URL(agent).port}<`);
    expect(page).toContain('Notes &#60;agent&#62;');
    expect(page).not.toContain('Notes <agent>');
    expect(page).toContain(`data-testid="consent-organization">${app.organization.name}<`);
    expect(page).toContain('Read your notes');
    expect(page).toContain('data-permission="notes.write"');
    expect(page).not.toContain('<script');
    const { payload, protectedHeader } = await jwtVerify(token as string, jwks, { issuer: server.url, audience: NOTES, typ: 'at+jwt' });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload.client_id).toBe(agent);
    expect(payload.scope).toBe('notes.read notes.write');
    expect(payload.org_id).toBe(app.organization.id);
    expect(payload.permissions).toBeUndefined();

    // The same request again in this browser: remembered, no page.
    const again = await authorize(jar, { scope: 'notes.read notes.write', resource: NOTES });
    expect(again.browsed.steps).not.toContain('consent');
    expect(decodeJwt(again.token as string).scope).toBe('notes.read notes.write');

    // More than was allowed: the page again, for the new permission only, which the person does
    // not hold: shown as not grantable, never granted.
    const more = await authorize(jar, { scope: 'notes.read notes.write notes.delete', resource: NOTES, consent: 'allow' });
    const morePage = consentPageOf(more.browsed.pages);
    expect(morePage).toContain('data-testid="consent-not-grantable" data-permission="notes.delete"');
    expect(morePage).not.toContain('data-permission="notes.read"');
    expect(decodeJwt(more.token as string).scope).toBe('notes.read notes.write');

    // What the person could not grant is not asked for again either.
    const after = await authorize(jar, { scope: 'notes.read notes.write notes.delete', resource: NOTES });
    expect(after.browsed.steps).not.toContain('consent');
    expect(decodeJwt(after.token as string).scope).toBe('notes.read notes.write');
  });

  it('offline_access: a refresh token, and the page only the first time', async () => {
    const jar = new CookieJar();
    const first = await authorize(jar, { scope: 'notes.read offline_access', resource: NOTES, consent: 'allow' });
    expect(consentPageOf(first.browsed.pages)).toContain('data-scope="offline_access"');
    expect(first.refreshToken).toBeTruthy();
    const second = await authorize(jar, { scope: 'notes.read offline_access', resource: NOTES });
    expect(second.browsed.steps).not.toContain('consent');
    expect(second.refreshToken).toBeTruthy();
    // The refresh token gives the API's token again, with what was allowed and nothing more.
    const { status, body } = await redeemRefresh(second.refreshToken);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(decodeJwt(body.access_token as string)).toMatchObject({ aud: NOTES, scope: 'notes.read', client_id: agent });
  });

  it('denying sends access_denied to the client, and nothing is granted', async () => {
    const { browsed, token } = await authorize(new CookieJar(), { scope: 'notes.read', resource: NOTES, consent: 'deny' });
    expect(browsed.steps).toContain('consent');
    expect(browsed.callback.searchParams.get('error')).toBe('access_denied');
    expect(browsed.callback.searchParams.get('state')).toBe('the-state');
    expect(token).toBeUndefined();
  });

  it('grants nothing when nothing asked is held: never everything the person holds', async () => {
    // Asking for nothing it can be granted on the API: oidc-provider answers access_denied.
    const none = await authorize(new CookieJar(), { scope: 'notes.delete', resource: NOTES, consent: 'allow' });
    expect(consentPageOf(none.browsed.pages)).toContain('data-testid="consent-not-grantable" data-permission="notes.delete"');
    expect(none.browsed.callback.searchParams.get('error')).toBe('access_denied');
    expect(none.token).toBeUndefined();
    // With openid granted beside it, a token for the API is issued: carrying no permission at all,
    // where an application asking for none gets all the person holds there.
    const { token } = await authorize(new CookieJar(), { scope: 'openid notes.delete', resource: NOTES, consent: 'allow' });
    const payload = decodeJwt(token as string);
    expect(payload.aud).toBe(NOTES);
    expect(payload.org_id).toBe(app.organization.id);
    expect(payload.scope).toBeUndefined();
    expect(payload.permissions).toBeUndefined();
  });

  it('asks which organization first when the person has several and the request names none', async () => {
    const jar = new CookieJar();
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      client_id: agent,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'notes.read',
      resource: NOTES,
      state: 's',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const browsed = await browseToRedirect(jar, `${server.url}/oidc/auth?${params}`, {
      svcUrl: server.url,
      redirectUri: CALLBACK,
      pick: app.organization.slug,
      consent: 'allow',
    });
    expect(browsed.steps).toEqual(expect.arrayContaining(['pick-organization', 'consent']));
    expect(browsed.pages.find((p) => p.includes('data-testid="pick-organization"'))).toContain(
      `Continue to Notes &#60;agent&#62; (${new URL(agent).host}) as`,
    );
    expect(browsed.callback.searchParams.get('code')).toBeTruthy();
  });

  it('refuses a consent posted from another site, or without the interaction of this browser', async () => {
    const jar = new CookieJar();
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      client_id: agent,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'notes.read',
      resource: NOTES,
      organization: app.organization.slug,
      state: 's',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    // Walk up to the consent page without answering it.
    let consentUrl = '';
    try {
      await browseToRedirect(jar, `${server.url}/oidc/auth?${params}`, { svcUrl: server.url, redirectUri: CALLBACK });
    } catch (error) {
      consentUrl = /a consent page at (\S+),/.exec(String(error))?.[1] ?? '';
    }
    expect(consentUrl).toMatch(/\/oidc\/interaction\//);
    const grantsBefore = await database.sql<{ n: number }[]>`select count(*)::int as n from oidc_payloads where model = 'Grant'`;
    const post = (headers: Record<string, string>, from = jar) =>
      from.fetch(consentUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: 'decision=allow',
      });
    const crossSite = await post({ origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    const otherBrowser = await post({ origin: server.url }, new CookieJar());
    expect(otherBrowser.status).toBe(400);
    const grantsAfter = await database.sql<{ n: number }[]>`select count(*)::int as n from oidc_payloads where model = 'Grant'`;
    expect(grantsAfter[0]?.n).toBe(grantsBefore[0]?.n);
  });

  it('refuses an organization the person is not a member of, and prompt=none before any consent', async () => {
    const jar = new CookieJar();
    const other = await authorize(jar, { scope: 'notes.read', resource: NOTES, organization: 'no-such-organization' });
    expect(other.browsed.steps).not.toContain('consent');
    expect(other.browsed.callback.searchParams.get('error')).toBe('access_denied');
    // Signed in now (same browser), but nothing allowed yet: prompt=none cannot ask.
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      client_id: agent,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'notes.read',
      resource: NOTES,
      organization: app.organization.slug,
      prompt: 'none',
      state: 's',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const silent = await browseToRedirect(jar, `${server.url}/oidc/auth?${params}`, { svcUrl: server.url, redirectUri: CALLBACK });
    expect(silent.callback.searchParams.get('error')).toBe('consent_required');
    expect(silent.callback.searchParams.get('code')).toBeNull();
  });

  it("an organization's choice: off refuses before any page and stops refresh at once; listed admits only its clients", async () => {
    const jar = new CookieJar();
    const first = await authorize(jar, { scope: 'notes.read offline_access', resource: NOTES, consent: 'allow' });
    expect(first.refreshToken).toBeTruthy();
    const choose = (mode: string, clients: string[]) => database.sql`
      insert into third_party_access (tenant_id, mode, clients) values (${app.organization.id}, ${mode}, ${clients})
      on conflict (tenant_id) do update set mode = excluded.mode, clients = excluded.clients`;
    const refresh = () => redeemRefresh(first.refreshToken);
    try {
      await choose('off', []);
      expect(await refresh()).toMatchObject({
        status: 400,
        body: { error: 'invalid_grant', error_description: expect.stringContaining('does not allow this app') },
      });
      // A new browser is refused before the consent page; the one holding a grant, without one.
      const fresh = await authorize(new CookieJar(), { scope: 'notes.read', resource: NOTES, consent: 'allow' });
      expect(fresh.browsed.steps).not.toContain('consent');
      expect(fresh.browsed.callback.searchParams.get('error')).toBe('access_denied');
      expect(fresh.browsed.callback.searchParams.get('error_description')).toContain('does not allow this app');
      const granted = await authorize(jar, { scope: 'notes.read offline_access', resource: NOTES });
      expect(granted.browsed.callback.searchParams.get('error')).toBe('access_denied');
      expect(granted.token).toBeUndefined();

      // Listed: another origin's clients only, then a prefix that covers this client.
      await choose('listed', ['https://agents.elsewhere.example/*']);
      expect((await refresh()).status).toBe(400);
      await choose('listed', [`${new URL(agent).origin}/`.concat('*')]);
      // The refresh token refused above is spent for good: allowed again, the client asks again.
      expect((await refresh()).status).toBe(400);
      const listed = await authorize(new CookieJar(), { scope: 'notes.read', resource: NOTES, consent: 'allow' });
      expect(decodeJwt(listed.token as string)).toMatchObject({ client_id: agent, scope: 'notes.read' });
    } finally {
      await choose('any', []);
    }
  });

  it('an admin sees the grant on Connected apps and revokes it: its refresh token stops at once', async () => {
    const jar = new CookieJar();
    const first = await authorize(jar, { scope: 'notes.read offline_access', resource: NOTES, consent: 'allow' });
    const admin = await seedSignedIn(server.services.db, { organization: app.organization, roleKey: 'org_admin' });
    const listed = await fetch(`${server.url}/v1/connected-apps?organization_slug=${app.organization.slug}`, {
      headers: { cookie: admin.cookie },
    });
    const apps = (
      (await listed.json()) as { data: { id: string; clientId: string; user: { email: string }; permissions: Record<string, string[]> }[] }
    ).data;
    // The grant this authorization made: its access token names it (grant_id).
    const grantId = decodeJwt(first.token as string).grant_id;
    const grant = apps.find((a) => a.id === grantId);
    expect(grant).toMatchObject({ clientId: agent, user: { email: 'user@svc.local' }, permissions: { [NOTES]: ['notes.read'] } });
    const revoked = await fetch(`${server.url}/v1/connected-apps/${grant?.id}?organization_slug=${app.organization.slug}`, {
      method: 'DELETE',
      headers: { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl },
    });
    expect(revoked.status).toBe(200);
    const refresh = await redeemRefresh(first.refreshToken);
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    // Gone from the list; the next authorization asks the person again.
    const after = await fetch(`${server.url}/v1/connected-apps?organization_slug=${app.organization.slug}`, {
      headers: { cookie: admin.cookie },
    });
    expect(((await after.json()) as { data: { id: string }[] }).data.map((a) => a.id)).not.toContain(grant?.id);
  });

  it('still shows applications no consent page (first-party)', async () => {
    const { browsed } = await authorize(new CookieJar(), { clientId: app.application.id, scope: 'openid organization', resource: NOTES });
    expect(browsed.steps).not.toContain('consent');
  });
});
