import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { quietly } from '@svc/dev-engine/quiet-provider';
import { exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { applyProviderInternals, PINNED_OIDC_PROVIDER_VERSION, providerContext } from './internals.ts';

const { default: Provider } = await quietly(() => import('oidc-provider'));
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
/** A provider's own settings, quiet: a real key and no development interactions. */
const QUIET = {
  jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'k', alg: 'RS256', use: 'sig' }] },
  features: { devInteractions: { enabled: false } },
};

/**
 * internals.ts redefines parts of oidc-provider that are not its public configuration. These
 * tests pin the version they were written for and the shapes they rely on, so that an upgrade
 * that moves one fails here, by name, rather than somewhere in a sign-in.
 */
describe('oidc-provider internals', () => {
  it('is the version the redefinitions were written against', () => {
    const require = createRequire(import.meta.url);
    const pkg = JSON.parse(readFileSync(require.resolve('oidc-provider/package.json'), 'utf8')) as { version: string };
    expect(pkg.version).toBe(PINNED_OIDC_PROVIDER_VERSION);
  });

  it('has the Client methods and the Grant payload svc redefines, and the request storage Provider.ctx reads', async () => {
    const provider = await quietly(() => new Provider('http://127.0.0.1:1', { ...QUIET, clients: [] }));
    const proto = provider.Client.prototype as unknown as Record<string, unknown>;
    for (const name of ['redirectUriAllowed', 'postLogoutRedirectUriAllowed', 'includeSid', 'backchannelLogout', 'compareClientSecret']) {
      expect(typeof proto[name], name).toBe('function');
    }
    expect(provider.Grant.IN_PAYLOAD).toEqual(expect.arrayContaining(['accountId', 'clientId']));
    expect(typeof providerContext.run).toBe('function');
    expect(typeof providerContext.disable).toBe('function');
  });

  it('applies each redefinition to the provider it is given', async () => {
    const provider = await quietly(
      () =>
        new Provider('http://127.0.0.1:1', {
          ...QUIET,
          clients: [
            {
              client_id: 'app_keyless',
              token_endpoint_auth_method: 'none',
              redirect_uris: ['http://localhost:3000/cb'],
              grant_types: ['authorization_code'],
              response_types: ['code'],
            },
            {
              client_id: 'app_web',
              client_secret: 'a'.repeat(64),
              redirect_uris: ['https://app.example/cb'],
              post_logout_redirect_uris: ['https://app.example/'],
            },
            {
              client_id: 'https://agent.example/client.json',
              token_endpoint_auth_method: 'none',
              redirect_uris: ['https://agent.example/cb'],
            },
          ],
        }),
    );
    const tries: string[] = [];
    applyProviderInternals(provider, {
      tryCallbackUrl: 'http://127.0.0.1:1/oidc/try/callback',
      isKeyless: (id) => id === 'app_keyless',
      secretMatchesHash: (presented, stored) => presented === 'right' && stored === 'a'.repeat(64),
      isTryExchange: (id, presented) => {
        tries.push(`${id}:${presented}`);
        return presented === 'try-secret';
      },
    });
    expect(provider.Grant.IN_PAYLOAD).toContain('organization');
    const keyless = await provider.Client.find('app_keyless');
    const web = await provider.Client.find('app_web');
    if (!keyless || !web) {
      throw new Error('clients not found');
    }
    expect(keyless.redirectUriAllowed('http://127.0.0.1:5173/any/path')).toBe(true);
    expect(keyless.redirectUriAllowed('https://evil.example/cb')).toBe(false);
    expect(web.redirectUriAllowed('https://app.example/cb')).toBe(true);
    expect(web.redirectUriAllowed('http://localhost:3000/cb')).toBe(false);
    expect(web.redirectUriAllowed('http://127.0.0.1:1/oidc/try/callback')).toBe(true);
    // A third-party client (its client_id a metadata document URL) never gets svc's try callback.
    const agent = await provider.Client.find('https://agent.example/client.json');
    expect(agent?.redirectUriAllowed('https://agent.example/cb')).toBe(true);
    expect(agent?.redirectUriAllowed('http://127.0.0.1:1/oidc/try/callback')).toBe(false);
    expect(keyless.postLogoutRedirectUriAllowed('http://localhost:8000/')).toBe(true);
    expect(web.postLogoutRedirectUriAllowed('http://127.0.0.1:1/oidc/try/callback')).toBe(false);
    expect(web.postLogoutRedirectUriAllowed('https://app.example/')).toBe(true);
    expect(web.includeSid()).toBe(true);
    expect(await web.compareClientSecret('right')).toBe(true);
    expect(await web.compareClientSecret('wrong')).toBe(false);
    expect(await web.compareClientSecret('try-secret')).toBe(true);
    expect(tries).toEqual(['app_web:wrong', 'app_web:try-secret']);
  });
});
