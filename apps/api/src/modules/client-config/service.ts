import type { TClientConfigResponse } from '@svc/contracts/public-edge';
import type { SecretBox } from '@svc/db/secret-box';
import type { Config } from '../../env.ts';
import { keylessClaimUrl } from '../applications/claim.ts';
import type { ResolvedApplication } from '../applications/resolve.ts';

/** The OAuth block of docs/api.md "Applications": shared development credentials, customer-owned in production. */
export function oauthBlock(socialProvider: string, productionProvider: string | undefined): TClientConfigResponse['oauth'] {
  return {
    sharedDevelopment: { mode: 'shared_development', provider: socialProvider, credentialsRequired: false },
    production: { mode: 'customer_owned', provider: productionProvider ?? socialProvider, credentialsRequired: true },
  };
}

/**
 * The claim link of a keyless development application (null for any other): what client config
 * and the agent context hand to whoever develops against it.
 */
export function claimUrlOf(config: Config, secretBox: SecretBox, { found, keyless }: ResolvedApplication): string | null {
  return keyless && found.application.isKeyless ? keylessClaimUrl(config.publicUrl, secretBox, found.application.id) : null;
}

/** Built answers per cached application row: the cache replaces the row when it changes. */
const answers = new WeakMap<ResolvedApplication['found'], { keyless?: TClientConfigResponse; keyed?: TClientConfigResponse }>();

/**
 * GET /v1/client/config's answer, built once per cached application row and key kind: the hottest
 * route answers from memory what it would build the same way each time. Frozen, so the /v1
 * adapter checks it against the output schema and serializes it once (trpc/call.ts, http/rest.ts).
 */
export function clientConfigOf(config: Config, secretBox: SecretBox, resolved: ResolvedApplication): TClientConfigResponse {
  let built = answers.get(resolved.found);
  if (!built) {
    built = {};
    answers.set(resolved.found, built);
  }
  const kind = resolved.keyless ? 'keyless' : 'keyed';
  built[kind] ??= deepFreeze(buildClientConfig(config, secretBox, resolved));
  return built[kind];
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) {
      deepFreeze(inner);
    }
    Object.freeze(value);
  }
  return value;
}

/**
 * Public configuration of one application; nothing secret by construction but the keyless
 * development application's claim link, which every keyless=1 caller may read (applications/claim.ts).
 */
function buildClientConfig(config: Config, secretBox: SecretBox, resolved: ResolvedApplication): TClientConfigResponse {
  const { found, keyless } = resolved;
  const { application, organization } = found;
  const pk = encodeURIComponent(application.publishableKey);
  // The keyless application's redirect URLs are what it remembers for its claim
  // (oidc-provider/keyless-urls.ts): nobody's return target, and not shown to other callers.
  const redirectUrls = application.isKeyless ? [] : application.redirectUrls;
  const afterSignIn = redirectUrls.find((u) => /^https?:\/\//.test(u)) ?? `${config.publicUrl}/user`;
  return {
    application: {
      id: application.id,
      slug: application.slug,
      name: application.name,
      logoUrl: application.logoUrl,
      publishableKey: application.publishableKey,
      status: application.status,
    },
    organization: { slug: organization.slug, name: organization.name },
    auth: {
      signInUrl: `${config.publicUrl}/signin?publishable_key=${pk}`,
      signUpUrl: `${config.publicUrl}/signup?publishable_key=${pk}`,
      afterSignInUrl: afterSignIn,
      afterSignUpUrl: afterSignIn,
    },
    // svc is the OpenID Provider applications sign in with; the client id is the application id.
    oidc: { issuer: config.publicUrl, clientId: application.id },
    oauth: oauthBlock(config.engine.socialProvider, application.oauth.productionProvider),
    keyless,
    claimUrl: claimUrlOf(config, secretBox, resolved),
  };
}
