import { z } from 'zod';
import { ZClaimUrl, ZKeylessFlag, ZOrganizationSummary, ZProductionSocialMode, ZPublicApplication, ZSocialMode } from './public-edge.ts';

/** Frameworks GET /v1/setup/agent-context knows (docs/api.md "Setup context for coding agents"). `rest` is the default. */
export const SUPPORTED_FRAMEWORKS = [
  'nextjs',
  'react',
  'express',
  'fastapi',
  'django',
  'flask',
  'laravel',
  'rails',
  'rest',
  'mcp',
] as const;
export type TFramework = (typeof SUPPORTED_FRAMEWORKS)[number];

export const DEFAULT_FRAMEWORK: TFramework = 'rest';

export function isSupportedFramework(value: string): value is TFramework {
  return (SUPPORTED_FRAMEWORKS as readonly string[]).includes(value);
}

/**
 * Representations of the agent context over /v1: `json` (the default, ZAgentContextResponse) or
 * `markdown` (the same content as one Markdown document, text/markdown).
 */
export const AGENT_CONTEXT_FORMATS = ['json', 'markdown'] as const;
export type TAgentContextFormat = (typeof AGENT_CONTEXT_FORMATS)[number];

export const ZAgentContextRequest = z.object({
  publishable_key: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('pk_live_...; or send the X-SVC-Publishable-Key header'),
  keyless: ZKeylessFlag,
  // A plain string on purpose: the service answers an unknown value with its own 400
  // `unsupported_framework` that lists the allowed values, instead of a generic validation error.
  framework: z
    .string()
    .max(64)
    .optional()
    .describe(`one of ${SUPPORTED_FRAMEWORKS.join(', ')}; defaults to ${DEFAULT_FRAMEWORK}`),
  // A plain string too, for the same reason: an unknown value answers 400 `unsupported_format`.
  format: z
    .string()
    .max(64)
    .optional()
    .describe(
      `one of ${AGENT_CONTEXT_FORMATS.join(', ')}; defaults to json. markdown answers the same content as one Markdown document (text/markdown; charset=utf-8) over /v1`,
    ),
});
export type TAgentContextRequest = z.infer<typeof ZAgentContextRequest>;

/** Where a value in `allowlist` came from. */
export const ZAllowlistSource = z
  .enum(['application', 'framework_default'])
  .describe('application: the application allowlist; framework_default: local development defaults to register');

export const ZAgentEnvVar = z
  .object({
    name: z.string().describe('variable name per the ecosystem convention, e.g. NEXT_PUBLIC_SVC_PUBLISHABLE_KEY'),
    value: z.string().nullable().describe('filled for public values (publishable key, issuer, client id, URLs); always null for secrets'),
    description: z.string().describe('what it is; for a secret, where to get it'),
    secret: z.boolean(),
    where: z.enum(['server', 'client']).describe('client variables end up in browser bundles'),
  })
  // Stops a secret value from ever being emitted, whatever the table says.
  .refine((v) => !v.secret || v.value === null, {
    message: 'a secret variable never carries a value',
    path: ['value'],
  })
  .meta({ id: 'AgentContextEnvVar' });
export type TAgentEnvVar = z.infer<typeof ZAgentEnvVar>;

/**
 * The product permission the generated app checks (docs/authorization.md): the first one of the
 * product's catalog when the platform has declared any, else an example name the developer
 * replaces. Never one of svc's control-plane permissions, which no application token carries.
 */
export const ZAgentPermissionCheck = z
  .object({
    permission: z.string().describe('the product permission the generated code checks, such as invoices.read'),
    source: z
      .enum(['catalog', 'example'])
      .describe(
        "catalog: a permission an API resource of this svc declares; example: a placeholder, until the platform declares its API's permissions",
      ),
    resource: z
      .object({
        identifier: z.string().describe('the API identifier: the `resource` parameter (RFC 8707) and the `aud` of its access tokens'),
        name: z.string(),
      })
      .nullable()
      .describe('the API resource declaring the permission; null for an example'),
  })
  .meta({ id: 'AgentPermissionCheck' });
export type TAgentPermissionCheck = z.infer<typeof ZAgentPermissionCheck>;

export const ZAgentContextResponse = z
  .object({
    service: z.object({
      name: z.literal('svc'),
      apiVersion: z.literal('v1'),
      baseUrl: z.url(),
      docsUrl: z.url(),
      openapiUrl: z.url(),
    }),
    project: z.object({
      application: ZPublicApplication,
      organization: ZOrganizationSummary,
      keyless: z.boolean().describe('true for the shared keyless development application'),
    }),
    claimUrl: ZClaimUrl,
    oidc: z.object({
      issuer: z.url(),
      clientId: z.string(),
      discoveryUrl: z.url().describe('the issuer OpenID configuration document'),
    }),
    framework: z.object({
      id: z.enum(SUPPORTED_FRAMEWORKS),
      name: z.string(),
      language: z.string(),
      oidcLibrary: z.object({ name: z.string(), url: z.url().optional() }),
      installCommand: z.string(),
      envFile: z.string().describe('file the variables go in; keep it out of version control'),
      envVars: z.array(ZAgentEnvVar),
      callbackUrl: z.string().describe('the redirect URI this framework integration uses'),
    }),
    redirectUrls: z.array(z.string()).describe('redirect URLs to allow for this application'),
    redirectUrlsSource: ZAllowlistSource,
    javascriptOrigins: z.array(z.string()).describe("the application's allowed origins (browser origins; the console's Allowed origins)"),
    javascriptOriginsSource: ZAllowlistSource,
    oauth: z.object({
      sharedDevelopment: ZSocialMode,
      production: ZProductionSocialMode,
      productionNote: z.string(),
    }),
    endpoints: z.object({
      clientConfig: z.url(),
      backendApplication: z.url(),
      hostedSignIn: z.url(),
      hostedSignUp: z.url(),
      recovery: z.url(),
      console: z.url(),
    }),
    permissionCheck: ZAgentPermissionCheck,
    steps: z.array(z.string()).describe('ordered setup steps'),
    aiAgentPrompt: z.string().describe('self-contained instructions to paste into an IDE or coding agent'),
  })
  .meta({ id: 'AgentContext' });
export type TAgentContextResponse = z.infer<typeof ZAgentContextResponse>;
