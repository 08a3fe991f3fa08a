import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '@svc/contracts/errors';
import { type Db, type Sql, StartupError } from '@svc/db/client';
import { OIDC_KEYS_CHANGED_CHANNEL, revokeOidcPayloadsByGrantId } from '@svc/db/queries/oidc-provider';
import { recordApplicationSignIn } from '@svc/db/queries/session-applications';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import { type SecretBox, SecretBoxError } from '@svc/db/secret-box';
import { quietly } from '@svc/dev-engine/quiet-provider';
import type { Adapter, Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from 'pino';
import { requestIdOf } from '../../http/errors.ts';
import { allowFormRedirectTo } from '../../http/security-headers.ts';
import { tokensIssued } from '../../metrics.ts';
import { recordAudit, requestMetaOf } from '../access/audit.ts';
import type { ApplicationCache } from '../applications/cache.ts';
import { consoleApplicationPath } from '../applications/console-link.ts';
import { sha256Hex } from '../applications/keys.ts';
import { type Entitlements, entitlementsOf } from '../subscriptions/entitlements.ts';
import {
  accountFinder,
  type GrantOrganization,
  OIDC_SCOPES,
  organizationOfGrant,
  type SvcSessionOf,
  selectableOrganizations,
  standingOf,
} from './accounts.ts';
import { createAdapterFactory } from './adapter.ts';
import {
  applicationClients,
  CORS_METADATA,
  corsAllowed,
  MEMBERS_OF_METADATA,
  membersOnlyOrganization,
  PRIVATE_KEY_JWT_ALGS,
} from './clients.ts';
import { oidcErrorPage, type RegisterHint, type UnregisteredUrl } from './error-page.ts';
import { applyProviderInternals } from './internals.ts';
import { rememberKeylessUrls } from './keyless-urls.ts';
import { ensureCurrentSigningKey, loadSigningKeys, type SigningAlg, type SigningJwk } from './keys.ts';
import { endSvcSession, logoutPage, logoutRequestProblem, type SvcLogoutDeps, signedOutPage } from './logout.ts';
import { providerRequestsInFlight } from './request-context.ts';
import { TokenResources } from './resources.ts';
import { OIDC_TTL } from './ttl.ts';
import { introspectAccessToken, isStructuredToken } from './userinfo.ts';

/** Grant types a token label may name (anything else is `other`). */
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token', 'client_credentials']);

// Loaded inside quietly(): the module warns about the Node 20 runtime when it is first imported.
const { default: Provider, errors, interactionPolicy } = await quietly(() => import('oidc-provider'));
type ProviderInstance = InstanceType<typeof Provider>;

/** Where the provider's endpoints live; the issuer (PUBLIC_URL) has no path of its own. */
export const OIDC_PREFIX = '/oidc';
export const DISCOVERY_PATH = '/.well-known/openid-configuration';
/** RFC 8414 authorization server metadata: the same document as discovery, for OAuth clients and agents. */
export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const OIDC_ROUTES = {
  authorization: `${OIDC_PREFIX}/auth`,
  token: `${OIDC_PREFIX}/token`,
  jwks: `${OIDC_PREFIX}/jwks`,
  userinfo: `${OIDC_PREFIX}/me`,
  revocation: `${OIDC_PREFIX}/token/revocation`,
  introspection: `${OIDC_PREFIX}/token/introspection`,
  end_session: `${OIDC_PREFIX}/session/end`,
  pushed_authorization_request: `${OIDC_PREFIX}/request`,
  backchannel_authentication: `${OIDC_PREFIX}/backchannel`,
  code_verification: `${OIDC_PREFIX}/device`,
  device_authorization: `${OIDC_PREFIX}/device/auth`,
} as const;
/** The hosted interaction (sign-in, organization choice) of an authorization request. */
export const INTERACTION_PATH = `${OIDC_PREFIX}/interaction`;
/** Where the console's try sign-in starts (`/oidc/try/<application id>`) and comes back to (`/callback`). */
export const TRY_SIGN_IN_PATH = `${OIDC_PREFIX}/try`;
export const TRY_CALLBACK_PATH = `${TRY_SIGN_IN_PATH}/callback`;

/** Cookie names of the provider: never those of svc's own session or of the engine. */
const COOKIE_NAMES = { session: 'svc_op_session', interaction: 'svc_op_interaction', resume: 'svc_op_resume' };
/** The provider's long-lived cookie (its session), as set and as cleared. */
const LONG_COOKIE = { signed: true, httpOnly: true, sameSite: 'lax' } as const;

export type OpenIdProviderOptions = {
  db: Db;
  sql: Sql;
  logger: Logger;
  applications: ApplicationCache;
  secretBox: SecretBox;
  /** SVC_ENCRYPTION_KEY: the provider's cookie-signing keys are derived from it (shared by every process). */
  encryptionKey: Buffer;
  /** PUBLIC_URL, the issuer. */
  issuer: string;
  signingAlg: SigningAlg;
  keylessEnabled: boolean;
  /**
   * Not production (NODE_ENV): an unregistered redirect URI's error page also says where to
   * register it (error-page.ts). Unset: production's page, which names the URL only.
   */
  development?: boolean;
  /** The svc session behind a browser request (the svc session cookie), or null. */
  sessionOf: SvcSessionOf;
  /**
   * Where oidc-provider keeps everything but clients (codes, tokens, grants, sessions,
   * interactions): PostgreSQL unless given. The bench builds the same provider on oidc-provider's
   * in-memory adapter to measure what PostgreSQL costs (bench/oidc-provider-server.ts).
   */
  storage?: (model: string) => Adapter;
  /** The client address of a request, for the audit entry of an application sign-in. */
  clientIp: (req: IncomingMessage) => string;
  /** The engine's end-session URL (rp.endSessionUrl): an application's logout ends the engine's session too. */
  engineEndSessionUrl: SvcLogoutDeps['engineEndSessionUrl'];
  /** The engine's ID token kept with a svc session: the engine's end-session carries it as id_token_hint. */
  engineIdTokenOf?: SvcLogoutDeps['engineIdTokenOf'];
  /**
   * Records the usage event of a machine client's token (MACHINE_TOKEN_EVENT_TYPE) in its
   * organization before the token is issued; throws the subscription rule's 402 AppError when
   * the organization may not (inactive subscription, monthly limit reached). Unset: not metered
   * (the bench's provider-only processes).
   */
  meterMachineToken?: (input: { organizationId: string; clientId: string; tokenId: string; resource: string }) => Promise<void>;
};

/** One built provider and the documents served from memory for it. */
type Document = { json: string; contentType: string };
type Built = {
  provider: ProviderInstance;
  callback: (req: IncomingMessage, res: ServerResponse) => void;
  discovery: Document;
  jwks: Document;
  kids: string;
};

/**
 * svc's OpenID Provider: oidc-provider configured with PostgreSQL persistence (adapter.ts),
 * applications as clients (clients.ts) and signing keys from the database (keys.ts).
 *
 * oidc-provider reads its keys once, when built. A rotation (`svc keys rotate`, any process)
 * NOTIFYs OIDC_KEYS_CHANGED_CHANNEL; every process then reloads the keys and swaps in a provider
 * built with them (requests under way finish on the previous one; all state is in PostgreSQL, so
 * nothing is lost). Keys retiring with time are dropped by the same reload, run every minute.
 *
 * Discovery and JWKS are hot: they are answered from JSON computed once per build from the
 * provider itself (so they match what oidc-provider would answer) and pinned to PUBLIC_URL.
 */
export class OpenIdProvider {
  private built: Built | undefined;
  private reloading: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly clients;
  /** The product's API resources, by identifier (the `resource` parameter). */
  readonly resources: TokenResources;
  private readonly cookieKeys: string[];
  private readonly publicUrl: URL;
  /** Key of the try sign-in client secrets (see tryClientSecret); derived from SVC_ENCRYPTION_KEY, never sent anywhere. */
  private readonly tryKey: Buffer;
  /** The loopback listener of try sign-in's token requests, started on first use (see redeemTryCode). */
  private internal: Promise<{ server: http.Server; base: string }> | undefined;
  /** Requests that reached the provider through that listener, never through svc's public one. */
  private readonly internalRequests = new WeakSet<IncomingMessage>();
  /** `${PUBLIC_URL}/oidc/try/callback`: a redirect URI of every client. */
  readonly tryCallbackUrl: string;

  private constructor(private readonly opts: OpenIdProviderOptions) {
    this.publicUrl = new URL(opts.issuer);
    this.tryCallbackUrl = new URL(TRY_CALLBACK_PATH, this.publicUrl).href;
    this.clients = applicationClients(opts.applications, { keylessEnabled: opts.keylessEnabled, tryCallbackUrl: this.tryCallbackUrl });
    this.resources = new TokenResources(opts.db);
    this.cookieKeys = [
      Buffer.from(hkdfSync('sha256', opts.encryptionKey, Buffer.alloc(0), 'svc oidc-provider cookies', 32)).toString('base64url'),
    ];
    this.tryKey = Buffer.from(hkdfSync('sha256', opts.encryptionKey, Buffer.alloc(0), 'svc try sign-in client secret', 32));
  }

  /** Ensures a current signing key (first start creates it), builds the provider and listens for rotations. */
  static async start(opts: OpenIdProviderOptions): Promise<OpenIdProvider> {
    const op = new OpenIdProvider(opts);
    await ensureCurrentSigningKey(opts.db, opts.secretBox, opts.signingAlg);
    await op.resources.listen(opts.sql);
    try {
      await op.reload();
    } catch (error) {
      if (error instanceof SecretBoxError) {
        throw new StartupError(
          'the OpenID Provider signing keys in the database do not open with SVC_ENCRYPTION_KEY: set the key they were sealed with',
        );
      }
      throw error;
    }
    const sub = await opts.sql.listen(
      OIDC_KEYS_CHANGED_CHANNEL,
      () => op.reloadInBackground(),
      // (Re)connected: a rotation may have been missed meanwhile.
      () => op.reloadInBackground(),
    );
    op.unlisten = sub.unlisten;
    op.timer = setInterval(() => op.reloadInBackground(), 60_000);
    op.timer.unref();
    return op;
  }

  get provider(): ProviderInstance {
    return this.current().provider;
  }

  /** The discovery document, as oidc-provider serves it. */
  get discovery(): Document {
    return this.current().discovery;
  }

  /** The public JWKS, as oidc-provider serves it. */
  get jwks(): Document {
    return this.current().jwks;
  }

  /** Hands a request to oidc-provider, as if it had reached PUBLIC_URL (its URLs are built from the request). */
  handle(req: IncomingMessage, res: ServerResponse): void {
    pinToPublicUrl(req, this.publicUrl);
    this.current().callback(req, res);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.unlisten?.();
    await this.resources.close();
    await this.reloading?.catch(() => {});
    const internal = await this.internal?.catch(() => undefined);
    if (internal) {
      internal.server.closeAllConnections();
      await new Promise<void>((resolve) => internal.server.close(() => resolve()));
    }
  }

  /**
   * Redeems a code issued to the try sign-in callback at svc's own token endpoint: the real
   * oidc-provider token endpoint (PKCE, code binding, single use, client authentication), reached
   * over a loopback listener of this process instead of the public one.
   *
   * A confidential client must authenticate, and svc cannot present its secret key: it keeps only
   * the key's SHA-256. So the client authenticates with a try secret (tryClientSecret), an HMAC of
   * its client id under a key derived from SVC_ENCRYPTION_KEY. That secret is computed here, sent
   * only over this loopback connection, and accepted by compareClientSecret (in addition to the
   * real secret key, which keeps working as before) only when every one of these holds:
   * - the request arrived through this loopback listener (a request object svc's public server
   *   never handles), so the secret is worthless over svc's public URL, whoever learns it;
   * - it is the authorization_code grant of a code whose redirect_uri is the try callback, i.e. a
   *   code that only ever lands on svc itself;
   * - the secret is this client's (the HMAC binds the client id).
   * The loopback listener alone would not do: anything on the machine (or a request svc is made to
   * send, such as a webhook) can reach a loopback port, but none of them knows the secret. Other
   * mechanisms of oidc-provider were no better fit: client_secret_jwt and private_key_jwt need a
   * key the client registered, and a second registered client would be a client of its own, not
   * a sign-in to this application.
   */
  async redeemTryCode(input: {
    clientId: string;
    confidential: boolean;
    code: string;
    codeVerifier: string;
  }): Promise<{ status: number; body: Record<string, unknown> }> {
    const { base } = await this.internalListener();
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: this.tryCallbackUrl,
      code_verifier: input.codeVerifier,
    });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (input.confidential) {
      // client_secret_basic: both parts form-urlencoded (RFC 6749 section 2.3.1).
      const user = encodeURIComponent(input.clientId);
      const password = encodeURIComponent(this.tryClientSecret(input.clientId));
      headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    } else {
      form.set('client_id', input.clientId);
    }
    const res = await fetch(`${base}${OIDC_ROUTES.token}`, { method: 'POST', headers, body: form.toString() });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: res.status, body };
  }

  /** A client's try sign-in secret: HMAC-SHA256 of its id under tryKey (see redeemTryCode). */
  private tryClientSecret(clientId: string): string {
    return createHmac('sha256', this.tryKey).update(clientId, 'utf8').digest('base64url');
  }

  /** Whether `presented` is `clientId`'s try secret on a request redeemTryCode sent (see there). */
  private isTryExchange(ctx: KoaContextWithOIDC | undefined, clientId: string, presented: string): boolean {
    if (!ctx || !this.internalRequests.has(ctx.req) || ctx.oidc.route !== 'token') {
      return false;
    }
    const params = ctx.oidc.params ?? {};
    if (params.grant_type !== 'authorization_code' || params.redirect_uri !== this.tryCallbackUrl || typeof presented !== 'string') {
      return false;
    }
    const expected = Buffer.from(this.tryClientSecret(clientId), 'utf8');
    const actual = Buffer.from(presented, 'utf8');
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  private internalListener(): Promise<{ server: http.Server; base: string }> {
    this.internal ??= (async () => {
      const server = http.createServer((req, res) => {
        this.internalRequests.add(req);
        pinToPublicUrl(req, this.publicUrl);
        this.current().callback(req, res);
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      server.unref();
      return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    })();
    // A failed start is retried by the next call.
    this.internal.catch(() => {
      this.internal = undefined;
    });
    return this.internal;
  }

  private current(): Built {
    if (!this.built) {
      throw new Error('the OpenID Provider is not started');
    }
    return this.built;
  }

  private reloadInBackground(): void {
    this.reload().catch((error: unknown) => this.opts.logger.error({ err: error }, 'could not reload the OpenID Provider signing keys'));
  }

  /** Reloads the keys; rebuilds only when the published set changed. One reload at a time. */
  reload(): Promise<void> {
    const run = async () => {
      const keys = await loadSigningKeys(this.opts.db, this.opts.secretBox);
      const kids = keys.map((k) => k.kid).join(' ');
      if (this.built?.kids === kids) {
        return;
      }
      const built = await this.build(keys);
      const previous = this.built?.kids;
      this.built = built;
      if (previous !== undefined) {
        this.opts.logger.info({ kids: kids.split(' ') }, 'OpenID Provider signing keys reloaded');
      }
    };
    const next = (this.reloading ?? Promise.resolve()).catch(() => {}).then(run);
    this.reloading = next;
    return next;
  }

  private async build(keys: SigningJwk[]): Promise<Built> {
    const [current] = keys;
    if (!current) {
      throw new Error('no current OpenID Provider signing key');
    }
    const provider = await quietly(() => new Provider(this.opts.issuer, this.configuration(keys, current.alg)));
    provider.proxy = true;
    // Tokens issued, by grant (docs/operations.md "Metrics"): oidc-provider's event for a token
    // endpoint call that answered with tokens.
    provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
      const grantType = ctx.oidc.params?.grant_type;
      tokensIssued.inc({ grant_type: typeof grantType === 'string' && GRANT_TYPES.has(grantType) ? grantType : 'other' });
    });
    // First, so it wraps everything the provider runs for a request (see request-context.ts).
    provider.use(providerRequestsInFlight);
    provider.use(offlineAccessWithoutConsentScreen);
    provider.use(codesOfOtherClientsRevoked(this.opts.db, provider));
    provider.use(formPostToRedirectUri);
    provider.use(rememberKeylessUrls(this.opts.db, this.clients));
    provider.use(this.structuredTokenIntrospection());
    // svc's redefinitions of oidc-provider's Client and Grant (internals.ts, the one module that
    // reaches into the library): the try sign-in callback and the keyless application's loopback
    // URLs; sid in every token; back-channel logout through the durable job only
    // (modules/session-store/end.ts); a confidential client's secret compared with the SHA-256 of
    // its application's secret key as svc stores it (rotation reaches every process through the
    // application cache and NOTIFY), or the try exchange's secret on that exchange only
    // (redeemTryCode says how and why); and the organization kept on the Grant (loadExistingGrant).
    applyProviderInternals(provider, {
      tryCallbackUrl: this.tryCallbackUrl,
      isKeyless: (clientId) => this.clients.isKeyless(clientId),
      secretMatchesHash,
      isTryExchange: (clientId, presented) => this.isTryExchange(Provider.ctx, clientId, presented),
    });
    provider.use(this.logoutMiddleware());
    const callback = provider.callback() as (req: IncomingMessage, res: ServerResponse) => void;
    const documents = await this.fetchDocuments(callback);
    return { provider, callback, ...documents, kids: keys.map((k) => k.kid).join(' ') };
  }

  /** Asks the freshly built provider for its discovery document and JWKS, on a loopback port of its own. */
  private async fetchDocuments(
    callback: (req: IncomingMessage, res: ServerResponse) => void,
  ): Promise<{ discovery: Document; jwks: Document }> {
    const publicUrl = this.publicUrl;
    const server = http.createServer((req, res) => {
      pinToPublicUrl(req, publicUrl);
      callback(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const get = async (path: string) => {
        const res = await fetch(`${base}${path}`);
        if (res.status !== 200) {
          throw new Error(`the OpenID Provider answered ${res.status} for ${path}`);
        }
        // Re-serialized compactly: the same document oidc-provider serves.
        return {
          json: JSON.stringify(await res.json()),
          contentType: res.headers.get('content-type') ?? 'application/json; charset=utf-8',
        };
      };
      return { discovery: await get(DISCOVERY_PATH), jwks: await get(OIDC_ROUTES.jwks) };
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  /**
   * RP-initiated logout (features.rpInitiatedLogout.logoutSource): the error page when the request
   * is one svc refuses (logout.ts); straight on, without a page, when its id_token_hint names the
   * browser's current svc session (hintNamesSession); otherwise the confirmation page
   * (docs/oidc.md, "RP-initiated logout").
   */
  private async renderLogout(ctx: KoaContextWithOIDC): Promise<void> {
    ctx.type = 'html';
    const problem = logoutRequestProblem(ctx);
    if (problem) {
      ctx.status = 400;
      ctx.body = oidcErrorPage({ error: 'invalid_request', error_description: problem }, 'sign-out');
      return;
    }
    const current = await this.opts.sessionOf(ctx.req);
    if (current && (await this.hintNamesSession(ctx, current))) {
      await this.logOutWithoutConfirmation(ctx);
      return;
    }
    const xsrf = (ctx.oidc.session?.state as { secret?: unknown } | undefined)?.secret;
    // Either button's answer ends on the application's post_logout_redirect_uri (checked by
    // oidc-provider against the client's registration), through the engine for Sign out.
    const destination = ctx.oidc.params?.post_logout_redirect_uri;
    if (typeof destination === 'string') {
      allowFormRedirectTo(ctx.res, destination);
    }
    ctx.status = 200;
    ctx.body = logoutPage({
      action: ctx.oidc.urlFor('end_session_confirm'),
      xsrf: typeof xsrf === 'string' ? xsrf : '',
      appName: ctx.oidc.client?.clientName ?? ctx.oidc.client?.clientId,
      signedInAs: current?.user.email,
    });
  }

  /**
   * Whether the end-session request's id_token_hint is an ID token svc issued to its client for
   * the browser's current svc session: signed by svc (verified again here), its `sid` that
   * session and its `sub` that person. OpenID Connect RP-Initiated Logout 1.0 section 2 lets the
   * provider skip the question then. A hint of an earlier or another session, of another person,
   * or one the browser does not hold the session of (no svc cookie) keeps the question.
   */
  private async hintNamesSession(ctx: KoaContextWithOIDC, current: SessionWithUser): Promise<boolean> {
    const hint = ctx.oidc.params?.id_token_hint;
    const client = ctx.oidc.client;
    if (typeof hint !== 'string' || !client) {
      return false;
    }
    try {
      const { payload } = (await ctx.oidc.provider.IdToken.validate(hint, client)) as { payload: Record<string, unknown> };
      return payload.sid === current.session.id && payload.sub === current.user.id;
    } catch {
      return false;
    }
  }

  /**
   * A confirmed full logout without the page: what oidc-provider's confirm endpoint does for
   * logout=yes (every authorization's grant revoked with its tokens, its session destroyed and its
   * cookie cleared), then svc's part (endSvcSession) and on to the engine.
   */
  private async logOutWithoutConfirmation(ctx: KoaContextWithOIDC): Promise<void> {
    const session = ctx.oidc.session;
    const grantIds = Object.values(session?.authorizations ?? {})
      .map((authorization) => authorization.grantId)
      .filter((grantId): grantId is string => typeof grantId === 'string');
    for (const grantId of grantIds) {
      await revokeOidcPayloadsByGrantId(this.opts.db, grantId);
    }
    // Read before the session goes: where the application asked to land, and the sids of its sign-ins.
    const destination = await endSvcSession(ctx, this.logoutDeps());
    await session?.destroy();
    ctx.cookies.set(COOKIE_NAMES.session, null, LONG_COOKIE);
    ctx.status = 303;
    ctx.redirect(destination);
  }

  private logoutDeps(): SvcLogoutDeps {
    return {
      db: this.opts.db,
      sessionOf: this.opts.sessionOf,
      publicUrl: this.opts.issuer,
      engineEndSessionUrl: this.opts.engineEndSessionUrl,
      engineIdTokenOf: this.opts.engineIdTokenOf,
    };
  }

  /**
   * Around oidc-provider's end-session routes. Without an account in its session, oidc-provider
   * answers the end-session request with an auto-submitting form (an inline script svc's CSP
   * blocks): svc's confirmation page instead, since the svc and engine sessions may still be
   * there. After a confirmed full logout: svc's part (endSvcSession), then the engine's.
   */
  private logoutMiddleware() {
    const deps = this.logoutDeps();
    return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
      await next();
      const route = ctx.oidc?.route;
      if (route === 'end_session' && ctx.status === 200 && !ctx.oidc.session?.accountId) {
        await this.renderLogout(ctx);
      } else if (route === 'end_session_confirm' && ctx.status === 303 && ctx.oidc.params?.logout) {
        ctx.redirect(await endSvcSession(ctx, deps));
      }
    };
  }

  /**
   * oidc-provider's default policy plus one login check: the provider's own session must be the
   * svc session of the browser (same user, same sign-in). No svc session, another user or a newer
   * sign-in: the login prompt, so the interaction hands off to the engine, and `prompt=none`
   * answers login_required.
   */
  private interactionPolicy() {
    const policy = interactionPolicy.base();
    const login = policy.get('login');
    if (!login) {
      throw new Error('oidc-provider has no login prompt');
    }
    const sessionOf = this.opts.sessionOf;
    login.checks.add(
      new interactionPolicy.Check('svc_session', 'End-User authentication is required', 'login_required', async (ctx) => {
        const current = await sessionOf(ctx.req);
        const session = ctx.oidc.session;
        if (!current || !session || current.user.id !== session.accountId || epochSeconds(current.session.createdAt) !== session.loginTs) {
          return interactionPolicy.Check.REQUEST_PROMPT;
        }
        return interactionPolicy.Check.NO_NEED_TO_PROMPT;
      }),
      0,
    );
    // oidc-provider asks native clients on loopback redirects for consent every time (another
    // program on the machine could sit on the port). The only native client is the keyless
    // development application, first-party like every application: no consent screen.
    policy.get('consent')?.checks.remove('native_client_prompt');
    return policy;
  }

  /**
   * Applications are first-party: no consent screen. Every authorization gets a Grant of exactly
   * the scopes it asked for, bound to the svc session (sid = the svc session id) and, with scope
   * `organization`, to the organization it speaks for: the one `organization=<slug>` names (an
   * active membership, else access_denied), the person's only one, or the one picked on the hosted
   * page. Undefined while a person in several organizations has not picked yet: the consent
   * prompt then sends them to the interaction.
   */
  private async grantFor(ctx: KoaContextWithOIDC) {
    const { oidc } = ctx;
    const client = oidc.client;
    const accountId = oidc.session?.accountId;
    const current = await this.opts.sessionOf(ctx.req);
    if (!client || !accountId || !current || current.user.id !== accountId) {
      return undefined;
    }
    // signInAudience `members`: only an active member of the application's organization.
    const membersOf = membersOnlyOrganization(client.metadata());
    if (membersOf !== undefined && !current.memberships.some((m) => m.organization.id === membersOf)) {
      throw new errors.AccessDenied('this application admits only members of its organization');
    }
    oidc.session?.sidFor(client.clientId, current.session.id);
    const scopes = [...oidc.requestParamScopes];
    let organization: GrantOrganization | undefined;
    if (scopes.includes('organization')) {
      const selectable = selectableOrganizations(current);
      const named = oidc.params?.organization;
      const picked = (oidc.result as { organization?: unknown } | undefined)?.organization;
      if (typeof named === 'string') {
        organization = selectable.find((o) => o.slug === named);
        if (!organization) {
          throw new errors.AccessDenied('the person is not an active member of the organization the request names');
        }
      } else if (typeof picked === 'string') {
        organization = selectable.find((o) => o.id === picked);
        if (!organization) {
          throw new errors.AccessDenied('the person is not an active member of the organization picked');
        }
      } else if (selectable.length === 0) {
        throw new errors.AccessDenied('the person is not an active member of any organization');
      } else if (selectable.length === 1) {
        organization = selectable[0];
      } else {
        return undefined;
      }
    }
    const grant = new oidc.provider.Grant({ accountId, clientId: client.clientId });
    grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
    for (const [indicator, server] of Object.entries(oidc.resourceServers ?? {})) {
      grant.addResourceScope(indicator, scopes.filter((s) => server.scopes.has(s)).join(' '));
    }
    Object.assign(grant, { organization });
    await grant.save();
    await this.recordSignIn(ctx, current, client.clientId, organization);
    return grant;
  }

  /**
   * Records the application sign-in of the svc session (session_applications, one upsert). The
   * first sign-in of the session to the application (or the first since it ended) is audited as
   * `session.created` in the organization the grant speaks for, else the application's, which
   * announces it to that organization's webhook endpoints in the same transaction.
   */
  private async recordSignIn(
    ctx: KoaContextWithOIDC,
    current: SessionWithUser,
    applicationId: string,
    organization: GrantOrganization | undefined,
  ): Promise<void> {
    const found = await this.opts.applications.byId(applicationId);
    if (!found) {
      return;
    }
    const { application } = found;
    await this.opts.db.transaction(async (tx) => {
      const { started } = await recordApplicationSignIn(tx, {
        sessionId: current.session.id,
        applicationId,
        organizationId: organization?.id ?? null,
        at: new Date(),
      });
      if (!started) {
        return;
      }
      await recordAudit(tx, { kind: 'user', ...current }, requestMetaOf(ctx.req, this.opts.clientIp, requestIdOf(ctx.req)), {
        tenantId: organization?.id ?? application.tenantId,
        action: 'session.created',
        target: { type: 'session', id: current.session.id },
        summary: {
          userId: current.user.id,
          email: current.user.email,
          application: { id: application.id, name: application.name, organizationId: application.tenantId },
        },
      });
    });
  }

  /**
   * The claims svc adds to an access token (RFC 9068 JWT) when it is issued (docs/oidc.md,
   * docs/authorization.md): always `sid` (the svc session) and `grant_id` (its grant: userinfo
   * and introspection refuse the token once the grant is revoked, as after a replayed code).
   * With an organization chosen at sign-in (scope `organization`): `org_id`, `org_slug`,
   * `org_role` and `permissions`, the person's product permissions as they are now; for one of
   * the product's APIs (`resource`), only the permissions on that API, and only those the client
   * asked for when it asked for any. Never svc's control-plane permissions.
   */
  private async tokenClaims(
    ctx: KoaContextWithOIDC,
    token: Parameters<NonNullable<Configuration['extraTokenClaims']>>[1],
  ): Promise<Record<string, unknown> | undefined> {
    if (token.kind === 'ClientCredentials') {
      return this.machineTokenClaims(ctx, token);
    }
    if (token.kind !== 'AccessToken' || !token.accountId) {
      return undefined;
    }
    const sid = token.sid;
    const base = { sid, grant_id: token.grantId };
    const api = isApiResourceToken(token) ? await this.resources.byIdentifier(token.resourceServer.identifier()) : null;
    const scopes = (token.scope ?? '').split(' ');
    if (!api && !scopes.includes('organization')) {
      return base;
    }
    const grant = ctx.oidc.entities.Grant ?? (token.grantId ? await ctx.oidc.provider.Grant.find(token.grantId) : undefined);
    const standing = await standingOf(this.opts.db, this.opts.sql, {
      sessionId: sid,
      userId: token.accountId,
      organization: organizationOfGrant(grant),
    });
    const organization = standing?.organization;
    // An API's token carries only the API's scopes; whether `entitlements` was asked for is the grant's.
    const oidcScopes = api ? (grant?.getOIDCScope() ?? '').split(' ') : scopes;
    const entitlements =
      organization && oidcScopes.includes('entitlements') ? await this.entitlementsClaim(organization.org_id) : undefined;
    if (!api) {
      return { ...base, ...organization, ...entitlements };
    }
    if (!organization) {
      return { ...base, permissions: [] };
    }
    const onApi = new Set(api.permissions);
    const asked = scopes.filter((s) => onApi.has(s));
    const wanted = asked.length > 0 ? new Set(asked) : onApi;
    return { ...base, ...organization, permissions: organization.permissions.filter((p) => wanted.has(p)), ...entitlements };
  }

  /**
   * Scope `entitlements`: the organization's plan key, subscription status and the features it
   * may use now (none while the subscription is inactive, cancelled or expired), as they are when
   * the token is issued, so an API gates a feature without a second call. Nothing for a workspace
   * without a subscription.
   */
  private async entitlementsClaim(organizationId: string): Promise<{ entitlements: Entitlements } | undefined> {
    const entitlements = await entitlementsOf(this.opts.db, organizationId);
    return entitlements ? { entitlements } : undefined;
  }

  /**
   * A machine client's token (client credentials, docs/authorization.md): for one of the product's
   * APIs only, acting for the client's organization (`org_id`), with the permissions granted to
   * the client on that API (those it named in `scope`, when it named any); `sub` is the client.
   * A client holding nothing there is refused (invalid_target), and so is one naming another
   * organization. Each token is a usage event of the organization (usage/machine-tokens.ts: the
   * plan meters it and a blocked subscription refuses it with 402).
   */
  private async machineTokenClaims(
    ctx: KoaContextWithOIDC,
    token: Parameters<NonNullable<Configuration['extraTokenClaims']>>[1],
  ): Promise<Record<string, unknown>> {
    const found = await this.opts.applications.byId(token.clientId ?? '');
    const application = found?.application;
    if (!found || application?.clientType !== 'machine' || application.status !== 'active') {
      throw new errors.UnauthorizedClient('only a machine client gets tokens by the client credentials grant');
    }
    // The token endpoint takes no `organization` parameter; one sent anyway is read from the body
    // oidc-provider parsed, so that naming another organization is refused rather than ignored.
    const named = (ctx.oidc.body as Record<string, unknown> | undefined)?.organization;
    if (named !== undefined && named !== found.organization.slug && named !== found.organization.id) {
      throw new errors.InvalidRequest('a machine client acts for its own organization only');
    }
    const api = isApiResourceToken(token) ? await this.resources.byIdentifier(token.resourceServer.identifier()) : null;
    if (!api) {
      throw new errors.InvalidTarget('a machine client names the API it calls: resource=<API identifier>');
    }
    const onApi = new Set(api.permissions);
    const held = application.machinePermissions.filter((p) => onApi.has(p));
    if (held.length === 0) {
      throw new errors.InvalidTarget('this machine client holds no permission on that API');
    }
    const asked = new Set((token.scope ?? '').split(' ').filter((s) => onApi.has(s)));
    const permissions = asked.size > 0 ? held.filter((p) => asked.has(p)) : held;
    if (permissions.length === 0) {
      throw new errors.InvalidScope('this machine client holds none of the permissions it asked for', [...asked].join(' '));
    }
    if (this.opts.meterMachineToken) {
      try {
        await this.opts.meterMachineToken({
          organizationId: found.organization.id,
          clientId: application.id,
          tokenId: token.jti ?? '',
          resource: api.identifier,
        });
      } catch (error) {
        if (error instanceof AppError && error.status === 402) {
          throw new SubscriptionRefusal(error);
        }
        throw error;
      }
    }
    const requested = typeof ctx.oidc.params?.scope === 'string' ? ctx.oidc.params.scope.split(' ') : [];
    const entitlements = requested.includes('entitlements') ? await this.entitlementsClaim(found.organization.id) : undefined;
    return { org_id: found.organization.id, org_slug: found.organization.slug, permissions, ...entitlements };
  }

  /**
   * RFC 7662 for svc's access tokens, which are JWTs and not stored: oidc-provider refuses to
   * introspect structured tokens (unsupported_token_type) after it has authenticated the client.
   * For a confidential client asking about its own token, svc answers instead: verified with its
   * keys, and active only while its grant and svc session stand (userinfo.ts).
   */
  private structuredTokenIntrospection() {
    return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => {
      await next();
      const client = ctx.oidc?.client;
      const token = ctx.oidc?.params?.token;
      if (
        ctx.oidc?.route !== 'introspection' ||
        ctx.status !== 400 ||
        (ctx.body as { error?: unknown } | undefined)?.error !== 'unsupported_token_type' ||
        !client ||
        typeof token !== 'string' ||
        !isStructuredToken(token)
      ) {
        return;
      }
      ctx.status = 200;
      ctx.body =
        client.clientAuthMethod === 'none'
          ? { active: false }
          : await introspectAccessToken(
              {
                db: this.opts.db,
                sql: this.opts.sql,
                issuer: this.opts.issuer,
                jwks: JSON.parse(this.jwks.json),
                provider: ctx.oidc.provider,
              },
              token,
              client.clientId,
            );
    };
  }

  /**
   * The URL an error page names when the error is an unregistered redirect_uri or
   * post_logout_redirect_uri of a known client, and (in development only) where to register it:
   * the application's console page with what it has registered, or the keyless application's
   * rule. In production the page names the URL alone.
   */
  private unregisteredUrlOf(
    ctx: KoaContextWithOIDC,
    out: { error: string; error_description?: string | undefined },
  ): { sent: UnregisteredUrl; hint: RegisterHint } | undefined {
    const params = ctx.oidc?.params;
    const client = ctx.oidc?.client;
    let sent: UnregisteredUrl | undefined;
    if (out.error === 'invalid_redirect_uri' && typeof params?.redirect_uri === 'string') {
      sent = { kind: 'redirect', url: params.redirect_uri };
    } else if (
      out.error === 'invalid_request' &&
      out.error_description === 'post_logout_redirect_uri not registered' &&
      typeof params?.post_logout_redirect_uri === 'string'
    ) {
      sent = { kind: 'post_logout', url: params.post_logout_redirect_uri };
    }
    if (!sent || !client) {
      return undefined;
    }
    if (!this.opts.development) {
      return { sent, hint: { kind: 'none' } };
    }
    if (this.clients.isKeyless(client.clientId)) {
      return { sent, hint: { kind: 'keyless' } };
    }
    const registered =
      sent.kind === 'redirect'
        ? (client.redirectUris ?? []).filter((uri) => uri !== this.tryCallbackUrl)
        : (client.postLogoutRedirectUris ?? []);
    return { sent, hint: { kind: 'application', consolePath: consoleApplicationPath(client.clientId), registered } };
  }

  private configuration(keys: SigningJwk[], alg: SigningAlg): Configuration {
    return {
      adapter: createAdapterFactory(this.opts.db, this.clients, this.opts.storage),
      jwks: { keys },
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        id_token_signed_response_alg: alg,
      },
      responseTypes: ['code'],
      // Public applications: none (PKCE). Confidential ones: their secret key, in the
      // Authorization header or the body. Nothing that would use the stored hash as a key
      // (client_secret_jwt, HS* algorithms, symmetric encryption) is enabled.
      // Machine clients may instead sign a JWT with a key they registered (private_key_jwt, RFC
      // 7523; asymmetric algorithms only, below).
      clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      enabledJWA: {
        clientAuthSigningAlgValues: ASYMMETRIC_ALGS,
        requestObjectSigningAlgValues: ASYMMETRIC_ALGS,
        introspectionSigningAlgValues: ASYMMETRIC_ALGS,
        authorizationSigningAlgValues: ASYMMETRIC_ALGS,
      },
      extraClientMetadata: { properties: [CORS_METADATA.origins, CORS_METADATA.loopback, MEMBERS_OF_METADATA] },
      cookies: {
        keys: this.cookieKeys,
        names: COOKIE_NAMES,
        long: LONG_COOKIE,
        short: { signed: true, httpOnly: true, sameSite: 'lax' },
      },
      scopes: [...OIDC_SCOPES],
      claims: {
        openid: ['sub'],
        email: ['email', 'email_verified'],
        profile: ['name'],
        organization: ['org_id', 'org_slug', 'org_role', 'permissions'],
      },
      // The ID token carries the claims of the granted scopes, as userinfo does.
      conformIdTokenClaims: false,
      // organization=<slug>: sign in for that organization (the person must be an active member).
      extraParams: ['organization'],
      features: {
        devInteractions: { enabled: false },
        // Machine clients (clientType machine): RFC 6749 section 4.4, for the product's APIs.
        clientCredentials: { enabled: true },
        encryption: { enabled: false },
        revocation: {
          enabled: true,
          // RFC 7009: a client revokes only its own tokens. Another confidential client is told
          // no; a public one gets the usual 200 and nothing happens (no oracle for token validity).
          allowedPolicy: async (_ctx, client, token) => {
            if (token.clientId === client.clientId) {
              return true;
            }
            if (client.clientAuthMethod === 'none') {
              return false;
            }
            throw new errors.InvalidRequest('client is not authorized to revoke the presented token');
          },
        },
        introspection: {
          enabled: true,
          // Confidential clients only, and only their own tokens.
          allowedPolicy: async (ctx, client, token) => client.clientAuthMethod !== 'none' && token.clientId === ctx.oidc.client?.clientId,
        },
        rpInitiatedLogout: {
          enabled: true,
          // svc's hosted pages (no inline scripts): see renderLogout and logoutMiddleware.
          logoutSource: (ctx) => this.renderLogout(ctx),
          postLogoutSuccessSource: (ctx) => {
            ctx.type = 'html';
            ctx.body = signedOutPage(ctx.oidc.client?.clientName);
          },
        },
        backchannelLogout: { enabled: true },
        jwtResponseModes: { enabled: false },
        // `request` and external `request_uri` objects are refused (request_not_supported,
        // request_uri_not_supported); pushed authorization requests are the supported way.
        requestObjects: { enabled: false },
        registration: { enabled: false },
        // Access tokens are RFC 9068 JWTs (typ at+jwt). Without a `resource` parameter their
        // audience is the client itself; with `resource=<identifier>` of one of the product's
        // API resources (RFC 8707), that API, and they carry the person's (or the machine
        // client's) permissions on it (tokenClaims). Any other resource: invalid_target.
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx, client) => clientResource(client.clientId),
          useGrantedResource: async () => true,
          getResourceServerInfo: async (ctx, resourceIndicator, client) => {
            if (resourceIndicator === clientResource(client.clientId)) {
              if (ctx.oidc.params?.grant_type === 'client_credentials') {
                throw new errors.InvalidTarget('a machine client names the API it calls: resource=<API identifier>');
              }
              return {
                audience: client.clientId,
                accessTokenFormat: 'jwt',
                accessTokenTTL: OIDC_TTL.AccessToken,
                scope: OIDC_SCOPES.join(' '),
              };
            }
            const resource = await this.resources.byIdentifier(resourceIndicator);
            if (!resource) {
              throw new errors.InvalidTarget('no API of this product has that identifier (resource)');
            }
            return {
              audience: resource.identifier,
              accessTokenFormat: 'jwt',
              accessTokenTTL: OIDC_TTL.AccessToken,
              // Its permissions are its scopes: a client may ask for fewer (scope=invoices.read).
              scope: resource.permissions.join(' '),
            };
          },
        },
      },
      pkce: {
        // S256 only (oidc-provider supports no other method); required from public clients.
        required: (_ctx, client) => client.clientAuthMethod === 'none',
      },
      rotateRefreshToken: true,
      routes: OIDC_ROUTES,
      ttl: OIDC_TTL,
      interactions: {
        policy: this.interactionPolicy(),
        url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
      },
      loadExistingGrant: (ctx) => this.grantFor(ctx),
      // An unknown client, an unregistered redirect_uri or post_logout_redirect_uri, a bad
      // id_token_hint: nothing to redirect to safely, an error page on svc.
      renderError: async (ctx, out) => {
        ctx.type = 'html';
        const what = ctx.oidc?.route?.startsWith('end_session') ? 'sign-out' : 'sign-in';
        ctx.body = oidcErrorPage(out, what, this.unregisteredUrlOf(ctx, out));
      },
      findAccount: accountFinder(this.opts.db, this.opts.sql),
      extraTokenClaims: (ctx, token) => this.tokenClaims(ctx, token),
      formats: {
        customizers: {
          // An API's access token carries its permissions as its `scope` (RFC 9068 section
          // 2.2.3.1), exactly what tokenClaims decided, which every resource-server library
          // checks; not a second time as a `permissions` array, which would double the token
          // (100 permissions: 3.2 kB with scope alone, 5.7 kB with both).
          jwt: (_ctx, token, jwt) => {
            const permissions = jwt.payload.permissions;
            if (isApiResourceToken(token) && Array.isArray(permissions)) {
              jwt.payload.scope = permissions.length > 0 ? permissions.join(' ') : undefined;
              delete jwt.payload.permissions;
            }
          },
        },
      },
      // RFC 8414 and discovery say the same: RFC 8707 resource indicators are taken.
      discovery: { claim_types_supported: ['normal'], resource_indicators_supported: true },
      // The token, revocation and introspection endpoints answer a browser only from the
      // client's own allowedOrigins (the keyless application: loopback origins).
      clientBasedCORS: (_ctx, origin, client) => corsAllowed(client.metadata(), origin),
    };
  }
}

/**
 * OpenID Connect grants `offline_access` only with prompt=consent "unless other conditions for
 * processing the request permitting offline access are in place" (Core 11). svc's applications
 * are first-party and svc shows no consent screen, and a refresh token lives only as long as the
 * svc session: an authorization request asking for `offline_access` without naming a prompt is
 * read as prompt=consent, so any OIDC library gets its refresh token. An explicit prompt is left
 * as sent (prompt=none cannot be combined, and drops offline_access as the standard says).
 */
async function offlineAccessWithoutConsentScreen(ctx: { method: string; path: string; querystring: string }, next: () => Promise<unknown>) {
  if (ctx.method === 'GET' && ctx.path === OIDC_ROUTES.authorization) {
    const query = new URLSearchParams(ctx.querystring);
    const scopes = query.getAll('scope');
    if (scopes.length === 1 && scopes[0]?.split(' ').includes('offline_access') && !query.has('prompt')) {
      query.set('prompt', 'consent');
      ctx.querystring = query.toString();
    }
  }
  await next();
}

/**
 * response_mode=form_post answers the authorization (or its resume after the hosted pages) with
 * a page of svc whose form posts the code to the redirect_uri, another origin: its form-action
 * names that origin (oidc-provider already adds its script's hash to script-src). Only a
 * redirect_uri oidc-provider checked against the client's registration, and still registered.
 */
async function formPostToRedirectUri(ctx: KoaContextWithOIDC, next: () => Promise<unknown>) {
  await next();
  const route = ctx.oidc?.route;
  const params = ctx.oidc?.params;
  const redirectUri = params?.redirect_uri;
  if (
    (route === 'authorization' || route === 'resume') &&
    params?.response_mode === 'form_post' &&
    ctx.oidc.redirectUriCheckPerformed &&
    typeof redirectUri === 'string' &&
    ctx.oidc.client?.redirectUriAllowed(redirectUri) &&
    ctx.type === 'text/html'
  ) {
    allowFormRedirectTo(ctx.res, redirectUri);
  }
}

/**
 * An authorization code presented by a client it was not issued to has leaked. oidc-provider
 * refuses it (invalid_grant) but leaves it redeemable; svc treats it as a reused code: the code
 * and every token of its grant are revoked.
 */
function codesOfOtherClientsRevoked(db: Db, provider: InstanceType<typeof Provider>) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => {
    await next();
    const params = ctx.oidc?.params;
    const presentedBy = ctx.oidc?.client?.clientId;
    if (
      ctx.path !== OIDC_ROUTES.token ||
      ctx.status !== 400 ||
      (ctx.body as { error?: unknown } | undefined)?.error !== 'invalid_grant' ||
      params?.grant_type !== 'authorization_code' ||
      typeof params.code !== 'string' ||
      !presentedBy
    ) {
      return;
    }
    const code = await provider.AuthorizationCode.find(params.code, { ignoreExpiration: true });
    if (code?.grantId && code.clientId !== presentedBy) {
      await revokeOidcPayloadsByGrantId(db, code.grantId);
    }
  };
}

/** Seconds since the epoch, as oidc-provider keeps times. */
function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/**
 * Signing algorithms a client may use for what it signs (client assertions of private_key_jwt
 * machine clients among them): never HS*, whose key would be the stored secret hash. The list the
 * applications API checks a machine client's keys against when they are saved.
 */
const ASYMMETRIC_ALGS = [...PRIVATE_KEY_JWT_ALGS];

/** Whether `presented` hashes (SHA-256, hex) to `storedHash`, compared in constant time. */
export function secretMatchesHash(presented: string, storedHash: string | undefined): boolean {
  if (typeof presented !== 'string' || typeof storedHash !== 'string' || storedHash.length !== 64) {
    return false;
  }
  const actual = Buffer.from(sha256Hex(presented), 'utf8');
  const expected = Buffer.from(storedHash, 'utf8');
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}

const CLIENT_RESOURCE_PREFIX = 'urn:svc:client:';

/** The resource indicator that stands for "this client's own API" (the token's audience is the client id). */
export function clientResource(clientId: string): string {
  return `${CLIENT_RESOURCE_PREFIX}${clientId}`;
}

/** Whether a token is for one of the product's API resources, not for the client itself. */
function isApiResourceToken(token: { resourceServer?: { identifier(): string } | undefined }): token is {
  resourceServer: { identifier(): string };
} {
  const identifier = token.resourceServer?.identifier();
  return typeof identifier === 'string' && !identifier.startsWith(CLIENT_RESOURCE_PREFIX);
}

/**
 * oidc-provider builds every URL it answers (discovery's endpoints, redirects to the interaction)
 * from the request's host and protocol: pin them to PUBLIC_URL, so a forged Host or
 * X-Forwarded-Host header can never put another origin into svc's metadata.
 */
function pinToPublicUrl(req: IncomingMessage, publicUrl: URL): void {
  req.headers.host = publicUrl.host;
  req.headers['x-forwarded-host'] = publicUrl.host;
  req.headers['x-forwarded-proto'] = publicUrl.protocol.slice(0, -1);
}

/**
 * A machine client's token refused by its organization's subscription: HTTP 402 with the
 * subscription rule's code (`subscription_inactive`, `subscription_limit_exceeded`) as the OAuth
 * `error`, and its message as `error_description`.
 */
class SubscriptionRefusal extends errors.OIDCProviderError {
  constructor(refusal: AppError) {
    super(402, refusal.code);
    this.error_description = refusal.message;
  }
}
