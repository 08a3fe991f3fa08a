import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { EVENTS_RETENTION_DEFAULT_DAYS } from '@svc/contracts/events-feed';
import { DEV_ENGINE_DEFAULT_PORT, SVC_DEFAULT_PORT } from '@svc/contracts/ports';
import { DEFAULT_DATABASE_TIMEOUT_MS } from '@svc/db/client';
import type { BillingSettings } from '@svc/jobs/billing/providers';
import proxyaddr from 'proxy-addr';
import { z } from 'zod';
import { type EngineKind, type EngineOffers, engineOffers, type HandOffOverrides, inferEngineKind } from './modules/auth/engine-presets.ts';

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? fallback : v === 'true' || v === '1' || v === 'yes'));

const int = (fallback: number, min = 0) =>
  z.coerce
    .number()
    .int()
    .min(min)
    .optional()
    .transform((v) => v ?? fallback);

/** Every setting svc reads, parsed once. README's configuration table documents each. */
const ZEnv = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** Default 7150: clear of every framework's dev server (see SVC_DEFAULT_PORT). */
  PORT: int(SVC_DEFAULT_PORT),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.string().min(1).optional(),
  /** How long a connection attempt, or a query waiting for a free connection, waits before a 503. */
  DATABASE_TIMEOUT_MS: int(DEFAULT_DATABASE_TIMEOUT_MS, 100),
  /** Connections `svc serve` keeps to PostgreSQL (its own pool; the worker's is separate). */
  DATABASE_POOL_SIZE: int(10, 1),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_POSTGRES_PORT: int(54329, 1),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  /** OpenTelemetry: traces go to `<endpoint>/v1/traces` (OTLP over HTTP) when set (docs/operations.md "Traces"). */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('svc'),
  TRUST_PROXY: z.string().optional(),
  WORKER_ENABLED: bool(true),
  WORKER_CONCURRENCY: int(5, 1),
  KEYLESS_ENABLED: z.enum(['true', 'false', '1', '0']).optional(),
  RATE_LIMIT_ENABLED: bool(true),
  RATE_LIMIT_PUBLIC_PER_MINUTE: int(600, 1),
  RATE_LIMIT_BACKEND_PER_MINUTE: int(1200, 1),
  /** Unset: inferred from the issuer's shape (docs/engines.md). */
  ENGINE_KIND: z.enum(['authentik', 'keycloak', 'generic']).optional(),
  ENGINE_ISSUER: z.url().optional(),
  ENGINE_CLIENT_ID: z.string().min(1).default('svc'),
  DEV_ENGINE_PORT: int(DEV_ENGINE_DEFAULT_PORT),
  ENGINE_CLIENT_SECRET: z.string().min(1).optional(),
  ENGINE_SCOPES: z.string().min(1).default('openid email profile'),
  ENGINE_GROUPS_CLAIM: z.string().min(1).default('groups'),
  /** Social source slug / identity-provider alias; also the shared-development provider (docs/api.md "Applications"). */
  ENGINE_SOCIAL: z.string().min(1).optional(),
  /** A generic engine's registration page (Authentik: a flow slug or URL); without it a generic engine offers no sign-up. */
  ENGINE_SIGNUP_URL: z.string().min(1).optional(),
  ENGINE_RECOVERY: z.string().min(1).optional(),
  ENGINE_EMAIL_VERIFICATION: z.string().min(1).optional(),
  ENGINE_MFA_SETUP: z.string().min(1).optional(),
  ENGINE_PASSKEY_SETUP: z.string().min(1).optional(),
  /** The engine's admin API base (Authentik: https://<host>/api/v3/), for /v1/platform/engine/*. */
  ENGINE_ADMIN_API_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://auth.example.com/api/v3/' })
    .optional(),
  /** Bearer token for that API. A secret: it is never logged nor sent anywhere but to that URL. */
  ENGINE_ADMIN_TOKEN: z
    .string()
    .regex(/^[\x21-\x7e]+$/, 'must be one token of printable ASCII characters (no spaces or line breaks)')
    .optional(),
  /** How long the engine proxy waits for the engine's admin API. */
  ENGINE_ADMIN_TIMEOUT_MS: int(10_000, 1),
  RATE_LIMIT_SIGNIN_PER_MINUTE: int(10, 1),
  /** Invitations created per email address per minute, across all organizations. */
  RATE_LIMIT_INVITATIONS_PER_MINUTE: int(5, 1),
  /** Webhook replays (POST /v1/webhook-endpoints/{id}/replay) per endpoint per minute. */
  RATE_LIMIT_WEBHOOK_REPLAYS_PER_MINUTE: int(5, 1),
  /** How long an invite link stays valid: 1 hour to 1 year. */
  INVITATION_TTL_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .optional()
    .transform((v) => v ?? 24 * 7),
  APPLICATION_CACHE_TTL_MS: int(60_000),
  ACCESS_CACHE_TTL_MS: int(30_000),
  SESSION_IDLE_TIMEOUT_HOURS: int(24 * 7, 1),
  SESSION_ABSOLUTE_TIMEOUT_HOURS: int(24 * 30, 1),
  PLATFORM_ADMIN_GROUP: z.string().min(1).default('platform-admins'),
  /** Where an organization changes its plan; every 402 carries it as upgradeUrl, `{organizationId}` filled in. */
  SUBSCRIPTION_UPGRADE_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://example.com/billing?org={organizationId}' })
    .optional(),
  /** How long a shutdown waits for in-flight requests and running jobs before cutting them off. */
  SHUTDOWN_TIMEOUT_MS: int(10_000),
  /** Serves /metrics on the API's port to `Authorization: Bearer <METRICS_TOKEN>` (docs/operations.md "Metrics"). */
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  /** Serves /metrics, with no token, on this port of METRICS_HOST (a network only the scraper reaches). */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** The algorithm of new OpenID Provider signing keys; changing it makes a new current key at the next start. */
  OIDC_SIGNING_ALG: z.enum(['RS256', 'ES256']).default('RS256'),
  /**
   * Dynamic client registration (RFC 7591) at /oidc/reg: off unless `on`, since anyone may then
   * register a client anonymously (docs/oidc.md "Dynamic client registration").
   */
  OIDC_DYNAMIC_REGISTRATION: z.enum(['on', 'off']).default('off'),
  /** A dynamically registered client no token was issued to for this many days is deleted. */
  OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS: int(30, 1),
  /** Dynamic client registrations per client IP address per minute. */
  RATE_LIMIT_REGISTRATIONS_PER_MINUTE: int(5, 1),
  /** 32 bytes, base64 or hex: encrypts webhook signing secrets and queued email bodies. */
  SVC_ENCRYPTION_KEY: z.string().min(1).optional(),
  /** Allow webhook URLs on loopback and private networks (local development and tests only). */
  WEBHOOK_ALLOW_PRIVATE: bool(false),
  /**
   * The DNS resolver domain verification asks (docs/enterprise.md "Domains"): an IP address with
   * an optional port (`127.0.0.1:5353`, `[::1]:53`); unset, the system's resolvers.
   */
  DNS_RESOLVER: z
    .string()
    .regex(
      /^(\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?|\[[0-9a-fA-F:]+\](:\d{1,5})?|[0-9a-fA-F:]+)$/,
      'DNS_RESOLVER is an IP address with an optional port, e.g. 127.0.0.1:5353',
    )
    .optional(),
  /** How long one domain verification lookup may take before it counts as a timeout. */
  DNS_TIMEOUT_MS: int(5_000, 100),
  /** How long a receiver has to answer a delivery. */
  WEBHOOK_TIMEOUT_MS: int(10_000, 100),
  /** Delays before each attempt, comma-separated (ms, or with s, m, h); the first is the first attempt's. */
  WEBHOOK_RETRY_SCHEDULE: z.string().min(1).default('0,5s,5m,30m,2h,5h,10h,10h'),
  /** After a secret rotation, how long the previous secret also signs. */
  WEBHOOK_SECRET_GRACE_HOURS: z.coerce
    .number()
    .min(0)
    .max(24 * 30)
    .optional()
    .transform((v) => v ?? 24),
  /** How far back GET /v1/events reaches, in days; a cursor older than that answers 410 cursor_expired. */
  EVENTS_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3650)
    .optional()
    .transform((v) => v ?? EVENTS_RETENTION_DEFAULT_DAYS),
  /** Days usage events are kept (whole months dropped past it, docs/operations.md "Partitioned tables"); unset, kept. */
  USAGE_RETENTION_DAYS: z.coerce.number().int().min(1).max(36500).optional(),
  /** Days audit entries are kept (whole months dropped past it); unset, kept. */
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36500).optional(),
  EMAIL_ENABLED: bool(false),
  EMAIL_PROVIDER: z.enum(['resend', 'smtp', '']).optional(),
  /** The From header of invitation emails, e.g. `svc <invites@example.com>`. */
  EMAIL_FROM: z.string().min(3).optional(),
  RESEND_API_KEY: z.string().min(1).optional(),
  /** The Resend API base (tests point it at a local recording server). */
  RESEND_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://api.resend.com'),
  /** smtp(s)://user:pass@host:port, for EMAIL_PROVIDER=smtp. */
  SMTP_URL: z.string().min(1).optional(),
  EMAIL_DELIVERY_WORKER_ENABLED: bool(false),
  EMAIL_DELIVERY_WORKER_INTERVAL_MS: int(30_000, 100),
  EMAIL_DELIVERY_WORKER_BATCH_SIZE: int(25, 1),
  // Billing providers (docs/api.md "Billing handoff"): each is configured when its key(s) are set; the key's form
  // tells sandbox from live. Secrets: never logged, never answered. The *_API_BASE settings point
  // the provider's SDK elsewhere (tests: a local recording server).
  STRIPE_SECRET_KEY: secretToken(
    /^(sk|rk)_(test|live)_/,
    'must be a Stripe secret or restricted key (sk_test_, sk_live_, rk_test_ or rk_live_)',
  ),
  STRIPE_API_BASE: apiBase(),
  RAZORPAY_KEY_ID: secretToken(/^rzp_(test|live)_/, 'must be a Razorpay key id (rzp_test_ or rzp_live_)'),
  RAZORPAY_KEY_SECRET: secretToken(),
  RAZORPAY_API_BASE: apiBase(),
  PADDLE_API_KEY: secretToken(),
  PADDLE_API_BASE: apiBase(),
});

export type Config = {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  host: string;
  /** Where browsers reach svc; defaults to http://HOST:PORT. No trailing slash. */
  publicUrl: string;
  databaseUrl: string | undefined;
  /**
   * DATABASE_TIMEOUT_MS: connecting, and waiting for a pooled connection, give up after this long
   * and the request answers 503 service_unavailable with Retry-After.
   */
  databaseTimeoutMs: number;
  /**
   * DATABASE_POOL_SIZE: connections of `svc serve`'s pool. Past what the database's cores keep
   * busy, more connections only add idle backends to wake for each query.
   */
  databasePoolSize: number;
  dataDir: string;
  embeddedPostgresPort: number;
  logLevel: string;
  /**
   * LOG_FORMAT: `json` (one pino object per line, for a log pipeline) or `pretty` (one readable
   * line per entry, request lines summarised). Default: `pretty` when NODE_ENV=development,
   * `json` otherwise.
   */
  logFormat: 'json' | 'pretty';
  trustProxy: string | undefined;
  workerEnabled: boolean;
  workerConcurrency: number;
  keylessEnabled: boolean;
  rateLimit: {
    enabled: boolean;
    publicPerMinute: number;
    backendPerMinute: number;
    signinPerMinute: number;
    /** Invitations per email per minute (docs/architecture.md section 7: tight per email on invitation sends). */
    invitationsPerMinute: number;
    /** Webhook replays per endpoint per minute (each may queue thousands of deliveries). */
    webhookReplaysPerMinute: number;
    /** Dynamic client registrations per client IP address per minute. */
    registrationsPerMinute: number;
  };
  /** How long an invitation can be accepted after it is created (ms). */
  invitationTtlMs: number;
  engine: {
    kind: EngineKind;
    /** ENGINE_KIND was unset and `kind` is the issuer's shape. */
    kindInferred: boolean;
    /** What svc offers on this engine (hand-offs, social, admin API): what it advertises and renders. */
    offers: EngineOffers;
    issuer: string;
    clientId: string;
    clientSecret: string | null;
    scopes: string[];
    groupsClaim: string;
    socialProvider: string;
    overrides: HandOffOverrides;
    embedded: boolean;
    devEnginePort: number;
    /**
     * The engine's admin API behind `/v1/platform/engine/*`, or null (not configured: the proxy
     * answers 503). `token` is a secret: never log `config.engine.admin` (or the config).
     */
    admin: EngineAdminApi | null;
  };
  applicationCacheTtlMs: number;
  /**
   * Safety-net TTL of the permission check's per-process cache (modules/permission-check/cache.ts);
   * changes reach it by NOTIFY at once.
   */
  accessCacheTtlMs: number;
  /** svc as OpenID Provider of its applications (issuer: publicUrl). */
  oidc: {
    signingAlg: 'RS256' | 'ES256';
    /**
     * OIDC_DYNAMIC_REGISTRATION and OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS: whether anonymous
     * clients may register (RFC 7591), and after how many days without a token such a client is deleted.
     */
    dynamicRegistration: { enabled: boolean; unusedDays: number };
  };
  /** Idle and absolute session lifetimes (ms); idle expiry slides at most once an hour. */
  session: { idleMs: number; absoluteMs: number };
  /** Members of this engine group open the platform workspace (docs/authentik.md, "the platform admin group"). */
  platformAdminGroup: string;
  /** SUBSCRIPTION_UPGRADE_URL (may hold `{organizationId}`): a 402's upgradeUrl; null when unset. */
  subscriptionUpgradeUrl: string | null;
  shutdownTimeoutMs: number;
  /** Prometheus metrics (docs/operations.md "Metrics"): on when a token or a port is set. */
  metrics: { enabled: boolean; token: string | null; port: number | null; host: string };
  /** OTEL_EXPORTER_OTLP_ENDPOINT (null: no tracing, nothing loaded) and OTEL_SERVICE_NAME. */
  tracing: { endpoint: string | null; serviceName: string };
  /**
   * SVC_ENCRYPTION_KEY as 32 bytes, or null outside production when unset (then
   * `resolveEncryptionKey` generates one into DATA_DIR once). A secret: never log it.
   */
  encryptionKey: Buffer | null;
  webhooks: WebhookSettings;
  /** DNS_RESOLVER (null: the system's) and DNS_TIMEOUT_MS: domain verification's lookups. */
  dns: { resolver: string | null; timeoutMs: number };
  /**
   * EVENTS_RETENTION_DAYS (ms): the events feed's window. Events older than this are not served
   * and a cursor pointing before it answers 410 cursor_expired; the worker drops the months of
   * events that ended before it (`retention`).
   */
  eventsRetentionMs: number;
  /** What the worker's maintenance:partitions drops (docs/operations.md "Partitioned tables"). */
  retention: { eventsDays: number; usageDays: number | null; auditDays: number | null };
  email: EmailSettings;
  /** Billing providers' keys (secrets: never log `config.billing`) and SDK base overrides. */
  billing: BillingSettings;
};

export type WebhookSettings = {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Delay before attempt n+1 (ms); its length is the number of attempts. */
  retryScheduleMs: number[];
  secretGraceMs: number;
};

export type EmailSettings = {
  /** EMAIL_ENABLED and a provider: invitations queue an email and deliveries can be processed. */
  enabled: boolean;
  provider: 'resend' | 'smtp' | null;
  from: string | null;
  /** Secret. */
  resendApiKey: string | null;
  resendBaseUrl: string;
  /** Secret (may carry a password). */
  smtpUrl: string | null;
  worker: { enabled: boolean; intervalMs: number; batchSize: number };
};

/** The engine's admin API as the platform engine proxy calls it. */
export type EngineAdminApi = {
  /** Base URL ending in `/`, e.g. https://auth.example.com/api/v3/. */
  url: string;
  /** Bearer token (ENGINE_ADMIN_TOKEN): server-side only. */
  token: string;
  timeoutMs: number;
  /** The in-process dev engine's admin API (server.ts fills in the port it listens on). */
  devEngine: boolean;
};

/** Thrown for a bad setting: the message names the variable and what is wrong. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ZEnv.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const e = parsed.data;
  const production = e.NODE_ENV === 'production';
  if (production && !e.DATABASE_URL) {
    throw new ConfigError('DATABASE_URL is required when NODE_ENV=production');
  }
  if (production && !e.PUBLIC_URL) {
    throw new ConfigError('PUBLIC_URL is required when NODE_ENV=production');
  }
  if (production && !e.ENGINE_ISSUER) {
    throw new ConfigError('ENGINE_ISSUER is required when NODE_ENV=production');
  }
  const trustProxy = checkTrustProxy(e.TRUST_PROXY, production);
  const publicUrl = (e.PUBLIC_URL ?? `http://${e.HOST}:${e.PORT}`).replace(/\/+$/, '');
  const devEngineIssuer = `http://127.0.0.1:${e.DEV_ENGINE_PORT}/application/o/svc/`;
  const engineIssuer = e.ENGINE_ISSUER ?? devEngineIssuer;
  const engineKind = e.ENGINE_KIND ?? inferEngineKind(engineIssuer);
  const engineOverrides: HandOffOverrides = {
    social: e.ENGINE_SOCIAL,
    signup: e.ENGINE_SIGNUP_URL,
    recovery: e.ENGINE_RECOVERY,
    email_verification: e.ENGINE_EMAIL_VERIFICATION,
    mfa_setup: e.ENGINE_MFA_SETUP,
    passkey_setup: e.ENGINE_PASSKEY_SETUP,
  };
  const engineAdmin = engineAdminApi(e);
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    databaseUrl: e.DATABASE_URL,
    databaseTimeoutMs: e.DATABASE_TIMEOUT_MS,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    dataDir: path.resolve(e.DATA_DIR),
    embeddedPostgresPort: e.EMBEDDED_POSTGRES_PORT,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT ?? (e.NODE_ENV === 'development' ? 'pretty' : 'json'),
    trustProxy,
    workerEnabled: e.WORKER_ENABLED,
    workerConcurrency: e.WORKER_CONCURRENCY,
    keylessEnabled: e.KEYLESS_ENABLED === undefined ? !production : e.KEYLESS_ENABLED === 'true' || e.KEYLESS_ENABLED === '1',
    rateLimit: {
      signinPerMinute: e.RATE_LIMIT_SIGNIN_PER_MINUTE,
      invitationsPerMinute: e.RATE_LIMIT_INVITATIONS_PER_MINUTE,
      webhookReplaysPerMinute: e.RATE_LIMIT_WEBHOOK_REPLAYS_PER_MINUTE,
      registrationsPerMinute: e.RATE_LIMIT_REGISTRATIONS_PER_MINUTE,
      enabled: e.RATE_LIMIT_ENABLED,
      publicPerMinute: e.RATE_LIMIT_PUBLIC_PER_MINUTE,
      backendPerMinute: e.RATE_LIMIT_BACKEND_PER_MINUTE,
    },
    engine: {
      kind: engineKind,
      kindInferred: e.ENGINE_KIND === undefined,
      offers: engineOffers({
        kind: engineKind,
        overrides: engineOverrides,
        socialConfigured: e.ENGINE_SOCIAL !== undefined,
        adminApiConfigured: engineAdmin !== null,
      }),
      issuer: engineIssuer,
      clientId: e.ENGINE_CLIENT_ID,
      // Authentik's source slug (its default source is `google`), Keycloak's identity-provider
      // alias; also the shared-development provider of /v1/client/config.
      socialProvider: e.ENGINE_SOCIAL ?? 'google',
      clientSecret: e.ENGINE_CLIENT_SECRET ?? null,
      scopes: e.ENGINE_SCOPES.split(/\s+/).filter(Boolean),
      groupsClaim: e.ENGINE_GROUPS_CLAIM,
      overrides: engineOverrides,
      /** Whether svc starts apps/dev-engine itself (ENGINE_ISSUER unset outside production). */
      embedded: !e.ENGINE_ISSUER,
      devEnginePort: e.DEV_ENGINE_PORT,
      admin: engineAdmin,
    },
    applicationCacheTtlMs: e.APPLICATION_CACHE_TTL_MS,
    accessCacheTtlMs: e.ACCESS_CACHE_TTL_MS,
    oidc: {
      signingAlg: e.OIDC_SIGNING_ALG,
      dynamicRegistration: { enabled: e.OIDC_DYNAMIC_REGISTRATION === 'on', unusedDays: e.OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS },
    },
    invitationTtlMs: e.INVITATION_TTL_HOURS * 3_600_000,
    session: { idleMs: e.SESSION_IDLE_TIMEOUT_HOURS * 3_600_000, absoluteMs: e.SESSION_ABSOLUTE_TIMEOUT_HOURS * 3_600_000 },
    platformAdminGroup: e.PLATFORM_ADMIN_GROUP,
    subscriptionUpgradeUrl: e.SUBSCRIPTION_UPGRADE_URL ?? null,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    metrics: {
      enabled: e.METRICS_TOKEN !== undefined || e.METRICS_PORT !== undefined,
      token: e.METRICS_TOKEN ?? null,
      port: e.METRICS_PORT ?? null,
      host: e.METRICS_HOST,
    },
    tracing: { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT ?? null, serviceName: e.OTEL_SERVICE_NAME },
    encryptionKey: encryptionKeyOf(e.SVC_ENCRYPTION_KEY, production),
    webhooks: {
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryScheduleMs: parseSchedule(e.WEBHOOK_RETRY_SCHEDULE),
      secretGraceMs: Math.round(e.WEBHOOK_SECRET_GRACE_HOURS * 3_600_000),
    },
    dns: { resolver: e.DNS_RESOLVER ?? null, timeoutMs: e.DNS_TIMEOUT_MS },
    eventsRetentionMs: e.EVENTS_RETENTION_DAYS * 86_400_000,
    retention: {
      eventsDays: e.EVENTS_RETENTION_DAYS,
      usageDays: e.USAGE_RETENTION_DAYS ?? null,
      auditDays: e.AUDIT_RETENTION_DAYS ?? null,
    },
    email: emailSettings(e),
    billing: billingSettings(e),
  };
}

/** SVC_ENCRYPTION_KEY: 32 bytes as 64 hex digits or base64/base64url. */
function encryptionKeyOf(value: string | undefined, production: boolean): Buffer | null {
  if (value === undefined || value === '') {
    if (production) {
      throw new ConfigError('SVC_ENCRYPTION_KEY is required when NODE_ENV=production (32 random bytes, e.g. `openssl rand -base64 32`)');
    }
    return null;
  }
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) {
    throw new ConfigError('SVC_ENCRYPTION_KEY must be 32 bytes, as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)');
  }
  return key;
}

/** An optional key: one token of printable characters (empty is unset); the message never quotes it. */
function secretToken(form?: RegExp, formMessage?: string) {
  const token = z.string().regex(/^[\x21-\x7e]+$/, 'must be one token of printable ASCII characters (no spaces or line breaks)');
  return z
    .union([z.literal(''), form ? token.regex(form, formMessage) : token])
    .optional()
    .transform((v) => v || undefined);
}

/** An optional http(s) base URL without credentials, query or fragment (empty is unset). */
function apiBase() {
  return z
    .union([z.literal(''), z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:12111' })])
    .optional()
    .transform((v) => v || undefined)
    .refine(
      (v) => {
        const url = v === undefined ? undefined : new URL(v);
        return !url || (!url.username && !url.password && !url.search && !url.hash);
      },
      { message: 'must not carry credentials, a query or a fragment' },
    );
}

/** RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET go together; each provider is configured by its key(s) alone. */
function billingSettings(e: z.infer<typeof ZEnv>): BillingSettings {
  if (Boolean(e.RAZORPAY_KEY_ID) !== Boolean(e.RAZORPAY_KEY_SECRET)) {
    throw new ConfigError('RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET are set together (or neither)');
  }
  return {
    stripe: e.STRIPE_SECRET_KEY ? { secretKey: e.STRIPE_SECRET_KEY, apiBase: e.STRIPE_API_BASE ?? null } : null,
    razorpay:
      e.RAZORPAY_KEY_ID && e.RAZORPAY_KEY_SECRET
        ? { keyId: e.RAZORPAY_KEY_ID, keySecret: e.RAZORPAY_KEY_SECRET, apiBase: e.RAZORPAY_API_BASE ?? null }
        : null,
    paddle: e.PADDLE_API_KEY ? { apiKey: e.PADDLE_API_KEY, apiBase: e.PADDLE_API_BASE ?? null } : null,
  };
}

const UNIT_MS: Record<string, number> = { '': 1, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `0,5s,5m,30m,2h` -> [0, 5000, 300000, 1800000, 7200000]. */
export function parseSchedule(value: string): number[] {
  const parts = value.split(',').map((p) => p.trim());
  const out: number[] = [];
  for (const part of parts) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|)$/.exec(part);
    if (!m) {
      throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE: "${part}" is not a delay such as 0, 500ms, 5s, 5m or 2h`);
    }
    out.push(Math.round(Number(m[1]) * (UNIT_MS[m[2] as string] as number)));
  }
  if (out.length === 0 || out.length > 20) {
    throw new ConfigError('WEBHOOK_RETRY_SCHEDULE must list 1 to 20 delays');
  }
  return out;
}

function emailSettings(e: z.infer<typeof ZEnv>): EmailSettings {
  const provider = e.EMAIL_PROVIDER ? e.EMAIL_PROVIDER : null;
  if (e.EMAIL_ENABLED && provider) {
    if (!e.EMAIL_FROM) {
      throw new ConfigError('EMAIL_FROM is required when EMAIL_ENABLED=true and EMAIL_PROVIDER is set');
    }
    if (provider === 'resend' && !e.RESEND_API_KEY) {
      throw new ConfigError('RESEND_API_KEY is required when EMAIL_PROVIDER=resend');
    }
    if (provider === 'smtp') {
      if (!e.SMTP_URL) {
        throw new ConfigError('SMTP_URL is required when EMAIL_PROVIDER=smtp');
      }
      if (!/^smtps?:\/\//.test(e.SMTP_URL)) {
        throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL');
      }
    }
  }
  return {
    enabled: e.EMAIL_ENABLED && provider !== null,
    provider,
    from: e.EMAIL_FROM ?? null,
    resendApiKey: e.RESEND_API_KEY ?? null,
    resendBaseUrl: e.RESEND_BASE_URL.replace(/\/+$/, ''),
    smtpUrl: e.SMTP_URL ?? null,
    worker: {
      enabled: e.EMAIL_DELIVERY_WORKER_ENABLED,
      intervalMs: e.EMAIL_DELIVERY_WORKER_INTERVAL_MS,
      batchSize: e.EMAIL_DELIVERY_WORKER_BATCH_SIZE,
    },
  };
}

/**
 * ENGINE_ADMIN_API_URL and ENGINE_ADMIN_TOKEN go together. With the dev engine in this process
 * (ENGINE_ISSUER unset) and no URL, the proxy talks to the dev engine's own admin API with
 * ENGINE_ADMIN_TOKEN or a fresh random token (server.ts starts the dev engine with it).
 */
function engineAdminApi(e: z.infer<typeof ZEnv>): EngineAdminApi | null {
  const embedded = !e.ENGINE_ISSUER;
  if (!e.ENGINE_ADMIN_API_URL) {
    if (embedded) {
      return {
        url: `http://127.0.0.1:${e.DEV_ENGINE_PORT}/api/v3/`,
        token: e.ENGINE_ADMIN_TOKEN ?? `dev-engine-${randomBytes(24).toString('base64url')}`,
        timeoutMs: e.ENGINE_ADMIN_TIMEOUT_MS,
        devEngine: true,
      };
    }
    if (e.ENGINE_ADMIN_TOKEN) {
      throw new ConfigError(
        'ENGINE_ADMIN_API_URL is required when ENGINE_ADMIN_TOKEN is set (the engine admin API base, such as https://auth.example.com/api/v3/)',
      );
    }
    return null;
  }
  const url = new URL(e.ENGINE_ADMIN_API_URL);
  // fetch refuses credentials in a URL, and a query or fragment would be dropped from every call.
  if (url.username || url.password || url.search || url.hash) {
    throw new ConfigError('ENGINE_ADMIN_API_URL must not carry credentials, a query or a fragment (the token goes in ENGINE_ADMIN_TOKEN)');
  }
  if (!e.ENGINE_ADMIN_TOKEN) {
    throw new ConfigError('ENGINE_ADMIN_TOKEN is required when ENGINE_ADMIN_API_URL is set');
  }
  if (!url.pathname.endsWith('/')) {
    url.pathname += '/';
  }
  return { url: url.href, token: e.ENGINE_ADMIN_TOKEN, timeoutMs: e.ENGINE_ADMIN_TIMEOUT_MS, devEngine: false };
}

const TRUST_PROXY_FORMS = 'a hop count such as 1, or a comma-separated list of proxy addresses or subnets such as loopback,10.0.0.0/8';

/**
 * TRUST_PROXY as http/client-ip.ts reads it: unset, empty or `false` (no proxy), `true` (every
 * hop), a hop count, or a proxy-addr list. A list that proxy-addr cannot compile is a one-line
 * ConfigError here, not a stack trace from http/client-ip.ts. `true` makes the left-most X-Forwarded-For entry,
 * which the client writes, the client address, so per-IP limits could be dodged: production
 * refuses it (server.ts warns about it elsewhere).
 */
function checkTrustProxy(value: string | undefined, production: boolean): string | undefined {
  if (value === undefined || value === '' || value === 'false' || /^\d+$/.test(value)) {
    return value;
  }
  if (value === 'true') {
    if (production) {
      throw new ConfigError(
        `TRUST_PROXY=true is refused when NODE_ENV=production: it trusts every X-Forwarded-For hop, so a client can choose its own IP address and dodge per-IP rate limits; set ${TRUST_PROXY_FORMS}`,
      );
    }
    return value;
  }
  try {
    proxyaddr.compile(value.split(',').map((s) => s.trim()));
  } catch (error) {
    throw new ConfigError(`TRUST_PROXY=${value} is invalid (${(error as Error).message}); use false, ${TRUST_PROXY_FORMS}`);
  }
  return value;
}
