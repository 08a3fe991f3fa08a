import path from 'node:path';
import { expect } from 'vitest';
import { readEnvFile } from './support/prompt-app.ts';
import { describePythonPromptApp } from './support/python.ts';

/** FastAPI with Authlib's Starlette client, on Debian's python3 and python3-* packages. */
describePythonPromptApp({
  framework: 'fastapi',
  origin: 'http://localhost:8000',
  // The URL uvicorn prints: the app sends the browser on to its redirect URI's host.
  opensAt: 'http://127.0.0.1:8000',
  output: (output) => expect(output).toContain('http://127.0.0.1:8000'),
  steps: ['Install', 'Environment', 'file main.py', 'Run'],
  module: 'main',
  modules: ['authlib', 'fastapi', 'uvicorn', 'httpx', 'starlette', 'itsdangerous', 'dotenv'],
  verifiesAccessTokens: true,
  inspect: ({ dir, run, steps, serverUrl, clientId }) => {
    const env = readEnvFile(path.join(dir, '.env'));
    expect(env.get('SVC_ISSUER')).toBe(serverUrl);
    expect(env.get('SVC_CLIENT_ID')).toBe(clientId);
    expect(env.get('SVC_REDIRECT_URI')).toBe('http://localhost:8000/auth/callback');
    expect(env.get('SVC_SECRET_KEY')).toBe('');
    expect(env.get('SESSION_SECRET')).toMatch(/^[A-Za-z0-9+/=]{40,}$/);
    expect(steps.find((s) => s.kind === 'file')?.body).toContain('load_dotenv()');
    expect(run).toBe('python3 -m uvicorn main:app --port 8000');
  },
});
