import { permissionComment, permissionLiteral, type WiringValues } from './shared.ts';

/**
 * What the Python frameworks (Flask, FastAPI, Django) share: all three sign in with Authlib's
 * client for their framework and verify svc's access tokens with authlib.jose, so the parts that
 * do not depend on the framework are written once here and embedded in each app's one file.
 */

export const PYTHON_LANGUAGE = 'Python 3.9 or later';

/**
 * A virtual environment and pip, majors pinned. The ranges include the versions Debian 12 ships
 * (python3-authlib 1.2, python3-flask 2.2, python3-fastapi 0.92, python3-django 3.2, ...) and
 * current releases. Authlib stops before 1.7: from 1.7 importing authlib.jose (the access-token
 * check below) warns that it is deprecated in favour of joserfc, and its httpx client warns
 * without httpx2, so a fresh install would print deprecation warnings at every start; joserfc
 * is not packaged for Debian 12, where the apps are tested (docs/api.md, "Setup context for
 * coding agents").
 */
export function pipInstall(requirements: string[]): string {
  return `python3 -m venv .venv && . .venv/bin/activate && pip install ${requirements.map((r) => `'${r}'`).join(' ')}`;
}

export const PYTHON_ENV_LOADING =
  'python-dotenv: load_dotenv() at the top of the app reads it from the current directory, so start the app from the project root.';

export const VENV_NOTE =
  'Start it from the project root in the shell where .venv is active (in a new terminal: . .venv/bin/activate first).';

/**
 * The issuer from the environment, refusing plain http except for an svc on this machine. Authlib's
 * client itself does not look at the scheme (AUTHLIB_INSECURE_TRANSPORT only matters to Authlib's
 * servers), so this check is the app's own.
 */
export const ISSUER_CHECK = `ISSUER = os.environ['SVC_ISSUER'].rstrip('/')
CLIENT_ID = os.environ['SVC_CLIENT_ID']
# Empty for the keyless development app: a public client that proves itself with PKCE alone.
SECRET_KEY = os.environ.get('SVC_SECRET_KEY', '')
REDIRECT_URI = os.environ['SVC_REDIRECT_URI']
POST_LOGOUT_REDIRECT_URI = os.environ['SVC_POST_LOGOUT_REDIRECT_URI']

# Development allowance: plain http only for an svc on this machine (loopback), never in production.
# Authlib's client does not check the scheme itself, so the app does.
_issuer_url = urlsplit(ISSUER)
if _issuer_url.scheme != 'https' and not (
    _issuer_url.scheme == 'http' and _issuer_url.hostname in ('localhost', '127.0.0.1', '::1')
):
    raise RuntimeError('SVC_ISSUER must be https:// (http is allowed only for an svc on localhost)')`;

/**
 * The redirect URI's host for pages: svc comes back there, and the sign-in's state lives in a
 * cookie of the host the browser used, while Flask, uvicorn and Django print 127.0.0.1.
 */
export const APP_HOST_CHECK = `# svc comes back to the host of the redirect URI, and the sign-in's state lives in a cookie of the
# host the browser used: a page opened on any other name for this app (the 127.0.0.1 the server
# prints, for localhost) goes there first. The API answers on any host (a redirect would drop the
# Authorization header).
_APP_URL = urlsplit(REDIRECT_URI)


def redirect_uri_host_url(host, path, query):
    """None on the redirect URI's host (or for the API); else the same path and query there. Only
    the path and query go along, so //evil.example stays a path of this app."""
    if (host or '').lower() == _APP_URL.netloc.lower() or path.startswith('/api/'):
        return None
    local_path = quote(path.lstrip('/\\\\'))
    return f'{_APP_URL.scheme}://{_APP_URL.netloc}/{local_path}' + ('?' + query if query else '')`;

/** The product permission the app checks, as a module constant the pages and /api/me read. */
export function permissionConstant(v: WiringValues): string {
  return `${permissionComment(v, '#')}\nCHECKED_PERMISSION = ${permissionLiteral(v)}`;
}

/** Keyword arguments of oauth.register('svc', ...): discovery, scope, PKCE, client authentication. */
export const REGISTER_ARGS = `    server_metadata_url=ISSUER + '/.well-known/openid-configuration',
    client_id=CLIENT_ID,
    client_secret=SECRET_KEY or None,
    client_kwargs={
        'scope': 'openid email profile organization',
        'code_challenge_method': 'S256',
        # A confidential client sends the secret key with HTTP Basic; a public one only its id.
        'token_endpoint_auth_method': 'client_secret_basic' if SECRET_KEY else 'none',
    },`;

/** The signed-in person as the app keeps them: the ID token's claims, organization included. */
export const USER_FROM_CLAIMS = `def user_from(claims):
    return {
        'sub': claims['sub'],
        'email': claims.get('email'),
        'name': claims.get('name'),
        'org_id': claims.get('org_id'),
        'org_slug': claims.get('org_slug'),
        'org_role': claims.get('org_role'),
        'permissions': list(claims.get('permissions') or []),
    }`;

/** Pages, every claim HTML-escaped. */
export const PAGES = `def page(body):
    return f'<!doctype html><html><head><meta charset="utf-8"><title>svc sign-in</title></head><body>{body}</body></html>'


def home_page(user):
    if user:
        return page(f'<p>Signed in as {escape(user["email"] or "")}. <a href="/profile">Profile</a> · <a href="/logout">Sign out</a></p>')
    return page('<p><a href="/login">Sign in</a></p>')


def profile_page(user):
    allowed = 'yes' if CHECKED_PERMISSION in user['permissions'] else 'no'
    return page(f"""<h1>{escape(user['name'] or user['email'] or '')}</h1>
<dl>
  <dt>Email</dt><dd id="email">{escape(user['email'] or '')}</dd>
  <dt>User id</dt><dd id="sub">{escape(user['sub'])}</dd>
  <dt>Organization</dt><dd id="org_slug">{escape(user['org_slug'] or '')}</dd>
  <dt>Role</dt><dd id="org_role">{escape(user['org_role'] or '')}</dd>
  <dt>Product permissions</dt><dd id="permissions">{escape(' '.join(user['permissions']) or 'none yet')}</dd>
  <dt>Has <code id="checked_permission">{escape(CHECKED_PERMISSION)}</code></dt><dd id="allowed">{allowed}</dd>
</dl>
<p><a href="/logout">Sign out</a></p>""")


def sign_in_failed_page(error):
    return page(f'<p>Sign-in failed: {escape(str(error))}</p><p><a href="/login">Try again</a></p>')


def end_session_url(metadata, id_token):
    """svc's end-session endpoint (from discovery): ends svc's session, then back to this app."""
    params = {'post_logout_redirect_uri': POST_LOGOUT_REDIRECT_URI, 'client_id': CLIENT_ID}
    if id_token:
        params['id_token_hint'] = id_token
    return metadata['end_session_endpoint'] + '?' + urlencode(params)`;

/**
 * Access-token verification with authlib.jose: the signature against svc's JWKS (Authlib's
 * fetch_jwk_set() fetches it once and keeps it with the discovery document), iss, aud, exp and the
 * RFC 9068 header typ at+jwt.
 */
export const ACCESS_TOKEN_CHECK = `# svc's access tokens are RFC 9068 JWTs (header typ at+jwt, aud = this client id, iss = svc).
ACCESS_TOKEN_JWT = JsonWebToken(['RS256', 'ES256'])
JWKS_REFRESH_SECONDS = 300
_jwks_refreshed_at = 0.0


def access_token_claims(token, jwks, issuer):
    """The claims of a valid svc access token for this app, or None."""
    try:
        claims = ACCESS_TOKEN_JWT.decode(
            token,
            JsonWebKey.import_key_set(jwks),
            claims_options={
                'iss': {'essential': True, 'value': issuer},
                'aud': {'essential': True, 'value': CLIENT_ID},
                'sub': {'essential': True},
                'exp': {'essential': True},
            },
        )
        claims.validate(leeway=30)
    except (JoseError, ValueError):
        return None
    if claims.header.get('typ') != 'at+jwt':
        return None  # an ID token or another JWT signed by svc is not an access token
    return claims


def may_refresh_jwks():
    """A token signed with a key the cached set lacks may mean svc rotated its keys: fetch the set
    again, at most every five minutes, so forged tokens cannot make the app call svc per request."""
    global _jwks_refreshed_at
    if time.time() - _jwks_refreshed_at < JWKS_REFRESH_SECONDS:
        return False
    _jwks_refreshed_at = time.time()
    return True


def bearer_token(authorization):
    scheme, _, token = (authorization or '').partition(' ')
    return token.strip() if scheme.lower() == 'bearer' and token.strip() else None


def me(claims):
    """The person's product role and permissions, and whether they hold CHECKED_PERMISSION: a route
    that requires it answers 403 when allowed is false."""
    permissions = list(claims.get('permissions') or [])
    return {
        'sub': claims['sub'],
        'org_id': claims.get('org_id'),
        'org_slug': claims.get('org_slug'),
        'org_role': claims.get('org_role'),
        'permissions': permissions,
        'check': {'permission': CHECKED_PERMISSION, 'allowed': CHECKED_PERMISSION in permissions},
    }`;
