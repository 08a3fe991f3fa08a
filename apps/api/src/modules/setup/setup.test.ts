import {
  SUPPORTED_FRAMEWORKS,
  type TAgentContextResponse,
  type TFramework,
  ZAgentContextRequest,
  ZAgentContextResponse,
} from '@svc/contracts/agent-context';
import { PRODUCT_PERMISSION_PATTERN, reservedPermissionReason } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { PERMISSIONS } from '@svc/contracts/permissions';
import { DEV_ENGINE_DEFAULT_PORT, SVC_DEFAULT_PORT } from '@svc/contracts/ports';
import { describe, expect, it } from 'vitest';
import { FRAMEWORKS } from './frameworks.ts';
import { type AgentContextInput, buildAgentContext, permissionCheckOf } from './service.ts';

const PK = `pk_live_${'a1B2c3D4e5F6g7H8i9J0k1L2'}`;

/** Frameworks of apps that sign people in (OIDC clients); `mcp` is a protected resource, tested on its own below. */
const SIGN_IN_FRAMEWORKS = SUPPORTED_FRAMEWORKS.filter((f) => FRAMEWORKS[f].kind !== 'mcp_server');

function input(overrides: Partial<AgentContextInput> = {}): AgentContextInput {
  return {
    publicUrl: 'https://id.example.com',
    engine: { socialProvider: 'google' },
    application: {
      id: 'app_01',
      slug: 'shop',
      name: 'Shop',
      logoUrl: null,
      publishableKey: PK,
      status: 'active',
      redirectUrls: [],
      allowedOrigins: [],
      postLogoutRedirectUrls: [],
      clientType: 'confidential',
      oauth: {},
    },
    organization: { slug: 'acme', name: 'Acme' },
    keyless: false,
    framework: undefined,
    catalogPermissions: [],
    ...overrides,
  };
}

function envNames(ctx: TAgentContextResponse): string[] {
  return ctx.framework.envVars.map((v) => v.name);
}

/** Library name that must appear in each framework's install command. */
const EXPECTED_PACKAGE: Record<TFramework, string> = {
  nextjs: 'next-auth',
  react: 'react-oidc-context',
  express: 'openid-client',
  fastapi: 'authlib',
  django: 'authlib',
  flask: 'authlib',
  laravel: 'socialiteproviders/oidc',
  rails: 'omniauth_openid_connect',
  rest: 'nothing to install',
  mcp: '@modelcontextprotocol/sdk',
};

const EXPECTED_INSTALLER: Record<TFramework, string> = {
  nextjs: 'npm install',
  react: 'npm install',
  express: 'npm install',
  fastapi: 'pip install',
  django: 'pip install',
  flask: 'pip install',
  laravel: 'composer require',
  rails: 'bundle add',
  rest: 'node --version',
  mcp: 'npm install',
};

describe('buildAgentContext per framework', () => {
  for (const framework of SIGN_IN_FRAMEWORKS) {
    describe(framework, () => {
      const ctx = buildAgentContext(input({ framework }));

      it('passes the response schema', () => {
        expect(() => ZAgentContextResponse.parse(ctx)).not.toThrow();
        expect(ctx.framework.id).toBe(framework);
      });

      it('has a framework-specific install command naming the library', () => {
        expect(ctx.framework.installCommand).toContain(EXPECTED_INSTALLER[framework]);
        expect(ctx.framework.installCommand).toContain(EXPECTED_PACKAGE[framework]);
      });

      it('fills the public values and leaves every secret empty', () => {
        const byName = new Map(ctx.framework.envVars.map((v) => [v.name, v]));
        const pkVar = ctx.framework.envVars.find((v) => v.value === PK);
        expect(pkVar?.name).toMatch(/SVC_PUBLISHABLE_KEY$/);
        expect(ctx.framework.envVars.some((v) => v.value === 'app_01' && v.name.endsWith('SVC_CLIENT_ID'))).toBe(true);
        expect(ctx.framework.envVars.some((v) => v.value === ctx.oidc.issuer && v.name.endsWith('SVC_ISSUER'))).toBe(true);
        expect(ctx.framework.envVars.some((v) => v.value === 'https://id.example.com' && v.name.endsWith('SVC_BASE_URL'))).toBe(true);
        for (const v of ctx.framework.envVars) {
          if (v.secret) {
            expect(v.value).toBeNull();
            expect(v.where).toBe('server');
            expect(v.description.length).toBeGreaterThan(20);
          }
        }
        expect(byName.size).toBe(ctx.framework.envVars.length);
      });

      it('uses the framework defaults when the application has no allowlists', () => {
        expect(ctx.redirectUrlsSource).toBe('framework_default');
        expect(ctx.javascriptOriginsSource).toBe('framework_default');
        expect(ctx.redirectUrls).toEqual([ctx.framework.callbackUrl]);
        expect(ctx.javascriptOrigins).toEqual([FRAMEWORKS[framework].devOrigin]);
      });

      it('writes a prompt with the publishable key, install command and verification', () => {
        expect(ctx.aiAgentPrompt).toContain(PK);
        expect(ctx.aiAgentPrompt).toContain(ctx.framework.installCommand);
        expect(ctx.aiAgentPrompt).toContain(ctx.endpoints.clientConfig);
        expect(ctx.aiAgentPrompt).toContain(ctx.endpoints.backendApplication);
        expect(ctx.aiAgentPrompt).toMatch(/ask the user to paste the (application's )?secret key from the svc console/);
        expect(ctx.aiAgentPrompt).toContain('never receives or stores user passwords');
        expect(ctx.aiAgentPrompt).toContain('shared_development');
        expect(ctx.aiAgentPrompt).toContain(ctx.oauth.productionNote);
        for (const url of [...ctx.redirectUrls, ...ctx.javascriptOrigins]) {
          expect(ctx.aiAgentPrompt).toContain(url);
        }
        for (const v of ctx.framework.envVars) {
          expect(ctx.aiAgentPrompt).toContain(v.value === null ? `${v.name}=` : `${v.name}=${v.value}`);
        }
      });

      it('gives ordered, concrete steps', () => {
        expect(ctx.steps.length).toBeGreaterThanOrEqual(6);
        expect(ctx.steps[0]).toContain(ctx.framework.installCommand);
        expect(ctx.steps.some((s) => s.includes(ctx.endpoints.clientConfig))).toBe(true);
      });
    });
  }
});

describe('environment variable names follow each ecosystem', () => {
  const names = (framework: TFramework) => envNames(buildAgentContext(input({ framework })));

  it('nextjs exposes the publishable key as NEXT_PUBLIC_ and keeps secrets on the server', () => {
    const ctx = buildAgentContext(input({ framework: 'nextjs' }));
    expect(names('nextjs')).toEqual(
      expect.arrayContaining(['NEXT_PUBLIC_SVC_PUBLISHABLE_KEY', 'SVC_ISSUER', 'SVC_CLIENT_ID', 'SVC_SECRET_KEY', 'AUTH_SECRET']),
    );
    for (const v of ctx.framework.envVars) {
      expect(v.name.startsWith('NEXT_PUBLIC_')).toBe(v.where === 'client');
    }
    expect(ctx.framework.callbackUrl).toBe('http://localhost:3000/api/auth/callback/svc');
  });

  it('react uses VITE_ variables only and carries no secret at all', () => {
    const ctx = buildAgentContext(input({ framework: 'react' }));
    expect(names('react')).toEqual(expect.arrayContaining(['VITE_SVC_PUBLISHABLE_KEY', 'VITE_SVC_ISSUER', 'VITE_SVC_CLIENT_ID']));
    expect(ctx.framework.envVars.every((v) => v.name.startsWith('VITE_') && v.where === 'client' && !v.secret)).toBe(true);
    expect(ctx.javascriptOrigins).toEqual(['http://localhost:5173']);
  });

  it.each(['express', 'fastapi', 'django', 'flask', 'laravel', 'rails', 'rest'] as const)('%s uses SVC_ server variables', (framework) => {
    expect(names(framework)).toEqual(
      expect.arrayContaining(['SVC_PUBLISHABLE_KEY', 'SVC_SECRET_KEY', 'SVC_ISSUER', 'SVC_CLIENT_ID', 'SVC_BASE_URL']),
    );
    const ctx = buildAgentContext(input({ framework }));
    expect(ctx.framework.envVars.every((v) => v.where === 'server')).toBe(true);
    expect(ctx.framework.envVars.find((v) => v.name === 'SVC_SECRET_KEY')).toMatchObject({ secret: true, value: null });
  });
});

describe('development origins', () => {
  /** Each framework's own dev server default: what `npm run dev`, `flask run`, ... listen on. */
  const OWN_DEFAULT: Record<TFramework, string> = {
    express: 'http://localhost:3000',
    nextjs: 'http://localhost:3000',
    react: 'http://localhost:5173',
    flask: 'http://localhost:5000',
    fastapi: 'http://localhost:8000',
    django: 'http://localhost:8000',
    rails: 'http://localhost:3000',
    laravel: 'http://localhost:8000',
    rest: 'http://localhost:8080',
    mcp: 'http://localhost:3000',
  };

  it.each(SIGN_IN_FRAMEWORKS)('%s: origin, callback and verification step are on its own dev server', (framework) => {
    const ctx = buildAgentContext(input({ framework }));
    expect(ctx.javascriptOrigins).toEqual([OWN_DEFAULT[framework]]);
    expect(new URL(ctx.framework.callbackUrl).origin).toBe(OWN_DEFAULT[framework]);
    expect(ctx.redirectUrls.every((u) => new URL(u).origin === OWN_DEFAULT[framework])).toBe(true);
    expect(ctx.aiAgentPrompt).toContain(`open ${OWN_DEFAULT[framework]}`);
  });

  it("no framework's dev server default is one of svc's default ports", () => {
    for (const spec of Object.values(FRAMEWORKS)) {
      const port = Number(new URL(spec.devOrigin).port);
      expect([SVC_DEFAULT_PORT, DEV_ENGINE_DEFAULT_PORT], spec.id).not.toContain(port);
    }
  });
});

describe('framework selection', () => {
  it('defaults to rest when framework is missing or empty', () => {
    expect(buildAgentContext(input({ framework: undefined })).framework.id).toBe('rest');
    expect(buildAgentContext(input({ framework: '' })).framework.id).toBe('rest');
  });

  it('accepts case and surrounding space variants', () => {
    expect(buildAgentContext(input({ framework: ' NextJS ' })).framework.id).toBe('nextjs');
  });

  it('rejects an unknown framework with unsupported_framework listing the allowed values', () => {
    let caught: unknown;
    try {
      buildAgentContext(input({ framework: 'sveltekit' }));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    const error = caught as AppError;
    expect(error.code).toBe('unsupported_framework');
    expect(error.status).toBe(400);
    for (const framework of SUPPORTED_FRAMEWORKS) {
      expect(error.message).toContain(framework);
    }
    expect(error.message).toContain('sveltekit');
  });

  it('does not echo an oversized framework value back in full', () => {
    const long = 'x'.repeat(5000);
    expect(() => buildAgentContext(input({ framework: long }))).toThrow(AppError);
    try {
      buildAgentContext(input({ framework: long }));
    } catch (error) {
      expect((error as AppError).message.length).toBeLessThan(300);
    }
  });

  it('the request schema keeps framework a free string so the service answers unknown values', () => {
    expect(ZAgentContextRequest.parse({ framework: 'sveltekit' }).framework).toBe('sveltekit');
    expect(ZAgentContextRequest.safeParse({ framework: 'x'.repeat(65) }).success).toBe(false);
    expect(ZAgentContextRequest.parse({ publishable_key: [PK, PK], keyless: '1' }).keyless).toBe('1');
  });
});

describe('allowlists', () => {
  it('uses the application allowlists when present', () => {
    const ctx = buildAgentContext(
      input({
        framework: 'nextjs',
        application: {
          ...input().application,
          redirectUrls: ['https://shop.example.com/api/auth/callback/svc', 'https://shop.example.com/after'],
          allowedOrigins: ['https://shop.example.com'],
        },
      }),
    );
    expect(ctx.redirectUrlsSource).toBe('application');
    expect(ctx.javascriptOriginsSource).toBe('application');
    expect(ctx.redirectUrls).toEqual(['https://shop.example.com/api/auth/callback/svc', 'https://shop.example.com/after']);
    expect(ctx.javascriptOrigins).toEqual(['https://shop.example.com']);
    expect(ctx.framework.callbackUrl).toBe('https://shop.example.com/api/auth/callback/svc');
    expect(ZAgentContextResponse.parse(ctx).redirectUrls).toHaveLength(2);
  });

  it('derives the callback from the allowed origin and says to register it when it is missing', () => {
    const ctx = buildAgentContext(
      input({
        framework: 'express',
        application: {
          ...input().application,
          redirectUrls: ['/dashboard'],
          allowedOrigins: ['https://shop.example.com'],
        },
      }),
    );
    expect(ctx.framework.callbackUrl).toBe('https://shop.example.com/auth/callback');
    expect(ctx.framework.envVars.find((v) => v.name === 'SVC_REDIRECT_URI')?.value).toBe('https://shop.example.com/auth/callback');
    expect(ctx.steps.some((s) => s.includes('https://shop.example.com/auth/callback is not in that list'))).toBe(true);
  });

  it('mixes sources independently', () => {
    const ctx = buildAgentContext(
      input({
        framework: 'react',
        application: { ...input().application, allowedOrigins: ['https://spa.example.com'] },
      }),
    );
    expect(ctx.redirectUrlsSource).toBe('framework_default');
    expect(ctx.javascriptOriginsSource).toBe('application');
    expect(ctx.redirectUrls).toEqual(['https://spa.example.com/callback']);
  });
});

describe('endpoints, service and oauth', () => {
  it('builds absolute URLs from the public URL without doubling slashes', () => {
    const ctx = buildAgentContext(input({ publicUrl: 'https://id.example.com/' }));
    expect(ctx.service).toEqual({
      name: 'svc',
      apiVersion: 'v1',
      baseUrl: 'https://id.example.com',
      docsUrl: 'https://id.example.com/docs',
      openapiUrl: 'https://id.example.com/v1/openapi.json',
    });
    expect(ctx.endpoints).toMatchObject({
      clientConfig: 'https://id.example.com/v1/client/config',
      backendApplication: 'https://id.example.com/v1/backend/application',
      hostedSignIn: `https://id.example.com/signin?publishable_key=${PK}`,
      hostedSignUp: `https://id.example.com/signup?publishable_key=${PK}`,
      recovery: 'https://id.example.com/auth/recovery',
    });
    // svc is the OpenID Provider: issuer = the public URL, client id = the application id.
    expect(ctx.oidc).toEqual({
      issuer: 'https://id.example.com',
      clientId: 'app_01',
      discoveryUrl: 'https://id.example.com/.well-known/openid-configuration',
    });
  });

  it('reports shared development and customer-owned production social modes', () => {
    const ctx = buildAgentContext(input({ application: { ...input().application, oauth: { productionProvider: 'github' } } }));
    expect(ctx.oauth.sharedDevelopment).toEqual({ mode: 'shared_development', provider: 'google', credentialsRequired: false });
    expect(ctx.oauth.production).toEqual({ mode: 'customer_owned', provider: 'github', credentialsRequired: true });
    expect(ctx.oauth.productionNote).toMatch(/customer-owned/);
    expect(ctx.oauth.productionNote).toMatch(/before public launch/i);
  });

  it('falls back to the engine social provider for production', () => {
    expect(buildAgentContext(input()).oauth.production.provider).toBe('google');
  });

  it('exposes only the public application view', () => {
    const ctx = buildAgentContext(input());
    expect(ctx.project).toEqual({
      application: { id: 'app_01', slug: 'shop', name: 'Shop', logoUrl: null, publishableKey: PK, status: 'active' },
      organization: { slug: 'acme', name: 'Acme' },
      keyless: false,
    });
  });

  it('warns when the application is disabled', () => {
    const ctx = buildAgentContext(input({ application: { ...input().application, status: 'disabled' } }));
    expect(ctx.project.application.status).toBe('disabled');
    expect(ctx.aiAgentPrompt).toContain('application_disabled');
    expect(ctx.steps[0]).toContain('disabled');
  });
});

describe('keyless development', () => {
  const ctx = buildAgentContext(input({ keyless: true, framework: 'nextjs' }));

  it('says it is keyless, needs no account, and how to claim a real app', () => {
    expect(ctx.project.keyless).toBe(true);
    expect(ctx.aiAgentPrompt).toContain('keyless development app');
    expect(ctx.aiAgentPrompt).toContain('no svc account');
    expect(ctx.aiAgentPrompt).toContain('To claim a real application');
    expect(ctx.aiAgentPrompt).toContain('https://id.example.com/signup');
    expect(ctx.aiAgentPrompt).toContain('https://id.example.com/auth/console');
  });

  it('verifies with keyless=1 and skips the backend check', () => {
    expect(ctx.aiAgentPrompt).toContain('https://id.example.com/v1/client/config?keyless=1');
    expect(ctx.aiAgentPrompt).not.toContain('Authorization: Bearer');
    expect(ctx.framework.envVars.find((v) => v.name === 'SVC_SECRET_KEY')).toMatchObject({ value: null, secret: true });
    expect(() => ZAgentContextResponse.parse(ctx)).not.toThrow();
  });
});

describe('the claim, told the same way before it and after it', () => {
  const CLAIM_URL = 'https://id.example.com/keyless/claim?application=app_01&token=t';
  const SERVER: TFramework[] = ['nextjs', 'express', 'fastapi', 'django', 'flask', 'laravel', 'rails', 'rest'];
  for (const framework of SIGN_IN_FRAMEWORKS) {
    const browserOnly = !SERVER.includes(framework);
    it(`${framework}: before the claim, which choice to make on the claim page and the one step it asks${browserOnly ? ' (none)' : ''}`, () => {
      const app = { ...input().application, clientType: 'public' as const, claimUrl: CLAIM_URL };
      const before = buildAgentContext(input({ keyless: true, framework, application: app }));
      const claim = before.steps.find((s) => s.startsWith('To claim this application')) as string;
      expect(before.aiAgentPrompt).toContain(claim);
      expect(claim).toContain(CLAIM_URL);
      expect(claim).toContain('registers on it the redirect URL, post-logout redirect URL and allowed origins this app used');
      if (browserOnly) {
        expect(claim).toContain('choose "It runs only in the browser"');
        expect(claim).not.toMatch(/SVC_SECRET_KEY|restart/);
      } else {
        expect(claim).toContain('choose "It has a server"');
        expect(claim).toContain(`paste it after SVC_SECRET_KEY= in ${FRAMEWORKS[framework].envFile}`);
        expect(claim).toContain(`restart the app (${FRAMEWORKS[framework].runCommand})`);
      }
      // One term for browser origins, the console's.
      expect(before.aiAgentPrompt).not.toMatch(/JavaScript origin/i);
      expect(before.steps.join(' ')).not.toMatch(/JavaScript origin/i);

      // After the claim: the context of the claimed application says the same about the secret.
      const claimedType = browserOnly ? 'public' : 'confidential';
      const after = buildAgentContext(input({ framework, application: { ...app, clientType: claimedType, claimUrl: null } }));
      const secret = after.framework.envVars.find((v) => v.name === 'SVC_SECRET_KEY');
      if (browserOnly) {
        expect(secret).toBeUndefined();
        expect(after.aiAgentPrompt).not.toContain('confidential client');
      } else {
        expect(secret?.description).not.toMatch(/Leave this empty/);
        expect(after.aiAgentPrompt).toContain('a confidential OIDC client');
        expect(after.aiAgentPrompt).toMatch(
          /ask the user to paste the application's secret key from the svc console after SVC_SECRET_KEY=/,
        );
        expect(after.aiAgentPrompt).toContain('claimed');
      }
    });
  }
});

describe('security: the context never carries a secret', () => {
  const FAKE_SECRET_KEY = `sk_live_${'A'.repeat(40)}`;
  const FAKE_HASH = `deadbeef${'0'.repeat(56)}`;
  const FAKE_OAUTH_SECRET = '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et';
  const FAKE_WEBHOOK_SECRET = `whsec_${'b'.repeat(32)}`;
  const FAKE_ENGINE_TOKEN = 'engine-api-token-should-never-appear';

  /** An application as a careless caller might pass it: a whole row plus secret-shaped extras. */
  function leakyInput(framework: TFramework, keyless = false): AgentContextInput {
    const base = input({ framework, keyless });
    const application = {
      ...base.application,
      secretKeyHash: FAKE_HASH,
      secretKeyPrefix: 'sk_live_AAAA',
      secretKey: FAKE_SECRET_KEY,
      webhookSecret: FAKE_WEBHOOK_SECRET,
      oauth: { productionProvider: 'google', clientSecret: FAKE_OAUTH_SECRET },
    };
    const engine = { ...base.engine, clientSecret: FAKE_OAUTH_SECRET, apiToken: FAKE_ENGINE_TOKEN };
    const organization = { ...base.organization, billingSecret: FAKE_WEBHOOK_SECRET };
    return { ...base, application, engine, organization };
  }

  for (const framework of SUPPORTED_FRAMEWORKS) {
    for (const keyless of [false, true]) {
      it(`${framework}${keyless ? ' (keyless)' : ''} leaks none of the extra secret fields`, () => {
        const result = buildAgentContext(leakyInput(framework, keyless));
        const json = JSON.stringify(result);
        for (const secret of [FAKE_SECRET_KEY, FAKE_HASH, FAKE_OAUTH_SECRET, FAKE_WEBHOOK_SECRET, FAKE_ENGINE_TOKEN]) {
          expect(json).not.toContain(secret);
        }
        expect(json).not.toContain('sk_live_');
        expect(json).not.toContain('whsec_');
        expect(json).not.toContain('deadbeef');
        expect(json).not.toContain('secretKeyHash');
        expect(json).not.toContain('secretKeyPrefix');
        // As a field name (a serialized input field), not the word: Auth.js's config option is named clientSecret.
        expect(json).not.toContain('"clientSecret"');
        expect(result.framework.envVars.filter((v) => v.secret).every((v) => v.value === null)).toBe(true);
      });
    }
  }

  it('the response schema refuses a secret variable with a value', () => {
    const ctx = buildAgentContext(input({ framework: 'express' }));
    const tampered = {
      ...ctx,
      framework: {
        ...ctx.framework,
        envVars: ctx.framework.envVars.map((v) => (v.secret ? { ...v, value: FAKE_SECRET_KEY } : v)),
      },
    };
    expect(ZAgentContextResponse.safeParse(tampered).success).toBe(false);
  });
});

/**
 * rails and laravel cannot run on svc's test machines (no Ruby or PHP toolchain is packaged for
 * them), so their prompts are checked value by value: every environment variable the code reads
 * is one the environment step writes, and the code asks for what the runnable frameworks prove
 * end to end (organization scope, PKCE, the callback path, sign-out through the end-session
 * endpoint with id_token_hint, access tokens verified against the JWKS).
 */
describe.each(['rails', 'laravel'] as const)('%s prompt, checked by value', (framework) => {
  const keyless = buildAgentContext(input({ framework, keyless: true }));
  const text = keyless.aiAgentPrompt;
  const written = new Set(keyless.framework.envVars.map((v) => v.name));
  const read = [...text.matchAll(/(?:ENV\.fetch\(|ENV\[|env\()'([A-Z_]+)'/g)].map((m) => m[1] as string);

  it('reads only variables the environment step writes, and all the OIDC ones', () => {
    expect(read.length).toBeGreaterThan(0);
    for (const name of read) {
      expect(written, name).toContain(name);
    }
    for (const name of ['SVC_ISSUER', 'SVC_CLIENT_ID', 'SVC_SECRET_KEY', 'SVC_REDIRECT_URI', 'SVC_POST_LOGOUT_REDIRECT_URI']) {
      expect(read, name).toContain(name);
    }
  });

  it('asks for the organization scope with PKCE and serves the callback path it registers', () => {
    expect(text).toMatch(/organization/);
    expect(text).toMatch(/'organization'|:organization/);
    expect(text).toMatch(/pkce: true|enablePKCE\(\)/);
    expect(text).toContain(`'${FRAMEWORKS[framework].callbackPath}'`);
    expect(keyless.framework.callbackUrl).toBe(`${FRAMEWORKS[framework].devOrigin}${FRAMEWORKS[framework].callbackPath}`);
  });

  it('signs out through the end-session endpoint and verifies access tokens against the JWKS', () => {
    expect(text).toContain('end_session_endpoint');
    expect(text).toContain('id_token_hint');
    expect(text).toContain('post_logout_redirect_uri');
    expect(text).toContain('jwks_uri');
    expect(text).toContain('at+jwt');
    expect(text).toMatch(/RS256|parseKeySet/);
  });

  it('runs on its own default port, and the environment step writes nothing to paste while keyless', () => {
    expect(FRAMEWORKS[framework].runCommand).toContain(new URL(FRAMEWORKS[framework].devOrigin).port);
    expect(text).toContain('SVC_SECRET_KEY=\n');
    expect(text).toContain('SVC_SECRET_KEY stays empty');
  });
});

describe('a browser-only framework and a confidential application', () => {
  it('react says the client type must be public first; a public application hears nothing of it', () => {
    const confidential = buildAgentContext(input({ framework: 'react' }));
    expect(confidential.aiAgentPrompt).toContain('a browser app cannot keep a secret');
    const application = { ...input().application, clientType: 'public' as const };
    const pub = buildAgentContext(input({ framework: 'react', application }));
    expect(pub.aiAgentPrompt).not.toContain('a browser app cannot keep a secret');
    expect(buildAgentContext(input({ framework: 'react', keyless: true })).aiAgentPrompt).not.toContain('cannot keep a secret');
  });
});

describe("the product's permissions: role and one check, never svc's own catalog", () => {
  const REPORTS = { name: 'reports.export', resourceName: 'Reports API', resourceIdentifier: 'https://api.reports.example' };
  /** What each framework's code or notes write for the check, with the permission in it. */
  const CHECK_CODE: Record<TFramework, (name: string) => string[]> = {
    express: (name) => [
      `const CHECKED_PERMISSION = '${name}';`,
      'check: { permission: CHECKED_PERMISSION, allowed: permissions.includes(CHECKED_PERMISSION) }',
    ],
    rest: (name) => [
      `const CHECKED_PERMISSION = '${name}';`,
      'check: { permission: CHECKED_PERMISSION, allowed: permissions.includes(CHECKED_PERMISSION) }',
    ],
    nextjs: (name) => [
      `export const CHECKED_PERMISSION = '${name}';`,
      'check: { permission: CHECKED_PERMISSION, allowed: permissions.includes(CHECKED_PERMISSION) }',
    ],
    react: (name) => [`const CHECKED_PERMISSION = '${name}';`, "permissions.includes(CHECKED_PERMISSION) ? 'yes' : 'no'"],
    fastapi: (name) => [
      `CHECKED_PERMISSION = '${name}'`,
      "'check': {'permission': CHECKED_PERMISSION, 'allowed': CHECKED_PERMISSION in permissions}",
    ],
    django: (name) => [
      `CHECKED_PERMISSION = '${name}'`,
      "'check': {'permission': CHECKED_PERMISSION, 'allowed': CHECKED_PERMISSION in permissions}",
    ],
    flask: (name) => [
      `CHECKED_PERMISSION = '${name}'`,
      "'check': {'permission': CHECKED_PERMISSION, 'allowed': CHECKED_PERMISSION in permissions}",
    ],
    laravel: (name) => [
      `'checked_permission' => '${name}'`,
      "'allowed' => in_array(config('services.svc.checked_permission'), $permissions, true)",
    ],
    rails: (name) => [`CHECKED_PERMISSION = '${name}'`, "'allowed' => permissions.include?(CHECKED_PERMISSION)"],
    mcp: (name) => [`const REQUIRED_PERMISSION = '${name}';`, "String(claims.scope ?? '').split(' ').includes(REQUIRED_PERMISSION)"],
  };

  describe.each(SIGN_IN_FRAMEWORKS)('%s', (framework) => {
    it('with no API permission declared, checks the example invoices.read and says how to declare your own', () => {
      for (const keyless of [false, true]) {
        const ctx = buildAgentContext(input({ framework, keyless }));
        expect(ctx.permissionCheck).toEqual({ permission: 'invoices.read', source: 'example', resource: null });
        for (const line of CHECK_CODE[framework]('invoices.read')) {
          expect(ctx.aiAgentPrompt).toContain(line);
        }
        expect(ctx.aiAgentPrompt).toContain('docs/authorization.md, section "Declaring your API and its permissions"');
        expect(ctx.aiAgentPrompt).toContain('the code checks an example name, invoices.read');
        expect(ctx.aiAgentPrompt).toMatch(
          /answers no \(false\) until the platform declares the permission on an API resource and a role grants it/,
        );
        expect(ctx.aiAgentPrompt).toContain('"none yet"');
        expect(ctx.steps.some((s) => s.includes('the code checks an example name, invoices.read'))).toBe(true);
      }
    });

    it("with a catalog, checks its first permission and names its API's identifier", () => {
      const ctx = buildAgentContext(input({ framework, catalogPermissions: [REPORTS] }));
      expect(ctx.permissionCheck).toEqual({
        permission: 'reports.export',
        source: 'catalog',
        resource: { identifier: 'https://api.reports.example', name: 'Reports API' },
      });
      for (const line of CHECK_CODE[framework]('reports.export')) {
        expect(ctx.aiAgentPrompt).toContain(line);
      }
      expect(ctx.aiAgentPrompt).toContain('The code checks one permission of that catalog, reports.export');
      expect(ctx.aiAgentPrompt).toContain('resource=https://api.reports.example (RFC 8707)');
      // An API's token carries the permissions as its scope alone (docs/authorization.md).
      expect(ctx.aiAgentPrompt).toContain("its scope is exactly the person's permissions on that API");
      expect(ctx.aiAgentPrompt).not.toContain('invoices.read');
      expect(ctx.aiAgentPrompt).not.toContain('example name');
    });

    it("names svc's control-plane permissions nowhere: no app is taught to read them from a token", () => {
      for (const catalogPermissions of [[], [REPORTS]]) {
        for (const keyless of [false, true]) {
          const json = JSON.stringify(buildAgentContext(input({ framework, keyless, catalogPermissions })));
          for (const permission of PERMISSIONS) {
            expect(json, permission).not.toContain(permission);
          }
        }
      }
    });

    it('shows the product role and the product permissions, "none yet" when there are none', () => {
      const ctx = buildAgentContext(input({ framework }));
      expect(ctx.aiAgentPrompt).toContain('org_role');
      if (framework === 'laravel' || framework === 'rails') {
        expect(ctx.aiAgentPrompt).toMatch(/\|\| 'none yet'|\?: 'none yet'/);
        return;
      }
      expect(ctx.aiAgentPrompt).toContain('id="org_role"');
      expect(ctx.aiAgentPrompt).toMatch(/<dt>Product permissions<\/dt>/);
      expect(ctx.aiAgentPrompt).toMatch(/\|\| 'none yet'|or 'none yet'/);
      expect(ctx.aiAgentPrompt).toContain('id="checked_permission"');
      expect(ctx.aiAgentPrompt).toContain('id="allowed"');
    });
  });

  it('skips catalog rows the catalog itself would refuse: control-plane names, malformed names or identifiers', () => {
    const rows = [
      { name: 'tenant.read', resourceName: 'Old', resourceIdentifier: 'https://api.old.example' },
      { name: "x'; drop", resourceName: 'Old', resourceIdentifier: 'https://api.old.example' },
      { name: 'ok.read', resourceName: 'Old', resourceIdentifier: 'https://api.old.example/#frag' },
      REPORTS,
    ];
    expect(permissionCheckOf(rows).permission).toBe('reports.export');
    expect(permissionCheckOf(rows.slice(0, 3))).toEqual({ permission: 'invoices.read', source: 'example', resource: null });
    expect(permissionCheckOf([])).toMatchObject({ source: 'example' });
  });

  it('the example is a well-formed product name that svc does not reserve', () => {
    expect(permissionCheckOf([]).permission).toMatch(PRODUCT_PERMISSION_PATTERN);
    expect(reservedPermissionReason(permissionCheckOf([]).permission)).toBeUndefined();
  });

  it('react checks in the browser only to decide what to show, and sends its API the access token to check', () => {
    const ctx = buildAgentContext(input({ framework: 'react', catalogPermissions: [REPORTS] }));
    expect(ctx.aiAgentPrompt).not.toContain('/api/me answers');
    expect(ctx.aiAgentPrompt).toContain('your own API checks the same permission in the access token it receives');
  });
});

describe('the mcp framework: an MCP server protected by svc', () => {
  const MCP_URL = 'http://localhost:3000/mcp';
  const NOTES = { name: 'notes.read', resourceName: 'Notes MCP', resourceIdentifier: MCP_URL };

  it('passes the response schema, for an application and keyless', () => {
    for (const keyless of [false, true]) {
      expect(() => ZAgentContextResponse.parse(buildAgentContext(input({ framework: 'mcp', keyless })))).not.toThrow();
    }
  });

  it('is a resource server: the issuer and its canonical URI, no client id, no secret, no sign-in', () => {
    const ctx = buildAgentContext(input({ framework: 'mcp' }));
    expect(ctx.framework.envVars).toEqual([
      expect.objectContaining({ name: 'SVC_ISSUER', value: 'https://id.example.com', secret: false }),
      expect.objectContaining({ name: 'MCP_RESOURCE', value: MCP_URL, secret: false }),
      expect.objectContaining({ name: 'PORT', value: '3000', secret: false }),
    ]);
    const prompt = ctx.aiAgentPrompt;
    expect(prompt).toMatch(/^Protect this MCP server with svc\./);
    expect(prompt.match(/^## .+$/gm)).toEqual([
      '## What svc is',
      '## Roles and permissions',
      '## 1. Install',
      '## 2. Environment',
      '## 3. Register the MCP server in svc',
      '## 4. Code',
      '## 5. Run',
      '## 6. Development allowances',
    ]);
    for (const absent of ['SVC_SECRET_KEY', 'SVC_CLIENT_ID', PK, 'redirect URI', 'claim page', 'keyless', 'sign-out']) {
      expect(prompt, absent).not.toContain(absent);
    }
    // What protects it: Protected Resource Metadata, the 401 challenge, aud = the resource, the permission in scope.
    expect(prompt).toContain(`resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp"`);
    expect(prompt).toContain(`aud ${MCP_URL}`);
    expect(prompt).toContain("jwtVerify(token, jwks, { issuer, audience: resource, typ: 'at+jwt', clockTolerance: 5 })");
    expect(prompt).toContain('insufficient_scope');
    expect(prompt).toContain('authorization_servers: [issuer]');
    expect(prompt).toContain('npm install @modelcontextprotocol/sdk@1 jose@6 zod@4');
  });

  it('asks for the API resource to be registered, or says it is when the catalog has it', () => {
    const bare = buildAgentContext(input({ framework: 'mcp' }));
    expect(bare.aiAgentPrompt).toContain(`register this MCP server as an API resource`);
    expect(bare.aiAgentPrompt).toContain(`with identifier ${MCP_URL} exactly`);
    expect(bare.aiAgentPrompt).toContain("const REQUIRED_PERMISSION = 'invoices.read';");
    const registered = buildAgentContext(input({ framework: 'mcp', catalogPermissions: [NOTES] }));
    expect(registered.aiAgentPrompt).toContain(`This MCP server is already registered in svc: the API resource "Notes MCP"`);
    expect(registered.aiAgentPrompt).toContain("const REQUIRED_PERMISSION = 'notes.read';");
    expect(registered.aiAgentPrompt).not.toContain('invoices.read');
  });

  it("names svc's control-plane permissions nowhere", () => {
    for (const catalogPermissions of [[], [NOTES]]) {
      const prompt = buildAgentContext(input({ framework: 'mcp', catalogPermissions })).aiAgentPrompt;
      for (const permission of PERMISSIONS) {
        expect(prompt).not.toContain(`'${permission}'`);
      }
    }
  });
});
