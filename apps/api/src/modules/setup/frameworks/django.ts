import {
  ACCESS_TOKEN_CHECK,
  APP_HOST_CHECK,
  ISSUER_CHECK,
  PAGES,
  PYTHON_ENV_LOADING,
  PYTHON_LANGUAGE,
  permissionConstant,
  pipInstall,
  REGISTER_ARGS,
  USER_FROM_CLAIMS,
  VENV_NOTE,
} from './python.ts';
import { type FrameworkSpec, localSecret, serverVars, type WiringValues } from './shared.ts';

/**
 * Django with Authlib's Django client (authorization code + PKCE; a confidential client with the
 * secret key, a public one while keyless), Django's signed-cookie sessions (no database), and
 * authlib.jose to verify svc's access tokens against the JWKS. One file that is its own settings,
 * URLconf and manage.py; python-dotenv reads .env.
 */
const appPy = (v: WiringValues) => `# Sign-in with svc (OpenID Connect) for Django: Authlib's Django client, authlib.jose, python-dotenv.
# One file: settings, views and URLs; run it like manage.py (python3 app.py runserver 8000).
import os
import sys
import time
from functools import wraps
from html import escape
from urllib.parse import quote, urlencode, urlsplit

import django
from dotenv import load_dotenv
from django.conf import settings

load_dotenv()

${ISSUER_CHECK}

${APP_HOST_CHECK}


${permissionConstant(v)}

settings.configure(
    DEBUG=False,
    SECRET_KEY=os.environ['DJANGO_SECRET_KEY'],
    ALLOWED_HOSTS=[urlsplit(REDIRECT_URI).hostname],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[
        # First: another host name goes to the redirect URI's before Django checks ALLOWED_HOSTS.
        f'{__name__}.on_redirect_uri_host',
        'django.middleware.security.SecurityMiddleware',
        'django.contrib.sessions.middleware.SessionMiddleware',
        'django.middleware.common.CommonMiddleware',
        'django.middleware.clickjacking.XFrameOptionsMiddleware',
    ],
    # The app's own session: a cookie signed with DJANGO_SECRET_KEY, no database needed.
    SESSION_ENGINE='django.contrib.sessions.backends.signed_cookies',
    SESSION_COOKIE_HTTPONLY=True,
    SESSION_COOKIE_SAMESITE='Lax',
    SESSION_COOKIE_SECURE=urlsplit(REDIRECT_URI).scheme == 'https',
)
django.setup()

from authlib.integrations.django_client import OAuth, OAuthError  # noqa: E402 (needs the settings above)
from authlib.jose import JsonWebKey, JsonWebToken, JoseError  # noqa: E402
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

oauth = OAuth()
oauth.register(
    'svc',
${REGISTER_ARGS}
)


${USER_FROM_CLAIMS}


${PAGES}


${ACCESS_TOKEN_CHECK}


def on_redirect_uri_host(get_response):
    def middleware(request):
        target = redirect_uri_host_url(request.META.get('HTTP_HOST'), request.path, request.META.get('QUERY_STRING', ''))
        if target:
            response = HttpResponseRedirect(target)
            response.status_code = 307
            return response
        return get_response(request)

    return middleware


def sign_in_required(view):
    """A protected page: only for a signed-in person; everyone else goes to sign in first."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if 'user' not in request.session:
            return HttpResponseRedirect('/login')
        return view(request, *args, **kwargs)

    return wrapper


def home(request):
    return HttpResponse(home_page(request.session.get('user')))


def login(request):
    return oauth.svc.authorize_redirect(request, REDIRECT_URI)


def callback(request):
    try:
        # Checks state, exchanges the code with the PKCE verifier, verifies the ID token (signature, iss, aud, nonce).
        token = oauth.svc.authorize_access_token(request)
    except OAuthError as error:
        # A failed sign-in (denied, expired, replayed) says so instead of a stack trace.
        return HttpResponse(sign_in_failed_page(error.description or error.error), status=400)
    # A fresh session at sign-in, so a session fixed before it is worth nothing.
    request.session.flush()
    request.session['user'] = user_from(token['userinfo'])
    request.session['id_token'] = token.get('id_token')
    return HttpResponseRedirect('/profile')


@sign_in_required
def profile(request):
    return HttpResponse(profile_page(request.session['user']))


# Sign-out ends the app's session and svc's, through svc's end-session endpoint.
def logout(request):
    id_token = request.session.get('id_token')
    request.session.flush()
    return HttpResponseRedirect(end_session_url(oauth.svc.load_server_metadata(), id_token))


# An API for your other clients: send svc's access token as "Authorization: Bearer <token>".
# It is verified against svc's JWKS, which Authlib fetched once and keeps (no request to svc per call).
def api_me(request):
    token = bearer_token(request.headers.get('Authorization'))
    if not token:
        return JsonResponse({'error': 'missing bearer token'}, status=401)
    issuer = oauth.svc.load_server_metadata()['issuer']
    claims = access_token_claims(token, oauth.svc.fetch_jwk_set(), issuer)
    if claims is None and may_refresh_jwks():
        claims = access_token_claims(token, oauth.svc.fetch_jwk_set(force=True), issuer)
    if claims is None:
        return JsonResponse({'error': 'invalid access token'}, status=401)
    return JsonResponse(me(claims))


urlpatterns = [
    path('', home),
    path('login', login),
    path('auth/callback', callback),
    path('profile', profile),
    path('logout', logout),
    path('api/me', api_me),
]

if __name__ == '__main__':
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
`;

export const django: FrameworkSpec & { id: 'django' } = {
  id: 'django',
  name: 'Django',
  language: PYTHON_LANGUAGE,
  oidcLibrary: { name: 'Authlib (Django client) + python-dotenv', url: 'https://docs.authlib.org/en/latest/client/django.html' },
  installCommand: pipInstall(['authlib>=1.2,<1.7', 'django>=3.2,<6', 'requests>=2.28,<3', 'python-dotenv>=0.21,<2']),
  envFile: '.env',
  envLoading: PYTHON_ENV_LOADING,
  envVars: [...serverVars(), localSecret('DJANGO_SECRET_KEY', "Django's SECRET_KEY: it signs the app's session cookie")],
  devOrigin: 'http://localhost:8000',
  meRoute: '/api/me',
  callbackPath: '/auth/callback',
  postLogoutPath: '/',
  files: (v) => [{ path: 'app.py', language: 'python', content: appPy(v) }],
  runCommand: 'python3 app.py runserver 8000',
  notes: (v) => [
    VENV_NOTE,
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}.`,
    '/logout signs out of the app and of svc (end-session endpoint) and comes back to the home page.',
    `Your other clients call /api/me with svc's access token as a Bearer token; the app verifies it against svc's JWKS and answers the role, the product permissions and check: { permission: '${v.permissionCheck.permission}', allowed }.`,
    'In an existing Django project, move the settings into settings.py, the views into an app and the paths into urls.py; they need nothing else.',
  ],
};
