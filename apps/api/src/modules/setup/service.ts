import {
  AGENT_CONTEXT_FORMATS,
  DEFAULT_FRAMEWORK,
  isSupportedFramework,
  SUPPORTED_FRAMEWORKS,
  type TAgentContextFormat,
  type TAgentContextResponse,
  type TAgentEnvVar,
  type TAgentPermissionCheck,
  type TFramework,
} from '@svc/contracts/agent-context';
import { PRODUCT_PERMISSION_PATTERN, reservedPermissionReason, resourceIdentifierProblem } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import type { DbOrTx } from '@svc/db/client';
import { type CatalogPermission, listFirstCatalogPermissions } from '@svc/db/queries/setup';
import { oauthBlock } from '../client-config/service.ts';
import { metadataUrlOf } from './frameworks/mcp.ts';
import { DECLARING_PERMISSIONS_DOC, EXAMPLE_PERMISSION } from './frameworks/shared.ts';
import { type AppFile, type EnvVarSpec, FRAMEWORKS, type FrameworkSpec, type PublicValue, type WiringValues } from './frameworks.ts';
import { block } from './markdown.ts';

/**
 * Everything the agent context is built from. `application` is deliberately a narrow shape:
 * only the fields named here are read, so a caller passing a whole database row (secret key
 * hash, OAuth settings) cannot leak the rest into the answer.
 */
export type AgentContextInput = {
  /** Where browsers reach svc, e.g. https://id.example.com. */
  publicUrl: string;
  engine: { socialProvider: string };
  application: {
    id: string;
    slug: string;
    name: string;
    /** https URL of its logo (checked when stored); null for none. */
    logoUrl: string | null;
    publishableKey: string;
    status: 'active' | 'disabled';
    redirectUrls: string[];
    allowedOrigins: string[];
    postLogoutRedirectUrls: string[];
    /**
     * confidential: authenticates with the secret key; public: PKCE alone. The keyless app is
     * public. A machine client signs nobody in: its context is for the backend calling the token
     * endpoint (it is confidential there, with its secret key).
     */
    clientType: 'confidential' | 'public' | 'machine';
    oauth: { productionProvider?: string };
    /** The keyless development application's claim link (it carries a secret token); null otherwise. */
    claimUrl?: string | null;
  };
  organization: { slug: string; name: string };
  keyless: boolean;
  /** Raw `framework` query value; missing or empty selects `rest`. */
  framework: string | undefined;
  /**
   * The first permissions of the product's catalog (listFirstCatalogPermissions); empty when the
   * platform has declared none. The first usable one is what the generated code checks.
   */
  catalogPermissions: CatalogPermission[];
};

/** How many catalog rows the context reads: the first usable one is nearly always the first. */
const CATALOG_ROWS = 10;

/**
 * GET /v1/setup/agent-context: the product's catalog read (names and identifiers only, never a
 * secret), then the context built from it. The framework is resolved first, so an unknown one
 * answers 400 without a read.
 */
export async function loadAgentContext(db: DbOrTx, input: Omit<AgentContextInput, 'catalogPermissions'>): Promise<TAgentContextResponse> {
  resolveFramework(input.framework);
  const catalogPermissions = await listFirstCatalogPermissions(db, { limit: CATALOG_ROWS });
  return buildAgentContext({ ...input, catalogPermissions });
}

/**
 * The permission the generated app checks: the first catalog permission that is a well-formed
 * product name (the code writes it as a string literal) of a well-formed API identifier, else the
 * example. The catalog's own writes refuse anything else, and svc's control-plane names in
 * particular; a row written around them is skipped rather than taught as a token claim.
 */
export function permissionCheckOf(catalog: CatalogPermission[]): TAgentPermissionCheck {
  const usable = catalog.find(
    (p) =>
      PRODUCT_PERMISSION_PATTERN.test(p.name) &&
      p.name.length <= 100 &&
      reservedPermissionReason(p.name) === undefined &&
      resourceIdentifierProblem(p.resourceIdentifier) === undefined,
  );
  return usable
    ? { permission: usable.name, source: 'catalog', resource: { identifier: usable.resourceIdentifier, name: usable.resourceName } }
    : { permission: EXAMPLE_PERMISSION, source: 'example', resource: null };
}

/** Resolves the `framework` query value, or throws 400 `unsupported_framework`. */
export function resolveFramework(raw: string | undefined): TFramework {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '') {
    return DEFAULT_FRAMEWORK;
  }
  if (isSupportedFramework(value)) {
    return value;
  }
  const shown = JSON.stringify((raw ?? '').slice(0, 64));
  throw new AppError('unsupported_framework', `unsupported framework ${shown}; allowed values: ${SUPPORTED_FRAMEWORKS.join(', ')}`);
}

/** Resolves the `format` query value (missing or empty: json), or throws 400 `unsupported_format`. */
export function resolveFormat(raw: string | undefined): TAgentContextFormat {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '') {
    return 'json';
  }
  const known = AGENT_CONTEXT_FORMATS.find((f) => f === value);
  if (known) {
    return known;
  }
  const shown = JSON.stringify((raw ?? '').slice(0, 64));
  throw new AppError('unsupported_format', `unsupported format ${shown}; allowed values: ${AGENT_CONTEXT_FORMATS.join(', ')}`);
}

function parseHttpUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The redirect URI the integration should use: an allowlisted URL on the framework's callback
 * path when there is one, else that path on the application's first origin, else the framework's
 * local development default.
 */
function pickCallbackUrl(spec: FrameworkSpec, app: AgentContextInput['application']): string {
  const redirects = app.redirectUrls.flatMap((raw) => {
    const url = parseHttpUrl(raw);
    return url ? [{ raw, url }] : [];
  });
  const onPath = redirects.find((r) => r.url.pathname === spec.callbackPath);
  if (onPath) {
    return onPath.raw;
  }
  const origin = app.allowedOrigins.map(parseHttpUrl).find((u) => u !== undefined)?.origin ?? redirects[0]?.url.origin ?? spec.devOrigin;
  return `${origin}${spec.callbackPath}`;
}

const KEYLESS_SECRET_NOTE =
  'Leave this empty: the keyless development app is a public client (PKCE alone) with no secret key. When the application is claimed as an app with a server, the claim page shows its secret key once: paste it here and restart the app; never commit it.';

const PUBLIC_CLIENT_SECRET_NOTE =
  'Leave this empty: this application is a public client (PKCE alone) and has no client secret. Backend checks with the secret key run outside the app.';

/** Whether the app authenticates at the token endpoint with the secret key. */
function isConfidential(app: AgentContextInput['application'], keyless: boolean): boolean {
  return !keyless && app.clientType === 'confidential';
}

function toEnvVar(spec: EnvVarSpec, values: Record<PublicValue, string>, note: string | undefined): TAgentEnvVar {
  if (spec.kind === 'public') {
    return { name: spec.name, value: values[spec.value], description: spec.description, secret: false, where: spec.where };
  }
  // A secret is described, never valued: the service does not hold one and must not emit one.
  const description = note !== undefined && spec.secret === 'secretKey' ? note : spec.description;
  return { name: spec.name, value: null, description, secret: true, where: 'server' };
}

/**
 * Builds the GET /v1/setup/agent-context answer (docs/api.md "Setup context for coding agents"). Pure: the caller resolves the
 * application from the publishable key (or keyless mode) and passes the public fields.
 */
export function buildAgentContext(input: AgentContextInput): TAgentContextResponse {
  const frameworkId = resolveFramework(input.framework);
  const spec: FrameworkSpec = FRAMEWORKS[frameworkId];
  const { organization, engine, keyless } = input;
  // While keyless, the application's lists are the URLs other apps used (kept for the claim,
  // oidc-provider/keyless-urls.ts): this context is for this framework's app, on its own defaults.
  const app = keyless ? { ...input.application, redirectUrls: [], allowedOrigins: [], postLogoutRedirectUrls: [] } : input.application;

  const baseUrl = input.publicUrl.replace(/\/+$/, '');
  const pk = encodeURIComponent(app.publishableKey);
  const endpoints = {
    clientConfig: `${baseUrl}/v1/client/config`,
    backendApplication: `${baseUrl}/v1/backend/application`,
    hostedSignIn: `${baseUrl}/signin?publishable_key=${pk}`,
    hostedSignUp: `${baseUrl}/signup?publishable_key=${pk}`,
    recovery: `${baseUrl}/auth/recovery`,
    console: `${baseUrl}/auth/console`,
  };
  // svc is the OpenID Provider: issuer = its public URL, client id = the application id.
  const oidc = {
    issuer: baseUrl,
    clientId: app.id,
    discoveryUrl: `${baseUrl}/.well-known/openid-configuration`,
  };

  const callbackUrl = pickCallbackUrl(spec, app);
  const appOrigin = new URL(callbackUrl);
  const postLogoutUrl = `${appOrigin.origin}${spec.postLogoutPath}`;
  const devPort = appOrigin.port || (appOrigin.protocol === 'https:' ? '443' : '80');
  const secretNote = keyless ? KEYLESS_SECRET_NOTE : isConfidential(app, keyless) ? undefined : PUBLIC_CLIENT_SECRET_NOTE;
  const redirectFromApp = app.redirectUrls.length > 0;
  const originsFromApp = app.allowedOrigins.length > 0;
  const redirectUrls = redirectFromApp ? [...app.redirectUrls] : [callbackUrl];
  const javascriptOrigins = originsFromApp ? [...app.allowedOrigins] : [spec.devOrigin];

  const envVars = spec.envVars.map((v) =>
    toEnvVar(
      v,
      {
        publishableKey: app.publishableKey,
        issuer: oidc.issuer,
        clientId: oidc.clientId,
        baseUrl,
        callbackUrl,
        postLogoutUrl,
        devPort,
        resourceUrl: callbackUrl,
      },
      secretNote,
    ),
  );

  const devProvider = engine.socialProvider;
  const prodProvider = app.oauth.productionProvider ?? engine.socialProvider;
  const oauth = {
    ...oauthBlock(engine.socialProvider, app.oauth.productionProvider),
    productionNote:
      `Before public launch, customer-owned ${prodProvider} OAuth credentials (your own OAuth client registered with ${prodProvider}) ` +
      `must be configured for this application in the svc console. The shared development ${devProvider} credentials need no OAuth app ` +
      'of your own and are for development only, not for production users. The OAuth client secret goes into svc, never into your app code or repository.',
  };

  const ctx: Ctx = {
    spec,
    app,
    permissionCheck: permissionCheckOf(input.catalogPermissions),
    organization,
    keyless,
    baseUrl,
    endpoints,
    oidc,
    callbackUrl,
    postLogoutUrl,
    envVars,
    redirectUrls,
    javascriptOrigins,
    redirectFromApp,
    originsFromApp,
    oauth,
  };

  return {
    service: {
      name: 'svc',
      apiVersion: 'v1',
      baseUrl,
      docsUrl: `${baseUrl}/docs`,
      openapiUrl: `${baseUrl}/v1/openapi.json`,
    },
    project: {
      application: {
        id: app.id,
        slug: app.slug,
        name: app.name,
        logoUrl: app.logoUrl,
        publishableKey: app.publishableKey,
        status: app.status,
      },
      organization: { slug: organization.slug, name: organization.name },
      keyless,
    },
    claimUrl: keyless ? (app.claimUrl ?? null) : null,
    oidc,
    framework: {
      id: spec.id,
      name: spec.name,
      language: spec.language,
      oidcLibrary: spec.oidcLibrary.url ? { name: spec.oidcLibrary.name, url: spec.oidcLibrary.url } : { name: spec.oidcLibrary.name },
      installCommand: spec.installCommand,
      envFile: spec.envFile,
      envVars,
      callbackUrl,
    },
    redirectUrls,
    redirectUrlsSource: redirectFromApp ? 'application' : 'framework_default',
    javascriptOrigins,
    javascriptOriginsSource: originsFromApp ? 'application' : 'framework_default',
    oauth,
    endpoints,
    permissionCheck: ctx.permissionCheck,
    steps: buildSteps(ctx),
    aiAgentPrompt: buildPrompt(ctx),
  };
}

type Ctx = {
  spec: FrameworkSpec;
  app: AgentContextInput['application'];
  permissionCheck: TAgentPermissionCheck;
  organization: AgentContextInput['organization'];
  keyless: boolean;
  baseUrl: string;
  endpoints: TAgentContextResponse['endpoints'];
  oidc: TAgentContextResponse['oidc'];
  callbackUrl: string;
  postLogoutUrl: string;
  envVars: TAgentEnvVar[];
  redirectUrls: string[];
  javascriptOrigins: string[];
  redirectFromApp: boolean;
  originsFromApp: boolean;
  oauth: TAgentContextResponse['oauth'];
};

function wiringValues(c: Ctx): WiringValues {
  return {
    issuer: c.oidc.issuer,
    discoveryUrl: c.oidc.discoveryUrl,
    clientId: c.oidc.clientId,
    callbackUrl: c.callbackUrl,
    postLogoutUrl: c.postLogoutUrl,
    baseUrl: c.baseUrl,
    hostedSignIn: c.endpoints.hostedSignIn,
    keyless: c.keyless,
    permissionCheck: c.permissionCheck,
    // An MCP server's endpoint is its framework's callback path on the app's origin (mcp.ts).
    resourceUrl: c.callbackUrl,
  };
}

function filesOf(c: Ctx): AppFile[] {
  return c.spec.files(wiringValues(c));
}

function notesOf(c: Ctx): string[] {
  return c.spec.notes(wiringValues(c));
}

function clientConfigCurl(c: Ctx): string {
  return c.keyless
    ? `curl -sS "${c.endpoints.clientConfig}?keyless=1"`
    : `curl -sS -H "X-SVC-Publishable-Key: ${c.app.publishableKey}" "${c.endpoints.clientConfig}"`;
}

function backendCurl(c: Ctx): string {
  return `curl -sS -H "Authorization: Bearer $SVC_SECRET_KEY" "${c.endpoints.backendApplication}"`;
}

/** Register (or confirm) the allowlists; the callback and the post-logout URL must be in them. */
function allowlistInstruction(c: Ctx): string {
  const redirects = c.redirectUrls.join(', ');
  const origins = c.javascriptOrigins.join(', ');
  if (c.keyless) {
    return `Nothing to register: the keyless development app accepts any loopback redirect URI and sign-out return URL (http://localhost, http://127.0.0.1 or http://[::1], any port and path) and browser calls from any loopback origin. This app uses the redirect URI ${c.callbackUrl} and returns to ${c.postLogoutUrl} after sign-out. The application remembers the URLs its apps use, and claiming it registers them on it (redirect URL ${c.callbackUrl}, post-logout redirect URL ${c.postLogoutUrl}${c.envVars.some((v) => v.name === 'SVC_SECRET_KEY') ? '' : `, allowed origin ${origins}`}), so this app keeps signing in after the claim.`;
  }
  const parts: string[] = [];
  parts.push(
    c.redirectFromApp
      ? `Redirect URLs already allowlisted on the application: ${redirects}.`
      : `Register these redirect URLs on the application in the svc console (${c.endpoints.console}): ${redirects}.`,
  );
  if (c.redirectFromApp && !c.redirectUrls.includes(c.callbackUrl)) {
    parts.push(`The callback ${c.callbackUrl} is not in that list yet: add it in the svc console.`);
  }
  parts.push(
    c.app.postLogoutRedirectUrls.includes(c.postLogoutUrl)
      ? `Post-logout redirect URL already allowlisted: ${c.postLogoutUrl}.`
      : `Register the post-logout redirect URL ${c.postLogoutUrl} on the application in the svc console; svc's end-session endpoint returns only to registered ones.`,
  );
  parts.push(
    c.originsFromApp
      ? `Allowed origins already registered: ${origins}.`
      : `Register these allowed origins on the application in the svc console: ${origins}.`,
  );
  parts.push(`Your app's OIDC redirect URI is exactly ${c.callbackUrl}.`);
  return parts.join(' ');
}

/** Text inside an unquoted shell here-document: `$`, backticks and backslashes stay literal. */
function heredocText(value: string): string {
  return value.replace(/[\\$`]/g, (ch) => `\\${ch}`);
}

/**
 * The environment step as one shell command: writes envFile with every public value filled in and
 * each local secret generated, leaves the secret key for the user to paste, keeps the file out of
 * git. Descriptions are comment lines of their own, which every dotenv reader skips.
 */
function envCommand(c: Ctx): string {
  const lines = c.envVars.flatMap((v) => {
    const spec = c.spec.envVars.find((s) => s.name === v.name);
    const comment = `# ${v.secret ? 'secret, ' : ''}${v.where}${v.where === 'client' ? ' (bundled into the browser)' : ''}: ${heredocText(v.description)}`;
    const value = v.secret ? (spec?.kind === 'secret' && spec.generate ? spec.generate : '') : heredocText(v.value ?? '');
    return [comment, `${v.name}=${value}`];
  });
  return [
    `cat > ${c.spec.envFile} <<EOF`,
    ...lines,
    'EOF',
    `grep -qsxF '${c.spec.envFile}' .gitignore || echo '${c.spec.envFile}' >> .gitignore`,
  ].join('\n');
}

function secretKeyInstruction(c: Ctx): string | undefined {
  if (!c.envVars.some((v) => v.name === 'SVC_SECRET_KEY')) {
    return undefined;
  }
  if (c.keyless) {
    return 'SVC_SECRET_KEY stays empty: the keyless development app is a public client, and the code uses PKCE alone while it is empty. It gets the secret key when the application is claimed (see the claim below).';
  }
  if (!isConfidential(c.app, c.keyless)) {
    return 'SVC_SECRET_KEY stays empty: this application is a public client (PKCE alone).';
  }
  return `Then ask the user to paste the application's secret key from the svc console after SVC_SECRET_KEY= in ${c.spec.envFile} (it is shown once: when the application is created or claimed, and when its key is rotated there): this application is a confidential client, so the token endpoint requires it. Never print, log or commit it.`;
}

function backendCheckInstruction(c: Ctx): string {
  if (c.keyless) {
    return 'Backend check: skip it for now; a keyless development app has no usable secret key.';
  }
  const expect = `must answer 200 with "ok": true (401 invalid_secret_key means the key is wrong, revoked or rotated)`;
  if (c.envVars.some((v) => v.name === 'SVC_SECRET_KEY') && isConfidential(c.app, c.keyless)) {
    return `Backend check, from a terminal or server code (never the browser), with SVC_SECRET_KEY loaded from ${c.spec.envFile}: ${backendCurl(c)} ${expect}.`;
  }
  // Browser-only frameworks and public clients never hold the secret key, so the check runs outside the app.
  return `Backend check: this app must never hold the secret key. In a terminal, ask the user to paste the secret key from the svc console; never commit it (export SVC_SECRET_KEY=...), then run ${backendCurl(c)}; it ${expect}.`;
}

const DEVELOPMENT_ALLOWANCES = [
  'svc on http is allowed only on this machine (localhost, 127.0.0.1 or [::1]): the code accepts an http issuer there and refuses it anywhere else; a deployed svc is https.',
];

function developmentAllowances(c: Ctx): string[] {
  return [
    ...DEVELOPMENT_ALLOWANCES,
    ...(c.keyless
      ? [
          'The keyless development app is shared by everyone on this svc and accepts any loopback URL: it is for local development only; never ship an app that uses it.',
        ]
      : []),
  ];
}

function buildSteps(c: Ctx): string[] {
  if (c.spec.kind === 'mcp_server') {
    return buildMcpServerSteps(c);
  }
  const steps: string[] = [];
  if (c.app.status === 'disabled') {
    steps.push(
      `This application is disabled: client config answers 409 application_disabled until an org admin re-enables it in the svc console (${c.endpoints.console}).`,
    );
  }
  steps.push(`Install the ${c.spec.oidcLibrary.name} dependencies: ${c.spec.installCommand}`);
  const filled = c.envVars
    .filter((v) => !v.secret)
    .map((v) => `${v.name}=${v.value ?? ''}`)
    .join(', ');
  const secretNames = c.envVars.filter((v) => v.secret).map((v) => v.name);
  steps.push(
    `Write ${c.spec.envFile} (kept out of git; ${c.spec.envLoading}): ${filled}.` +
      (secretNames.length > 0 ? ` Secret variables without a value here: ${secretNames.join(', ')}; see each envVars description.` : ''),
  );
  steps.push(allowlistInstruction(c));
  const files = filesOf(c);
  if (files.length > 0) {
    steps.push(`Write the app's files exactly as given in aiAgentPrompt: ${files.map((f) => f.path).join(', ')}.`);
  }
  steps.push(`Start the app with ${c.spec.runCommand}.`);
  steps.push(...notesOf(c));
  steps.push(permissionParagraphs(c).join(' '));
  steps.push(...developmentAllowances(c));
  steps.push(
    `Development sign-in uses the shared_development ${c.oauth.sharedDevelopment.provider} mode: no OAuth credentials are needed.`,
  );
  steps.push(`Verify the public config: ${clientConfigCurl(c)} answers 200 with application.id ${c.app.id}.`);
  steps.push(backendCheckInstruction(c));
  steps.push(c.oauth.productionNote);
  if (c.keyless) {
    steps.push(claimInstruction(c));
  }
  return steps;
}

/**
 * What the app learns about the person's rights in the product, and the one permission its code
 * checks: a real one of the catalog, or an example with the way to declare one's own. svc's own
 * control-plane permissions are named as a kind, never by name: no token carries them.
 */
function permissionParagraphs(c: Ctx): string[] {
  const { permission, resource } = c.permissionCheck;
  const where = c.spec.meRoute
    ? `the profile page says whether the person holds it, and ${c.spec.meRoute} answers check: { permission: '${permission}', allowed } from the verified access token`
    : `the profile page says whether the person holds it (the ID token's claims; it only decides what to show), and your own API checks the same permission in the access token it receives`;
  const claims =
    "The app reads what the person may do in your product from two claims: org_role, the person's role key in the organization they signed in for (the built-in org_admin or org_member, or a role the platform or the organization defined), and permissions, the permissions that role grants in your product's own catalog, which the platform declares on its API resources. " +
    'svc\'s own administration permissions (who may manage members, keys or webhooks in svc) are checked by svc alone and are never in a token or userinfo: do not look for them there. permissions may be empty; the app then says "none yet".';
  if (resource) {
    return [
      claims,
      `The code checks one permission of that catalog, ${permission}, which the API "${resource.name}" (${resource.identifier}) declares: ${where}. Replace it with the permission each of your routes requires. ` +
        `The tokens this app gets are for the app itself (aud ${c.oidc.clientId}) and carry all of the person's product permissions; a token meant for that API is requested with resource=${resource.identifier} (RFC 8707): its aud is ${resource.identifier} and its scope is exactly the person's permissions on that API, space-separated, which that API checks.`,
    ];
  }
  return [
    claims,
    `This svc declares no API permissions yet, so the code checks an example name, ${permission}: ${where}. It answers no (false) until the platform declares the permission on an API resource and a role grants it; the built-in org_admin and org_member roles grant no product permission until the platform gives them some. ` +
      `To declare your API and its permissions, see ${DECLARING_PERMISSIONS_DOC}; then replace ${permission} in the code with your own permission.`,
  ];
}

/**
 * What claiming asks of this app, by framework: an app with a server becomes a confidential
 * client and takes the secret key the claim page shows (one paste, one restart); a browser-only
 * app stays public and changes nothing. The claim page offers the same two choices.
 */
function claimStepsOf(c: Ctx): string {
  const hasSecret = c.envVars.some((v) => v.name === 'SVC_SECRET_KEY');
  return hasSecret
    ? `On the claim page choose "It has a server" (a confidential client); the page then shows the secret key once: have the user paste it after SVC_SECRET_KEY= in ${c.spec.envFile} (never commit it) and restart the app (${c.spec.runCommand}). Until then its sign-ins fail with invalid_client.`
    : 'On the claim page choose "It runs only in the browser" (a public client, PKCE alone): nothing in the app changes, and the secret key the page shows stays out of it (it is for server-side calls to svc).';
}

function claimInstruction(c: Ctx): string {
  if (!c.app.claimUrl) {
    return `To claim a real application: sign up at ${c.baseUrl}/signup (a workspace is created for you), open ${c.endpoints.console}, create an application, replace the keyless publishable key and client id with the new ones, and register on it the redirect URLs and allowed origins listed in this context. ${c.envVars.some((v) => v.name === 'SVC_SECRET_KEY') ? 'Have the user paste its secret key into SVC_SECRET_KEY.' : 'Set its client type to public.'}`;
  }
  return `To claim this application: ask the user to open the claim link ${c.app.claimUrl} in a browser (signing in, or signing up at ${c.baseUrl}/signup, which creates a workspace) and pick the workspace that should own it. It keeps its id, OIDC client id and publishable key, and the claim registers on it the redirect URL, post-logout redirect URL and allowed origins this app used while keyless, so the app keeps signing in. ${claimStepsOf(c)} A URL the app has not used yet (another port, the production URL) is registered on the application's page in the svc console (${c.endpoints.console}). The claim link is a secret: never commit, log or share it.`;
}

function buildPrompt(c: Ctx): string {
  if (c.spec.kind === 'mcp_server') {
    return buildMcpServerPrompt(c);
  }
  const { spec, app, organization } = c;
  const numbered = (items: string[]) => items.map((s, i) => `${i + 1}. ${s}`);
  const files = filesOf(c);
  const secretStep = secretKeyInstruction(c);
  const lines: string[] = [
    `Set up sign-in for this ${spec.name} (${spec.language}) app with svc. Everything you need is below: run the commands and write the files exactly as given, in order; do not ask the user anything except to paste secret values.`,
    '',
    '## What svc is',
    `svc (${c.baseUrl}, API v1, docs ${c.baseUrl}/docs, OpenAPI ${c.baseUrl}/v1/openapi.json) is a hosted identity and access control plane and the OpenID Provider your app signs users in with: standard OpenID Connect, authorization code flow with PKCE (S256), against issuer ${c.oidc.issuer} (discovery ${c.oidc.discoveryUrl}) with client id ${c.oidc.clientId} (the application id). With scope "organization" the ID token, the access token and userinfo say which organization the person acts in and what they may do in your product: org_id, org_slug, org_role and permissions (see "Roles and permissions" below).`,
    'svc never receives or stores user passwords: the identity engine hosts password entry, password recovery, email verification, MFA and passkeys. Do not build a password form or store passwords.',
    `Hosted pages you can link to (your app learns who signed in only through the OpenID Connect flow below): sign-in ${c.endpoints.hostedSignIn}, sign-up ${c.endpoints.hostedSignUp}, password recovery ${c.endpoints.recovery}.`,
    '',
    '## Project',
    `Application "${app.name}" (id ${app.id}, slug ${app.slug}, status ${app.status}) in organization "${organization.name}" (${organization.slug}); ${c.keyless ? 'a public OIDC client (PKCE, no secret)' : isConfidential(app, c.keyless) ? 'a confidential OIDC client (its secret key is the client secret)' : 'a public OIDC client (PKCE, no secret)'}.`,
    `Publishable key: ${app.publishableKey} (public; safe in client code).`,
  ];
  if (isConfidential(app, c.keyless) && !c.envVars.some((v) => v.name === 'SVC_SECRET_KEY')) {
    lines.push(
      `This application is a confidential client, and a browser app cannot keep a secret: an org admin sets its client type to public in the svc console (${c.endpoints.console}) before the app signs anyone in.`,
    );
  }
  if (app.status === 'disabled') {
    lines.push(
      `This application is disabled: client config answers 409 application_disabled until an org admin re-enables it in the svc console (${c.endpoints.console}).`,
    );
  }
  if (c.keyless) {
    lines.push(
      'This is a keyless development app: no svc account, sign-up or key is needed to start. It is shared and meant for local development only; never ship it to production.',
      claimInstruction(c),
    );
  }
  lines.push('', '## Roles and permissions', ...permissionParagraphs(c));
  lines.push(
    '',
    '## 1. Install',
    `Framework: ${spec.name}. Library: ${spec.oidcLibrary.name}${spec.oidcLibrary.url ? ` (${spec.oidcLibrary.url})` : ''}.`,
    "Run in the project's root:",
    ...block('sh', spec.installCommand),
    '',
    '## 2. Environment',
    `${spec.envLoading} This command writes ${spec.envFile} with every value filled in (random local secrets generated on the spot) and keeps it out of git. "client" variables are bundled into the browser; every other one stays on the server.`,
    ...block('sh', envCommand(c)),
    ...(secretStep ? [secretStep] : []),
    'Never print, log or commit a secret value, and never put SVC_SECRET_KEY (or any secret) in client-side code.',
    '',
    '## 3. Redirect URLs, sign-out URLs and origins',
    allowlistInstruction(c),
    `Redirect URLs: ${c.redirectUrls.join(', ')}`,
    `Post-logout redirect URL: ${c.postLogoutUrl}`,
    `Allowed origins: ${c.javascriptOrigins.join(', ')}`,
    '',
    '## 4. Code',
  );
  if (files.length > 0) {
    lines.push(`Write these files exactly as given; they read every value from ${spec.envFile}.`);
    for (const file of files) {
      lines.push('', `File \`${file.path}\`:`, ...block(file.language, file.content));
    }
  } else {
    lines.push(...numbered(notesOf(c)));
  }
  lines.push('', '## 5. Run', ...block('sh', spec.runCommand));
  if (files.length > 0) {
    lines.push(...numbered(notesOf(c)));
  }
  lines.push(
    '',
    '## 6. Development allowances',
    ...developmentAllowances(c).map((s) => `- ${s}`),
    '',
    '## 7. Social sign-in',
    `Development: mode shared_development with provider ${c.oauth.sharedDevelopment.provider}; no OAuth credentials are required, users can sign in right away.`,
    `Production: mode customer_owned with provider ${c.oauth.production.provider}; credentials required. ${c.oauth.productionNote}`,
    '',
    '## 8. Verify',
    `1. Public config: ${clientConfigCurl(c)} must answer 200 with application.id "${app.id}" and oauth.sharedDevelopment.mode "shared_development".`,
    `2. ${backendCheckInstruction(c)}`,
    `3. Start the app (section 5), open ${new URL(c.callbackUrl).origin}, sign in, and confirm the browser comes back through ${c.callbackUrl} and the app shows the signed-in user with their org_slug, org_role, product permissions ("none yet" while their role grants none) and whether they hold ${c.permissionCheck.permission}${c.permissionCheck.source === 'example' ? ' (no, until it is declared and a role grants it)' : ''}.`,
    '',
    'When done, tell the user which files you changed and which secret values they still need to provide.',
  );
  return lines.join('\n');
}

/**
 * Registering an MCP server in svc: an API resource whose identifier is the server's canonical URI
 * and which declares the permission its code checks (docs/resource-server.md "Register the API in
 * svc"); said as done when the catalog already has it.
 */
function mcpResourceInstruction(c: Ctx): string {
  const resource = c.callbackUrl;
  const { permission, resource: declaring } = c.permissionCheck;
  if (declaring?.identifier === resource) {
    return `This MCP server is already registered in svc: the API resource "${declaring.name}" has its canonical URI ${resource} as identifier and declares ${permission}, which the code checks. Nothing to register.`;
  }
  return (
    `Ask a platform admin of svc to register this MCP server as an API resource (svc console ${c.endpoints.console}, Authorization, API resources; or POST ${c.baseUrl}/v1/api-resources as a platform admin) ` +
    `with identifier ${resource} exactly (its canonical URI: tokens for it carry it as aud) and the permission ${permission}, and to let a role grant it (the organization's people can only allow an agent what they hold). ` +
    `See ${DECLARING_PERMISSIONS_DOC}. Until then svc answers invalid_target to a client asking for a token for ${resource}.`
  );
}

/** The steps of the `mcp` framework: a resource server, so no redirect URLs, sign-in or claim. */
function buildMcpServerSteps(c: Ctx): string[] {
  const filled = c.envVars.map((v) => `${v.name}=${v.value ?? ''}`).join(', ');
  return [
    `Install the ${c.spec.oidcLibrary.name} dependencies: ${c.spec.installCommand}`,
    `Write ${c.spec.envFile} (kept out of git; ${c.spec.envLoading}): ${filled}.`,
    mcpResourceInstruction(c),
    `Write the server's files exactly as given in aiAgentPrompt: ${filesOf(c)
      .map((f) => f.path)
      .join(', ')}.`,
    `Start the server with ${c.spec.runCommand}.`,
    ...notesOf(c),
    ...DEVELOPMENT_ALLOWANCES,
  ];
}

/**
 * The prompt of the `mcp` framework (docs/api.md "Setup context for coding agents"): protect an
 * MCP server with svc as its authorization server. Its shell blocks are Install, Environment and
 * Run, as every prompt's; the registration and the checks are words, since they need svc's
 * platform admin and a running server.
 */
function buildMcpServerPrompt(c: Ctx): string {
  const { spec } = c;
  const resource = c.callbackUrl;
  const file = filesOf(c);
  const lines: string[] = [
    `Protect this MCP server with svc. Everything you need is below: run the commands and write the files exactly as given, in order; do not ask the user anything except what section 3 names.`,
    '',
    '## What svc is',
    `svc (${c.baseUrl}, docs ${c.baseUrl}/docs) is the OAuth authorization server of this MCP server (MCP authorization specification): issuer ${c.oidc.issuer} (metadata ${c.baseUrl}/.well-known/oauth-authorization-server). The server below is a protected resource, not an OIDC client: it signs nobody in and holds no secret.`,
    `An MCP client (an agent) that calls ${resource} without a token gets 401 with WWW-Authenticate: Bearer resource_metadata="${metadataUrlOf(resource)}". That Protected Resource Metadata (RFC 9728) names svc; the client identifies itself to svc (a Client ID Metadata Document, or dynamic client registration where svc offers it), the person signs in on svc and allows it on svc's consent page, and the client comes back with an access token for this server: an RFC 9068 JWT with aud ${resource} (RFC 8707 resource indicator), scope = the permissions the person allowed (never more than they hold in the organization), org_id and org_slug of the organization it acts for, client_id of the agent.`,
    `The server verifies each token with jose: svc's signature (its JWKS), iss ${c.oidc.issuer}, aud ${resource}, typ at+jwt, not expired; then the permission its tool needs in scope (403 insufficient_scope otherwise). A token for another API, an ID token or an expired one gets 401 with error="invalid_token" and the same resource_metadata. svc's own administration permissions are never in such a token.`,
    '',
    '## Roles and permissions',
    ...permissionParagraphs(c).slice(1),
    '',
    '## 1. Install',
    `Framework: ${spec.name}. Libraries: ${spec.oidcLibrary.name}${spec.oidcLibrary.url ? ` (${spec.oidcLibrary.url})` : ''}.`,
    "Run in the project's root:",
    ...block('sh', spec.installCommand),
    '',
    '## 2. Environment',
    `${spec.envLoading} This command writes ${spec.envFile} with every value filled in and keeps it out of git. None of them is a secret.`,
    ...block('sh', envCommand(c)),
    '',
    '## 3. Register the MCP server in svc',
    mcpResourceInstruction(c),
    '',
    '## 4. Code',
    `Write these files exactly as given; they read every value from ${spec.envFile}.`,
  ];
  for (const f of file) {
    lines.push('', `File \`${f.path}\`:`, ...block(f.language, f.content));
  }
  lines.push(
    '',
    '## 5. Run',
    ...block('sh', spec.runCommand),
    ...notesOf(c).map((s, i) => `${i + 1}. ${s}`),
    '',
    '## 6. Development allowances',
    ...DEVELOPMENT_ALLOWANCES.map((s) => `- ${s}`),
    `- ${resource} is http on localhost for development; deployed, the MCP server is https and its API resource in svc has that https URI as identifier.`,
    '',
    'When done, tell the user which files you changed and what section 3 still asks of a platform admin.',
  );
  return lines.join('\n');
}
