import {
  type FrameworkSpec,
  ISSUER_NOTE,
  localSecret,
  permissionComment,
  permissionLiteral,
  pub,
  secretKey,
  type WiringValues,
} from './shared.ts';

/**
 * Next.js 15 (App Router) with Auth.js v5 (next-auth 5 beta, on @auth/core 0.41, the line svc's
 * own tests run) and its generic OIDC provider: a public client with PKCE while SVC_SECRET_KEY is
 * empty, a confidential one (client_secret_basic) when it is set; jose 6 verifies svc's access
 * tokens at /api/me. Plain JavaScript, relative imports: no tsconfig or path alias needed.
 */
const authJs = (v: WiringValues) => `// Sign-in with svc (OpenID Connect) for Next.js: Auth.js v5 (next-auth), its generic OIDC provider.
import NextAuth from 'next-auth';

const issuer = new URL(process.env.SVC_ISSUER);
// Development allowance: plain http only for an svc on this machine, never in production.
// Auth.js itself talks to an http issuer anywhere, so the app checks it.
if (issuer.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname)) {
  throw new Error('SVC_ISSUER must be https:// (http is allowed only for an svc on localhost)');
}
// Empty for the keyless development app: a public client that proves itself with PKCE alone.
const secretKey = process.env.SVC_SECRET_KEY;
// Auth.js builds its redirect URI from AUTH_URL, else from the host each request came in on: it is
// pinned to the registered callback's origin, and middleware.js sends other host names there.
process.env.AUTH_URL ??= new URL(process.env.SVC_REDIRECT_URI).origin;

${permissionComment(v, '//')}
export const CHECKED_PERMISSION = ${permissionLiteral(v)};

export const { handlers, auth, signIn, signOut } = NextAuth({
  providers: [
    {
      id: 'svc',
      name: 'svc',
      type: 'oidc',
      issuer: process.env.SVC_ISSUER,
      clientId: process.env.SVC_CLIENT_ID,
      ...(secretKey
        ? { clientSecret: secretKey, client: { token_endpoint_auth_method: 'client_secret_basic' } }
        : { client: { token_endpoint_auth_method: 'none' } }),
      checks: ['pkce', 'state'],
      authorization: { params: { scope: 'openid email profile organization' } },
    },
  ],
  callbacks: {
    // At sign-in Auth.js hands over the ID token's claims (profile) for this call only: keep svc's
    // user id and organization claims, and the ID token for sign-out, in the session cookie (a JWT
    // encrypted with AUTH_SECRET).
    jwt({ token, profile, account }) {
      if (profile) {
        token.svc = {
          sub: profile.sub,
          email: profile.email,
          name: profile.name,
          org_id: profile.org_id,
          org_slug: profile.org_slug,
          org_role: profile.org_role,
          permissions: profile.permissions ?? [],
        };
        token.idToken = account?.id_token;
      }
      return token;
    },
    // What auth() answers: the person and their organization, never a token.
    session({ session, token }) {
      return { ...session, user: { ...session.user, ...token.svc } };
    },
  },
});

let discovery;
/** svc's discovery document (end-session endpoint, JWKS), fetched once. */
export function svcMetadata() {
  discovery ??= fetch(\`\${issuer.href.replace(/\\/+$/, '')}/.well-known/openid-configuration\`)
    .then((res) => {
      if (!res.ok) {
        throw new Error(\`svc discovery answered \${res.status}\`);
      }
      return res.json();
    })
    .catch((error) => {
      discovery = undefined;
      throw error;
    });
  return discovery;
}
`;

const AUTH_ROUTE = `// Auth.js's endpoints, among them the OIDC redirect URI /api/auth/callback/svc.
import { handlers } from '../../../../auth.js';

export const { GET, POST } = handlers;
`;

const LOGIN_ROUTE = `import { signIn } from '../../auth.js';

// Starts the sign-in at svc (authorization code flow with PKCE) and comes back to /profile.
export async function GET() {
  await signIn('svc', { redirectTo: '/profile' });
}
`;

const ACTIONS = `'use server';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';
import { getToken } from 'next-auth/jwt';
import { signOut, svcMetadata } from '../auth.js';

// Sign-out ends the app's session (Auth.js) and svc's, through svc's end-session endpoint with
// the ID token as id_token_hint: Auth.js's signOut alone ends only the app's.
export async function signOutEverywhere() {
  const req = { headers: await headers() };
  const secret = process.env.AUTH_SECRET;
  // Auth.js names its session cookie __Secure-authjs.session-token on https, authjs.session-token on http.
  const token = (await getToken({ req, secret, secureCookie: true })) ?? (await getToken({ req, secret, secureCookie: false }));
  await signOut({ redirect: false });
  const url = new URL((await svcMetadata()).end_session_endpoint);
  url.searchParams.set('client_id', process.env.SVC_CLIENT_ID);
  url.searchParams.set('post_logout_redirect_uri', process.env.SVC_POST_LOGOUT_REDIRECT_URI);
  if (token?.idToken) {
    url.searchParams.set('id_token_hint', token.idToken);
  }
  redirect(url.href);
}
`;

const LAYOUT = `export const metadata = { title: 'svc sign-in' };

export default function RootLayout({ children }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
`;

const HOME = `import { auth } from '../auth.js';
import { signOutEverywhere } from './actions.js';

export default async function Home() {
  const session = await auth();
  if (!session) {
    return (
      <main>
        <a href="/login">Sign in</a>
      </main>
    );
  }
  return (
    <main>
      <p>
        Signed in as {session.user.email}. <a href="/profile">Profile</a>
      </p>
      <form action={signOutEverywhere}>
        <button type="submit">Sign out</button>
      </form>
    </main>
  );
}
`;

const PROFILE = `import { redirect } from 'next/navigation';
import { auth, CHECKED_PERMISSION } from '../../auth.js';
import { signOutEverywhere } from '../actions.js';

// A protected page: signed out, it sends you to sign in. React escapes every value it renders.
export default async function Profile() {
  const session = await auth();
  if (!session) {
    redirect('/login');
  }
  const user = session.user;
  const permissions = user.permissions ?? [];
  return (
    <main>
      <h1>{user.name ?? user.email}</h1>
      <dl>
        <dt>Email</dt>
        <dd id="email">{user.email}</dd>
        <dt>User id</dt>
        <dd id="sub">{user.sub}</dd>
        <dt>Organization</dt>
        <dd id="org_slug">{user.org_slug}</dd>
        <dt>Role</dt>
        <dd id="org_role">{user.org_role}</dd>
        <dt>Product permissions</dt>
        <dd id="permissions">{permissions.join(' ') || 'none yet'}</dd>
        <dt>
          Has <code id="checked_permission">{CHECKED_PERMISSION}</code>
        </dt>
        <dd id="allowed">{permissions.includes(CHECKED_PERMISSION) ? 'yes' : 'no'}</dd>
      </dl>
      <form action={signOutEverywhere}>
        <button type="submit">Sign out</button>
      </form>
    </main>
  );
}
`;

const MIDDLEWARE = `import { NextResponse } from 'next/server';

// svc comes back to the host of the redirect URI, and the sign-in's state lives in a cookie of the
// host the browser used: any other name for this app (127.0.0.1 for localhost) goes there first,
// with its path and query. Your API (/api/, but not Auth.js's /api/auth/) answers on any host: a
// redirect would drop its Authorization header.
export function middleware(request) {
  const app = new URL(process.env.SVC_REDIRECT_URI);
  const { pathname, search } = request.nextUrl;
  const api = pathname.startsWith('/api/') && !pathname.startsWith('/api/auth/');
  if (request.headers.get('host') === app.host || api) {
    return NextResponse.next();
  }
  // (next dev runs with -H 127.0.0.1: on its default host name, localhost, Next.js would take this
  // redirect for one to itself and make it relative, and the browser would never leave.)
  return new Response(null, { status: 307, headers: { location: \`\${app.origin}\${pathname}\${search}\` } });
}

export const config = { matcher: ['/((?!_next/).*)'] };
`;

const ME_ROUTE = `import { createRemoteJWKSet, jwtVerify } from 'jose';
import { CHECKED_PERMISSION, svcMetadata } from '../../../auth.js';

let jwks;

// An API for your other clients: they send svc's access token as a Bearer token in the
// Authorization header. It is an RFC 9068 JWT, verified here against svc's JWKS (fetched once
// and cached: no request to svc per call). It answers the person's product role and permissions,
// and whether they hold CHECKED_PERMISSION: a route that requires it answers 403 when allowed is false.
export async function GET(request) {
  const token = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  if (!token) {
    return Response.json({ error: 'missing bearer token' }, { status: 401 });
  }
  const metadata = await svcMetadata();
  jwks ??= createRemoteJWKSet(new URL(metadata.jwks_uri));
  try {
    const { payload } = await jwtVerify(token, jwks, {
      issuer: metadata.issuer,
      audience: process.env.SVC_CLIENT_ID,
      typ: 'at+jwt',
    });
    const permissions = Array.isArray(payload.permissions) ? payload.permissions : [];
    return Response.json({
      sub: payload.sub,
      org_id: payload.org_id,
      org_slug: payload.org_slug,
      org_role: payload.org_role,
      permissions,
      check: { permission: CHECKED_PERMISSION, allowed: permissions.includes(CHECKED_PERMISSION) },
    });
  } catch {
    return Response.json({ error: 'invalid access token' }, { status: 401 });
  }
}
`;

export const nextjs: FrameworkSpec & { id: 'nextjs' } = {
  id: 'nextjs',
  name: 'Next.js',
  language: 'JavaScript (Next.js 15 App Router; Node.js 20 or later)',
  oidcLibrary: { name: 'Auth.js v5 (next-auth 5 beta) generic OIDC provider + jose 6', url: 'https://authjs.dev' },
  installCommand: 'npm install next@15 react@19 react-dom@19 next-auth@5.0.0-beta.32 jose@6',
  envLoading: 'Next.js loads .env.local itself (server code reads process.env; only NEXT_PUBLIC_ variables reach the browser).',
  envFile: '.env.local',
  envVars: [
    pub('NEXT_PUBLIC_SVC_PUBLISHABLE_KEY', 'publishableKey', 'client', 'Publishable key (pk_live_...): public, safe in the browser.'),
    pub('NEXT_PUBLIC_SVC_BASE_URL', 'baseUrl', 'client', 'svc API base URL.'),
    pub('SVC_ISSUER', 'issuer', 'server', ISSUER_NOTE),
    pub('SVC_CLIENT_ID', 'clientId', 'server', 'OIDC client id: the application id.'),
    pub(
      'SVC_REDIRECT_URI',
      'callbackUrl',
      'server',
      "The app's callback URL, registered on the application: Auth.js's redirect URI, and the host name middleware.js sends the app's pages to.",
    ),
    secretKey(),
    pub(
      'SVC_POST_LOGOUT_REDIRECT_URI',
      'postLogoutUrl',
      'server',
      'Where svc sends the browser after sign-out (end-session endpoint), registered on the application.',
    ),
    localSecret('AUTH_SECRET', 'Auth.js encrypts its session cookie with it'),
  ],
  devOrigin: 'http://localhost:3000',
  meRoute: '/api/me',
  callbackPath: '/api/auth/callback/svc',
  postLogoutPath: '/',
  files: (v) => [
    { path: 'auth.js', language: 'js', content: authJs(v) },
    { path: 'app/api/auth/[...nextauth]/route.js', language: 'js', content: AUTH_ROUTE },
    { path: 'app/login/route.js', language: 'js', content: LOGIN_ROUTE },
    { path: 'app/actions.js', language: 'js', content: ACTIONS },
    { path: 'app/layout.jsx', language: 'jsx', content: LAYOUT },
    { path: 'app/page.jsx', language: 'jsx', content: HOME },
    { path: 'app/profile/page.jsx', language: 'jsx', content: PROFILE },
    { path: 'app/api/me/route.js', language: 'js', content: ME_ROUTE },
    { path: 'middleware.js', language: 'js', content: MIDDLEWARE },
  ],
  runCommand: 'npx next dev --port 3000 -H 127.0.0.1',
  notes: (v) => [
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}. next dev compiles each page on its first request, so the first load takes a few seconds.`,
    '"Sign out" ends the Auth.js session and svc\'s (end-session endpoint) and comes back to the home page.',
    `Your other clients call /api/me with svc's access token as a Bearer token; the app verifies it against svc's JWKS and answers the role, the product permissions and check: { permission: '${v.permissionCheck.permission}', allowed }.`,
  ],
};
