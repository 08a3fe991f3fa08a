import { z } from 'zod';

/** Query values arrive as strings, or as arrays when a parameter is repeated. */
const ZQueryValue = z.union([z.string(), z.array(z.string())]);

export const ZKeylessFlag = z
  .enum(['1', 'true', '0', 'false'])
  .optional()
  .describe('1 (or true) selects the keyless development application');

export const ZPublicApplication = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    logoUrl: z.string().nullable().describe("https URL of the application's logo, as hosted sign-in shows it; null for none"),
    publishableKey: z.string().describe('pk_live_...'),
    status: z.enum(['active', 'disabled']),
  })
  .meta({ id: 'PublicApplication' });

export const ZOrganizationSummary = z.object({ slug: z.string(), name: z.string() }).meta({ id: 'OrganizationSummary' });

export const ZSocialMode = z.object({
  mode: z.literal('shared_development'),
  provider: z.string(),
  credentialsRequired: z.literal(false),
});
export const ZProductionSocialMode = z.object({
  mode: z.literal('customer_owned'),
  provider: z.string(),
  credentialsRequired: z.literal(true),
});

export const ZOauthBlock = z.object({ sharedDevelopment: ZSocialMode, production: ZProductionSocialMode }).meta({ id: 'OauthBlock' });

/**
 * The claim link of a keyless development application: a hosted svc page where a signed-in org
 * admin moves this application (same id, client id and publishable key) into their workspace and
 * gets its secret key. It carries a secret token: share it only with whoever should own the app.
 */
export const ZClaimUrl = z
  .url()
  .nullable()
  .describe(
    'keyless development application only (else null): hosted page that moves this application, keeping its id, client id and publishable key, into a workspace the signed-in person administers and shows its new secret key once. Carries a secret claim token',
  );

export const ZClientConfigRequest = z.object({
  publishable_key: ZQueryValue.optional().describe('pk_live_...; or send the X-SVC-Publishable-Key header'),
  keyless: ZKeylessFlag,
});
export type TClientConfigRequest = z.infer<typeof ZClientConfigRequest>;

export const ZClientConfigResponse = z
  .object({
    application: ZPublicApplication,
    organization: ZOrganizationSummary,
    auth: z.object({
      signInUrl: z.url(),
      signUpUrl: z.url(),
      afterSignInUrl: z.url(),
      afterSignUpUrl: z.url(),
    }),
    oidc: z.object({ issuer: z.url(), clientId: z.string() }),
    oauth: ZOauthBlock,
    keyless: z.boolean().describe('true when this is the shared keyless development application'),
    claimUrl: ZClaimUrl,
  })
  .meta({ id: 'ClientConfig' });
export type TClientConfigResponse = z.infer<typeof ZClientConfigResponse>;

export const ZBackendApplicationResponse = z
  .object({
    ok: z.boolean(),
    application: z.object({
      id: z.string(),
      slug: z.string(),
      name: z.string(),
      logoUrl: z.string().nullable().describe("https URL of the application's logo; null for none"),
      status: z.enum(['active', 'disabled']),
      secretKeyPrefix: z.string().describe('leading characters of the secret key; never the secret'),
    }),
    organization: ZOrganizationSummary,
    checkedAt: z.iso.datetime(),
  })
  .meta({ id: 'BackendApplication' });
export type TBackendApplicationResponse = z.infer<typeof ZBackendApplicationResponse>;

export const ZServiceConfigResponse = z
  .object({
    service: z.literal('svc'),
    apiVersion: z.literal('v1'),
    publicUrl: z.url(),
    docsUrl: z.url(),
    openapiUrl: z.url(),
    clientConfigUrl: z.url().describe('new integrations read GET /v1/client/config'),
    keyless: z.object({ enabled: z.boolean() }),
    engine: z.object({
      /** The preset svc talks to the engine with (ENGINE_KIND): authentik, keycloak or generic. */
      kind: z.string(),
      issuer: z.url(),
      /** The engine that runs: `development engine` (svc's own, Authentik-shaped), else Authentik, Keycloak or generic OIDC. */
      name: z
        .string()
        .describe("the engine that runs: 'development engine' (svc's own, in its process), 'Authentik', 'Keycloak' or 'generic OIDC'"),
    }),
    /** docs/architecture.md section 6: hand-off routes of svc for what the engine owns. */
    account: z.object({
      engine: z.string(),
      recoveryUrl: z.url(),
      recoveryConfigured: z.boolean(),
      emailVerificationUrl: z.url().nullable(),
      mfaSetupUrl: z.url().nullable().describe('null: the identity engine offers no MFA setup through svc'),
      passkeySetupUrl: z.url().nullable().describe('null: the identity engine offers no passkey setup through svc'),
      signUpUrl: z.url().nullable().describe("svc's sign-up page; null: the identity engine offers no sign-up"),
      socialSignIn: z.boolean().describe('the sign-in page offers the social provider of the identity engine'),
    }),
  })
  .meta({ id: 'ServiceConfig' });
export type TServiceConfigResponse = z.infer<typeof ZServiceConfigResponse>;
