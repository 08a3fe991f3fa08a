import { type FrameworkSpec, permissionComment, permissionLiteral, pub, type WiringValues } from './shared.ts';

/**
 * A Vite single-page app with oidc-client-ts 3 and react-oidc-context 3: a public client
 * (authorization code + PKCE S256, no secret anywhere, since every VITE_ variable is compiled into
 * the browser bundle). Plain JSX, no router: the app reads location.pathname itself.
 */
const INDEX_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <title>svc sign-in</title>
  </head>
  <body>
    <div id="root"></div>
    <script type="module" src="/src/main.jsx"></script>
  </body>
</html>
`;

const VITE_CONFIG = `import react from '@vitejs/plugin-react';
import { defineConfig, loadEnv } from 'vite';

// The dev server listens on the port of the redirect URI in .env.local (5173, Vite's default),
// and only there: the callback must be served where it is registered. Vite serves index.html on
// every path (/profile, /callback), so the app routes in the browser.
export default defineConfig(({ mode }) => {
  const env = loadEnv(mode, process.cwd(), 'VITE_');
  return {
    plugins: [react()],
    server: { port: Number(new URL(env.VITE_SVC_REDIRECT_URI).port || 5173), strictPort: true },
  };
});
`;

const MAIN_JSX = `// Sign-in with svc (OpenID Connect) for a React SPA: oidc-client-ts 3 + react-oidc-context 3.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { AuthProvider } from 'react-oidc-context';
import App from './App.jsx';

const env = import.meta.env;
const issuer = new URL(env.VITE_SVC_ISSUER);
// Development allowance: plain http only for an svc on this machine, never in production.
if (issuer.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname)) {
  throw new Error('VITE_SVC_ISSUER must be https:// (http is allowed only for an svc on localhost)');
}

// A public client: authorization code flow with PKCE (S256), oidc-client-ts's defaults, and no
// client secret (a browser cannot keep one). The ID token and the session stay in sessionStorage.
const oidcConfig = {
  authority: env.VITE_SVC_ISSUER,
  client_id: env.VITE_SVC_CLIENT_ID,
  redirect_uri: env.VITE_SVC_REDIRECT_URI,
  post_logout_redirect_uri: env.VITE_SVC_POST_LOGOUT_REDIRECT_URI,
  scope: 'openid email profile organization',
  // After the callback: drop code and state from the address bar and go where sign-in started.
  onSigninCallback: (user) => {
    const returnTo = typeof user?.state?.returnTo === 'string' && user.state.returnTo.startsWith('/') ? user.state.returnTo : '/';
    window.history.replaceState({}, document.title, returnTo);
    window.dispatchEvent(new PopStateEvent('popstate'));
  },
};

// svc comes back to the redirect URI, and oidc-client-ts keeps the sign-in's state in the storage
// of the origin the browser used: opened on any other name for this app (127.0.0.1 for localhost),
// go there first, same path and query (the origin is the redirect URI's, never the address bar's).
const appUrl = new URL(env.VITE_SVC_REDIRECT_URI);
if (window.location.host !== appUrl.host) {
  window.location.replace(\`\${appUrl.origin}\${window.location.pathname}\${window.location.search}\`);
} else {
  createRoot(document.getElementById('root')).render(
    <StrictMode>
      <AuthProvider {...oidcConfig}>
        <App />
      </AuthProvider>
    </StrictMode>,
  );
}
`;

const appJsx = (v: WiringValues) => `import { useEffect, useState } from 'react';
import { useAuth, withAuthenticationRequired } from 'react-oidc-context';

${permissionComment(v, '//')}
// The browser only decides what to show with it: your API checks the same permission in the
// access token it receives, since anyone can change what runs in a browser.
const CHECKED_PERMISSION = ${permissionLiteral(v)};

// Where sign-in comes back to (read by onSigninCallback in main.jsx).
const toProfile = { state: { returnTo: '/profile' } };

/** The current path, updated on back/forward and after the sign-in callback. */
function usePath() {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const update = () => setPath(window.location.pathname);
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, []);
  return path;
}

function Home() {
  const auth = useAuth();
  if (auth.isAuthenticated) {
    return (
      <p>
        Signed in as {auth.user.profile.email}. <a href="/profile">Profile</a>{' '}
        <button type="button" onClick={() => auth.signoutRedirect()}>
          Sign out
        </button>
      </p>
    );
  }
  return (
    <button type="button" onClick={() => auth.signinRedirect(toProfile)}>
      Sign in
    </button>
  );
}

// A protected page: signed out, it starts the sign-in at svc and comes back here. The claims are
// the ID token's; React escapes every value it renders.
const Profile = withAuthenticationRequired(
  function ProfilePage() {
    const auth = useAuth();
    const profile = auth.user.profile;
    const permissions = Array.isArray(profile.permissions) ? profile.permissions : [];
    return (
      <>
        <h1>{profile.name ?? profile.email}</h1>
        <dl>
          <dt>Email</dt>
          <dd id="email">{profile.email}</dd>
          <dt>User id</dt>
          <dd id="sub">{profile.sub}</dd>
          <dt>Organization</dt>
          <dd id="org_slug">{profile.org_slug}</dd>
          <dt>Role</dt>
          <dd id="org_role">{profile.org_role}</dd>
          <dt>Product permissions</dt>
          <dd id="permissions">{permissions.join(' ') || 'none yet'}</dd>
          <dt>
            Has <code id="checked_permission">{CHECKED_PERMISSION}</code>
          </dt>
          <dd id="allowed">{permissions.includes(CHECKED_PERMISSION) ? 'yes' : 'no'}</dd>
        </dl>
        {/* Ends the session here and at svc (end-session endpoint, with id_token_hint). */}
        <button type="button" onClick={() => auth.signoutRedirect()}>
          Sign out
        </button>
      </>
    );
  },
  { signinRedirectArgs: toProfile, OnRedirecting: () => <p>Signing you in…</p> },
);

export default function App() {
  const auth = useAuth();
  const path = usePath();
  if (auth.isLoading) {
    return <p>Loading…</p>;
  }
  // A failed sign-in (denied, expired, replayed) says so instead of a blank page.
  if (auth.error) {
    return (
      <p>
        Sign-in failed: {auth.error.message}{' '}
        <button type="button" onClick={() => auth.signinRedirect(toProfile)}>
          Sign in
        </button>
      </p>
    );
  }
  return path === '/profile' ? <Profile /> : <Home />;
}
`;

export const react: FrameworkSpec & { id: 'react' } = {
  id: 'react',
  name: 'React (Vite SPA)',
  language: 'JavaScript (JSX; Node.js 20 or later for Vite)',
  oidcLibrary: { name: 'oidc-client-ts 3 + react-oidc-context 3', url: 'https://github.com/authts/react-oidc-context' },
  installCommand: 'npm install vite@6 @vitejs/plugin-react@4 react@19 react-dom@19 oidc-client-ts@3 react-oidc-context@3',
  envLoading: 'Vite loads .env.local itself and compiles the VITE_ variables into the browser bundle.',
  envFile: '.env.local',
  // No secret here on purpose: every VITE_ variable is compiled into the browser bundle.
  envVars: [
    pub('VITE_SVC_PUBLISHABLE_KEY', 'publishableKey', 'client', 'Publishable key (pk_live_...): public, safe in the browser.'),
    pub('VITE_SVC_BASE_URL', 'baseUrl', 'client', 'svc API base URL.'),
    pub('VITE_SVC_ISSUER', 'issuer', 'client', 'OIDC issuer (authority): svc itself; use it exactly as given.'),
    pub('VITE_SVC_CLIENT_ID', 'clientId', 'client', 'OIDC client id: the application id.'),
    pub('VITE_SVC_REDIRECT_URI', 'callbackUrl', 'client', "OIDC redirect URI: this app's callback, registered on the application."),
    pub(
      'VITE_SVC_POST_LOGOUT_REDIRECT_URI',
      'postLogoutUrl',
      'client',
      'Where svc sends the browser after sign-out (end-session endpoint), registered on the application.',
    ),
  ],
  devOrigin: 'http://localhost:5173',
  // A browser app has no server route: the product's own API checks the access token.
  meRoute: null,
  callbackPath: '/callback',
  postLogoutPath: '/',
  files: (v) => [
    { path: 'index.html', language: 'html', content: INDEX_HTML },
    { path: 'vite.config.js', language: 'js', content: VITE_CONFIG },
    { path: 'src/main.jsx', language: 'jsx', content: MAIN_JSX },
    { path: 'src/App.jsx', language: 'jsx', content: appJsx(v) },
  ],
  runCommand: 'npx vite',
  notes: (v) => [
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}, from the ID token's claims.`,
    '"Sign out" ends the session in the browser and at svc (end-session endpoint) and comes back to the home page.',
    `Send auth.user.access_token (from useAuth()) as a Bearer token to your own API, which verifies it against svc's JWKS and checks the permission there (permissions.includes('${v.permissionCheck.permission}') on the verified claims, 403 when false): a SPA has no server route of its own, and a check in the browser only decides what to show. Load the public application config with fetch(import.meta.env.VITE_SVC_BASE_URL + '/v1/client/config', { headers: { 'X-SVC-Publishable-Key': import.meta.env.VITE_SVC_PUBLISHABLE_KEY } }). Never put the secret key in a VITE_ variable or anywhere in the SPA.`,
  ],
};
