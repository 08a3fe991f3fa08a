import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { describePromptApp, readEnvFile } from './support/prompt-app.ts';

/** The nextjs context: Next.js 15 with Auth.js v5's OIDC provider, keyless (a public client with PKCE). */
describePromptApp({
  framework: 'nextjs',
  origin: 'http://localhost:3000',
  // Another name for the app: middleware.js sends the browser on to its redirect URI's host.
  opensAt: 'http://127.0.0.1:3000',
  steps: [
    'Install',
    'Environment',
    'file auth.js',
    'file app/api/auth/[...nextauth]/route.js',
    'file app/login/route.js',
    'file app/actions.js',
    'file app/layout.jsx',
    'file app/page.jsx',
    'file app/profile/page.jsx',
    'file app/api/me/route.js',
    'file middleware.js',
    'Run',
  ],
  verifiesAccessTokens: true,
  inspect: ({ dir, run, serverUrl, clientId }) => {
    const env = readEnvFile(path.join(dir, '.env.local'));
    expect(env.get('SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('SVC_POST_LOGOUT_REDIRECT_URI')).toBe('http://localhost:3000/');
    expect(env.get('SVC_REDIRECT_URI')).toBe('http://localhost:3000/api/auth/callback/svc');
    expect(env.get('SVC_SECRET_KEY')).toBe('');
    expect(env.get('AUTH_SECRET')).toMatch(/^[A-Za-z0-9+/=]{40,}$/);
    // Only the public values reach the browser bundle.
    expect([...env.keys()].filter((name) => name.startsWith('NEXT_PUBLIC_')).sort()).toEqual([
      'NEXT_PUBLIC_SVC_BASE_URL',
      'NEXT_PUBLIC_SVC_PUBLISHABLE_KEY',
    ]);
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toContain('.env.local');
    // The Auth.js line the files are written for, pinned (a beta: no range).
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies['next-auth']).toMatch(/^\^?5\.0\.0-beta\.32$/);
    expect(pkg.dependencies.next).toMatch(/^\^15\./);
    expect(run).toBe('npx next dev --port 3000 -H 127.0.0.1');
  },
});
