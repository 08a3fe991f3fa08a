/**
 * The documents svc writes for coding agents: the setup context as Markdown and /llms.txt. How
 * they are answered (ETags, 304, content types) is the adapter's, http/agent-context.ts.
 */
import { SUPPORTED_FRAMEWORKS, type TAgentContextResponse, type TAgentEnvVar } from '@svc/contracts/agent-context';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../oidc-provider/paths.ts';
import { FRAMEWORKS } from './frameworks.ts';
import { block } from './markdown.ts';

/** Text from user input (application and organization names) that Markdown must not interpret. */
function text(value: string): string {
  return value.replace(/[\\`*_[\]<>#|]/g, (c) => `\\${c}`).replace(/\s+/g, ' ');
}

/** Inline code that survives a backtick in the value. */
function code(value: string): string {
  const fence = value.includes('`') ? '``' : '`';
  return `${fence}${value.includes('`') ? ` ${value} ` : value}${fence}`;
}

/** Headings of an embedded Markdown document, one level deeper; code blocks are left alone. */
function demoteHeadings(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const opening = /^(`{3,}|~{3,})/.exec(line)?.[1];
      if (opening && (fence === undefined || opening.startsWith(fence))) {
        fence = fence === undefined ? opening : undefined;
        return line;
      }
      return fence === undefined && /^#{1,5} /.test(line) ? `#${line}` : line;
    })
    .join('\n');
}

function envEntry(v: TAgentEnvVar): string {
  const kind = v.secret ? 'secret, no value here' : 'public';
  return `- ${code(v.name)} (${v.where}; ${kind}): ${v.description}`;
}

function source(value: TAgentContextResponse['redirectUrlsSource']): string {
  return value === 'application'
    ? "Source: the application's allowlist in svc."
    : 'Source: framework defaults for local development (the application has none yet); register them in the svc console.';
}

/** The product permission the generated code checks, and where it comes from. */
function permissionCheckLines(check: TAgentContextResponse['permissionCheck']): string[] {
  return [
    `- Permission: ${code(check.permission)}`,
    check.resource
      ? `- Source: the product's catalog, declared by the API ${text(check.resource.name)} (identifier ${code(check.resource.identifier)})`
      : '- Source: an example name; no API of this svc declares a permission yet',
  ];
}

/**
 * GET /v1/setup/agent-context?format=markdown: the JSON answer as one Markdown document, with
 * every field of it; the prompt keeps its own sections, one heading level down.
 */
export function renderAgentContextMarkdown(ctx: TAgentContextResponse): string {
  const { application, organization } = ctx.project;
  const fw = ctx.framework;
  const library = fw.oidcLibrary.url ? `[${text(fw.oidcLibrary.name)}](${fw.oidcLibrary.url})` : text(fw.oidcLibrary.name);
  const envFile = fw.envVars.map((v) => `${v.name}=${v.value ?? ''}`).join('\n');
  const lines: string[] = [
    `# svc setup context: ${text(fw.name)} app for ${text(application.name)}`,
    '',
    `> Sign-in for this ${text(fw.name)} (${text(fw.language)}) app with svc, the OpenID Provider at ${ctx.oidc.issuer}: application ${text(application.name)} (${code(application.id)}) of organization ${text(organization.name)}. This context contains no secret.`,
    '',
    '## Service',
    '',
    `- Name: ${ctx.service.name}, API ${ctx.service.apiVersion}`,
    `- Base URL: <${ctx.service.baseUrl}>`,
    `- API reference: <${ctx.service.docsUrl}>`,
    `- OpenAPI document: <${ctx.service.openapiUrl}>`,
    '',
    '## Project',
    '',
    `- Application: ${text(application.name)} (id ${code(application.id)}, slug ${code(application.slug)}, status ${application.status})`,
    `- Organization: ${text(organization.name)} (slug ${code(organization.slug)})`,
    `- Publishable key: ${code(application.publishableKey)} (public; safe in client code)`,
    `- Keyless development application: ${ctx.project.keyless ? 'yes (shared, local development only)' : 'no'}`,
    ...(ctx.claimUrl ? [`- Claim link: <${ctx.claimUrl}> (secret; opens a page that moves this application into a workspace)`] : []),
    '',
    '## OpenID Connect',
    '',
    `- Issuer: ${code(ctx.oidc.issuer)}`,
    `- Client id: ${code(ctx.oidc.clientId)}`,
    `- Discovery document: <${ctx.oidc.discoveryUrl}>`,
    '',
    '## Permission the app checks',
    '',
    ...permissionCheckLines(ctx.permissionCheck),
    '',
    `## Framework: ${text(fw.name)}`,
    '',
    `- Id: ${code(fw.id)}`,
    `- Language: ${text(fw.language)}`,
    `- OIDC library: ${library}`,
    `- Redirect URI (callback): ${code(fw.callbackUrl)}`,
    `- Environment file: ${code(fw.envFile)} (keep it out of version control)`,
    '',
    'Install:',
    '',
    ...block('sh', fw.installCommand),
    '',
    '### Environment variables',
    '',
    `${code(fw.envFile)}:`,
    '',
    ...block('dotenv', envFile),
    '',
    ...fw.envVars.map(envEntry),
    '',
    '## Redirect URLs',
    '',
    source(ctx.redirectUrlsSource),
    '',
    ...ctx.redirectUrls.map((u) => `- ${code(u)}`),
    '',
    '## Allowed origins',
    '',
    source(ctx.javascriptOriginsSource),
    '',
    ...ctx.javascriptOrigins.map((o) => `- ${code(o)}`),
    '',
    '## Social sign-in',
    '',
    `- Development: mode ${code(ctx.oauth.sharedDevelopment.mode)}, provider ${code(ctx.oauth.sharedDevelopment.provider)}, credentials required: ${ctx.oauth.sharedDevelopment.credentialsRequired ? 'yes' : 'no'}`,
    `- Production: mode ${code(ctx.oauth.production.mode)}, provider ${code(ctx.oauth.production.provider)}, credentials required: ${ctx.oauth.production.credentialsRequired ? 'yes' : 'no'}`,
    `- ${ctx.oauth.productionNote}`,
    '',
    '## Endpoints',
    '',
    `- Public application config: <${ctx.endpoints.clientConfig}>`,
    `- Backend application check (secret key): <${ctx.endpoints.backendApplication}>`,
    `- Hosted sign-in: <${ctx.endpoints.hostedSignIn}>`,
    `- Hosted sign-up: <${ctx.endpoints.hostedSignUp}>`,
    `- Password recovery: <${ctx.endpoints.recovery}>`,
    `- Console: <${ctx.endpoints.console}>`,
    '',
    '## Steps',
    '',
    ...ctx.steps.map((s, i) => `${i + 1}. ${s}`),
    '',
    '## Prompt for a coding agent',
    '',
    demoteHeadings(ctx.aiAgentPrompt),
    '',
  ];
  return lines.join('\n');
}

/**
 * /llms.txt (llmstxt.org): what a coding agent reads first. Every link is a route svc serves
 * that answers without credentials: the setup context per framework (through the keyless
 * development application, when this installation has it), the OpenAPI document, the OpenID
 * Provider's discovery document and keys. svc serves no prose documentation of its own.
 */
export function buildLlmsTxt(publicUrl: string, keylessEnabled: boolean): string {
  const base = publicUrl.replace(/\/+$/, '');
  const context = (framework: string, format: 'markdown' | 'json') =>
    `${base}/v1/setup/agent-context?keyless=1&framework=${framework}${format === 'markdown' ? '&format=markdown' : ''}`;
  const template = `${base}/v1/setup/agent-context?publishable_key=pk_live_...&framework=<framework>&format=markdown`;
  const lines = [
    '# svc',
    '',
    `> svc is a hosted identity and access control plane and the OpenID Provider at ${base}: apps sign users in with standard OpenID Connect (authorization code flow with PKCE) against the issuer ${base}, with their svc application id as client id. Its setup context tells a coding agent everything needed to wire sign-in into an app, and never contains a secret.`,
    '',
    `The setup context of one application: ${template} (or send the publishable key as the X-SVC-Publishable-Key header), framework one of ${SUPPORTED_FRAMEWORKS.join(', ')}; without format=markdown it answers JSON. Each answer carries an ETag: send it back as If-None-Match to learn whether the application's settings changed (304: unchanged). svc never sees passwords; the identity engine hosts them.`,
    '',
  ];
  if (keylessEnabled) {
    lines.push(
      '## Setup context (keyless development application)',
      '',
      ...SUPPORTED_FRAMEWORKS.map(
        (id) => `- [${FRAMEWORKS[id].name}](${context(id, 'markdown')}): ${FRAMEWORKS[id].name} setup as Markdown`,
      ),
      '',
    );
  }
  lines.push(
    '## API',
    '',
    `- [OpenAPI document](${base}/v1/openapi.json): every /v1 route, its parameters, answers and error codes`,
    `- [OpenID Provider configuration](${base}${DISCOVERY_PATH}): issuer, endpoints, scopes and claims`,
    `- [Signing keys](${base}${OIDC_ROUTES.jwks}): the JWKS that verifies svc's ID and access tokens`,
    '',
    '## Optional',
    '',
    `- [API reference](${base}/docs): the OpenAPI document as a browsable page (HTML)`,
  );
  if (keylessEnabled) {
    lines.push(
      `- [Setup context as JSON](${context('rest', 'json')}): the same context as JSON`,
      `- [Public application config](${base}/v1/client/config?keyless=1): what a browser app reads at start`,
    );
  }
  lines.push('');
  return lines.join('\n');
}
