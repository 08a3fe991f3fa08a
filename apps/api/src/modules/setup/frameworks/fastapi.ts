import { type FrameworkSpec, localSecret, serverVars } from './shared.ts';

const PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const fastapi: FrameworkSpec & { id: 'fastapi' } = {
  id: 'fastapi',
  name: 'FastAPI',
  language: 'Python',
  oidcLibrary: { name: 'Authlib (Starlette integration)', url: 'https://docs.authlib.org' },
  installCommand: 'pip install authlib httpx itsdangerous',
  envLoading: 'python-dotenv: load_dotenv() at the top of the app.',
  envFile: '.env',
  envVars: [
    ...serverVars(),

    localSecret(
      'SESSION_SECRET',
      'generate one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`; SessionMiddleware signs its cookie with it',
    ),
  ],
  devOrigin: 'http://localhost:8000',
  callbackPath: '/auth/callback',
  notes: () => [
    "app.add_middleware(SessionMiddleware, secret_key=os.environ['SESSION_SECRET']) (from starlette.middleware.sessions; it needs itsdangerous).",
    `from authlib.integrations.starlette_client import OAuth; oauth = OAuth(); oauth.register('svc', server_metadata_url=os.environ['SVC_ISSUER'].rstrip('/') + '/.well-known/openid-configuration', client_id=os.environ['SVC_CLIENT_ID'], client_kwargs={'scope': 'openid email profile', 'code_challenge_method': 'S256', 'token_endpoint_auth_method': 'none'}). ${PUBLIC_CLIENT}`,
    "@app.get('/login'): return await oauth.svc.authorize_redirect(request, os.environ['SVC_REDIRECT_URI']). @app.get('/auth/callback'): token = await oauth.svc.authorize_access_token(request); request.session['user'] = dict(token['userinfo']); redirect home. Protect routes with a dependency that reads request.session['user'].",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'uvicorn main:app --port 8000',
};
