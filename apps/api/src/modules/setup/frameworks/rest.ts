import { type FrameworkSpec, permissionComment, permissionLiteral, pub, serverVars, type WiringValues } from './shared.ts';

/**
 * No library: the authorization code flow with PKCE as plain HTTP, shown as a dependency-free
 * Node.js server (node:http, node:crypto, fetch) that any language can port line by line.
 */
const server = (v: WiringValues) => `// The OpenID Connect authorization code flow with PKCE against svc, by hand: node:http,
// node:crypto and fetch, no library. Each step is plain HTTP any language can do the same way.
import { createHash, createPublicKey, randomBytes, timingSafeEqual, verify } from 'node:crypto';
import http from 'node:http';

const issuer = process.env.SVC_ISSUER;
const clientId = process.env.SVC_CLIENT_ID;
// Empty for the keyless development app: a public client that proves itself with PKCE alone.
const secretKey = process.env.SVC_SECRET_KEY;
const redirectUri = process.env.SVC_REDIRECT_URI;
const postLogoutRedirectUri = process.env.SVC_POST_LOGOUT_REDIRECT_URI;

${permissionComment(v, '//')}
const CHECKED_PERMISSION = ${permissionLiteral(v)};
/** The product permissions a token or ID token carries (none when the role grants none). */
const permissionsOf = (claims) => (Array.isArray(claims.permissions) ? claims.permissions : []);

// Development allowance: plain http only for an svc on this machine, never in production.
const issuerUrl = new URL(issuer);
if (issuerUrl.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(issuerUrl.hostname)) {
  throw new Error('SVC_ISSUER must be https:// (http is allowed only for an svc on localhost)');
}

// 1. Discovery: every endpoint comes from the issuer's configuration document.
const discovery = await (await fetch(\`\${issuer.replace(/\\/+$/, '')}/.well-known/openid-configuration\`)).json();
if (discovery.issuer !== issuer) {
  throw new Error(\`discovery names issuer \${discovery.issuer}, expected \${issuer}\`);
}
// svc's public signing keys, fetched once (fetch again when a token names an unknown kid).
let keys = (await (await fetch(discovery.jwks_uri)).json()).keys;

const b64url = (buffer) => buffer.toString('base64url');
const random = () => b64url(randomBytes(32));

/** Verifies a JWT signed by svc (RS256 or ES256) and returns its claims, or throws. */
async function verifyJwt(token, { audience, typ }) {
  const [h, p, s] = token.split('.');
  const header = JSON.parse(Buffer.from(h, 'base64url'));
  if (typ && String(header.typ).toLowerCase() !== typ) throw new Error('wrong token type');
  let jwk = keys.find((k) => k.kid === header.kid);
  if (!jwk) {
    keys = (await (await fetch(discovery.jwks_uri)).json()).keys;
    jwk = keys.find((k) => k.kid === header.kid);
  }
  if (!jwk || jwk.alg !== header.alg || !['RS256', 'ES256'].includes(header.alg)) throw new Error('unknown signing key');
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  const ok = verify('sha256', Buffer.from(\`\${h}.\${p}\`), header.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key, Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('bad signature');
  const claims = JSON.parse(Buffer.from(p, 'base64url'));
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.iss !== issuer || !audiences.includes(audience) || claims.exp * 1000 < Date.now()) throw new Error('token not for this app');
  return claims;
}

const sessions = new Map(); // session id -> { signIn?, user?, idToken? }
function sessionOf(req, res) {
  const id = /(?:^|; )sid=([\\w-]+)/.exec(req.headers.cookie ?? '')?.[1];
  if (id && sessions.has(id)) return { id, data: sessions.get(id) };
  const fresh = random();
  sessions.set(fresh, {});
  res.setHeader('set-cookie', \`sid=\${fresh}; HttpOnly; SameSite=Lax; Path=/\`);
  return { id: fresh, data: sessions.get(fresh) };
}

const esc = (value) => String(value ?? '').replace(/[&<>"']/g, (c) => \`&#\${c.charCodeAt(0)};\`);
const html = (res, status, body) =>
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(\`<!doctype html><meta charset="utf-8"><title>svc sign-in</title>\${body}\`);
const redirect = (res, location) => res.writeHead(302, { location }).end();
const json = (res, status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, redirectUri);
  try {
    if (url.pathname === '/login') {
      // 2. Authorization request: PKCE S256 and a state bound to this browser's session.
      const session = sessionOf(req, res);
      const codeVerifier = random();
      const state = random();
      session.data.signIn = { codeVerifier, state };
      const authorize = new URL(discovery.authorization_endpoint);
      authorize.search = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri,
        scope: 'openid email profile organization',
        code_challenge: b64url(createHash('sha256').update(codeVerifier).digest()),
        code_challenge_method: 'S256',
        state,
      }).toString();
      return redirect(res, authorize.href);
    }
    if (url.pathname === new URL(redirectUri).pathname) {
      // 3. Callback: check the state, then exchange the code at the token endpoint.
      const session = sessionOf(req, res);
      const signIn = session.data.signIn;
      const state = url.searchParams.get('state') ?? '';
      if (!signIn || state.length !== signIn.state.length || !timingSafeEqual(Buffer.from(state), Buffer.from(signIn.state))) {
        return html(res, 400, '<p>Sign-in expired or was not started here. <a href="/login">Try again</a></p>');
      }
      delete session.data.signIn;
      if (url.searchParams.has('error')) {
        return html(res, 400, \`<p>Sign-in failed: \${esc(url.searchParams.get('error'))}. <a href="/login">Try again</a></p>\`);
      }
      const headers = { 'content-type': 'application/x-www-form-urlencoded' };
      const form = { grant_type: 'authorization_code', code: url.searchParams.get('code') ?? '', redirect_uri: redirectUri, code_verifier: signIn.codeVerifier };
      if (secretKey) {
        // Confidential client: HTTP Basic with the form-encoded client id and secret key (RFC 6749 2.3.1).
        headers.authorization = \`Basic \${Buffer.from(\`\${encodeURIComponent(clientId)}:\${encodeURIComponent(secretKey)}\`).toString('base64')}\`;
      } else {
        form.client_id = clientId;
      }
      const tokenResponse = await fetch(discovery.token_endpoint, { method: 'POST', headers, body: new URLSearchParams(form) });
      const tokens = await tokenResponse.json();
      if (!tokenResponse.ok) {
        return html(res, 400, \`<p>Sign-in failed: \${esc(tokens.error)}. <a href="/login">Try again</a></p>\`);
      }
      // 4. The ID token says who signed in and in which organization, with which role.
      const claims = await verifyJwt(tokens.id_token, { audience: clientId });
      sessions.delete(session.id);
      const id = random();
      sessions.set(id, { user: claims, idToken: tokens.id_token });
      res.setHeader('set-cookie', \`sid=\${id}; HttpOnly; SameSite=Lax; Path=/\`);
      return redirect(res, '/profile');
    }
    if (url.pathname === '/profile') {
      const user = sessionOf(req, res).data.user;
      if (!user) return redirect(res, '/login');
      const permissions = permissionsOf(user);
      return html(
        res,
        200,
        \`<h1>\${esc(user.name ?? user.email)}</h1>
<dl>
  <dt>Email</dt><dd id="email">\${esc(user.email)}</dd>
  <dt>User id</dt><dd id="sub">\${esc(user.sub)}</dd>
  <dt>Organization</dt><dd id="org_slug">\${esc(user.org_slug)}</dd>
  <dt>Role</dt><dd id="org_role">\${esc(user.org_role)}</dd>
  <dt>Product permissions</dt><dd id="permissions">\${esc(permissions.join(' ') || 'none yet')}</dd>
  <dt>Has <code id="checked_permission">\${esc(CHECKED_PERMISSION)}</code></dt><dd id="allowed">\${permissions.includes(CHECKED_PERMISSION) ? 'yes' : 'no'}</dd>
</dl>
<p><a href="/logout">Sign out</a></p>\`,
      );
    }
    if (url.pathname === '/logout') {
      // 5. Sign-out: end the app's session, then svc's at its end-session endpoint.
      const session = sessionOf(req, res);
      sessions.delete(session.id);
      const end = new URL(discovery.end_session_endpoint);
      end.search = new URLSearchParams({
        client_id: clientId,
        post_logout_redirect_uri: postLogoutRedirectUri,
        ...(session.data.idToken ? { id_token_hint: session.data.idToken } : {}),
      }).toString();
      return redirect(res, end.href);
    }
    if (url.pathname === '/api/me') {
      // 6. An API call with svc's access token (an RFC 9068 JWT), verified against the JWKS: the
      // person's product role and permissions, and whether they hold CHECKED_PERMISSION (a route
      // that requires it answers 403 when allowed is false).
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token) return json(res, 401, { error: 'missing bearer token' });
      try {
        const claims = await verifyJwt(token, { audience: clientId, typ: 'at+jwt' });
        const permissions = permissionsOf(claims);
        return json(res, 200, {
          sub: claims.sub,
          org_id: claims.org_id,
          org_slug: claims.org_slug,
          org_role: claims.org_role,
          permissions,
          check: { permission: CHECKED_PERMISSION, allowed: permissions.includes(CHECKED_PERMISSION) },
        });
      } catch {
        return json(res, 401, { error: 'invalid access token' });
      }
    }
    if (url.pathname === '/') {
      const user = sessionOf(req, res).data.user;
      return html(res, 200, user ? \`<p>Signed in as \${esc(user.email)}. <a href="/profile">Profile</a> · <a href="/logout">Sign out</a></p>\` : '<p><a href="/login">Sign in</a></p>');
    }
    return html(res, 404, '<p>Not found</p>');
  } catch (error) {
    return html(res, 500, \`<p>\${esc(error.message)}</p>\`);
  }
});

const port = Number(process.env.PORT ?? 8080);
server.listen(port, () => console.log(\`listening on http://localhost:\${port}\`));
`;

export const rest: FrameworkSpec & { id: 'rest' } = {
  id: 'rest',
  name: 'REST API (any language)',
  language: 'any (HTTP + JSON); the reference server is Node.js 20.6 or later',
  oidcLibrary: { name: "none: plain HTTP (the reference server uses only Node's standard library)" },
  installCommand: 'node --version  # nothing to install: plain HTTP; the reference server needs only Node.js 20.6 or later',
  envFile: '.env',
  envLoading:
    "Node reads it itself: the reference server starts with node --env-file=.env; in another language, load it with that language's dotenv or your process manager.",
  envVars: [...serverVars(), pub('PORT', 'devPort', 'server', 'Port the app listens on: the port of its redirect URI.')],
  // No framework, so no one default: 8080 is the most common one of plain HTTP servers (Go's
  // net/http examples, Spring Boot, Tomcat, most server images).
  devOrigin: 'http://localhost:8080',
  meRoute: '/api/me',
  callbackPath: '/auth/callback',
  postLogoutPath: '/',
  files: (v) => [{ path: 'server.mjs', language: 'js', content: server(v) }],
  runCommand: 'node --env-file=.env server.mjs',
  notes: (v) => [
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}.`,
    `Your other clients call /api/me with svc's access token as a Bearer token; the server verifies it against svc's JWKS and answers the role, the product permissions and check: { permission: '${v.permissionCheck.permission}', allowed }.`,
    `The same flow by hand: GET ${v.discoveryUrl} for the endpoints; send the browser to authorization_endpoint with response_type=code, client_id=${v.clientId}, redirect_uri, scope "openid email profile organization", state and a PKCE S256 code_challenge; at the callback POST grant_type=authorization_code, code, redirect_uri and code_verifier to token_endpoint (client_id in the form while keyless, HTTP Basic with the secret key otherwise); verify the id_token against jwks_uri.`,
    `Read the public application config from any client: curl -sS -H "X-SVC-Publishable-Key: $SVC_PUBLISHABLE_KEY" "$SVC_BASE_URL/v1/client/config". Hosted sign-in without OIDC: ${v.hostedSignIn}.`,
  ],
};
