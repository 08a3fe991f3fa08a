import { type FrameworkSpec, localSecret, serverVars } from './shared.ts';

const PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const flask: FrameworkSpec & { id: 'flask' } = {
  id: 'flask',
  name: 'Flask',
  language: 'Python',
  oidcLibrary: { name: 'Authlib (Flask integration)', url: 'https://docs.authlib.org' },
  installCommand: 'pip install authlib requests',
  envLoading: 'python-dotenv: load_dotenv() at the top of the app.',
  envFile: '.env',
  envVars: [
    ...serverVars(),

    localSecret(
      'FLASK_SECRET_KEY',
      'generate one with `python -c "import secrets; print(secrets.token_hex(32))"`; Flask signs its session cookie with it',
    ),
  ],
  devOrigin: 'http://localhost:5000',
  callbackPath: '/auth/callback',
  notes: () => [
    `app.secret_key = os.environ['FLASK_SECRET_KEY']; from authlib.integrations.flask_client import OAuth; oauth = OAuth(app); oauth.register('svc', server_metadata_url=os.environ['SVC_ISSUER'].rstrip('/') + '/.well-known/openid-configuration', client_id=os.environ['SVC_CLIENT_ID'], client_kwargs={'scope': 'openid email profile', 'code_challenge_method': 'S256', 'token_endpoint_auth_method': 'none'}). ${PUBLIC_CLIENT}`,
    "@app.route('/login'): return oauth.svc.authorize_redirect(os.environ['SVC_REDIRECT_URI']). @app.route('/auth/callback'): token = oauth.svc.authorize_access_token(); session['user'] = token['userinfo']; redirect home. Protect views with a decorator that checks session['user'].",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'flask run --port 5000',
};
