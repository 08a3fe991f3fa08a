import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { describeWhenInstalled } from './browser.ts';
import { describePromptApp, type PromptAppOptions } from './prompt-app.ts';

/** Debian's interpreter, whose python3-* packages stand in for the prompt's pip install. */
export const DEBIAN_PYTHON = '/usr/bin/python3';

/** The Debian packages the Python prompt apps run on (CI installs them: .ci/run). */
export const DEBIAN_PYTHON_PACKAGES = [
  'python3-authlib',
  'python3-flask',
  'python3-fastapi',
  'python3-uvicorn',
  'python3-django',
  'python3-httpx',
  'python3-starlette',
  'python3-itsdangerous',
  'python3-dotenv',
  'python3-requests',
];

/** pip distribution name -> the module it installs. */
const MODULE_OF: Record<string, string> = {
  authlib: 'authlib',
  flask: 'flask',
  fastapi: 'fastapi',
  uvicorn: 'uvicorn',
  django: 'django',
  httpx: 'httpx',
  starlette: 'starlette',
  itsdangerous: 'itsdangerous',
  'python-dotenv': 'dotenv',
  requests: 'requests',
};

export type Requirement = { name: string; clauses: Array<{ op: string; version: string }> };

/** The requirements a `... pip install 'a>=1,<2' b` command names, in order. */
export function pipRequirements(command: string): Requirement[] {
  const args = /\bpip install (.+)$/m.exec(command)?.[1];
  if (!args) {
    throw new Error(`no pip install in: ${command}`);
  }
  return args
    .split(/\s+/)
    .map((arg) => arg.replace(/^'|'$/g, ''))
    .map((spec) => {
      const [, name = '', rest = ''] = /^([A-Za-z0-9_.-]+)(.*)$/.exec(spec) ?? [];
      const clauses = rest
        .split(',')
        .filter((c) => c !== '')
        .map((c) => {
          const [, op = '', version = ''] = /^(>=|<=|==|~=|<|>)(\d[\w.]*)$/.exec(c) ?? [];
          if (!op) {
            throw new Error(`unreadable version clause "${c}" in ${spec}`);
          }
          return { op, version };
        });
      return { name: name.toLowerCase(), clauses };
    });
}

function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+~-]/).map((n) => Number.parseInt(n, 10) || 0);
  const pb = b.split(/[.+~-]/).map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) {
      return d;
    }
  }
  return 0;
}

export function satisfies(version: string, clauses: Requirement['clauses']): boolean {
  return clauses.every(({ op, version: bound }) => {
    const c = compareVersions(version, bound);
    return op === '>=' ? c >= 0 : op === '>' ? c > 0 : op === '<' ? c < 0 : op === '<=' ? c <= 0 : c === 0;
  });
}

/** Versions of installed distributions as Debian's python3 sees them (null when absent). */
function debianVersions(names: string[]): Record<string, string | null> {
  const script = `import importlib.metadata as m, json, sys
out = {}
for n in sys.argv[1:]:
    try:
        out[n] = m.version(n)
    except m.PackageNotFoundError:
        out[n] = None
print(json.dumps(out))`;
  const result = spawnSync(DEBIAN_PYTHON, ['-c', script, ...names], { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`${DEBIAN_PYTHON} failed: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Record<string, string | null>;
}

function debianImports(modules: string[]): string | undefined {
  const result = spawnSync(DEBIAN_PYTHON, ['-c', modules.map((m) => `import ${m}`).join('; ')], { encoding: 'utf8' });
  return result.error ? result.error.message : result.status === 0 ? undefined : result.stderr.trim().split('\n').at(-1);
}

/**
 * A Python framework's prompt followed literally on Debian's python3 and python3-* packages:
 * PyPI is out of reach, so the Install section (a venv and pip install) is not run; instead every
 * requirement it names must be installed for Debian's python3 at a version its range admits.
 * `python3` in the commands and the app resolves to Debian's interpreter (a PATH entry of its
 * own), so the Run command runs as written. The generated module is also imported under other
 * environments: a pasted secret key makes a confidential client, and an http issuer is refused
 * unless it is on this machine. Without the packages, CI (E2E_REQUIRED=1) fails and
 * elsewhere the suite is skipped loudly.
 */
export function describePythonPromptApp(
  opts: Omit<PromptAppOptions, 'skip' | 'env'> & {
    /** Modules Debian's python3 must import for the app to run. */
    modules: string[];
    /** The generated app's module (its file without .py), which defines `oauth`. */
    module: string;
  },
): void {
  const missing = debianImports(opts.modules);
  if (missing !== undefined) {
    // Skipped (or, under E2E_REQUIRED=1, failed) by the same rule as a missing Chromium.
    describeWhenInstalled(
      `e2e: the ${opts.framework} agent context, followed literally`,
      `${DEBIAN_PYTHON} cannot import ${opts.modules.join(', ')} (${missing}); install Debian's packages: apt-get install -y --no-install-recommends ${DEBIAN_PYTHON_PACKAGES.join(' ')}`,
      () => {},
    );
    return;
  }
  const bin = mkdtempSync(path.join(os.tmpdir(), 'svc-debian-python-'));
  symlinkSync(DEBIAN_PYTHON, path.join(bin, 'python3'));
  afterAll(() => rmSync(bin, { recursive: true, force: true }));
  describePromptApp({
    ...opts,
    // Started, signed in and out: the app printed no deprecation warning (Authlib's or httpx's).
    output: (output) => {
      expect(output).not.toMatch(/DeprecationWarning/);
      opts.output?.(output);
    },
    skip: ['Install'],
    env: { PATH: `${bin}:${process.env.PATH}` },
    inspect: (project) => {
      const install = project.steps.find((s) => s.section === 'Install');
      expect(install?.body).toMatch(/^python3 -m venv \.venv && \. \.venv\/bin\/activate && pip install /);
      const requirements = pipRequirements(install?.body ?? '');
      expect(requirements.length).toBeGreaterThan(0);
      const versions = debianVersions(requirements.map((r) => r.name));
      for (const requirement of requirements) {
        // Each one is pinned to a major range, and Debian's package is inside it.
        expect(
          requirement.clauses.map((c) => c.op),
          requirement.name,
        ).toContain('<');
        expect(MODULE_OF[requirement.name], `${requirement.name} maps to a module`).toBeDefined();
        expect(debianImports([MODULE_OF[requirement.name] as string]), `${DEBIAN_PYTHON} imports ${requirement.name}`).toBeUndefined();
        const version = versions[requirement.name];
        expect(version, `${requirement.name} installed for ${DEBIAN_PYTHON}`).toBeTruthy();
        expect(satisfies(version as string, requirement.clauses), `${requirement.name} ${version} within its range`).toBe(true);
      }
      // The Run command's python3 is Debian's.
      const which = spawnSync('bash', ['-c', 'command -v python3'], { env: { PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' });
      expect(which.stdout.trim()).toBe(path.join(bin, 'python3'));
      // The client each environment gets, read from the generated module itself.
      const client = (extra: Record<string, string>) => {
        const script = `import json, ${opts.module} as m
c = m.oauth.svc
print(json.dumps({'secret': c.client_secret, 'kwargs': c.client_kwargs, 'metadata_url': c._server_metadata_url}))`;
        const result = spawnSync(DEBIAN_PYTHON, ['-c', script], {
          cwd: project.dir,
          env: { PATH: process.env.PATH, HOME: process.env.HOME, ...extra },
          encoding: 'utf8',
        });
        return { status: result.status, stderr: result.stderr, value: result.status === 0 ? JSON.parse(result.stdout) : undefined };
      };
      const keyless = client({});
      expect(keyless.status, keyless.stderr).toBe(0);
      expect(keyless.value).toEqual({
        secret: null,
        kwargs: { scope: 'openid email profile organization', code_challenge_method: 'S256', token_endpoint_auth_method: 'none' },
        metadata_url: `${project.serverUrl}/.well-known/openid-configuration`,
      });
      // With the secret key pasted, a confidential client: the key is the client secret, sent with HTTP Basic.
      const confidential = client({ SVC_SECRET_KEY: 'sk_live_pasted' });
      expect(confidential.value).toMatchObject({
        secret: 'sk_live_pasted',
        kwargs: { code_challenge_method: 'S256', token_endpoint_auth_method: 'client_secret_basic' },
      });
      // Plain http only for an svc on this machine.
      expect(client({ SVC_ISSUER: 'https://id.example.com' }).value?.metadata_url).toBe(
        'https://id.example.com/.well-known/openid-configuration',
      );
      expect(client({ SVC_ISSUER: 'http://[::1]:7150' }).status).toBe(0);
      for (const issuer of ['http://id.example.com', 'http://localhost.example.com', 'ftp://localhost']) {
        const refused = client({ SVC_ISSUER: issuer });
        expect(refused.status, issuer).not.toBe(0);
        expect(refused.stderr, issuer).toContain('SVC_ISSUER must be https://');
      }
      // The access-token check of the generated module against tokens signed here: only an RFC 9068
      // access token (header typ at+jwt) for this client from this issuer, unexpired, passes; an ID
      // token (typ JWT) with the same claims and signature does not. Returns each case's sub or null.
      const verifier = `import json, time, ${opts.module} as m
from authlib.jose import JsonWebKey, JsonWebSignature
key = JsonWebKey.generate_key('RSA', 2048, is_private=True)
other = JsonWebKey.generate_key('RSA', 2048, is_private=True)
jwks = {'keys': [dict(key.as_dict(is_private=False), kid='k1')]}
now = int(time.time())
def token(typ='at+jwt', signer=key, **claims):
    body = {'iss': 'https://issuer.test', 'aud': m.CLIENT_ID, 'sub': 'usr_1', 'iat': now, 'exp': now + 300, **claims}
    return JsonWebSignature().serialize_compact({'alg': 'RS256', 'typ': typ, 'kid': 'k1'}, json.dumps(body).encode(), signer).decode()
cases = {
    'access token': token(),
    'ID token': token('JWT'),
    'no typ': token(''),
    'other audience': token(aud='app_other'),
    'other issuer': token(iss='https://evil.test'),
    'expired': token(exp=now - 3600),
    'other key': token(signer=other),
    'garbage': 'abc.def.ghi',
}
print(json.dumps({name: (m.access_token_claims(t, jwks, 'https://issuer.test') or {}).get('sub') for name, t in cases.items()}))`;
      const verified = spawnSync(DEBIAN_PYTHON, ['-c', verifier], {
        cwd: project.dir,
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        encoding: 'utf8',
      });
      expect(verified.status, verified.stderr).toBe(0);
      expect(JSON.parse(verified.stdout)).toEqual({
        'access token': 'usr_1',
        'ID token': null,
        'no typ': null,
        'other audience': null,
        'other issuer': null,
        expired: null,
        'other key': null,
        garbage: null,
      });
      opts.inspect?.(project);
    },
  });
}
