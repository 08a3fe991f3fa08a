import type { TClientConfigResponse } from '@svc/contracts/public-edge';
import type { Config } from '../../env.ts';
import type { ResolvedApplication } from '../applications/resolve.ts';

/** The OAuth block of SPEC.md 2.5: shared development credentials, customer-owned in production. */
export function oauthBlock(socialProvider: string, productionProvider: string | undefined): TClientConfigResponse['oauth'] {
  return {
    sharedDevelopment: { mode: 'shared_development', provider: socialProvider, credentialsRequired: false },
    production: { mode: 'customer_owned', provider: productionProvider ?? socialProvider, credentialsRequired: true },
  };
}

/** Public configuration of one application; contains nothing secret by construction. */
export function buildClientConfig(config: Config, { found, keyless }: ResolvedApplication): TClientConfigResponse {
  const { application, organization } = found;
  const pk = encodeURIComponent(application.publishableKey);
  const afterSignIn = application.redirectUrls.find((u) => /^https?:\/\//.test(u)) ?? `${config.publicUrl}/user`;
  return {
    application: {
      id: application.id,
      slug: application.slug,
      name: application.name,
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
  };
}
