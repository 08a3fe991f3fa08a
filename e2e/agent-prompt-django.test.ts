import path from 'node:path';
import { expect } from 'vitest';
import { readEnvFile } from './support/prompt-app.ts';
import { describePythonPromptApp } from './support/python.ts';

/** Django with Authlib's Django client (one file, its own manage.py), on Debian's python3 and python3-* packages. */
describePythonPromptApp({
  framework: 'django',
  origin: 'http://localhost:8000',
  // The URL Django's runserver prints: the app sends the browser on to its redirect URI's host.
  opensAt: 'http://127.0.0.1:8000',
  output: (output) => expect(output).toContain('http://127.0.0.1:8000/'),
  steps: ['Install', 'Environment', 'file app.py', 'Run'],
  module: 'app',
  modules: ['authlib', 'django', 'requests', 'dotenv'],
  verifiesAccessTokens: true,
  inspect: ({ dir, run, steps, serverUrl, clientId }) => {
    const env = readEnvFile(path.join(dir, '.env'));
    expect(env.get('SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('SVC_REDIRECT_URI')).toBe('http://localhost:8000/auth/callback');
    expect(env.get('SVC_SECRET_KEY')).toBe('');
    expect(env.get('DJANGO_SECRET_KEY')).toMatch(/^[A-Za-z0-9+/=]{40,}$/);
    expect(steps.find((s) => s.kind === 'file')?.body).toContain('load_dotenv()');
    expect(run).toBe('python3 app.py runserver 8000');
  },
});
