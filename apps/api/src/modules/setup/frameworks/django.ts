import { type FrameworkSpec, serverVars } from './shared.ts';

const _PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const django: FrameworkSpec & { id: 'django' } = {
  id: 'django',
  name: 'Django',
  language: 'Python',
  oidcLibrary: { name: 'mozilla-django-oidc', url: 'https://mozilla-django-oidc.readthedocs.io' },
  installCommand: 'pip install mozilla-django-oidc',
  envLoading: 'python-dotenv: load_dotenv() in settings.py.',
  envFile: '.env',
  envVars: serverVars(),
  devOrigin: 'http://localhost:8000',
  callbackPath: '/oidc/callback/',
  notes: (v) => [
    "settings.py: add 'mozilla_django_oidc' to INSTALLED_APPS (after 'django.contrib.auth'); AUTHENTICATION_BACKENDS = ['mozilla_django_oidc.auth.OIDCAuthenticationBackend', 'django.contrib.auth.backends.ModelBackend']; OIDC_RP_CLIENT_ID = os.environ['SVC_CLIENT_ID']; OIDC_RP_CLIENT_SECRET = '' (svc issues no OIDC client secret; this is a public client); OIDC_USE_PKCE = True; OIDC_RP_SIGN_ALGO = 'RS256'; LOGIN_REDIRECT_URL = '/'; LOGOUT_REDIRECT_URL = '/'.",
    `settings.py: set OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT and OIDC_OP_JWKS_ENDPOINT to authorization_endpoint, token_endpoint, userinfo_endpoint and jwks_uri of the discovery document ${v.discoveryUrl} (curl it once and copy the values).`,
    "urls.py: path('oidc/', include('mozilla_django_oidc.urls')); link sign-in to {% url 'oidc_authentication_init' %} and sign-out to a POST form to {% url 'oidc_logout' %}; protect views with @login_required.",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'python manage.py runserver 8000',
};
