import { type FrameworkSpec, localSecret, permissionComment, permissionLiteral, pub, serverVars, type WiringValues } from './shared.ts';

/**
 * Express with openid-client 6 (authorization code + PKCE; a confidential client with the secret
 * key, a public one while keyless), express-session for the app's own session, jose 6 to verify
 * svc's access tokens against the JWKS. One file, ES modules, Node's own --env-file.
 */
const server = (v: WiringValues) => `// Sign-in with svc (OpenID Connect) for Express: openid-client 6, express-session, jose 6.
import express from 'express';
import session from 'express-session';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';

const issuer = new URL(process.env.SVC_ISSUER);
const clientId = process.env.SVC_CLIENT_ID;
// Empty for the keyless development app: a public client that proves itself with PKCE alone.
const secretKey = process.env.SVC_SECRET_KEY;
const redirectUri = process.env.SVC_REDIRECT_URI;
const postLogoutRedirectUri = process.env.SVC_POST_LOGOUT_REDIRECT_URI;

${permissionComment(v, '//')}
const CHECKED_PERMISSION = ${permissionLiteral(v)};

// Development allowance: plain http only for an svc on this machine, never in production.
const local = ['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname);
if (issuer.protocol !== 'https:' && !local) {
  throw new Error('SVC_ISSUER must be https:// (http is allowed only for an svc on localhost)');
}
const config = await client.discovery(
  issuer,
  clientId,
  undefined,
  secretKey ? client.ClientSecretBasic(secretKey) : client.None(),
  issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : undefined,
);
const metadata = config.serverMetadata();
// svc's signing keys, fetched once and cached: verifying a token makes no request to svc.
const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));

const esc = (value) => String(value ?? '').replace(/[&<>"']/g, (c) => \`&#\${c.charCodeAt(0)};\`);
const page = (body) => \`<!doctype html><html><head><meta charset="utf-8"><title>svc sign-in</title></head><body>\${body}</body></html>\`;

const app = express();
// svc comes back to the host of the redirect URI, and the sign-in's state lives in a cookie of the
// host the browser used: any other name for this app (127.0.0.1 for localhost) goes there first,
// same path and query. Only the path and query go along, so "//evil.example" stays a path here.
const appUrl = new URL(redirectUri);
app.use((req, res, next) => {
  if (req.headers.host === appUrl.host) {
    next();
    return;
  }
  const target = new URL(\`\${appUrl.origin}/\${req.originalUrl.replace(/^[/\\\\]+/, '')}\`);
  res.redirect(307, target.origin === appUrl.origin ? target.href : appUrl.origin);
});
app.use(
  session({
    secret: process.env.SESSION_SECRET,
    resave: false,
    saveUninitialized: false,
    cookie: { httpOnly: true, sameSite: 'lax', secure: new URL(redirectUri).protocol === 'https:' },
  }),
);

app.get('/', (req, res) => {
  const user = req.session.user;
  res.send(
    page(
      user
        ? \`<p>Signed in as \${esc(user.email)}. <a href="/profile">Profile</a> · <a href="/logout">Sign out</a></p>\`
        : '<p><a href="/login">Sign in</a></p>',
    ),
  );
});

app.get('/login', async (req, res) => {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  req.session.signIn = { codeVerifier, state };
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email profile organization',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
  });
  res.redirect(url.href);
});

app.get('/auth/callback', async (req, res) => {
  const signIn = req.session.signIn;
  if (!signIn) {
    res.redirect('/login');
    return;
  }
  const tokens = await client.authorizationCodeGrant(config, new URL(req.originalUrl, redirectUri), {
    pkceCodeVerifier: signIn.codeVerifier,
    expectedState: signIn.state,
  });
  const claims = tokens.claims();
  // A new session id at sign-in, so a session fixed before it is worth nothing.
  await new Promise((resolve, reject) => req.session.regenerate((error) => (error ? reject(error) : resolve())));
  req.session.user = {
    sub: claims.sub,
    email: claims.email,
    name: claims.name,
    org_id: claims.org_id,
    org_slug: claims.org_slug,
    org_role: claims.org_role,
    permissions: claims.permissions ?? [],
  };
  req.session.idToken = tokens.id_token;
  res.redirect('/profile');
});

// A protected page: only for a signed-in person.
app.get('/profile', (req, res) => {
  const user = req.session.user;
  if (!user) {
    res.redirect('/login');
    return;
  }
  res.send(
    page(\`<h1>\${esc(user.name ?? user.email)}</h1>
<dl>
  <dt>Email</dt><dd id="email">\${esc(user.email)}</dd>
  <dt>User id</dt><dd id="sub">\${esc(user.sub)}</dd>
  <dt>Organization</dt><dd id="org_slug">\${esc(user.org_slug)}</dd>
  <dt>Role</dt><dd id="org_role">\${esc(user.org_role)}</dd>
  <dt>Product permissions</dt><dd id="permissions">\${esc(user.permissions.join(' ') || 'none yet')}</dd>
  <dt>Has <code id="checked_permission">\${esc(CHECKED_PERMISSION)}</code></dt><dd id="allowed">\${user.permissions.includes(CHECKED_PERMISSION) ? 'yes' : 'no'}</dd>
</dl>
<p><a href="/logout">Sign out</a></p>\`),
  );
});

// Sign-out ends the app's session and svc's, through svc's end-session endpoint.
app.get('/logout', (req, res) => {
  const idToken = req.session.idToken;
  req.session.destroy(() => {
    const url = client.buildEndSessionUrl(config, {
      post_logout_redirect_uri: postLogoutRedirectUri,
      ...(idToken ? { id_token_hint: idToken } : {}),
    });
    res.redirect(url.href);
  });
});

// An API for your other clients: send svc's access token as "Authorization: Bearer <token>".
// It is an RFC 9068 JWT, verified here against svc's JWKS (no request to svc per call). It answers
// the person's product role and permissions, and whether they hold CHECKED_PERMISSION: a route
// that requires it answers 403 when allowed is false.
app.get('/api/me', async (req, res) => {
  const token = /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1];
  if (!token) {
    res.status(401).json({ error: 'missing bearer token' });
    return;
  }
  try {
    const { payload } = await jwtVerify(token, jwks, { issuer: metadata.issuer, audience: clientId, typ: 'at+jwt' });
    const permissions = Array.isArray(payload.permissions) ? payload.permissions : [];
    res.json({
      sub: payload.sub,
      org_id: payload.org_id,
      org_slug: payload.org_slug,
      org_role: payload.org_role,
      permissions,
      check: { permission: CHECKED_PERMISSION, allowed: permissions.includes(CHECKED_PERMISSION) },
    });
  } catch {
    res.status(401).json({ error: 'invalid access token' });
  }
});

// A failed sign-in (denied, expired, replayed) says so instead of a stack trace.
app.use((error, req, res, next) => {
  res.status(400).send(page(\`<p>Sign-in failed: \${esc(error.message)}</p><p><a href="/login">Try again</a></p>\`));
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, () => console.log(\`listening on http://localhost:\${port}\`));
`;

export const express: FrameworkSpec & { id: 'express' } = {
  id: 'express',
  name: 'Express',
  language: 'JavaScript (Node.js 20.6 or later)',
  oidcLibrary: { name: 'openid-client 6 + express-session + jose 6', url: 'https://github.com/panva/openid-client' },
  installCommand: 'npm install express@5 express-session@1 openid-client@6 jose@6',
  envFile: '.env',
  envLoading: 'Node reads it itself: the app starts with node --env-file=.env (Node 20.6 or later), no dotenv package.',
  envVars: [
    ...serverVars(),
    pub('PORT', 'devPort', 'server', 'Port the app listens on: the port of its redirect URI.'),
    localSecret('SESSION_SECRET', "express-session signs the app's session cookie with it"),
  ],
  devOrigin: 'http://localhost:3000',
  meRoute: '/api/me',
  callbackPath: '/auth/callback',
  postLogoutPath: '/',
  files: (v) => [{ path: 'server.mjs', language: 'js', content: server(v) }],
  runCommand: 'node --env-file=.env server.mjs',
  notes: (v) => [
    `Open ${new URL(v.callbackUrl).origin}/profile: it sends you to svc to sign in, then shows your email, organization (org_slug), role (org_role), product permissions and whether you hold ${v.permissionCheck.permission}.`,
    '/logout signs out of the app and of svc (end-session endpoint) and comes back to the home page.',
    `Your other clients call /api/me with svc's access token as a Bearer token; the app verifies it against svc's JWKS and answers the role, the product permissions and check: { permission: '${v.permissionCheck.permission}', allowed }.`,
  ],
};
