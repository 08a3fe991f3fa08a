import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { describePromptApp, readEnvFile } from './support/prompt-app.ts';

/** The react context: a Vite SPA, a public client with PKCE; nothing secret anywhere in it. */
describePromptApp({
  framework: 'react',
  origin: 'http://localhost:5173',
  steps: ['Install', 'Environment', 'file index.html', 'file vite.config.js', 'file src/main.jsx', 'file src/App.jsx', 'Run'],
  verifiesAccessTokens: false,
  inspect: ({ dir, run, steps, serverUrl, clientId }) => {
    const env = readEnvFile(path.join(dir, '.env.local'));
    expect(env.get('VITE_SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('VITE_SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('VITE_SVC_REDIRECT_URI')).toBe('http://localhost:5173/callback');
    expect(env.get('VITE_SVC_POST_LOGOUT_REDIRECT_URI')).toBe('http://localhost:5173/');
    // Everything in it is compiled into the browser bundle: no secret, and no variable outside VITE_.
    expect([...env.keys()].every((name) => name.startsWith('VITE_'))).toBe(true);
    expect([...env.keys()].some((name) => /SECRET/.test(name))).toBe(false);
    for (const step of steps) {
      expect(step.body).not.toMatch(/client_secret|SECRET_KEY/);
    }
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toContain('.env.local');
    // The majors the files are written for.
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const [name, major] of [
      ['vite', 6],
      ['oidc-client-ts', 3],
      ['react-oidc-context', 3],
      ['react', 19],
    ] as const) {
      expect(pkg.dependencies[name], name).toMatch(new RegExp(`^\\^${major}\\.`));
    }
    expect(run).toBe('npx vite');
  },
});
