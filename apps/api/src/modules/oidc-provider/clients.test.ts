import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDatabase, type Database } from '@svc/db/client';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import { exportJWK, generateKeyPair } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { runCli } from '../../../../../test/support/spawn.ts';
import type { RunningServer } from '../../server.ts';
import { getOrCreateKeylessApplication } from '../applications/service.ts';
import { CORS_METADATA, clientMetadataOf, PRIVATE_KEY_JWT_ALGS } from './clients.ts';

const REDIRECT = 'https://app.example.com/callback';
const LOGGED_OUT = 'https://app.example.com/logged-out';
const SPA_ORIGIN = 'https://spa.example.com';

/** The README's figure: a change takes effect on every API process within one second. */
const PROPAGATION_BUDGET_MS = 1_000;

type Server = RunningServer & { databaseUrl: string };

/**
 * Applications as OpenID Connect clients, seen by openid-client against two real svc servers on
 * one database (each with its own application cache, told about changes only by NOTIFY):
 * confidential clients authenticate with the application's secret key, public clients with
 * nothing, and a rotation of the secret key is the rotation of the client secret everywhere.
 * No authorization code is needed: a bogus code answers invalid_grant only after the client
 * authenticated, and invalid_client when it did not.
 */
describe('OpenID Provider clients: authentication, rotation, CORS and logout URLs', () => {
  let a: Server;
  let b: Server;
  let database: Database;
  let confidentialId: string;
  let secretKey: string;
  let publicId: string;
  let keylessId: string;

  beforeAll(async () => {
    a = await startTestServer();
    b = await startTestServer({ databaseUrl: a.databaseUrl });
    database = createDatabase({ url: a.databaseUrl, max: 2, applicationName: 'svc-test-oidc-clients' });
    const confidential = await seedApplication(database.db, {
      redirectUrls: [REDIRECT],
      allowedOrigins: [SPA_ORIGIN],
      postLogoutRedirectUrls: [LOGGED_OUT],
    });
    confidentialId = confidential.application.id;
    secretKey = confidential.secretKey;
    publicId = (await seedApplication(database.db, { redirectUrls: [REDIRECT], clientType: 'public' })).application.id;
    keylessId = (await getOrCreateKeylessApplication(database.db)).application.id;
  }, 60_000);

  afterAll(async () => {
    await database?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  function discover(server: Server, clientId: string, auth: oidc.ClientAuth): Promise<oidc.Configuration> {
    return oidc.discovery(new URL(server.url), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });
  }

  /** The OAuth error of an openid-client call, or `ok` when it succeeded. */
  async function outcome(call: () => Promise<unknown>): Promise<string> {
    try {
      await call();
      return 'ok';
    } catch (error) {
      if (error instanceof oidc.ResponseBodyError) {
        return error.error;
      }
      // A 401 (invalid_client) comes as a WWW-Authenticate challenge carrying the error.
      if (error instanceof oidc.WWWAuthenticateChallengeError) {
        const [challenge] = error.cause;
        return challenge?.parameters.error ?? 'unauthorized';
      }
      throw error;
    }
  }

  /** A code exchange with a code svc never issued: invalid_grant once the client authenticated. */
  async function exchange(server: Server, clientId: string, auth: oidc.ClientAuth): Promise<string> {
    const config = await discover(server, clientId, auth);
    return outcome(() =>
      oidc.genericGrantRequest(config, 'authorization_code', {
        code: 'bogus-code',
        redirect_uri: REDIRECT,
        code_verifier: oidc.randomPKCECodeVerifier(),
      }),
    );
  }

  async function revoke(server: Server, clientId: string, auth: oidc.ClientAuth): Promise<string> {
    const config = await discover(server, clientId, auth);
    return outcome(() => oidc.tokenRevocation(config, 'bogus-token'));
  }

  async function introspect(server: Server, clientId: string, auth: oidc.ClientAuth): Promise<string> {
    const config = await discover(server, clientId, auth);
    return outcome(async () => {
      const answer = await oidc.tokenIntrospection(config, 'bogus-token');
      expect(answer.active).toBe(false);
    });
  }

  it('discovery advertises none, client_secret_basic, client_secret_post and private_key_jwt (machine clients), and nothing symmetric', async () => {
    const metadata = (await discover(a, confidentialId, oidc.None())).serverMetadata();
    expect(metadata.token_endpoint_auth_methods_supported).toEqual([
      'none',
      'client_secret_basic',
      'client_secret_post',
      'private_key_jwt',
    ]);
    expect(metadata.token_endpoint_auth_signing_alg_values_supported).toEqual(['RS256', 'PS256', 'ES256', 'ES384', 'Ed25519', 'EdDSA']);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.backchannel_logout_supported).toBe(true);
    expect(metadata.backchannel_logout_session_supported).toBe(true);
    // The stored secret hash must never become a key: no HS* anywhere, no encryption.
    const document = JSON.stringify(metadata);
    expect(document).not.toMatch(/"HS\d{3}"/);
    expect(document).not.toContain('client_secret_jwt');
    expect(document).not.toMatch(/encryption_alg_values_supported/);
  });

  it('a confidential client authenticates with its secret key (basic or post); a wrong or missing secret is invalid_client', async () => {
    expect(await exchange(a, confidentialId, oidc.ClientSecretBasic(secretKey))).toBe('invalid_grant');
    expect(await exchange(a, confidentialId, oidc.ClientSecretPost(secretKey))).toBe('invalid_grant');
    expect(await exchange(b, confidentialId, oidc.ClientSecretBasic(secretKey))).toBe('invalid_grant');
    expect(await exchange(a, confidentialId, oidc.ClientSecretBasic(`${secretKey}x`))).toBe('invalid_client');
    expect(await exchange(a, confidentialId, oidc.ClientSecretPost('sk_live_wrong'))).toBe('invalid_client');
    expect(await exchange(a, confidentialId, oidc.None())).toBe('invalid_client');
    // The stored hash itself is no secret: presenting it fails like any other wrong value.
    const [row] = await database.sql<{ secret_key_hash: string }[]>`select secret_key_hash from applications where id = ${confidentialId}`;
    expect(await exchange(a, confidentialId, oidc.ClientSecretBasic(row?.secret_key_hash as string))).toBe('invalid_client');
    expect(await exchange(a, confidentialId, oidc.ClientSecretPost(row?.secret_key_hash as string))).toBe('invalid_client');
  });

  it('a public client presents no secret; presenting one is invalid_client', async () => {
    expect(await exchange(a, publicId, oidc.None())).toBe('invalid_grant');
    expect(await exchange(a, publicId, oidc.ClientSecretBasic('anything'))).toBe('invalid_client');
    expect(await exchange(a, publicId, oidc.ClientSecretPost('anything'))).toBe('invalid_client');
    expect(await revoke(a, publicId, oidc.ClientSecretBasic('anything'))).toBe('invalid_client');
    expect(await introspect(a, publicId, oidc.ClientSecretBasic('anything'))).toBe('invalid_client');
  });

  it('the revocation and introspection endpoints authenticate a confidential client the same way', async () => {
    expect(await revoke(a, confidentialId, oidc.ClientSecretBasic(secretKey))).toBe('ok');
    expect(await revoke(a, confidentialId, oidc.ClientSecretBasic('sk_live_wrong'))).toBe('invalid_client');
    expect(await revoke(a, confidentialId, oidc.None())).toBe('invalid_client');
    expect(await introspect(a, confidentialId, oidc.ClientSecretBasic(secretKey))).toBe('ok');
    expect(await introspect(a, confidentialId, oidc.ClientSecretPost(secretKey))).toBe('ok');
    expect(await introspect(a, confidentialId, oidc.ClientSecretBasic('sk_live_wrong'))).toBe('invalid_client');
    expect(await introspect(a, confidentialId, oidc.None())).toBe('invalid_client');
  });

  it('the token, revocation and introspection endpoints answer CORS only for the allowed origins', async () => {
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(confidentialId)}:${encodeURIComponent(secretKey)}`).toString('base64')}`;
    const post = (path: string, origin: string, body: Record<string, string>) =>
      fetch(`${a.url}${path}`, {
        method: 'POST',
        headers: { origin, authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      });
    const code = { grant_type: 'authorization_code', code: 'bogus', redirect_uri: REDIRECT, code_verifier: 'v'.repeat(43) };
    for (const [path, body] of [
      ['/oidc/token', code],
      ['/oidc/token/revocation', { token: 'bogus' }],
      ['/oidc/token/introspection', { token: 'bogus' }],
    ] as const) {
      const allowed = await post(path, SPA_ORIGIN, body);
      expect(allowed.headers.get('access-control-allow-origin'), path).toBe(SPA_ORIGIN);
      const other = await post(path, 'https://evil.example', body);
      expect(other.headers.get('access-control-allow-origin'), path).toBeNull();
      expect(other.status, path).toBe(400);
      expect(((await other.json()) as { error: string }).error, path).toBe('invalid_request');
    }
    // Preflight: the browser learns the endpoint may be called cross-origin (the POST itself is checked per client).
    const preflight = await fetch(`${a.url}/oidc/token`, {
      method: 'OPTIONS',
      headers: { origin: SPA_ORIGIN, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(SPA_ORIGIN);
  });

  it('a change of allowedOrigins reaches the CORS check of every process within a second', async () => {
    const origin = 'https://new-spa.example.com';
    const check = (server: Server) => async () =>
      (
        await fetch(`${server.url}/oidc/token/revocation`, {
          method: 'POST',
          headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: 'bogus', client_id: publicId }),
        })
      ).headers.get('access-control-allow-origin');
    expect(await check(a)()).toBeNull();
    expect(await check(b)()).toBeNull();
    await database.sql`update applications set allowed_origins = ${[origin]} where id = ${publicId}`;
    for (const server of [a, b]) {
      await expect.poll(check(server), { timeout: PROPAGATION_BUDGET_MS, interval: 20 }).toBe(origin);
    }
  });

  it('the keyless development application allows loopback origins on any port, and nothing else', async () => {
    const cors = async (origin: string) =>
      (
        await fetch(`${a.url}/oidc/token/revocation`, {
          method: 'POST',
          headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: 'bogus', client_id: keylessId }),
        })
      ).headers.get('access-control-allow-origin');
    expect(await cors('http://localhost:5173')).toBe('http://localhost:5173');
    expect(await cors('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(await cors('https://localhost.evil.example')).toBeNull();
    expect(await cors('http://evil.example')).toBeNull();
    // A confidential application gets no loopback allowance.
    const confidential = await fetch(`${a.url}/oidc/token/revocation`, {
      method: 'POST',
      headers: {
        origin: 'http://localhost:5173',
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${confidentialId}:${secretKey}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: 'bogus' }),
    });
    expect(confidential.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('end_session: a registered post_logout_redirect_uri is accepted; another one gets an error page on svc, never a redirect', async () => {
    const endSession = (uri: string) => {
      const url = new URL('/oidc/session/end', a.url);
      url.searchParams.set('client_id', confidentialId);
      url.searchParams.set('post_logout_redirect_uri', uri);
      return fetch(url, { redirect: 'manual' });
    };
    const registered = await endSession(LOGGED_OUT);
    expect(registered.status).toBe(200);
    for (const uri of ['https://evil.example/logged-out', `${LOGGED_OUT}/x`, REDIRECT]) {
      const refused = await endSession(uri);
      expect(refused.status, uri).toBe(400);
      expect(refused.headers.get('location'), uri).toBeNull();
      const page = await refused.text();
      expect(page, uri).toContain('post_logout_redirect_uri not registered');
      expect(page, uri).not.toContain('evil.example');
    }
  });

  it('rotating the secret key (svc apps rotate-secret) rotates the client secret on every process within a second', async () => {
    const rotated = await runCli(['apps', 'rotate-secret', confidentialId, '--json'], { DATABASE_URL: a.databaseUrl, LOG_LEVEL: 'silent' });
    expect(rotated.code, rotated.stderr).toBe(0);
    const { secretKey: newSecret } = JSON.parse(rotated.stdout) as { secretKey: string };
    expect(newSecret).not.toBe(secretKey);
    for (const server of [a, b]) {
      await expect
        .poll(() => exchange(server, confidentialId, oidc.ClientSecretBasic(secretKey)), { timeout: PROPAGATION_BUDGET_MS, interval: 20 })
        .toBe('invalid_client');
      expect(await exchange(server, confidentialId, oidc.ClientSecretBasic(newSecret))).toBe('invalid_grant');
      expect(await revoke(server, confidentialId, oidc.ClientSecretBasic(secretKey))).toBe('invalid_client');
      expect(await introspect(server, confidentialId, oidc.ClientSecretPost(secretKey))).toBe('invalid_client');
      expect(await introspect(server, confidentialId, oidc.ClientSecretPost(newSecret))).toBe('ok');
    }
    secretKey = newSecret;
  });

  it('switching an application to public takes effect on every process within a second', async () => {
    await database.sql`update applications set client_type = 'public' where id = ${confidentialId}`;
    for (const server of [a, b]) {
      await expect
        .poll(() => exchange(server, confidentialId, oidc.None()), { timeout: PROPAGATION_BUDGET_MS, interval: 20 })
        .toBe('invalid_grant');
      expect(await exchange(server, confidentialId, oidc.ClientSecretBasic(secretKey))).toBe('invalid_client');
    }
  });
});

/** An application row as the cache returns it, without a database: what clientMetadataOf reads. */
function applicationOf(overrides: Partial<ApplicationWithOrganization['application']>): ApplicationWithOrganization {
  const now = new Date();
  return {
    organization: { id: 'ten_AAAAAAAAAAAAAAAAAAAA', slug: 'acme', name: 'Acme' },
    application: {
      id: 'app_MMMMMMMMMMMMMMMMMMMM',
      tenantId: 'ten_AAAAAAAAAAAAAAAAAAAA',
      slug: 'nightly',
      name: 'Nightly job',
      logoUrl: null,
      status: 'active',
      publishableKey: 'pk_live_xxxxxxxxxxxxxxxxxxxxxxxx',
      secretKeyHash: 'a'.repeat(64),
      secretKeyPrefix: 'sk_live_abcd',
      redirectUrls: [],
      allowedOrigins: [],
      postLogoutRedirectUrls: [],
      backchannelLogoutUrl: null,
      clientType: 'machine',
      tokenEndpointAuthMethod: 'client_secret_basic',
      jwks: null,
      jwksUri: null,
      machinePermissions: ['invoices.create', 'invoices.read'],
      signInAudience: 'anyone',
      oauth: {},
      isKeyless: false,
      createdAt: now,
      updatedAt: now,
      ...overrides,
    },
  };
}

const TRY = { tryCallbackUrl: 'https://svc.example/oidc/try/callback' };

describe('clientMetadataOf: machine applications', () => {
  it('a client_secret_basic machine client: client credentials only, no redirect, the secret key hash as client secret', () => {
    const metadata = clientMetadataOf(applicationOf({}), TRY);
    expect(metadata).toEqual({
      client_id: 'app_MMMMMMMMMMMMMMMMMMMM',
      client_name: 'Nightly job',
      application_type: 'web',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      client_secret: 'a'.repeat(64),
      [CORS_METADATA.origins]: [],
      [CORS_METADATA.loopback]: false,
    });
  });

  it('a private_key_jwt machine client: its jwks or its jwks_uri, never a client secret; redirect URLs in the row never become redirect URIs', () => {
    const jwks = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'x', kid: 'k1' }] };
    const inline = clientMetadataOf(
      applicationOf({ tokenEndpointAuthMethod: 'private_key_jwt', jwks, redirectUrls: ['https://app.example.com/cb'] }),
      TRY,
    );
    expect(inline).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks,
      redirect_uris: [],
      grant_types: ['client_credentials'],
    });
    expect(inline).not.toHaveProperty('client_secret');
    expect(inline).not.toHaveProperty('jwks_uri');
    expect(inline).not.toHaveProperty('token_endpoint_auth_signing_alg');
    const remote = clientMetadataOf(
      applicationOf({ tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: 'https://keys.example.com/jwks' }),
      TRY,
    );
    expect(remote).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://keys.example.com/jwks' });
    expect(remote).not.toHaveProperty('client_secret');
    expect(remote).not.toHaveProperty('jwks');
    // A row with neither (not something the API stores) authenticates no one.
    expect(clientMetadataOf(applicationOf({ tokenEndpointAuthMethod: 'private_key_jwt' }), TRY)).toMatchObject({ jwks: { keys: [] } });
  });

  it('other applications keep the authorization code grant, never client credentials', () => {
    const confidential = clientMetadataOf(applicationOf({ clientType: 'confidential', redirectUrls: ['https://app.example.com/cb'] }), TRY);
    expect(confidential).toMatchObject({ grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });
  });

  it('oidc-provider 9 takes both kinds and grants them client credentials (a bare provider, the metadata as is)', async () => {
    const { default: Provider } = await import('oidc-provider');
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] };
    const secret = clientMetadataOf(applicationOf({}), TRY);
    const keyed = clientMetadataOf(
      applicationOf({ id: 'app_KKKKKKKKKKKKKKKKKKKK', tokenEndpointAuthMethod: 'private_key_jwt', jwks }),
      TRY,
    );
    const issuer = 'http://127.0.0.1';
    const provider = new Provider(issuer, {
      clients: [secret, keyed] as never,
      features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
      clientAuthMethods: ['client_secret_basic', 'private_key_jwt'],
      enabledJWA: { clientAuthSigningAlgValues: [...PRIVATE_KEY_JWT_ALGS] as never },
      extraClientMetadata: { properties: [CORS_METADATA.origins, CORS_METADATA.loopback] },
    });
    const client = await provider.Client.find(secret.client_id as string);
    expect(client?.grantTypes).toEqual(['client_credentials']);
    expect(client?.redirectUris).toEqual([]);

    const server = http.createServer(provider.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const metadata = { issuer, token_endpoint: new URL('/token', url).href };
      const grant = async (clientId: string, auth: oidc.ClientAuth) => {
        const config = new oidc.Configuration(metadata, clientId, undefined, auth);
        oidc.allowInsecureRequests(config);
        try {
          return (await oidc.clientCredentialsGrant(config)).token_type;
        } catch (error) {
          if (error instanceof oidc.WWWAuthenticateChallengeError) {
            return error.cause[0]?.parameters.error ?? 'unauthorized';
          }
          return error instanceof oidc.ResponseBodyError ? error.error : String(error);
        }
      };
      // In a bare provider the client secret is compared as given (svc's provider hashes first).
      expect(await grant(secret.client_id as string, oidc.ClientSecretBasic('a'.repeat(64)))).toMatch(/bearer/i);
      expect(await grant(keyed.client_id as string, oidc.PrivateKeyJwt(privateKey))).toMatch(/bearer/i);
      expect(await grant(keyed.client_id as string, oidc.ClientSecretBasic('a'.repeat(64)))).toBe('invalid_client');
      const { privateKey: stranger } = await generateKeyPair('ES256');
      expect(await grant(keyed.client_id as string, oidc.PrivateKeyJwt(stranger))).toBe('invalid_client');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
