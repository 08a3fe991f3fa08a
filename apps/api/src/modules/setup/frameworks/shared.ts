import type { TAgentPermissionCheck, TFramework } from '@svc/contracts/agent-context';

/** Public values the service fills into environment variables. */
export type PublicValue =
  | 'publishableKey'
  | 'issuer'
  | 'clientId'
  | 'baseUrl'
  | 'callbackUrl'
  | 'postLogoutUrl'
  | 'devPort'
  | 'resourceUrl';

/**
 * One environment variable of a framework integration. A secret is never given a value (the
 * service has none to give, and setup context must never carry one: docs/architecture.md section 7) and only
 * lives on the server, which the type enforces.
 */
export type EnvVarSpec =
  | { name: string; kind: 'public'; value: PublicValue; where: 'server' | 'client'; description: string }
  | {
      name: string;
      kind: 'secret';
      /**
       * `secretKey`: the application's sk_live_ key (the OIDC client secret of a confidential
       * client), pasted by the user; `local`: a random secret the environment step generates with
       * `generate` (a POSIX shell command substitution), never issued by svc.
       */
      secret: 'secretKey' | 'local';
      generate?: string;
      where: 'server';
      description: string;
    };

/** What the files and notes may mention. Never a secret. */
export type WiringValues = {
  issuer: string;
  discoveryUrl: string;
  clientId: string;
  callbackUrl: string;
  postLogoutUrl: string;
  baseUrl: string;
  hostedSignIn: string;
  /** The keyless development application: a public client (PKCE alone), no secret key. */
  keyless: boolean;
  /** The product permission the app's code checks (a catalog name or an example; never secret). */
  permissionCheck: TAgentPermissionCheck;
  /** An MCP server's canonical URI (the `mcp` framework): its API resource identifier in svc. */
  resourceUrl: string;
};

/** A file of the app, written exactly as given (path relative to the project root). */
export type AppFile = { path: string; language: string; content: string };

export type FrameworkSpec = {
  id: TFramework;
  /**
   * `app` (the default): an app that signs people in, an OIDC client of svc. `mcp_server`: an MCP
   * server that accepts svc's access tokens (a resource server, no client): its prompt registers
   * it as an API resource instead, and its callbackPath is its endpoint.
   */
  kind?: 'app' | 'mcp_server';
  name: string;
  language: string;
  oidcLibrary: { name: string; url?: string };
  /**
   * Shell commands, run once in the project's root, that install the dependencies (majors pinned).
   * An agent runs them as written.
   */
  installCommand: string;
  envFile: string;
  /** How the app reads envFile (said in the prompt, so nobody has to guess). */
  envLoading: string;
  envVars: EnvVarSpec[];
  /**
   * The framework's own default development origin (its dev server's default port), never svc's:
   * svc's default ports (@svc/contracts/ports) are chosen to stay clear of these.
   */
  devOrigin: string;
  /**
   * The app's JSON route that verifies svc's access tokens and answers the person's role and one
   * permission check; null for a browser-only app, whose API is elsewhere.
   */
  meRoute: '/api/me' | null;
  /** Path of the OIDC redirect URI the app's code serves. */
  callbackPath: string;
  /** Path the app sends people to after signing out through svc's end-session endpoint. */
  postLogoutPath: string;
  /**
   * The app's complete source files for sign-in, callback, a protected page showing the person,
   * their organization, product role and product permissions, sign-out and (server frameworks)
   * access-token verification in /api/me with one product permission checked. Values come from
   * envFile, so the files do not change with the application; the one permission they check is
   * written in the code, as an app names what its routes require.
   */
  files: (v: WiringValues) => AppFile[];
  /** The command that starts the app at devOrigin, loading envFile. */
  runCommand: string;
  /** Steps after the files, in order: what to open and what the app then shows. */
  notes: (v: WiringValues) => string[];
};

const SECRET_KEY_NOTE =
  'Application secret key, the OIDC client secret of this confidential client. Ask the user to paste it from the svc console (shown once when the application is created; rotate it there if lost). Server only; never commit it or expose it to a browser.';

export const secretKey = (name = 'SVC_SECRET_KEY'): EnvVarSpec => ({
  name,
  kind: 'secret',
  secret: 'secretKey',
  where: 'server',
  description: SECRET_KEY_NOTE,
});

/** 32 random bytes, base64: POSIX tools only, so the environment step runs on any machine. */
export const RANDOM_SECRET = '$(head -c 32 /dev/urandom | base64)';

export const localSecret = (name: string, what: string): EnvVarSpec => ({
  name,
  kind: 'secret',
  secret: 'local',
  generate: RANDOM_SECRET,
  where: 'server',
  description: `Random secret your app generates itself, not issued by svc (the environment step generates it): ${what}. Never commit it.`,
});

export const pub = (name: string, value: PublicValue, where: 'server' | 'client', description: string): EnvVarSpec => ({
  name,
  kind: 'public',
  value,
  where,
  description,
});

export const ISSUER_NOTE = 'OIDC issuer: svc itself (discovery at <issuer>/.well-known/openid-configuration); use it exactly as given.';

/** The server-side variables every backend framework shares. */
export const serverVars = (): EnvVarSpec[] => [
  pub('SVC_ISSUER', 'issuer', 'server', ISSUER_NOTE),
  pub('SVC_CLIENT_ID', 'clientId', 'server', 'OIDC client id: the application id.'),
  secretKey(),
  pub('SVC_REDIRECT_URI', 'callbackUrl', 'server', "OIDC redirect URI: this app's callback, registered on the application."),
  pub(
    'SVC_POST_LOGOUT_REDIRECT_URI',
    'postLogoutUrl',
    'server',
    'Where svc sends the browser after sign-out (end-session endpoint), registered on the application.',
  ),
  pub('SVC_PUBLISHABLE_KEY', 'publishableKey', 'server', 'Publishable key (pk_live_...): identifies the application; public.'),
  pub('SVC_BASE_URL', 'baseUrl', 'server', 'svc API base URL.'),
];

/**
 * The name the generated code checks while the product declares no API permission: the
 * developer's own to replace. Not one of svc's control-plane permissions, which never reach a token.
 */
export const EXAMPLE_PERMISSION = 'invoices.read';

/** Where a developer reads how to declare their API's permissions (a section of svc's docs). */
export const DECLARING_PERMISSIONS_DOC = 'svc\'s docs/authorization.md, section "Declaring your API and its permissions"';

/** The permission as a string literal of JavaScript, Python, PHP and Ruby alike (names are [a-z0-9._:-]). */
export function permissionLiteral(v: WiringValues): string {
  return `'${v.permissionCheck.permission}'`;
}

/**
 * The comment above the permission constant of the generated code: where the name comes from and
 * what to do with it. An API identifier is a canonical URL (no line break), safe in a comment.
 */
export function permissionComment(v: WiringValues, prefix: '//' | '#'): string {
  const check = v.permissionCheck;
  const lines = check.resource
    ? [
        `The product permission this app checks: one your API ${check.resource.identifier} declares in svc.`,
        'Replace it with the permission each of your routes requires.',
      ]
    : [
        'The product permission this app checks: an example name. It is false until your API declares',
        'it in svc and a role grants it; replace it with your own permission.',
      ];
  return lines.map((line) => `${prefix} ${line}`).join('\n');
}
