import type { TFramework } from '@svc/contracts/agent-context';

/** Public values the service fills into environment variables. */
export type PublicValue = 'publishableKey' | 'issuer' | 'clientId' | 'baseUrl' | 'callbackUrl';

/**
 * One environment variable of a framework integration. A secret is never given a value (the
 * service has none to give, and setup context must never carry one: SPEC.md 5 rule 6) and only
 * lives on the server, which the type enforces.
 */
export type EnvVarSpec =
  | { name: string; kind: 'public'; value: PublicValue; where: 'server' | 'client'; description: string }
  | {
      name: string;
      kind: 'secret';
      /** `secretKey`: the application's sk_live_ key; `local`: a secret the developer generates. */
      secret: 'secretKey' | 'local';
      where: 'server';
      description: string;
    };

/** What the wiring steps may mention. Never a secret. */
export type WiringValues = {
  issuer: string;
  discoveryUrl: string;
  clientId: string;
  callbackUrl: string;
  baseUrl: string;
  hostedSignIn: string;
};

export type FrameworkSpec = {
  id: TFramework;
  name: string;
  language: string;
  oidcLibrary: { name: string; url?: string };
  installCommand: string;
  envFile: string;
  envVars: EnvVarSpec[];
  /**
   * The framework's own default development origin (its dev server's default port), never svc's:
   * svc's default ports (@svc/contracts/ports) are chosen to stay clear of these.
   */
  devOrigin: string;
  /** Path of the OIDC redirect URI the library's conventional setup uses. */
  callbackPath: string;
  /** Concrete code-level steps, in order, between configuring and verifying. */
  wiring: (v: WiringValues) => string[];
};

const SECRET_KEY_NOTE =
  'Application secret key. Ask the user to paste it from the svc console (shown once when the application is created; rotate it there if lost). Server only; never commit it or expose it to a browser.';

const secretKey = (name = 'SVC_SECRET_KEY'): EnvVarSpec => ({
  name,
  kind: 'secret',
  secret: 'secretKey',
  where: 'server',
  description: SECRET_KEY_NOTE,
});

const localSecret = (name: string, how: string): EnvVarSpec => ({
  name,
  kind: 'secret',
  secret: 'local',
  where: 'server',
  description: `Secret your app generates itself, not issued by svc: ${how}. Never commit it.`,
});

const pub = (name: string, value: PublicValue, where: 'server' | 'client', description: string): EnvVarSpec => ({
  name,
  kind: 'public',
  value,
  where,
  description,
});

/** The server-side variables every backend framework shares. */
const serverVars = (): EnvVarSpec[] => [
  pub('SVC_PUBLISHABLE_KEY', 'publishableKey', 'server', 'Publishable key (pk_live_...): identifies the application; public.'),
  secretKey(),
  pub('SVC_BASE_URL', 'baseUrl', 'server', 'svc API base URL.'),
  pub(
    'SVC_ISSUER',
    'issuer',
    'server',
    'OIDC issuer: svc itself (discovery at <issuer>/.well-known/openid-configuration); use it exactly as given.',
  ),
  pub('SVC_CLIENT_ID', 'clientId', 'server', 'OIDC client id: the application id.'),
];

const redirectVar = pub('SVC_REDIRECT_URI', 'callbackUrl', 'server', 'OIDC redirect URI of this app (must be allowlisted).');

const PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

/**
 * The per-framework table, exhaustive over TFramework. Package names are the established OIDC
 * client of each ecosystem.
 */
export const FRAMEWORKS: { readonly [K in TFramework]: FrameworkSpec & { id: K } } = {
  nextjs: {
    id: 'nextjs',
    name: 'Next.js',
    language: 'TypeScript',
    oidcLibrary: { name: 'next-auth (Auth.js v5) generic OIDC provider', url: 'https://authjs.dev' },
    installCommand: 'npm install next-auth@beta',
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
    wiring: () => [
      `Create auth.ts at the project root: import NextAuth from 'next-auth'; export const { handlers, auth, signIn, signOut } = NextAuth({ providers: [{ id: 'svc', name: 'svc', type: 'oidc', issuer: process.env.SVC_ISSUER, clientId: process.env.SVC_CLIENT_ID, client: { token_endpoint_auth_method: 'none' }, checks: ['pkce', 'state'] }] }). ${PUBLIC_CLIENT}`,
      "Create app/api/auth/[...nextauth]/route.ts: import { handlers } from '@/auth'; export const { GET, POST } = handlers. Auth.js then serves the callback at /api/auth/callback/svc.",
      "Add sign-in and sign-out: a server action calling await signIn('svc') and await signOut(); read the user in server components and route handlers with const session = await auth().",
    ],
  },
  react: {
    id: 'react',
    name: 'React (Vite SPA)',
    language: 'TypeScript',
    oidcLibrary: { name: 'oidc-client-ts + react-oidc-context', url: 'https://github.com/authts/react-oidc-context' },
    installCommand: 'npm install oidc-client-ts react-oidc-context',
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
    wiring: () => [
      'In src/main.tsx wrap <App /> in <AuthProvider authority={import.meta.env.VITE_SVC_ISSUER} client_id={import.meta.env.VITE_SVC_CLIENT_ID} redirect_uri={import.meta.env.VITE_SVC_REDIRECT_URI} scope="openid profile email" onSigninCallback={() => window.history.replaceState({}, document.title, window.location.pathname)}> from react-oidc-context. oidc-client-ts uses the authorization code flow with PKCE and no client secret.',
      'In components use const auth = useAuth(): auth.signinRedirect() to sign in, auth.signoutRedirect() to sign out, auth.isAuthenticated and auth.user?.profile for the user; send auth.user?.access_token as a Bearer token to your own API.',
      "Load the public application config with fetch(import.meta.env.VITE_SVC_BASE_URL + '/v1/client/config', { headers: { 'X-SVC-Publishable-Key': import.meta.env.VITE_SVC_PUBLISHABLE_KEY } }). Never put the secret key in a VITE_ variable or anywhere in the SPA.",
    ],
  },
  express: {
    id: 'express',
    name: 'Express',
    language: 'JavaScript / TypeScript (Node.js)',
    oidcLibrary: { name: 'openid-client + express-session', url: 'https://github.com/panva/openid-client' },
    installCommand: 'npm install openid-client express-session',
    envFile: '.env',
    envVars: [
      ...serverVars(),
      redirectVar,
      localSecret('SESSION_SECRET', 'generate one with `openssl rand -base64 32`; express-session signs its cookie with it'),
    ],
    devOrigin: 'http://localhost:3000',
    callbackPath: '/auth/callback',
    wiring: () => [
      "Add app.use(session({ secret: process.env.SESSION_SECRET, resave: false, saveUninitialized: false, cookie: { httpOnly: true, sameSite: 'lax', secure: process.env.NODE_ENV === 'production' } })) from express-session.",
      `At startup (openid-client v6): import * as client from 'openid-client'; const config = await client.discovery(new URL(process.env.SVC_ISSUER), process.env.SVC_CLIENT_ID, undefined, client.None(), process.env.SVC_ISSUER.startsWith('http://') ? { execute: [client.allowInsecureRequests] } : undefined) (openid-client refuses plain http unless told; only a local svc is on http). ${PUBLIC_CLIENT}`,
      "GET /login: const code_verifier = client.randomPKCECodeVerifier(); const code_challenge = await client.calculatePKCECodeChallenge(code_verifier); const state = client.randomState(); store { code_verifier, state } in req.session; redirect to client.buildAuthorizationUrl(config, { redirect_uri: process.env.SVC_REDIRECT_URI, scope: 'openid email profile', code_challenge, code_challenge_method: 'S256', state }).href.",
      'GET /auth/callback: const tokens = await client.authorizationCodeGrant(config, new URL(req.originalUrl, process.env.SVC_REDIRECT_URI), { pkceCodeVerifier: req.session.code_verifier, expectedState: req.session.state }); regenerate the session, store tokens.claims() as the user, then redirect home. Protect routes with a middleware that checks req.session.user.',
    ],
  },
  fastapi: {
    id: 'fastapi',
    name: 'FastAPI',
    language: 'Python',
    oidcLibrary: { name: 'Authlib (Starlette integration)', url: 'https://docs.authlib.org' },
    installCommand: 'pip install authlib httpx itsdangerous',
    envFile: '.env',
    envVars: [
      ...serverVars(),
      redirectVar,
      localSecret(
        'SESSION_SECRET',
        'generate one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`; SessionMiddleware signs its cookie with it',
      ),
    ],
    devOrigin: 'http://localhost:8000',
    callbackPath: '/auth/callback',
    wiring: () => [
      "app.add_middleware(SessionMiddleware, secret_key=os.environ['SESSION_SECRET']) (from starlette.middleware.sessions; it needs itsdangerous).",
      `from authlib.integrations.starlette_client import OAuth; oauth = OAuth(); oauth.register('svc', server_metadata_url=os.environ['SVC_ISSUER'].rstrip('/') + '/.well-known/openid-configuration', client_id=os.environ['SVC_CLIENT_ID'], client_kwargs={'scope': 'openid email profile', 'code_challenge_method': 'S256', 'token_endpoint_auth_method': 'none'}). ${PUBLIC_CLIENT}`,
      "@app.get('/login'): return await oauth.svc.authorize_redirect(request, os.environ['SVC_REDIRECT_URI']). @app.get('/auth/callback'): token = await oauth.svc.authorize_access_token(request); request.session['user'] = dict(token['userinfo']); redirect home. Protect routes with a dependency that reads request.session['user'].",
    ],
  },
  django: {
    id: 'django',
    name: 'Django',
    language: 'Python',
    oidcLibrary: { name: 'mozilla-django-oidc', url: 'https://mozilla-django-oidc.readthedocs.io' },
    installCommand: 'pip install mozilla-django-oidc',
    envFile: '.env',
    envVars: serverVars(),
    devOrigin: 'http://localhost:8000',
    callbackPath: '/oidc/callback/',
    wiring: (v) => [
      "settings.py: add 'mozilla_django_oidc' to INSTALLED_APPS (after 'django.contrib.auth'); AUTHENTICATION_BACKENDS = ['mozilla_django_oidc.auth.OIDCAuthenticationBackend', 'django.contrib.auth.backends.ModelBackend']; OIDC_RP_CLIENT_ID = os.environ['SVC_CLIENT_ID']; OIDC_RP_CLIENT_SECRET = '' (svc issues no OIDC client secret; this is a public client); OIDC_USE_PKCE = True; OIDC_RP_SIGN_ALGO = 'RS256'; LOGIN_REDIRECT_URL = '/'; LOGOUT_REDIRECT_URL = '/'.",
      `settings.py: set OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT and OIDC_OP_JWKS_ENDPOINT to authorization_endpoint, token_endpoint, userinfo_endpoint and jwks_uri of the discovery document ${v.discoveryUrl} (curl it once and copy the values).`,
      "urls.py: path('oidc/', include('mozilla_django_oidc.urls')); link sign-in to {% url 'oidc_authentication_init' %} and sign-out to a POST form to {% url 'oidc_logout' %}; protect views with @login_required.",
    ],
  },
  flask: {
    id: 'flask',
    name: 'Flask',
    language: 'Python',
    oidcLibrary: { name: 'Authlib (Flask integration)', url: 'https://docs.authlib.org' },
    installCommand: 'pip install authlib requests',
    envFile: '.env',
    envVars: [
      ...serverVars(),
      redirectVar,
      localSecret(
        'FLASK_SECRET_KEY',
        'generate one with `python -c "import secrets; print(secrets.token_hex(32))"`; Flask signs its session cookie with it',
      ),
    ],
    devOrigin: 'http://localhost:5000',
    callbackPath: '/auth/callback',
    wiring: () => [
      `app.secret_key = os.environ['FLASK_SECRET_KEY']; from authlib.integrations.flask_client import OAuth; oauth = OAuth(app); oauth.register('svc', server_metadata_url=os.environ['SVC_ISSUER'].rstrip('/') + '/.well-known/openid-configuration', client_id=os.environ['SVC_CLIENT_ID'], client_kwargs={'scope': 'openid email profile', 'code_challenge_method': 'S256', 'token_endpoint_auth_method': 'none'}). ${PUBLIC_CLIENT}`,
      "@app.route('/login'): return oauth.svc.authorize_redirect(os.environ['SVC_REDIRECT_URI']). @app.route('/auth/callback'): token = oauth.svc.authorize_access_token(); session['user'] = token['userinfo']; redirect home. Protect views with a decorator that checks session['user'].",
    ],
  },
  laravel: {
    id: 'laravel',
    name: 'Laravel',
    language: 'PHP',
    oidcLibrary: {
      name: 'Laravel Socialite + kovah/laravel-socialite-oidc (generic OIDC provider)',
      url: 'https://github.com/Kovah/laravel-socialite-oidc',
    },
    installCommand: 'composer require laravel/socialite kovah/laravel-socialite-oidc',
    envFile: '.env',
    envVars: [...serverVars(), redirectVar],
    devOrigin: 'http://localhost:8000',
    callbackPath: '/auth/callback',
    wiring: () => [
      "config/services.php: 'oidc' => ['base_url' => rtrim((string) env('SVC_ISSUER'), '/'), 'client_id' => env('SVC_CLIENT_ID'), 'client_secret' => '', 'redirect' => env('SVC_REDIRECT_URI')]. svc issues no OIDC client secret; use PKCE.",
      "AppServiceProvider::boot(): Event::listen(function (\\SocialiteProviders\\Manager\\SocialiteWasCalled $event) { $event->extendSocialite('oidc', \\SocialiteProviders\\OIDC\\Provider::class); });",
      "routes/web.php: Route::get('/auth/redirect', fn () => Socialite::driver('oidc')->enablePKCE()->redirect()); Route::get('/auth/callback', function () { $user = Socialite::driver('oidc')->enablePKCE()->user(); /* find or create the local user by $user->getId(), Auth::login(...) */ return redirect('/'); }); protect routes with the auth middleware.",
    ],
  },
  rails: {
    id: 'rails',
    name: 'Ruby on Rails',
    language: 'Ruby',
    oidcLibrary: { name: 'omniauth_openid_connect', url: 'https://github.com/omniauth/omniauth_openid_connect' },
    installCommand: 'bundle add omniauth_openid_connect omniauth-rails_csrf_protection',
    envFile: '.env',
    envVars: [...serverVars(), redirectVar],
    devOrigin: 'http://localhost:3000',
    callbackPath: '/auth/svc/callback',
    wiring: () => [
      "config/initializers/omniauth.rb: Rails.application.config.middleware.use OmniAuth::Builder do provider :openid_connect, name: :svc, issuer: ENV.fetch('SVC_ISSUER'), discovery: true, scope: [:openid, :email, :profile], response_type: :code, pkce: true, client_options: { identifier: ENV.fetch('SVC_CLIENT_ID'), redirect_uri: ENV.fetch('SVC_REDIRECT_URI') } end. svc issues no OIDC client secret, so none is set.",
      "config/routes.rb: get '/auth/svc/callback', to: 'sessions#create'; SessionsController#create reads request.env['omniauth.auth'] (uid, info.email), finds or creates the user, sets session[:user_id] and redirects home.",
      "Sign in with a POST (OmniAuth 2 rejects GET): button_to 'Sign in', '/auth/svc', method: :post, data: { turbo: false }.",
    ],
  },
  rest: {
    id: 'rest',
    name: 'REST API (any language)',
    language: 'any (HTTP + JSON)',
    oidcLibrary: { name: 'none: plain HTTPS with curl examples' },
    installCommand: 'No package to install: use curl (or any HTTP client).',
    envFile: '.env',
    envVars: [...serverVars(), redirectVar],
    // No framework, so no one default: 8080 is the most common one of plain HTTP servers (Go's
    // net/http examples, Spring Boot, Tomcat, most server images).
    devOrigin: 'http://localhost:8080',
    callbackPath: '/auth/callback',
    wiring: (v) => [
      `Read the public application config from any client: curl -sS -H "X-SVC-Publishable-Key: $SVC_PUBLISHABLE_KEY" "$SVC_BASE_URL/v1/client/config".`,
      `Send users to hosted sign-in (${v.hostedSignIn}) or run the OIDC authorization code flow with PKCE yourself using the discovery document ${v.discoveryUrl}, client id ${v.clientId} and redirect URI $SVC_REDIRECT_URI; svc issues no OIDC client secret.`,
      'From your backend only, check the application and key health: curl -sS -H "Authorization: Bearer $SVC_SECRET_KEY" "$SVC_BASE_URL/v1/backend/application".',
    ],
  },
};
