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
 * FastAPI with Authlib's Starlette client (authorization code + PKCE; a confidential client with
 * the secret key, a public one while keyless), Starlette's SessionMiddleware (itsdangerous),
 * authlib.jose to verify svc's access tokens against the JWKS. One file; python-dotenv reads .env.
 */
const mainPy = (
  v: WiringValues,
) => `# Sign-in with svc (OpenID Connect) for FastAPI: Authlib's Starlette client, authlib.jose, python-dotenv.
import os
import time
from html import escape
from urllib.parse import quote, urlencode, urlsplit

from authlib.integrations.starlette_client import OAuth, OAuthError
from authlib.jose import JsonWebKey, JsonWebToken, JoseError
from dotenv import load_dotenv
from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.middleware.sessions import SessionMiddleware

load_dotenv()

${ISSUER_CHECK}

${APP_HOST_CHECK}


${permissionConstant(v)}

app = FastAPI()
# The app's own session: a cookie signed with SESSION_SECRET (itsdangerous).
app.add_middleware(
    SessionMiddleware,
    secret_key=os.environ['SESSION_SECRET'],
    same_site='lax',
    https_only=urlsplit(REDIRECT_URI).scheme == 'https',
)

oauth = OAuth()
oauth.register(
    'svc',
${REGISTER_ARGS}
)


${USER_FROM_CLAIMS}


${PAGES}


${ACCESS_TOKEN_CHECK}


class SignInRequired(Exception):
    pass


def signed_in_user(request: Request):
    """A dependency for protected routes: only a signed-in person gets past it."""
    user = request.session.get('user')
    if not user:
        raise SignInRequired()
    return user


@app.exception_handler(SignInRequired)
async def sign_in_first(request: Request, exc: SignInRequired):
    return RedirectResponse('/login', status_code=303)


@app.exception_handler(OAuthError)
async def sign_in_failed(request: Request, exc: OAuthError):
    # A failed sign-in (denied, expired, replayed) says so instead of a stack trace.
    return HTMLResponse(sign_in_failed_page(exc.description or exc.error), status_code=400)


@app.middleware('http')
async def on_redirect_uri_host(request: Request, call_next):
    target = redirect_uri_host_url(request.headers.get('host'), request.url.path, request.url.query)
    if target:
        return RedirectResponse(target, status_code=307)
    return await call_next(request)


@app.get('/', response_class=HTMLResponse)
async def home(request: Request):
    return home_page(request.session.get('user'))


@app.get('/login')
async def login(request: Request):
    return await oauth.svc.authorize_redirect(request, REDIRECT_URI)


@app.get('/auth/callback')
async def callback(request: Request):
    # Checks state, exchanges the code with the PKCE verifier, verifies the ID token (signature, iss, aud, nonce).
    token = await oauth.svc.authorize_access_token(request)
    # A fresh session at sign-in, so a session fixed before it is worth nothing.
    request.session.clear()
    request.session['user'] = user_from(token['userinfo'])
    request.session['id_token'] = token.get('id_token')
    return RedirectResponse('/profile', status_code=303)


@app.get('/profile', response_class=HTMLResponse)
async def profile(user: dict = Depends(signed_in_user)):
    return profile_page(user)


# Sign-out ends the app's session and svc's, through svc's end-session endpoint.
@app.get('/logout')
async def logout(request: Request):
    id_token = request.session.get('id_token')
    request.session.clear()
    return RedirectResponse(end_session_url(await oauth.svc.load_server_metadata(), id_token), status_code=303)


# An API for your other clients: send svc's access token as "Authorization: Bearer <token>".
# It is verified against svc's JWKS, which Authlib fetched once and keeps (no request to svc per call).
@app.get('/api/me')
async def api_me(request: Request):
    token = bearer_token(request.headers.get('authorization'))
    if not token:
        return JSONResponse({'error': 'missing bearer token'}, status_code=401)
    issuer = (await oauth.svc.load_server_metadata())['issuer']
    claims = access_token_claims(token, await oauth.svc.fetch_jwk_set(), issuer)
    if claims is None and may_refresh_jwks():
        claims = access_token_claims(token, await oauth.svc.fetch_jwk_set(force=True), issuer)
    if claims is None:
        return JSONResponse({'error': 'invalid access token'}, status_code=401)
    return me(claims)
`;

export const fastapi: FrameworkSpec & { id: 'fastapi' } = {
  id: 'fastapi',
  name: 'FastAPI',
  language: PYTHON_LANGUAGE,
  oidcLibrary: {
    name: 'Authlib (Starlette client) + httpx + itsdangerous + python-dotenv',
    url: 'https://docs.authlib.org/en/latest/client/fastapi.html',
  },
  installCommand: pipInstall([
    'authlib>=1.2,<1.7',
    'fastapi>=0.92,<1',
    'uvicorn>=0.17,<1',
    'httpx>=0.23,<1',
    'itsdangerous>=2.1,<3',
    'python-dotenv>=0.21,<2',
  ]),
  envFile: '.env',
  envLoading: PYTHON_ENV_LOADING,
  envVars: [...serverVars(), localSecret('SESSION_SECRET', "SessionMiddleware signs the app's session cookie with it")],
  devOrigin: 'http://localhost:8000',
  meRoute: '/api/me',
  callbackPath: '/auth/callback',
  postLogoutPath: '/',
  files: (v) => [{ path: 'main.py', language: 'python', content: mainPy(v) }],
  runCommand: 'python3 -m uvicorn main:app --port 8000',
  notes: (v) => [
    VENV_NOTE,
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}.`,
    '/logout signs out of the app and of svc (end-session endpoint) and comes back to the home page.',
    `Your other clients call /api/me with svc's access token as a Bearer token; the app verifies it against svc's JWKS and answers the role, the product permissions and check: { permission: '${v.permissionCheck.permission}', allowed }.`,
  ],
};
