import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SVC_USAGE_EVENT_TYPES } from '@svc/contracts/usage';
import { createDatabase, createHealthProbe, StartupError } from '@svc/db/client';
import { migrateDatabase } from '@svc/db/migrate';
import { createSecretBox } from '@svc/db/secret-box';
import { type EmailBackgroundWorker, startEmailBackgroundWorker } from '@svc/jobs/email/background';
import { startWorker, type WorkerHandle } from '@svc/jobs/runner';
import type { Logger } from 'pino';
import type { AppServices } from './context.ts';
import { resolveDatabase } from './database.ts';
import { resolveEncryptionKey } from './encryption-key.ts';
import type { Config } from './env.ts';
import { createHttpApp } from './http/app.ts';
import { clientIpResolver } from './http/client-ip.ts';
import { createEdge } from './http/edge.ts';
import { errorBody, errorFields } from './http/errors.ts';
import { startMetricsListener } from './http/metrics-endpoint.ts';
import { createProviderDocuments } from './http/provider-documents.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { createRestAdapter } from './http/rest.ts';
import type { RouteEntry } from './http/route-table.ts';
import { createLogger, flushLogger } from './logging.ts';
import { collectFrom } from './metrics.ts';
import { ApiKeyUsage } from './modules/access/api-key-usage.ts';
import { ApplicationCache } from './modules/applications/cache.ts';
import { cookieNames, readCookie } from './modules/auth/cookies.ts';
import { RelyingParty } from './modules/auth/oidc-client.ts';
import { GrantUse } from './modules/connected-apps/last-used.ts';
import { emailOutboxOf } from './modules/email-deliveries/outbox.ts';
import { OpenIdProvider } from './modules/oidc-provider/provider.ts';
import { AccessCache } from './modules/permission-check/cache.ts';
import { engineIdTokenOf, SessionLookup } from './modules/session-store/service.ts';
import { assertSubscriptionAllows } from './modules/subscriptions/enforce.ts';
import { ingesterFor } from './modules/usage/ingest.ts';
import { MachineTokenMeter } from './modules/usage/machine-tokens.ts';
import { rememberRequestSpan } from './tracing.ts';

export type RunningServer = {
  url: string;
  services: AppServices;
  close: () => Promise<void>;
  /** The development engine's seeded people (their sign-in), when this process started one. */
  demoUsers: DemoUser[];
  /** Every method and path this server answers, one owner each (http/route-table.ts). */
  routes: readonly RouteEntry[];
};

/** A person the development engine signs in, as `svc serve` prints them at start. */
export type DemoUser = { email: string; password: string; groups: string[] };

/**
 * `svc serve`: database (embedded when DATABASE_URL is unset), migrations under the advisory
 * lock, the application and access caches with their LISTENs, the in-process worker unless WORKER_ENABLED=false,
 * and the HTTP server. A startup failure releases whatever was already started before it throws.
 */
export async function startServer(config: Config, logger = createLogger(config)): Promise<RunningServer> {
  if (config.trustProxy === 'true') {
    // env.ts refuses this in production; elsewhere it is allowed, and said once.
    logger.warn(
      { setting: 'TRUST_PROXY' },
      "TRUST_PROXY=true trusts every X-Forwarded-For hop: a client can pick its own IP address and dodge per-IP rate limits; set a hop count (e.g. 1) or the proxies' addresses or subnets instead (production refuses true)",
    );
  }
  const database = await resolveDatabase(config);
  // Undone in reverse order when a later step fails.
  const started: (() => Promise<void>)[] = [database.stop];
  try {
    return await startOn(config, logger, database, started);
  } catch (error) {
    for (const stop of started.reverse()) {
      await stop().catch(() => {});
    }
    throw error;
  }
}

async function startOn(
  config: Config,
  logger: Logger,
  database: Awaited<ReturnType<typeof resolveDatabase>>,
  started: (() => Promise<void>)[],
): Promise<RunningServer> {
  await migrateDatabase(database.url);
  const pool = createDatabase({
    url: database.url,
    max: config.databasePoolSize,
    applicationName: 'svc-api',
    timeoutMs: config.databaseTimeoutMs,
  });
  const { db, sql } = pool;
  // /healthz's own connection: it must answer within a second even when the pool is saturated.
  const databaseHealth = createHealthProbe(database.url);
  const closeDb = async () => {
    await Promise.all([pool.close(), databaseHealth.close()]);
  };
  started.push(closeDb);
  const applications = new ApplicationCache(db, { ttlMs: config.applicationCacheTtlMs });
  started.push(() => applications.close());
  await applications.listen(sql);
  const access = new AccessCache(db, { ttlMs: config.accessCacheTtlMs });
  started.push(() => access.close());
  await access.listen(sql);
  const engine = await resolveEngine(config, logger, started);
  const sessions = new SessionLookup(db, engine.config.session);
  const apiKeyUsage = new ApiKeyUsage(db, 60_000, (error) => logger.warn({ err: error }, 'could not record API key use'));
  const encryptionKey = resolveEncryptionKey(config);
  const secretBox = createSecretBox(encryptionKey);
  const clientIp = clientIpResolver(config.trustProxy);
  // Usage svc records itself (SVC_USAGE_EVENT_TYPES, docs/api.md): one meter per event type, each
  // judged by the subscription rule and the plan's limit on that type.
  const meterOf = (eventType: string, what: string) =>
    new MachineTokenMeter({
      eventType,
      submit: (submission) => ingesterFor(db).submit(submission),
      judge: async (organizationId) => ({
        limit: (await assertSubscriptionAllows(db, organizationId))?.plan.usageLimits[eventType],
      }),
      changes: () => access.changes,
      onError: (error, lost) =>
        lost
          ? logger.error({ err: error, ...lost }, `${what} could not be counted; their usage event is lost`)
          : logger.warn({ err: error }, `could not count ${what} yet; trying again`),
    });
  const machineTokens = meterOf(SVC_USAGE_EVENT_TYPES.machineToken, 'machine tokens issued');
  const agentTokens = meterOf(SVC_USAGE_EVENT_TYPES.agentToken, "third-party clients' tokens issued");
  const mcpToolCalls = meterOf(SVC_USAGE_EVENT_TYPES.mcpToolCall, 'MCP tool calls');
  const grantUse = new GrantUse(db, (error) => logger.warn({ err: error }, "could not record a third-party grant's last use"));
  const oidc = await OpenIdProvider.start({
    db,
    sql,
    logger,
    applications,
    secretBox,
    encryptionKey,
    issuer: engine.config.publicUrl,
    signingAlg: config.oidc.signingAlg,
    keylessEnabled: config.keylessEnabled,
    development: config.nodeEnv !== 'production',
    sessionOf: (req) => {
      const token = readCookie(req, cookieNames(engine.config.publicUrl).session);
      return token ? sessions.validate(token) : Promise.resolve(null);
    },
    clientIp,
    engineEndSessionUrl: (opts) => engine.rp.endSessionUrl(opts),
    engineIdTokenOf: (sessionId) => engineIdTokenOf(db, secretBox, sessionId),
    // Every machine token is counted as usage of the client's organization (docs/authorization.md).
    meterMachineToken: (token) => machineTokens.record(token),
    // Every token of a third-party client is counted as usage of the organization it acts for.
    meterAgentToken: (token) => agentTokens.record(token),
    noteGrantUse: (grantId, registeredClientId) => grantUse.note(grantId, registeredClientId),
    fetchAllowPrivate: config.webhooks.allowPrivate,
    // The token endpoint's 402 carries the same upgradeUrl and limit fields as every other 402.
    refusalFields: (refusal) => errorFields(refusal, engine.config),
    dynamicRegistration: engine.config.oidc.dynamicRegistration.enabled,
  });
  started.push(() => oidc.close());
  const services: AppServices = {
    config: engine.config,
    db,
    sql,
    databaseHealth,
    readiness: { draining: false, workerRunning: null },
    logger,
    applications,
    access,
    sessions,
    apiKeyUsage,
    clientIp,
    rp: engine.rp,
    oidc,
    secretBox,
    mcpToolCalls,
    grantUse,
  };

  let worker: WorkerHandle | undefined;
  if (config.workerEnabled) {
    const running = await startWorker({
      connectionString: database.url,
      db,
      logger,
      concurrency: config.workerConcurrency,
      secretBox: services.secretBox,
      webhooks: config.webhooks,
      email: config.email,
      billing: { settings: config.billing },
      dns: config.dns,
      retention: config.retention,
      oidc: { issuer: engine.config.publicUrl, registeredClientUnusedDays: engine.config.oidc.dynamicRegistration.unusedDays },
    });
    started.push(() => running.stop());
    worker = running;
    services.readiness.workerRunning = running.running;
  }
  const emailWorker = startEmailWorker(config, services);
  if (emailWorker) {
    started.push(() => emailWorker.stop());
  }

  if (config.metrics.enabled) {
    collectFrom(db);
    const closeMetrics = await startMetricsListener(config, logger);
    if (closeMetrics) {
      started.push(closeMetrics);
    }
  }
  const limiter = new RateLimiter(db, logger);
  const edge = createEdge(services, limiter);
  const app = createHttpApp(services, edge, limiter);
  // Before Express: the OpenID Provider's documents from memory, then every /v1 procedure.
  const providerDocuments = createProviderDocuments(services, edge);
  const rest = createRestAdapter(services, edge);
  const traced = config.tracing.endpoint !== null;
  const server = http.createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    if (traced) {
      rememberRequestSpan(req);
    }
    if (!providerDocuments(req, res) && !rest(req, res)) {
      app(req, res);
    }
  });
  // Node answers oversized headers with a bare 431; give it our error body instead.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
    const body = JSON.stringify({
      error: tooLarge
        ? errorBody('header_too_large', 'request headers exceed 16 KiB', 'none')
        : errorBody('malformed_request', 'malformed HTTP request', 'none'),
    });
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(listenError(error, config)));
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = config.port === 0 ? `http://${config.host}:${address.port}` : config.publicUrl;

  /**
   * Stops accepting connections and stops the worker in parallel; whatever is still running after
   * SHUTDOWN_TIMEOUT_MS is cut off (open connections closed). Then the cache listener, the pool
   * and the embedded database, and finally the log is flushed. Each step runs even when an
   * earlier one failed; the failures are logged and reported together.
   */
  const shutdown = async () => {
    const failures: string[] = [];
    const step = async (name: string, fn: () => Promise<void> | undefined) => {
      try {
        await fn();
      } catch (error) {
        failures.push(name);
        logger.error({ err: error }, `shutdown: ${name} failed`);
      }
    };
    // /readyz answers 503 from now on: a load balancer stops sending before the listener closes.
    services.readiness.draining = true;
    const httpClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // A keep-alive connection whose request finishes after close() turns idle: close it too.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), config.shutdownTimeoutMs);
    });
    const drained = Promise.all([
      httpClosed,
      step('worker stop', () => worker?.stop()),
      step('email delivery worker stop', () => emailWorker?.stop()),
    ]).then(() => 'drained' as const);
    const outcome = await Promise.race([drained, deadline]);
    clearTimeout(timer);
    clearInterval(sweep);
    if (outcome === 'timeout') {
      logger.warn({ shutdownTimeoutMs: config.shutdownTimeoutMs }, 'shutdown deadline reached: closing open connections');
      server.closeAllConnections();
      await httpClosed;
    }
    await step('machine token usage', () => machineTokens.flush(config.shutdownTimeoutMs));
    await step('agent token usage', () => agentTokens.flush(config.shutdownTimeoutMs));
    await step('MCP tool call usage', () => mcpToolCalls.flush(config.shutdownTimeoutMs));
    await step('API key last-used times', () => apiKeyUsage.close());
    await step('application cache', () => applications.close());
    await step('access cache', () => access.close());
    await step('OpenID Provider key listener', () => oidc.close());
    await step('database pool', closeDb);
    await step('embedded database', database.stop);
    await flushLogger(logger);
    if (failures.length > 0) {
      throw new Error(`shutdown incomplete: ${failures.join(', ')} failed (see the log)`);
    }
  };
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= shutdown();
    return closing;
  };
  return { url, services, close, demoUsers: engine.demoUsers, routes: app.locals.routes as RouteEntry[] };
}

/**
 * EMAIL_DELIVERY_WORKER_ENABLED (docs/api.md "Invitations"): due deliveries processed in
 * this process every interval, besides the `email:dispatch` jobs. Not started without a provider.
 */
function startEmailWorker(config: Config, services: AppServices): EmailBackgroundWorker | undefined {
  if (!config.email.worker.enabled) {
    return undefined;
  }
  if (!config.email.enabled) {
    services.logger.warn(
      { setting: 'EMAIL_DELIVERY_WORKER_ENABLED' },
      'EMAIL_DELIVERY_WORKER_ENABLED is set but email delivery is disabled (EMAIL_ENABLED, EMAIL_PROVIDER): the email delivery worker is not started',
    );
    return undefined;
  }
  const { intervalMs, batchSize } = config.email.worker;
  services.logger.info({ intervalMs, batchSize, provider: config.email.provider }, 'email delivery worker started');
  return startEmailBackgroundWorker(services.db, emailOutboxOf(services), { intervalMs, batchSize, logger: services.logger });
}

/** listen() failures an operator fixes with a setting, as one-line startup errors. */
function listenError(error: NodeJS.ErrnoException, config: Config): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new StartupError(`port ${config.port} on ${config.host} is already in use (PORT)`);
    case 'EACCES':
      return new StartupError(`no permission to listen on port ${config.port} on ${config.host} (PORT; ports below 1024 need privileges)`);
    case 'EADDRNOTAVAIL':
      return new StartupError(`${config.host} is not an address of this machine (HOST)`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`cannot resolve ${config.host} (HOST)`);
    default:
      return error;
  }
}

/**
 * The identity engine: ENGINE_ISSUER's, or (unset, outside production) apps/dev-engine started in
 * this process with the demo users or DEV_ENGINE_USERS. The relying party talks to either the same
 * way, over HTTP.
 */
async function resolveEngine(
  config: Config,
  logger: Logger,
  started: (() => Promise<void>)[],
): Promise<{ config: Config; rp: RelyingParty; demoUsers: DemoUser[] }> {
  let effective = config;
  let demoUsers: DemoUser[] = [];
  if (config.engine.embedded) {
    const { startDevEngine } = await import('@svc/dev-engine/engine');
    const { loadDevUsers } = await import('@svc/dev-engine/users');
    const { devEngineUsersFile } = await import('@svc/dev-engine/env');
    const users = loadDevUsers(process.env);
    const admin = config.engine.admin;
    // Sign-ups outlive a restart, as the workspaces svc made for them do (DATA_DIR). Test
    // servers (NODE_ENV=test) keep them in memory: each starts from the seed users alone.
    const usersFile = config.nodeEnv === 'development' ? devEngineUsersFile(config.dataDir) : undefined;
    const devEngine = await startDevEngine({
      port: config.engine.devEnginePort,
      users,
      ...(usersFile ? { usersFile } : {}),
      ...(admin?.devEngine ? { adminToken: admin.token } : {}),
      clients: [
        {
          client_id: config.engine.clientId,
          ...(config.engine.clientSecret ? { client_secret: config.engine.clientSecret } : {}),
          redirect_uris: [`${config.publicUrl}/auth/callback`],
          post_logout_redirect_uris: [`${config.publicUrl}/signin`, `${config.publicUrl}/`],
        },
      ],
      socialSources: [config.engine.socialProvider],
    });
    started.push(() => devEngine.close());
    effective = {
      ...config,
      engine: {
        ...config.engine,
        issuer: devEngine.issuer,
        // The platform engine proxy's default: this dev engine's admin API, on the port it got.
        admin: admin?.devEngine ? { ...admin, url: `${devEngine.url}/api/v3/` } : admin,
      },
    };
    demoUsers = users.map((u) => ({ email: u.email, password: u.password, groups: u.groups }));
    logger.info({ issuer: devEngine.issuer, demoUsers }, 'development identity engine started (set ENGINE_ISSUER to use your own)');
    logger.info(
      { usersFile: usersFile ?? null },
      usersFile
        ? `development identity engine keeps its sign-ups in ${usersFile} (delete it to forget them)`
        : 'development identity engine keeps its sign-ups in memory (NODE_ENV=test): a restart forgets them',
    );
  }
  logEngine(effective, logger);
  const rp = new RelyingParty({
    issuer: effective.engine.issuer,
    clientId: effective.engine.clientId,
    clientSecret: effective.engine.clientSecret,
    redirectUri: `${effective.publicUrl}/auth/callback`,
    scopes: effective.engine.scopes,
    groupsClaim: effective.engine.groupsClaim,
  });
  return { config: effective, rp, demoUsers };
}

/**
 * Says at start which engine svc talks to (set, or inferred from the issuer's shape), what it
 * offers there and what not, and how invitations are matched on it (docs/engines.md).
 */
function logEngine(config: Config, logger: Logger): void {
  const { kind, kindInferred, issuer, offers } = config.engine;
  const names = Object.keys(offers.handOffs) as (keyof typeof offers.handOffs)[];
  const offered = names.filter((n) => offers.handOffs[n]);
  const notOffered = names.filter((n) => !offers.handOffs[n]);
  logger.info(
    {
      engine: { kind, kindFrom: kindInferred ? 'issuer shape (ENGINE_KIND unset)' : 'ENGINE_KIND', issuer },
      offered,
      notOffered,
      adminApi: offers.adminApi,
      invitations: invitationMatchingRule(offers.adminApi),
    },
    notOffered.length
      ? `identity engine: ${kind}; svc does not offer ${notOffered.join(', ')} on it (configure their URLs to offer them)`
      : `identity engine: ${kind}; every hand-off offered`,
  );
}

/** How an email-bound invitation finds its person on this engine (docs/engines.md). */
export function invitationMatchingRule(adminApi: boolean): string {
  return adminApi
    ? "the invited email must be verified by the engine (email_verified: true in its ID token), or the person created at the engine through svc's engine admin API"
    : 'the invited email must be verified by the engine (email_verified: true in its ID token); without that claim, invite without the email match';
}
