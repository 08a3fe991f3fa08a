import { hkdfSync, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppError } from '@svc/contracts/errors';
import { type Db, type Sql, StartupError } from '@svc/db/client';
import { OIDC_KEYS_CHANGED_CHANNEL } from '@svc/db/queries/oidc-provider';
import { type SecretBox, SecretBoxError } from '@svc/db/secret-box';
import { quietly } from '@svc/dev-engine/quiet-provider';
import { createGuardedFetch } from '@svc/jobs/webhooks/guarded-fetch';
import type { Adapter, KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from 'pino';
import { tokensIssued } from '../../metrics.ts';
import type { ApplicationCache } from '../applications/cache.ts';
import { sha256Hex } from '../applications/keys.ts';
import { controlPlaneTokenResource } from '../mcp/resource.ts';
import type { SvcSessionOf } from './accounts.ts';
import type { ClaimDeps } from './claims.ts';
import { applicationClients } from './clients.ts';
import { type ConfigurationDeps, providerConfiguration } from './configuration.ts';
import { applyProviderInternals } from './internals.ts';
import { rememberKeylessUrls } from './keyless-urls.ts';
import { ensureCurrentSigningKey, loadSigningKeys, type SigningAlg, type SigningJwk } from './keys.ts';
import { Provider, type ProviderInstance } from './library.ts';
import { logoutMiddleware, type SvcLogoutDeps } from './logout.ts';
import {
  codesOfOtherClientsRevoked,
  formPostToRedirectUri,
  offlineAccessWithoutConsentScreen,
  refusalFieldsOnError,
  structuredTokenIntrospection,
} from './middleware.ts';
import { DISCOVERY_PATH, OIDC_ROUTES, TRY_CALLBACK_PATH } from './paths.ts';
import { providerRequestsInFlight } from './request-context.ts';
import { TokenResources } from './resources.ts';
import { TryCodeExchange } from './try-code.ts';

/** Grant types a token label may name (anything else is `other`). */
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token', 'client_credentials']);

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
  meterMachineToken?: ClaimDeps['meterMachineToken'];
  /** Likewise for a third-party client's token (SVC_USAGE_EVENT_TYPES.agentToken), in the organization it acts for. */
  meterAgentToken?: ClaimDeps['meterAgentToken'];
  /** Notes a third-party grant's use for the Connected apps list (connected-apps/last-used.ts). */
  noteGrantUse?: ClaimDeps['noteGrantUse'];
  /** WEBHOOK_ALLOW_PRIVATE: documents the provider fetches may be on loopback and private addresses. */
  fetchAllowPrivate?: boolean;
  /**
   * The fields svc's 402 body carries beside code and message (http/errors.ts errorFields: the
   * refusal's limit and its upgradeUrl), added to the token endpoint's 402. Unset: none.
   */
  refusalFields?: (refusal: AppError) => Record<string, unknown>;
  /** OIDC_DYNAMIC_REGISTRATION=on: anonymous dynamic client registration (registration.ts). Unset: off. */
  dynamicRegistration?: boolean;
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
  private readonly publicUrl: URL;
  /** `${PUBLIC_URL}/oidc/try/callback`: a redirect URI of every client. */
  readonly tryCallbackUrl: string;
  /** The console's try sign-in redeems its codes here (try-code.ts). */
  readonly tryCodes: TryCodeExchange;
  /** What every build's configuration is made of (configuration.ts). */
  private readonly deps: ConfigurationDeps;

  private constructor(private readonly opts: OpenIdProviderOptions) {
    this.publicUrl = new URL(opts.issuer);
    this.tryCallbackUrl = new URL(TRY_CALLBACK_PATH, this.publicUrl).href;
    this.clients = applicationClients(opts.applications, { keylessEnabled: opts.keylessEnabled, tryCallbackUrl: this.tryCallbackUrl });
    const controlPlane = controlPlaneTokenResource(opts.issuer);
    this.resources = new TokenResources(opts.db, undefined, new Map([[controlPlane.identifier, controlPlane]]));
    this.tryCodes = new TryCodeExchange({
      encryptionKey: opts.encryptionKey,
      publicUrl: this.publicUrl,
      tryCallbackUrl: this.tryCallbackUrl,
      callback: () => this.current().callback,
      pinToPublicUrl,
    });
    const logout: SvcLogoutDeps = {
      db: opts.db,
      sessionOf: opts.sessionOf,
      publicUrl: opts.issuer,
      engineEndSessionUrl: opts.engineEndSessionUrl,
      engineIdTokenOf: opts.engineIdTokenOf,
    };
    this.deps = {
      db: opts.db,
      clients: this.clients,
      storage: opts.storage,
      cookieKeys: [
        Buffer.from(hkdfSync('sha256', opts.encryptionKey, Buffer.alloc(0), 'svc oidc-provider cookies', 32)).toString('base64url'),
      ],
      tryCallbackUrl: this.tryCallbackUrl,
      development: opts.development,
      claims: {
        db: opts.db,
        sql: opts.sql,
        applications: opts.applications,
        resources: this.resources,
        meterMachineToken: opts.meterMachineToken,
        meterAgentToken: opts.meterAgentToken,
        noteGrantUse: opts.noteGrantUse,
      },
      grants: { db: opts.db, applications: opts.applications, sessionOf: opts.sessionOf, clientIp: opts.clientIp },
      logout,
      origin: this.publicUrl.origin,
      fetch: createGuardedFetch({ allowPrivate: opts.fetchAllowPrivate ?? false, connectTimeoutMs: 2_500 }),
      dynamicRegistration: opts.dynamicRegistration ?? false,
    };
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
    await this.tryCodes.close();
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
    const provider = await quietly(() => new Provider(this.opts.issuer, providerConfiguration(this.deps, keys, current.alg)));
    provider.proxy = true;
    // Tokens issued, by grant (docs/operations.md "Metrics"): oidc-provider's event for a token
    // endpoint call that answered with tokens.
    provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
      const grantType = ctx.oidc.params?.grant_type;
      tokensIssued.inc({ grant_type: typeof grantType === 'string' && GRANT_TYPES.has(grantType) ? grantType : 'other' });
    });
    // A plan's 402 at the token endpoint carries svc's 402 fields (upgradeUrl, ...) too.
    provider.on('grant.error', refusalFieldsOnError(this.opts.refusalFields ?? (() => ({}))));
    // First, so it wraps everything the provider runs for a request (see request-context.ts).
    provider.use(providerRequestsInFlight);
    provider.use(offlineAccessWithoutConsentScreen);
    provider.use(codesOfOtherClientsRevoked(this.opts.db, provider));
    provider.use(formPostToRedirectUri);
    provider.use(rememberKeylessUrls(this.opts.db, this.clients));
    provider.use(
      structuredTokenIntrospection({ db: this.opts.db, sql: this.opts.sql, issuer: this.opts.issuer, jwks: () => this.jwks.json }),
    );
    // svc's redefinitions of oidc-provider's Client and Grant (internals.ts, the one module that
    // reaches into the library): the try sign-in callback and the keyless application's loopback
    // URLs; sid in every token; back-channel logout through the durable job only
    // (modules/session-store/end.ts); a confidential client's secret compared with the SHA-256 of
    // its application's secret key as svc stores it (rotation reaches every process through the
    // application cache and NOTIFY), or the try exchange's secret on that exchange only
    // (try-code.ts says how and why); and the organization kept on the Grant (loadExistingGrant).
    applyProviderInternals(provider, {
      tryCallbackUrl: this.tryCallbackUrl,
      isKeyless: (clientId) => this.clients.isKeyless(clientId),
      secretMatchesHash,
      isTryExchange: (clientId, presented) => this.tryCodes.isTryExchange(Provider.ctx, clientId, presented),
    });
    provider.use(logoutMiddleware(this.deps.logout));
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
}

/** Whether `presented` hashes (SHA-256, hex) to `storedHash`, compared in constant time. */
export function secretMatchesHash(presented: string, storedHash: string | undefined): boolean {
  if (typeof presented !== 'string' || typeof storedHash !== 'string' || storedHash.length !== 64) {
    return false;
  }
  const actual = Buffer.from(sha256Hex(presented), 'utf8');
  const expected = Buffer.from(storedHash, 'utf8');
  return expected.length === actual.length && timingSafeEqual(actual, expected);
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
