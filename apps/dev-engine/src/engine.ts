import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SVC_DEFAULT_PORT } from '@svc/contracts/ports';
import express from 'express';
import { exportJWK, generateKeyPair } from 'jose';
import type { ClientMetadata, Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { quietly } from './quiet-provider.ts';

// Loaded inside quietly(): the module warns about the runtime when it is first imported.
const { default: Provider, interactionPolicy } = await quietly(() => import('oidc-provider'));

import { adminApiRouter } from './admin-api.ts';
import { safeNextPath } from './next-path.ts';
import { continuePage, enrollmentPage, errorPage, loginPage, logoutConfirmPage } from './pages.ts';
import { DEMO_USERS, type DevUser, SOCIAL_USER, type StoredUser, UserStore } from './users.ts';

/** A relying party registered with the engine (all are first-party: consent is auto-granted). */
export type DevClient = {
  client_id: string;
  /** Omit for a public client (token_endpoint_auth_method `none`; PKCE is required either way). */
  client_secret?: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  /** For a confidential client; default `client_secret_basic`. */
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post';
};

export type DevEngineOptions = {
  /** 0 picks a free port. */
  port: number;
  /** Interface to bind and the host in the issuer; default 127.0.0.1 (loopback only). */
  host?: string;
  /** Seed users; default DEMO_USERS. */
  users?: DevUser[];
  /**
   * Where users added while it runs (sign-ups, the social identity, admin API users) are kept
   * across restarts, with scrypt password hashes; default none (memory only).
   */
  usersFile?: string;
  /** Bearer token of the `/api/v3/` admin API; default a random token (returned). */
  adminToken?: string;
  /** Default: one public client `svc` redirecting to svc's callback on its default port,
   * http://{127.0.0.1,localhost}:7150/auth/callback. */
  clients?: DevClient[];
  /** Application slug in the issuer path `/application/o/<slug>/`; default `svc`. */
  slug?: string;
  /** Social source slugs served at `/source/oauth/login/<slug>/`; default `['google']`. */
  socialSources?: string[];
};

export type DevEngine = {
  /** `http://<host>:<port>/application/o/<slug>/` (trailing slash, like Authentik). */
  issuer: string;
  /** `http://<host>:<port>` */
  url: string;
  adminToken: string;
  users: UserStore;
  close(): Promise<void>;
};

export const AUTHORIZE_PATH = '/application/o/authorize/';
const TOKEN_PATH = '/application/o/token/';
const USERINFO_PATH = '/application/o/userinfo/';
const AUTHENTICATION_FLOW = 'default-authentication-flow';
const ENROLLMENT_FLOW = 'default-enrollment-flow';

/** Flow pages that only "complete" and continue to `next` (the engine's own MFA/recovery screens). */
export const HANDOFF_FLOWS: Record<string, { title: string; description: string; button: string }> = {
  'default-recovery-flow': {
    title: 'Reset your password',
    description: 'Development engine: no email is sent. Continue to finish the recovery flow.',
    button: 'Continue',
  },
  'default-source-email-verification': {
    title: 'Verify your email',
    description: 'Development engine: the address counts as verified once you continue.',
    button: 'Verify email',
  },
  'default-authenticator-totp-setup': {
    title: 'Set up an authenticator app',
    description: 'Development engine: no real TOTP secret is enrolled.',
    button: 'Finish setup',
  },
  'default-authenticator-webauthn-setup': {
    title: 'Register a passkey',
    description: 'Development engine: no real WebAuthn credential is registered.',
    button: 'Finish setup',
  },
};

const COOKIE_PREFIX = 'dev_engine_';
/** Set by a social source reached outside an authorization (Authentik-style `?next=/application/o/authorize/?...`). */
const PENDING_SOURCE_COOKIE = `${COOKIE_PREFIX}pending_source`;

function defaultClients(): DevClient[] {
  const origins = ['127.0.0.1', 'localhost'].map((host) => `http://${host}:${SVC_DEFAULT_PORT}`);
  return [
    {
      client_id: 'svc',
      redirect_uris: origins.map((o) => `${o}/auth/callback`),
      post_logout_redirect_uris: origins.flatMap((o) => [`${o}/`, `${o}/signin`]),
    },
  ];
}

function listen(server: ReturnType<typeof createServer>, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Starts a real OIDC engine laid out like Authentik. Everything lives in memory. */
export async function startDevEngine(opts: DevEngineOptions): Promise<DevEngine> {
  const host = opts.host ?? '127.0.0.1';
  const slug = opts.slug ?? 'svc';
  const adminToken = opts.adminToken ?? `dev-engine-${randomBytes(24).toString('base64url')}`;
  const clients = opts.clients ?? defaultClients();
  const socialSources = new Set(opts.socialSources ?? ['google']);
  const firstParty = new Set(clients.map((c) => c.client_id));
  const users = new UserStore(opts.users ?? DEMO_USERS, { file: opts.usersFile });

  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end('starting');
  };
  const server = createServer((req, res) => handler(req, res));
  const port = await listen(server, opts.port, host);
  const url = `http://${host}:${port}`;
  const issuerPath = `/application/o/${slug}/`;
  const issuer = `${url}${issuerPath}`;
  const endSessionPath = `${issuerPath}end-session/`;
  // oidc-provider resumes an interaction at `${authorization route}/<uid>` (it trims the route's trailing slash).
  const resumePattern = new RegExp(`^${AUTHORIZE_PATH}([A-Za-z0-9_-]+)$`);

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };

  const claimsFor = (user: StoredUser) => ({
    sub: user.sub,
    email: user.email,
    email_verified: user.emailVerified,
    name: user.name,
    preferred_username: user.username,
    nickname: user.username,
    groups: user.groups,
  });

  const configuration: Configuration = {
    clients: clients.map(
      (c): ClientMetadata => ({
        client_id: c.client_id,
        ...(c.client_secret ? { client_secret: c.client_secret } : {}),
        redirect_uris: c.redirect_uris,
        post_logout_redirect_uris: c.post_logout_redirect_uris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: c.client_secret ? (c.token_endpoint_auth_method ?? 'client_secret_basic') : 'none',
      }),
    ),
    jwks: { keys: [signingKey] },
    cookies: {
      keys: [randomBytes(32).toString('hex')],
      // Browsers share cookies across ports of one host: never collide with svc's cookie names.
      names: { session: `${COOKIE_PREFIX}session`, interaction: `${COOKIE_PREFIX}interaction`, resume: `${COOKIE_PREFIX}resume` },
    },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      // Authentik sends `groups` with the profile scope.
      profile: ['name', 'preferred_username', 'nickname', 'groups'],
    },
    // Authentik puts the scope claims in the ID token too (svc reads groups from it).
    conformIdTokenClaims: false,
    extraParams: ['idp_hint'],
    pkce: { required: () => true },
    routes: {
      authorization: AUTHORIZE_PATH,
      token: TOKEN_PATH,
      userinfo: USERINFO_PATH,
      end_session: endSessionPath,
      jwks: `${issuerPath}jwks/`,
      revocation: '/application/o/revoke/',
      introspection: '/application/o/introspect/',
    },
    ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Interaction: 3600, Session: 86_400, Grant: 86_400 },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      introspection: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: async (ctx, form) => {
          const client = ctx.oidc.client;
          if (client && firstParty.has(client.clientId)) {
            // First-party relying party: sign out without the confirmation screen (Authentik's
            // default invalidation flow does not ask either).
            await signOut(ctx);
            return;
          }
          ctx.body = logoutConfirmPage(form);
        },
        postLogoutSuccessSource: (ctx) => {
          ctx.body = continuePage({
            title: 'Signed out',
            description: 'You have been signed out of the engine.',
            action: '/',
            button: 'OK',
          });
        },
      },
    },
    interactions: {
      policy: (() => {
        const policy = interactionPolicy.base();
        // `prompt=create` (OpenID Connect Prompt Create 1.0) opens the enrollment flow.
        policy.add(new interactionPolicy.Prompt({ name: 'create', requestable: true }), 0);
        return policy;
      })(),
      url: (ctx, interaction) => {
        const next = encodeURIComponent(new URL(interaction.returnTo).pathname);
        if (interaction.prompt.name === 'create') {
          return `/if/flow/${ENROLLMENT_FLOW}/?next=${next}`;
        }
        const params = interaction.params as Record<string, unknown>;
        const loginHint = typeof params.login_hint === 'string' ? params.login_hint : '';
        const pendingSource = ctx.cookies.get(PENDING_SOURCE_COOKIE, { signed: false });
        const source =
          (typeof params.idp_hint === 'string' && params.idp_hint) ||
          (loginHint.startsWith('source:') && loginHint.slice('source:'.length)) ||
          pendingSource;
        if (pendingSource) {
          ctx.cookies.set(PENDING_SOURCE_COOKIE, null, { signed: false, path: '/' });
        }
        if (source) {
          return `/source/oauth/login/${encodeURIComponent(source)}/?next=${next}`;
        }
        return `/if/flow/${AUTHENTICATION_FLOW}/?next=${next}`;
      },
    },
    // Every registered client is first-party: grant the requested OIDC scopes without a consent screen.
    loadExistingGrant: async (ctx) => {
      const { client, session } = ctx.oidc;
      if (!client || !session?.accountId || !firstParty.has(client.clientId)) {
        return undefined;
      }
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope(ctx.oidc.requestParamOIDCScopes);
      await grant.save();
      return grant;
    },
    findAccount: (_ctx, sub) => {
      const user = users.findBySub(sub);
      if (!user?.isActive) {
        return undefined;
      }
      return { accountId: sub, claims: () => claimsFor(user) };
    },
    clientBasedCORS: () => false,
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = errorPage(Object.values(out).join(': '));
    },
  };

  const provider = await quietly(() => new Provider(issuer, configuration));

  async function signOut(ctx: KoaContextWithOIDC): Promise<void> {
    const { session } = ctx.oidc;
    if (!session) {
      redirectAfterLogout(ctx, undefined, undefined);
      return;
    }
    const state = (session.state ?? {}) as { postLogoutRedirectUri?: string; state?: string };
    for (const [, authorization] of Object.entries(session.authorizations ?? {})) {
      const grantId = authorization.grantId;
      if (grantId) {
        await ctx.oidc.provider.AccessToken.revokeByGrantId(grantId);
        await ctx.oidc.provider.AuthorizationCode.revokeByGrantId(grantId);
        await (await ctx.oidc.provider.Grant.find(grantId))?.destroy();
      }
    }
    await session.destroy();
    ctx.cookies.set(provider.cookieName('session'), null, { path: '/' });
    redirectAfterLogout(ctx, state.postLogoutRedirectUri, state.state);
  }

  function redirectAfterLogout(ctx: KoaContextWithOIDC, postLogoutRedirectUri: string | undefined, state: string | undefined): void {
    let target = ctx.oidc.urlFor('end_session_success');
    if (postLogoutRedirectUri) {
      const u = new URL(postLogoutRedirectUri);
      if (state) {
        u.searchParams.set('state', state);
      }
      target = u.href;
    }
    ctx.status = 303;
    ctx.redirect(target);
  }

  // Without an engine session there is nothing to confirm: oidc-provider answers with an
  // auto-submitting form; for a first-party client go straight to post_logout_redirect_uri.
  provider.use(async (ctx, next) => {
    await next();
    const oidcCtx = ctx as KoaContextWithOIDC;
    if (
      oidcCtx.oidc?.route === 'end_session' &&
      ctx.status === 200 &&
      !oidcCtx.oidc.session?.accountId &&
      oidcCtx.oidc.client &&
      firstParty.has(oidcCtx.oidc.client.clientId)
    ) {
      const params = oidcCtx.oidc.params as { post_logout_redirect_uri?: string; state?: string };
      redirectAfterLogout(oidcCtx, params.post_logout_redirect_uri, params.state);
    }
  });

  /** Records the interaction's result; the resume cookie (set by the engine on the browser) still binds it. */
  async function finishInteraction(next: string, result: Record<string, unknown>): Promise<boolean> {
    const uid = resumePattern.exec(next)?.[1];
    if (!uid) {
      return false;
    }
    const interaction = await provider.Interaction.find(uid);
    if (!interaction) {
      return false;
    }
    interaction.result = result;
    await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
    return true;
  }

  async function pendingInteraction(next: string) {
    const uid = resumePattern.exec(next)?.[1];
    return uid ? provider.Interaction.find(uid) : undefined;
  }

  const app = express();
  app.disable('x-powered-by');
  app.use('/api/v3', adminApiRouter({ users, adminToken }));
  app.use(express.urlencoded({ extended: false, limit: '16kb' }));

  app.get('/', (_req, res) => {
    res.type('text/plain').send(`svc dev engine\nissuer: ${issuer}\ndiscovery: ${issuer}.well-known/openid-configuration\n`);
  });

  /** `next` must be a same-origin relative path (open-redirect guard). */
  const requireNext = (req: express.Request, res: express.Response): string | undefined => {
    const next = safeNextPath(req.query.next);
    if (!next) {
      res.status(400).type('html').send(errorPage('The "next" parameter must be a relative path on this engine.'));
    }
    return next;
  };

  const renderLogin = (res: express.Response, next: string, email: string, error?: string) => {
    const q = `?next=${encodeURIComponent(next)}`;
    res.type('html').send(
      loginPage({
        action: `/if/flow/${AUTHENTICATION_FLOW}/${q}`,
        email,
        ...(error ? { error } : {}),
        socialHref: `/source/oauth/login/${encodeURIComponent([...socialSources][0] ?? 'google')}/${q}`,
        enrollHref: `/if/flow/${ENROLLMENT_FLOW}/${q}`,
      }),
    );
  };

  app.get('/if/flow/:flow/', async (req, res) => {
    const next = requireNext(req, res);
    if (!next) {
      return;
    }
    const flow = req.params.flow;
    if (flow === AUTHENTICATION_FLOW || flow === ENROLLMENT_FLOW) {
      const interaction = await pendingInteraction(next);
      if (!interaction && flow === ENROLLMENT_FLOW && next.startsWith(`${AUTHORIZE_PATH}?`)) {
        // Authentik-style sign-up (`?next=/application/o/authorize/?...`, svc's preset): enrol within that authorization.
        res.redirect(303, `${next}&prompt=create`);
        return;
      }
      if (!interaction) {
        res.status(400).type('html').send(errorPage('No pending authorization: start again from the application.'));
        return;
      }
      const hint = (interaction.params as { login_hint?: unknown }).login_hint;
      const email = typeof hint === 'string' && !hint.startsWith('source:') ? hint : '';
      if (flow === AUTHENTICATION_FLOW) {
        renderLogin(res, next, email);
      } else {
        res.type('html').send(enrollmentPage({ action: `/if/flow/${ENROLLMENT_FLOW}/?next=${encodeURIComponent(next)}`, email, name: '' }));
      }
      return;
    }
    const handoff = HANDOFF_FLOWS[flow];
    if (!handoff) {
      res
        .status(404)
        .type('html')
        .send(errorPage(`Unknown flow ${flow}.`));
      return;
    }
    res.type('html').send(continuePage({ ...handoff, action: `/if/flow/${encodeURIComponent(flow)}/?next=${encodeURIComponent(next)}` }));
  });

  app.post('/if/flow/:flow/', async (req, res) => {
    const next = requireNext(req, res);
    if (!next) {
      return;
    }
    const flow = req.params.flow;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const field = (name: string) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '');
    if (flow === AUTHENTICATION_FLOW) {
      const email = field('email');
      const user = users.authenticate(email, typeof body.password === 'string' ? body.password : '');
      if (!user) {
        // Re-render (no redirect), like Authentik's flow executor.
        renderLogin(res.status(200), next, email, 'Invalid email or password.');
        return;
      }
      if (!(await finishInteraction(next, { login: { accountId: user.sub, amr: ['pwd'] } }))) {
        res.status(400).type('html').send(errorPage('No pending authorization: start again from the application.'));
        return;
      }
      res.redirect(303, next);
      return;
    }
    if (flow === ENROLLMENT_FLOW) {
      const email = field('email');
      const name = field('name');
      const password = typeof body.password === 'string' ? body.password : '';
      const action = `/if/flow/${ENROLLMENT_FLOW}/?next=${encodeURIComponent(next)}`;
      const fail = (error: string) => res.status(200).type('html').send(enrollmentPage({ action, email, name, error }));
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
        fail('Enter a valid email address.');
        return;
      }
      if (!name) {
        fail('Enter your name.');
        return;
      }
      if (password.length < 8) {
        fail('The password must have at least 8 characters.');
        return;
      }
      if (users.findByEmail(email)) {
        fail('An account with this email already exists.');
        return;
      }
      const user = users.create({ email, name, password, emailVerified: false });
      await finishInteraction(next, { create: {}, login: { accountId: user.sub, amr: ['pwd'] } });
      res.redirect(303, next);
      return;
    }
    if (!HANDOFF_FLOWS[flow]) {
      res
        .status(404)
        .type('html')
        .send(errorPage(`Unknown flow ${flow}.`));
      return;
    }
    res.redirect(303, next);
  });

  app.get('/source/oauth/login/:source/', async (req, res) => {
    const next = requireNext(req, res);
    if (!next) {
      return;
    }
    const source = req.params.source;
    if (!socialSources.has(source)) {
      res
        .status(404)
        .type('html')
        .send(errorPage(`Unknown source ${source}.`));
      return;
    }
    const user = users.findByEmail(SOCIAL_USER.email) ?? users.create({ ...SOCIAL_USER, emailVerified: true });
    if (await finishInteraction(next, { login: { accountId: user.sub, amr: ['ext'] } })) {
      res.redirect(303, next);
      return;
    }
    // Reached outside an authorization (Authentik-style `?next=/application/o/authorize/?...`):
    // remember the source so the authorization's interaction comes straight back here.
    res.cookie(PENDING_SOURCE_COOKIE, source, { httpOnly: true, sameSite: 'lax', path: '/', maxAge: 5 * 60_000 });
    res.redirect(303, next);
  });

  app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res
      .status(500)
      .type('html')
      .send(errorPage(err instanceof Error ? err.message : 'internal error'));
  });

  const providerCallback = provider.callback();
  const discoveryPath = `${issuerPath}.well-known/openid-configuration`;
  const expressPrefixes = ['/if/', '/source/', '/api/v3/'];
  handler = (req, res) => {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
    if (path === discoveryPath) {
      req.url = `/.well-known/openid-configuration${q === -1 ? '' : rawUrl.slice(q)}`;
      providerCallback(req, res);
      return;
    }
    if (path === '/' || expressPrefixes.some((p) => path.startsWith(p))) {
      app(req, res);
      return;
    }
    providerCallback(req, res);
  };

  return {
    issuer,
    url,
    adminToken,
    users,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
