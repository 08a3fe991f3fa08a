import path from 'node:path';
import { expect } from 'vitest';
import { readEnvFile } from './support/prompt-app.ts';
import { describePythonPromptApp } from './support/python.ts';

/** Flask with Authlib's Flask client, on Debian's python3 and python3-* packages. */
describePythonPromptApp({
  framework: 'flask',
  origin: 'http://localhost:5000',
  // The URL Flask's server prints: the app sends the browser on to its redirect URI's host.
  opensAt: 'http://127.0.0.1:5000',
  output: (output) => expect(output).toContain('http://127.0.0.1:5000'),
  steps: ['Install', 'Environment', 'file app.py', 'Run'],
  module: 'app',
  modules: ['authlib', 'flask', 'requests', 'dotenv'],
  verifiesAccessTokens: true,
  // A second language against a real catalog: two permissions granted, the checked one among them.
  catalog: {
    identifier: 'https://api.billing.example',
    name: 'Billing',
    permissions: ['invoices.read', 'invoices.approve'],
    orgAdmin: ['invoices.read', 'invoices.approve'],
  },
  inspect: ({ dir, run, steps, serverUrl, clientId }) => {
    const env = readEnvFile(path.join(dir, '.env'));
    expect(env.get('SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('SVC_REDIRECT_URI')).toBe('http://localhost:5000/auth/callback');
    expect(env.get('SVC_SECRET_KEY')).toBe('');
    expect(env.get('FLASK_SECRET_KEY')).toMatch(/^[A-Za-z0-9+/=]{40,}$/);
    expect(steps.find((s) => s.kind === 'file')?.body).toContain('load_dotenv()');
    expect(run).toBe('python3 app.py');
  },
});
