import {
  AGENT_CONTEXT_FORMATS,
  DEFAULT_FRAMEWORK,
  isSupportedFramework,
  SUPPORTED_FRAMEWORKS,
  type TAgentContextFormat,
  type TAgentContextResponse,
  type TAgentEnvVar,
  type TFramework,
} from '@svc/contracts/agent-context';
import { AppError } from '@svc/contracts/errors';
import { oauthBlock } from '../client-config/service.ts';
import { type EnvVarSpec, FRAMEWORKS, type FrameworkSpec, type PublicValue } from './frameworks.ts';

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
    publishableKey: string;
    status: 'active' | 'disabled';
    redirectUrls: string[];
    allowedOrigins: string[];
    oauth: { productionProvider?: string };
  };
  organization: { slug: string; name: string };
  keyless: boolean;
  /** Raw `framework` query value; missing or empty selects `rest`. */
  framework: string | undefined;
};

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
  'A keyless development app has no secret key you can use; leave this empty. After claiming a real application, ask the user to paste its secret key from the svc console; never commit it.';

function toEnvVar(spec: EnvVarSpec, values: Record<PublicValue, string>, keyless: boolean): TAgentEnvVar {
  if (spec.kind === 'public') {
    return { name: spec.name, value: values[spec.value], description: spec.description, secret: false, where: spec.where };
  }
  // A secret is described, never valued: the service does not hold one and must not emit one.
  const description = keyless && spec.secret === 'secretKey' ? KEYLESS_SECRET_NOTE : spec.description;
  return { name: spec.name, value: null, description, secret: true, where: 'server' };
}

/**
 * Builds the GET /v1/setup/agent-context answer (SPEC.md 4.2). Pure: the caller resolves the
 * application from the publishable key (or keyless mode) and passes the public fields.
 */
export function buildAgentContext(input: AgentContextInput): TAgentContextResponse {
  const frameworkId = resolveFramework(input.framework);
  const spec: FrameworkSpec = FRAMEWORKS[frameworkId];
  const { application: app, organization, engine, keyless } = input;

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
      },
      keyless,
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
    organization,
    keyless,
    baseUrl,
    endpoints,
    oidc,
    callbackUrl,
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
        publishableKey: app.publishableKey,
        status: app.status,
      },
      organization: { slug: organization.slug, name: organization.name },
      keyless,
    },
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
    steps: buildSteps(ctx),
    aiAgentPrompt: buildPrompt(ctx),
  };
}

type Ctx = {
  spec: FrameworkSpec;
  app: AgentContextInput['application'];
  organization: AgentContextInput['organization'];
  keyless: boolean;
  baseUrl: string;
  endpoints: TAgentContextResponse['endpoints'];
  oidc: TAgentContextResponse['oidc'];
  callbackUrl: string;
  envVars: TAgentEnvVar[];
  redirectUrls: string[];
  javascriptOrigins: string[];
  redirectFromApp: boolean;
  originsFromApp: boolean;
  oauth: TAgentContextResponse['oauth'];
};

function wiringOf(c: Ctx): string[] {
  return c.spec.wiring({
    issuer: c.oidc.issuer,
    discoveryUrl: c.oidc.discoveryUrl,
    clientId: c.oidc.clientId,
    callbackUrl: c.callbackUrl,
    baseUrl: c.baseUrl,
    hostedSignIn: c.endpoints.hostedSignIn,
  });
}

function clientConfigCurl(c: Ctx): string {
  return c.keyless
    ? `curl -sS "${c.endpoints.clientConfig}?keyless=1"`
    : `curl -sS -H "X-SVC-Publishable-Key: ${c.app.publishableKey}" "${c.endpoints.clientConfig}"`;
}

function backendCurl(c: Ctx): string {
  return `curl -sS -H "Authorization: Bearer $SVC_SECRET_KEY" "${c.endpoints.backendApplication}"`;
}

/** Register (or confirm) the allowlists; the callback must be among the redirect URLs. */
function allowlistInstruction(c: Ctx): string {
  const redirects = c.redirectUrls.join(', ');
  const origins = c.javascriptOrigins.join(', ');
  if (c.keyless) {
    return `The keyless development app is shared and svc manages its allowlists, so there is nothing to register now: it accepts any loopback redirect URI (http://localhost, http://127.0.0.1 or http://[::1], any port and path); use the redirect URI ${c.callbackUrl}. After claiming a real application, register redirect URL ${c.callbackUrl} and JavaScript origin ${origins} on it in the svc console (${c.endpoints.console}).`;
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
    c.originsFromApp
      ? `JavaScript origins already allowlisted: ${origins}.`
      : `Register these JavaScript origins on the application in the svc console: ${origins}.`,
  );
  parts.push(`Your app's OIDC redirect URI is exactly ${c.callbackUrl}.`);
  return parts.join(' ');
}

function envLine(v: TAgentEnvVar, keyless: boolean): string {
  if (v.secret) {
    const how =
      v.name === 'SVC_SECRET_KEY'
        ? keyless
          ? 'keyless app: leave empty until you claim a real application, then ask the user to paste the secret key from the svc console; never commit it'
          : 'ask the user to paste the secret key from the svc console; never commit it'
        : v.description;
    return `${v.name}=    # secret (${v.where} only): ${how}`;
  }
  return `${v.name}=${v.value ?? ''}    # ${v.where}: ${v.description}`;
}

function backendCheckInstruction(c: Ctx): string {
  if (c.keyless) {
    return 'Backend check: skip it for now; a keyless development app has no usable secret key.';
  }
  const expect = `must answer 200 with "ok": true (401 invalid_secret_key means the key is wrong, revoked or rotated)`;
  if (c.envVars.some((v) => v.name === 'SVC_SECRET_KEY')) {
    return `Backend check, from a terminal or server code (never the browser), with SVC_SECRET_KEY loaded from ${c.spec.envFile}: ${backendCurl(c)} ${expect}.`;
  }
  // Browser-only frameworks never hold the secret key, so the check runs outside the app.
  return `Backend check: this app runs in the browser and must never hold the secret key. In a terminal, ask the user to paste the secret key from the svc console; never commit it (export SVC_SECRET_KEY=...), then run ${backendCurl(c)}; it ${expect}.`;
}

function buildSteps(c: Ctx): string[] {
  const secretNames = c.envVars.filter((v) => v.secret).map((v) => v.name);
  const filled = c.envVars
    .filter((v) => !v.secret)
    .map((v) => `${v.name}=${v.value ?? ''}`)
    .join(', ');
  const steps: string[] = [];
  if (c.app.status === 'disabled') {
    steps.push(
      `This application is disabled: client config answers 409 application_disabled until an org admin re-enables it in the svc console (${c.endpoints.console}).`,
    );
  }
  steps.push(`Install the ${c.spec.oidcLibrary.name} dependencies: ${c.spec.installCommand}`);
  steps.push(
    `Add to ${c.spec.envFile} (and keep ${c.spec.envFile} in .gitignore): ${filled}.` +
      (secretNames.length > 0
        ? ` Secret variables without a value: ${secretNames.join(', ')}; see each envVars description for where to get it.`
        : ''),
  );
  steps.push(allowlistInstruction(c));
  steps.push(...wiringOf(c));
  steps.push(
    `Development sign-in uses the shared_development ${c.oauth.sharedDevelopment.provider} mode: no OAuth credentials are needed.`,
  );
  steps.push(`Verify the public config: ${clientConfigCurl(c)} answers 200 with application.id ${c.app.id}.`);
  steps.push(backendCheckInstruction(c));
  steps.push(`Start the app at ${c.spec.devOrigin}, sign in, and confirm the browser returns to ${c.callbackUrl} signed in.`);
  steps.push(c.oauth.productionNote);
  if (c.keyless) {
    steps.push(claimInstruction(c));
  }
  return steps;
}

function claimInstruction(c: Ctx): string {
  return `To claim a real application: sign up at ${c.baseUrl}/signup (a workspace is created for you), open ${c.endpoints.console}, create an application, replace the keyless publishable key with the new one, have the user paste the new secret key into SVC_SECRET_KEY, and register on it the redirect URLs and JavaScript origins listed in this context.`;
}

function buildPrompt(c: Ctx): string {
  const { spec, app, organization } = c;
  const numbered = (items: string[]) => items.map((s, i) => `${i + 1}. ${s}`);
  const lines: string[] = [
    `Set up sign-in for this ${spec.name} (${spec.language}) app with svc. Everything you need is below; do not ask the user anything except to paste secret values.`,
    '',
    '## What svc is',
    `svc (${c.baseUrl}, API v1, docs ${c.baseUrl}/docs, OpenAPI ${c.baseUrl}/v1/openapi.json) is a hosted identity and access control plane and the OpenID Provider your app signs users in with: standard OpenID Connect, authorization code flow with PKCE (S256), against issuer ${c.oidc.issuer} (discovery ${c.oidc.discoveryUrl}) with client id ${c.oidc.clientId} (the application id). svc also serves the application config, hosted sign-in and sign-up pages, and backend key checks.`,
    'svc never receives or stores user passwords: the identity engine hosts password entry, password recovery, email verification, MFA and passkeys. Do not build a password form or store passwords.',
    `Hosted pages you can link to: sign-in ${c.endpoints.hostedSignIn}, sign-up ${c.endpoints.hostedSignUp}, password recovery ${c.endpoints.recovery}.`,
    '',
    '## Project',
    `Application "${app.name}" (id ${app.id}, slug ${app.slug}, status ${app.status}) in organization "${organization.name}" (${organization.slug}).`,
    `Publishable key: ${app.publishableKey} (public; safe in client code).`,
  ];
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
  lines.push(
    '',
    '## 1. Install',
    `Framework: ${spec.name}. Library: ${spec.oidcLibrary.name}${spec.oidcLibrary.url ? ` (${spec.oidcLibrary.url})` : ''}.`,
    `Run in the project root: ${spec.installCommand}`,
    '',
    '## 2. Environment variables',
    `Write these to ${spec.envFile} and make sure ${spec.envFile} is in .gitignore. "client" variables are bundled into the browser; keep every other one on the server.`,
    '```',
    ...c.envVars.map((v) => envLine(v, c.keyless)),
    '```',
    'Never print, log or commit a secret value, and never put SVC_SECRET_KEY (or any secret) in client-side code.',
    '',
    '## 3. Redirect URLs and JavaScript origins',
    allowlistInstruction(c),
    `Redirect URLs: ${c.redirectUrls.join(', ')}`,
    `JavaScript origins: ${c.javascriptOrigins.join(', ')}`,
    '',
    `## 4. Wire up ${spec.name}`,
    ...numbered(wiringOf(c)),
    '',
    '## 5. Social sign-in',
    `Development: mode shared_development with provider ${c.oauth.sharedDevelopment.provider}; no OAuth credentials are required, users can sign in right away.`,
    `Production: mode customer_owned with provider ${c.oauth.production.provider}; credentials required. ${c.oauth.productionNote}`,
    '',
    '## 6. Verify',
    `1. Public config: ${clientConfigCurl(c)} must answer 200 with application.id "${app.id}" and oauth.sharedDevelopment.mode "shared_development".`,
    `2. ${backendCheckInstruction(c)}`,
    `3. Start the app at ${spec.devOrigin}, sign in, and confirm the browser comes back to ${c.callbackUrl} and the app shows the signed-in user.`,
    '',
    'When done, tell the user which files you changed and which secret values they still need to provide.',
  );
  return lines.join('\n');
}
