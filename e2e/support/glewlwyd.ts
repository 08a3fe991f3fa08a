import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { accessSync, constants, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from '../../test/support/server.ts';

/**
 * glewlwyd 2.7 from Debian (`apt-get install glewlwyd sqlite3`) brought up from nothing as an
 * OIDC engine for svc, in a couple of seconds: a fresh sqlite database, a new RSA signing key,
 * the OIDC plugin (PKCE, end-session, `groups` and `email_verified` claims), a confidential
 * client for svc and two users who have already granted it their scopes. It is the worked
 * example of docs/engine-generic.md; run it alone with
 * `node --import tsx e2e/support/glewlwyd.ts <svc public URL>` to get a glewlwyd for a local svc.
 */

export const GLEWLWYD_BIN = process.env.GLEWLWYD_BIN ?? '/usr/bin/glewlwyd';
const DEBIAN_CONFIG = '/etc/glewlwyd/glewlwyd.conf';
const DEBIAN_SCHEMA = '/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3';
const DEBIAN_WEBAPP = '/usr/share/glewlwyd/webapp';
// Debian ships the webapp's config.json as a directory holding the real file.
const DEBIAN_WEBAPP_CONFIG = '/etc/glewlwyd/config-2.7.json/config.json';

/** The Debian packages this needs (CI installs them: .ci/run). */
export const GLEWLWYD_PACKAGES = ['glewlwyd', 'sqlite3'];

/** The username is the email: svc's login_hint fills glewlwyd's username field. */
export type GlewlwydUser = { username: string; email: string; name: string; password: string; groups: string[] };

/** The two people of this engine: one in the platform admin group, one in no group. */
export const GLEWLWYD_USERS = {
  admin: {
    username: 'ada@glewlwyd.test',
    email: 'ada@glewlwyd.test',
    name: 'Ada Admin',
    password: 'ada-password-1',
    groups: ['platform-admins'],
  },
  user: { username: 'bob@glewlwyd.test', email: 'bob@glewlwyd.test', name: 'Bob User', password: 'bob-password-1', groups: ['staff'] },
} as const satisfies Record<string, GlewlwydUser>;

export type Glewlwyd = {
  /** ENGINE_ISSUER for svc (also the plugin's `iss`). */
  issuer: string;
  /** The server's base URL (its login page is `<url>/login.html`). */
  url: string;
  clientId: string;
  clientSecret: string;
  /** What glewlwyd printed, for a failing test's message. */
  output: () => string;
  stop: () => Promise<void>;
};

/** What is missing to run glewlwyd here, or undefined. */
export function glewlwydMissing(): string | undefined {
  for (const file of [GLEWLWYD_BIN, '/usr/bin/sqlite3', DEBIAN_SCHEMA, DEBIAN_WEBAPP_CONFIG]) {
    try {
      accessSync(file, constants.R_OK);
    } catch {
      return `${file} not found (install Debian's packages: apt-get install -y ${GLEWLWYD_PACKAGES.join(' ')})`;
    }
  }
  return undefined;
}

/** Debian's configuration with this instance's port, URL, database, log and webapp. */
function configFile(opts: { port: number; url: string; dir: string }): string {
  const kept = readFileSync(DEBIAN_CONFIG, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(port|external_url|log_mode|log_level|log_file|static_files_path|@include)\b/.test(line));
  return [
    ...kept,
    `port=${opts.port}`,
    'bind_address="127.0.0.1"',
    `external_url="${opts.url}"`,
    'log_mode="console"',
    'log_level="WARNING"',
    `static_files_path="${opts.dir}/webapp/"`,
    `database = { type = "sqlite3"; path = "${opts.dir}/glewlwyd.db"; };`,
    '',
  ].join('\n');
}

/** The database user backend stores these properties too: `groups` comes out as an array. */
const USER_DATA_FORMAT = {
  picture: { multiple: false, read: true, write: true, 'profile-read': true, 'profile-write': true },
  'reset-credentials-code': { multiple: false, read: true, write: true, 'profile-read': false, 'profile-write': false },
  'user-code': { multiple: false, read: true, write: true, 'profile-read': true, 'profile-write': true },
  groups: { multiple: true, read: true, write: true, 'profile-read': true, 'profile-write': false },
  email_verified: { multiple: false, read: true, write: true, 'profile-read': true, 'profile-write': false },
};

const SCOPES = ['openid', 'email', 'profile'];

class Session {
  private cookie = '';
  constructor(private readonly api: string) {}

  async call(method: string, pathname: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.api}${pathname}`, {
      method,
      headers: { 'content-type': 'application/json', ...(this.cookie ? { cookie: this.cookie } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) {
      this.cookie = setCookie.split(';')[0] ?? '';
    }
    const text = await res.text();
    if (!res.ok) {
      throw new Error(`glewlwyd ${method} ${pathname} answered ${res.status}: ${text.slice(0, 500)}`);
    }
    return text ? JSON.parse(text) : undefined;
  }
}

/** Starts a fresh glewlwyd whose client `svc` accepts `<svcUrl>/auth/callback` and logs out to `<svcUrl>/signin`. */
export async function startGlewlwyd(opts: { svcUrl: string; port?: number }): Promise<Glewlwyd> {
  const port = opts.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const issuer = `${url}/api/oidc`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-glewlwyd-'));
  const clientId = 'svc';
  const clientSecret = `secret-${port}-${Date.now().toString(36)}`;

  // The webapp (login page) with the real config.json, not Debian's directory of that name.
  cpSync(DEBIAN_WEBAPP, path.join(dir, 'webapp'), { recursive: true, dereference: true, filter: (src) => !src.endsWith('/config.json') });
  cpSync(DEBIAN_WEBAPP_CONFIG, path.join(dir, 'webapp', 'config.json'));

  const database = path.join(dir, 'glewlwyd.db');
  const schema = spawnSync('/usr/bin/sqlite3', [database], {
    input: `${readFileSync(DEBIAN_SCHEMA, 'utf8')}
UPDATE g_user_module_instance SET gumi_parameters = '${JSON.stringify({ 'use-glewlwyd-connection': true, 'data-format': USER_DATA_FORMAT })}' WHERE gumi_name = 'database';
INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, gs_password_max_age) VALUES ('email', 'Email', 'Email address', 1, 0);
INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, gs_password_max_age) VALUES ('profile', 'Profile', 'Name and groups', 1, 0);
UPDATE g_scope SET gs_password_required = 1 WHERE gs_name = 'openid';
UPDATE g_client_module_instance SET gcmi_parameters = replace(gcmi_parameters, '"post_logout_redirect_uri":{', '"post_logout_redirect_uris":{"multiple":true,"read":true,"write":true},"post_logout_redirect_uri":{') WHERE gcmi_name = 'database';
`,
    encoding: 'utf8',
  });
  if (schema.status !== 0) {
    throw new Error(`sqlite3 could not create glewlwyd's database: ${schema.stderr}`);
  }
  const conf = path.join(dir, 'glewlwyd.conf');
  writeFileSync(conf, configFile({ port, url, dir }));

  let output = '';
  const child: ChildProcess = spawn(GLEWLWYD_BIN, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
      if (child.exitCode === null) {
        child.kill('SIGKILL');
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const admin = new Session(`${url}/api`);
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.call('POST', '/auth/', { username: 'admin', password: 'password' });
        break;
      } catch (error) {
        if (child.exitCode !== null || attempt > 100) {
          throw new Error(`glewlwyd did not start: ${(error as Error).message}\n${output}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await admin.call('POST', '/mod/plugin/', {
      module: 'oidc',
      name: 'oidc',
      display_name: 'OpenID Connect',
      enabled: true,
      parameters: {
        iss: issuer,
        'jwt-type': 'rsa',
        'jwt-key-size': '256',
        key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        cert: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        'access-token-duration': 3600,
        'refresh-token-duration': 1209600,
        'code-duration': 600,
        'refresh-token-rolling': true,
        'allow-non-oidc': false,
        'auth-type-code-enabled': true,
        'auth-type-token-enabled': false,
        'auth-type-id-token-enabled': false,
        'auth-type-none-enabled': false,
        'auth-type-password-enabled': false,
        'auth-type-client-enabled': false,
        'auth-type-device-enabled': false,
        'auth-type-refresh-enabled': true,
        scope: [],
        'additional-parameters': [],
        claims: [
          // A multi-valued user property comes out as an array.
          { name: 'groups', 'user-property': 'groups', type: 'string', mandatory: true, 'on-demand': false, scope: [] },
          {
            name: 'email_verified',
            'user-property': 'email_verified',
            type: 'boolean',
            'boolean-value-true': '1',
            'boolean-value-false': '0',
            mandatory: true,
            'on-demand': false,
            scope: [],
          },
        ],
        'jwks-show': true,
        'secret-type': 'pairwise',
        'address-claim': {
          type: 'no',
          formatted: '',
          street_address: '',
          locality: '',
          region: '',
          postal_code: '',
          country: '',
          mandatory: false,
        },
        'name-claim': 'mandatory',
        'name-claim-scope': [],
        'email-claim': 'mandatory',
        'email-claim-scope': [],
        'scope-claim': 'no',
        'scope-claim-scope': [],
        'allowed-scope': SCOPES,
        'pkce-allowed': true,
        'pkce-method-plain-allowed': false,
        'introspection-revocation-allowed': false,
        'register-client-allowed': false,
        // end_session_endpoint in discovery.
        'session-management-allowed': true,
        'session-cookie-name': 'GLEWLWYD2_OIDC_SID',
        'session-cookie-expiration': 2419200,
        'front-channel-logout-allowed': true,
        'back-channel-logout-allowed': true,
        'request-parameter-allow': false,
        'request-maximum-exp': 3600,
        'encrypt-out-token-allow': false,
      },
    });
    await admin.call('POST', '/client/', {
      client_id: clientId,
      name: 'svc',
      enabled: true,
      confidential: true,
      client_secret: clientSecret,
      password: clientSecret,
      redirect_uri: [`${opts.svcUrl}/auth/callback`],
      authorization_type: ['code', 'refresh_token'],
      // Without it every token call is 403 unauthorized_client.
      token_endpoint_auth_method: ['client_secret_basic'],
      post_logout_redirect_uri: `${opts.svcUrl}/signin`,
      // What the OIDC plugin checks an end-session's post_logout_redirect_uri against.
      post_logout_redirect_uris: [`${opts.svcUrl}/signin`],
      scope: [],
    });
    for (const user of Object.values(GLEWLWYD_USERS)) {
      await admin.call('POST', '/user/', {
        username: user.username,
        name: user.name,
        email: user.email,
        password: user.password,
        enabled: true,
        scope: SCOPES,
        groups: user.groups,
        email_verified: '1',
      });
      // svc is first-party: each person grants it the scopes once, here, so no consent page.
      const person = new Session(`${url}/api`);
      await person.call('POST', '/auth/', { username: user.username, password: user.password });
      await person.call('PUT', `/auth/grant/${clientId}`, { scope: SCOPES.join(' ') });
      await person.call('POST', '/auth/logout/').catch(() => undefined);
    }
    const discovery = await fetch(`${issuer}/.well-known/openid-configuration`);
    if (!discovery.ok) {
      throw new Error(`glewlwyd's discovery answered ${discovery.status}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { issuer, url, clientId, clientSecret, output: () => output, stop };
}

/** The settings svc needs for this engine (docs/engine-generic.md). */
export function svcSettingsFor(engine: Glewlwyd): Record<string, string> {
  return {
    ENGINE_ISSUER: engine.issuer,
    ENGINE_CLIENT_ID: engine.clientId,
    ENGINE_CLIENT_SECRET: engine.clientSecret,
    ENGINE_SCOPES: SCOPES.join(' '),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const svcUrl = process.argv[2] ?? 'http://127.0.0.1:7150';
  const engine = await startGlewlwyd({ svcUrl, port: Number(process.env.GLEWLWYD_PORT ?? 4593) });
  for (const [name, value] of Object.entries(svcSettingsFor(engine))) {
    console.log(`${name}=${value}`);
  }
  console.log(
    `# users: ${Object.values(GLEWLWYD_USERS)
      .map((u) => `${u.email} / ${u.password}`)
      .join(', ')}; Ctrl-C stops it`,
  );
  process.on('SIGINT', () => {
    void engine.stop().then(() => process.exit(0));
  });
}
