import { type FrameworkSpec, pub } from './shared.ts';

const _PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const react: FrameworkSpec & { id: 'react' } = {
  id: 'react',
  name: 'React (Vite SPA)',
  language: 'TypeScript',
  oidcLibrary: { name: 'oidc-client-ts + react-oidc-context', url: 'https://github.com/authts/react-oidc-context' },
  installCommand: 'npm install oidc-client-ts react-oidc-context',
  envLoading: 'Vite loads .env.local itself and exposes VITE_ variables to the browser bundle.',
  envFile: '.env.local',
  // No secret here on purpose: every VITE_ variable is compiled into the browser bundle.
  envVars: [
    pub('VITE_SVC_PUBLISHABLE_KEY', 'publishableKey', 'client', 'Publishable key (pk_live_...): public, safe in the browser.'),
    pub('VITE_SVC_BASE_URL', 'baseUrl', 'client', 'svc API base URL.'),
    pub('VITE_SVC_ISSUER', 'issuer', 'client', 'OIDC issuer (authority): svc itself; use it exactly as given.'),
    pub('VITE_SVC_CLIENT_ID', 'clientId', 'client', 'OIDC client id: the application id.'),
    pub('VITE_SVC_REDIRECT_URI', 'callbackUrl', 'client', 'OIDC redirect URI of this app (must be allowlisted).'),
  ],
  devOrigin: 'http://localhost:5173',
  callbackPath: '/',
  notes: () => [
    'In src/main.tsx wrap <App /> in <AuthProvider authority={import.meta.env.VITE_SVC_ISSUER} client_id={import.meta.env.VITE_SVC_CLIENT_ID} redirect_uri={import.meta.env.VITE_SVC_REDIRECT_URI} scope="openid profile email" onSigninCallback={() => window.history.replaceState({}, document.title, window.location.pathname)}> from react-oidc-context. oidc-client-ts uses the authorization code flow with PKCE and no client secret.',
    'In components use const auth = useAuth(): auth.signinRedirect() to sign in, auth.signoutRedirect() to sign out, auth.isAuthenticated and auth.user?.profile for the user; send auth.user?.access_token as a Bearer token to your own API.',
    "Load the public application config with fetch(import.meta.env.VITE_SVC_BASE_URL + '/v1/client/config', { headers: { 'X-SVC-Publishable-Key': import.meta.env.VITE_SVC_PUBLISHABLE_KEY } }). Never put the secret key in a VITE_ variable or anywhere in the SPA.",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'npx vite',
};
