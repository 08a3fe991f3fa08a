/// <reference path="./oidc-provider-als.d.ts" />
import type Provider from 'oidc-provider';
import providerContext from 'oidc-provider/lib/helpers/als.js';
import { isLoopbackRedirect } from './clients.ts';
import { isThirdPartyClient } from './metadata-documents.ts';

/**
 * The one module that reaches into oidc-provider's shapes beyond its documented configuration
 * (docs/conventions.md section 2; docs/oidc.md says what each does for an application): the
 * prototype methods of its Client model that svc redefines, the Grant payload it extends, and the
 * request storage behind `Provider.ctx`. `internals.test.ts` pins the library version these were
 * written against and fails when one of these shapes moves. Everything else in svc uses the
 * library's public seams (configuration, adapter, findAccount, extraTokenClaims, middleware).
 */

/** The oidc-provider version the redefinitions below were written and tested against. */
export const PINNED_OIDC_PROVIDER_VERSION = '9.13.3';

/** What the redefinitions ask of svc. */
export type ProviderInternalsHooks = {
  /** svc's own try sign-in callback: every client accepts it, exactly. */
  tryCallbackUrl: string;
  /** The keyless development application: any loopback redirect and post-logout URL. */
  isKeyless: (clientId: string) => boolean;
  /** A confidential client's presented secret against the stored SHA-256 of its secret key. */
  secretMatchesHash: (presented: string, storedHash: string | undefined) => boolean;
  /** svc's try sign-in exchange presenting the client's try secret (the request being handled). */
  isTryExchange: (clientId: string, presented: string) => boolean;
};

/**
 * Applies svc's redefinitions to a freshly built provider (each Provider has its own Client and
 * Grant classes, so nothing leaks between providers):
 * - a Grant also keeps the organization the authorization speaks for;
 * - redirect URIs: svc's try sign-in callback for every application, any loopback URL for the keyless
 *   application, exact registered matches for the rest; post-logout URIs likewise (no try);
 * - every code and token carries `sid`, so ending the svc session ends them;
 * - back-channel logout leaves only through svc's durable job, never oidc-provider's own send;
 * - the client secret is compared as svc stores it (a hash), or as the try exchange's secret.
 */
export function applyProviderInternals(provider: Provider, hooks: ProviderInternalsHooks): void {
  const grantPayload = provider.Grant.IN_PAYLOAD;
  Object.defineProperty(provider.Grant, 'IN_PAYLOAD', { get: () => [...grantPayload, 'organization'] });
  const Client = provider.Client;
  const allowed = Client.prototype.redirectUriAllowed;
  Client.prototype.redirectUriAllowed = function redirectUriAllowed(this: InstanceType<typeof Client>, value: string): boolean {
    // svc's own try sign-in callback belongs to applications only: a third-party client's code
    // never lands on svc.
    if (value === hooks.tryCallbackUrl && !isThirdPartyClient(this.clientId)) {
      return true;
    }
    if (hooks.isKeyless(this.clientId) && isLoopbackRedirect(value)) {
      return true;
    }
    return allowed.call(this, value);
  };
  const logoutAllowed = Client.prototype.postLogoutRedirectUriAllowed;
  Client.prototype.postLogoutRedirectUriAllowed = function postLogoutRedirectUriAllowed(
    this: InstanceType<typeof Client>,
    value: string,
  ): boolean {
    if (hooks.isKeyless(this.clientId) && isLoopbackRedirect(value)) {
      return true;
    }
    return logoutAllowed.call(this, value);
  };
  Client.prototype.includeSid = () => true;
  Client.prototype.backchannelLogout = async () => {};
  Client.prototype.compareClientSecret = async function compareClientSecret(
    this: InstanceType<typeof Client>,
    presented: string,
  ): Promise<boolean> {
    return hooks.secretMatchesHash(presented, this.clientSecret) || hooks.isTryExchange(this.clientId, presented);
  };
}

/** The storage oidc-provider reads `Provider.ctx` from (request-context.ts turns it off between requests). */
export { providerContext };
