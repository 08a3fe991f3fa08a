import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { describePromptApp, readEnvFile } from './support/prompt-app.ts';

describePromptApp({
  framework: 'express',
  origin: 'http://localhost:3000',
  // Another name for the app than the one it prints: it sends the browser on to its redirect URI's host.
  opensAt: 'http://127.0.0.1:3000',
  steps: ['Install', 'Environment', 'file server.mjs', 'Run'],
  verifiesAccessTokens: true,
  // The product declares an API whose first permission org_admin holds: the app checks that one,
  // answers true, and false once the role no longer grants it.
  catalog: {
    identifier: 'https://api.reports.example',
    name: 'Reports',
    permissions: ['reports.view', 'reports.export'],
    orgAdmin: ['reports.export'],
  },
  inspect: ({ dir, run, serverUrl, clientId }) => {
    // Every value filled in, the session secret generated, nothing to paste while keyless.
    const env = readEnvFile(path.join(dir, '.env'));
    expect(env.get('SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('SVC_REDIRECT_URI')).toBe('http://localhost:3000/auth/callback');
    expect(env.get('SVC_SECRET_KEY')).toBe('');
    expect(env.get('SESSION_SECRET')).toMatch(/^[A-Za-z0-9+/=]{40,}$/);
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toContain('.env');
    // Node loads the .env itself.
    expect(run).toBe('node --env-file=.env server.mjs');
  },
});
