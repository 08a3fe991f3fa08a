import path from 'node:path';
import { expect } from 'vitest';
import { describePromptApp, readEnvFile } from './support/prompt-app.ts';

/** The rest context: the raw authorization code + PKCE exchange, with fetch and no library. */
describePromptApp({
  framework: 'rest',
  origin: 'http://localhost:8080',
  steps: ['Install', 'Environment', 'file server.mjs', 'Run'],
  verifiesAccessTokens: true,
  inspect: ({ dir, steps, serverUrl, clientId }) => {
    const env = readEnvFile(path.join(dir, '.env'));
    expect(env.get('SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('SVC_REDIRECT_URI')).toBe('http://localhost:8080/auth/callback');
    // No dependency at all: the reference server imports only Node's standard library.
    const server = steps.find((s) => s.kind === 'file');
    const imports = [...(server?.body ?? '').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.every((name) => name?.startsWith('node:'))).toBe(true);
  },
});
