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
import { type FrameworkSpec, localSecret, pub, serverVars, type WiringValues } from './shared.ts';

/**
 * Flask with Authlib's Flask client (authorization code + PKCE; a confidential client with the
 * secret key, a public one while keyless), Flask's signed-cookie session, authlib.jose to verify
 * svc's access tokens against the JWKS. One file; python-dotenv reads .env.
 */
const appPy = (v: WiringValues) => `# Sign-in with svc (OpenID Connect) for Flask: Authlib's Flask client, authlib.jose, python-dotenv.
import os
import time
from functools import wraps
from html import escape
from urllib.parse import quote, urlencode, urlsplit

from authlib.integrations.flask_client import OAuth, OAuthError
from authlib.jose import JsonWebKey, JsonWebToken, JoseError
from dotenv import load_dotenv
from flask import Flask, jsonify, redirect, request, session

load_dotenv()

${ISSUER_CHECK}

${APP_HOST_CHECK}


${permissionConstant(v)}

app = Flask(__name__)
app.secret_key = os.environ['FLASK_SECRET_KEY']
app.config.update(
    SESSION_COOKIE_HTTPONLY=True,
    SESSION_COOKIE_SAMESITE='Lax',
    SESSION_COOKIE_SECURE=urlsplit(REDIRECT_URI).scheme == 'https',
)

oauth = OAuth(app)
oauth.register(
    'svc',
${REGISTER_ARGS}
)


${USER_FROM_CLAIMS}


${PAGES}


${ACCESS_TOKEN_CHECK}


def login_required(view):
    """A protected page: only for a signed-in person; everyone else goes to sign in first."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        if 'user' not in session:
            return redirect('/login')
        return view(*args, **kwargs)

    return wrapper


@app.before_request
def on_redirect_uri_host():
    target = redirect_uri_host_url(request.host, request.path, request.query_string.decode('latin-1'))
    if target:
        return redirect(target, 307)


@app.get('/')
def home():
    return home_page(session.get('user'))


@app.get('/login')
def login():
    return oauth.svc.authorize_redirect(REDIRECT_URI)


@app.get('/auth/callback')
def callback():
    # Checks state, exchanges the code with the PKCE verifier, verifies the ID token (signature, iss, aud, nonce).
    token = oauth.svc.authorize_access_token()
    # A fresh session at sign-in, so a session fixed before it is worth nothing.
    session.clear()
    session['user'] = user_from(token['userinfo'])
    session['id_token'] = token.get('id_token')
    return redirect('/profile')


@app.errorhandler(OAuthError)
def sign_in_failed(error):
    # A failed sign-in (denied, expired, replayed) says so instead of a stack trace.
    return sign_in_failed_page(error.description or error.error), 400


@app.get('/profile')
@login_required
def profile():
    return profile_page(session['user'])


# Sign-out ends the app's session and svc's, through svc's end-session endpoint.
@app.get('/logout')
def logout():
    id_token = session.get('id_token')
    session.clear()
    return redirect(end_session_url(oauth.svc.load_server_metadata(), id_token))


# An API for your other clients: send svc's access token as "Authorization: Bearer <token>".
# It is verified against svc's JWKS, which Authlib fetched once and keeps (no request to svc per call).
@app.get('/api/me')
def api_me():
    token = bearer_token(request.headers.get('Authorization'))
    if not token:
        return jsonify(error='missing bearer token'), 401
    issuer = oauth.svc.load_server_metadata()['issuer']
    claims = access_token_claims(token, oauth.svc.fetch_jwk_set(), issuer)
    if claims is None and may_refresh_jwks():
        claims = access_token_claims(token, oauth.svc.fetch_jwk_set(force=True), issuer)
    if claims is None:
        return jsonify(error='invalid access token'), 401
    return jsonify(me(claims))


if __name__ == '__main__':
    app.run(port=int(os.environ.get('PORT', '5000')))
`;

export const flask: FrameworkSpec & { id: 'flask' } = {
  id: 'flask',
  name: 'Flask',
  language: PYTHON_LANGUAGE,
  oidcLibrary: { name: 'Authlib (Flask client) + python-dotenv', url: 'https://docs.authlib.org/en/latest/client/flask.html' },
  installCommand: pipInstall(['authlib>=1.2,<1.7', 'flask>=2.2,<4', 'requests>=2.28,<3', 'python-dotenv>=0.21,<2']),
  envFile: '.env',
  envLoading: PYTHON_ENV_LOADING,
  envVars: [
    ...serverVars(),
    pub('PORT', 'devPort', 'server', 'Port the app listens on: the port of its redirect URI.'),
    localSecret('FLASK_SECRET_KEY', "Flask signs the app's session cookie with it"),
  ],
  devOrigin: 'http://localhost:5000',
  meRoute: '/api/me',
  callbackPath: '/auth/callback',
  postLogoutPath: '/',
  files: (v) => [{ path: 'app.py', language: 'python', content: appPy(v) }],
  runCommand: 'python3 app.py',
  notes: (v) => [
    VENV_NOTE,
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}.`,
    '/logout signs out of the app and of svc (end-session endpoint) and comes back to the home page.',
    `Your other clients call /api/me with svc's access token as a Bearer token; the app verifies it against svc's JWKS and answers the role, the product permissions and check: { permission: '${v.permissionCheck.permission}', allowed }.`,
  ],
};
