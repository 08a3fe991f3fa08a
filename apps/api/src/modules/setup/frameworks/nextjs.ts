import { type FrameworkSpec, localSecret, pub, secretKey } from './shared.ts';

const PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const nextjs: FrameworkSpec & { id: 'nextjs' } = {
  id: 'nextjs',
  name: 'Next.js',
  language: 'TypeScript',
  oidcLibrary: { name: 'next-auth (Auth.js v5) generic OIDC provider', url: 'https://authjs.dev' },
  installCommand: 'npm install next-auth@beta',
  envLoading: 'Next.js loads .env.local itself.',
  envFile: '.env.local',
  envVars: [
    pub('NEXT_PUBLIC_SVC_PUBLISHABLE_KEY', 'publishableKey', 'client', 'Publishable key (pk_live_...): public, safe in the browser.'),
    pub('NEXT_PUBLIC_SVC_BASE_URL', 'baseUrl', 'client', 'svc API base URL.'),
    pub('SVC_ISSUER', 'issuer', 'server', 'OIDC issuer: svc itself; use it exactly as given.'),
    pub('SVC_CLIENT_ID', 'clientId', 'server', 'OIDC client id: the application id.'),
    secretKey(),
    localSecret('AUTH_SECRET', 'run `npx auth secret` (or `openssl rand -base64 33`); Auth.js encrypts its session cookie with it'),
  ],
  devOrigin: 'http://localhost:3000',
  callbackPath: '/api/auth/callback/svc',
  notes: () => [
    `Create auth.ts at the project root: import NextAuth from 'next-auth'; export const { handlers, auth, signIn, signOut } = NextAuth({ providers: [{ id: 'svc', name: 'svc', type: 'oidc', issuer: process.env.SVC_ISSUER, clientId: process.env.SVC_CLIENT_ID, client: { token_endpoint_auth_method: 'none' }, checks: ['pkce', 'state'] }] }). ${PUBLIC_CLIENT}`,
    "Create app/api/auth/[...nextauth]/route.ts: import { handlers } from '@/auth'; export const { GET, POST } = handlers. Auth.js then serves the callback at /api/auth/callback/svc.",
    "Add sign-in and sign-out: a server action calling await signIn('svc') and await signOut(); read the user in server components and route handlers with const session = await auth().",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'npm run dev',
};
