#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { AppError } from '@svc/contracts/errors';
import { createDatabase, StartupError } from '@svc/db/client';
import { migrateDatabase } from '@svc/db/migrate';
import { startWorker } from '@svc/jobs/runner';
import { resolveDatabase } from './database.ts';
import { ConfigError, loadConfig } from './env.ts';
import { changeApplicationStatus, createApplication, resolveApplication, rotateApplicationSecret } from './modules/applications/service.ts';
import { createLogger, startServer } from './server.ts';

const USAGE = `svc <command>

  serve                               run the API server (and the worker unless WORKER_ENABLED=false)
  worker                              run the job worker only
  migrate                             apply database migrations and exit
  apps create --org <slug> --name <name> [--org-name <name>] [--status active|disabled] [--json]
  apps set-status <id-or-slug> <active|disabled> [--org <slug>] [--json]
  apps rotate-secret <id-or-slug> [--org <slug>] [--json]

Configuration comes from the environment; see README.md.`;

function onSignal(handler: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      return;
    }
    stopping = true;
    handler()
      .then(() => process.exit(0))
      .catch((error) => {
        process.stderr.write(`svc: shutdown after ${signal} failed: ${(error as Error).message}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function withDatabase<T>(fn: (db: ReturnType<typeof createDatabase>['db']) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await resolveDatabase(config);
  await migrateDatabase(database.url);
  const { db, close } = createDatabase({ url: database.url, max: 2, applicationName: 'svc-cli' });
  try {
    return await fn(db);
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
    const created = await withDatabase((db) =>
      createApplication(db, {
        organizationSlug: values.org as string,
        organizationName: values['org-name'],
        name: values.name as string,
        status,
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
          publishableKey: a.publishableKey,
          secretKeyPrefix: a.secretKeyPrefix,
        },
        organization: { id: o.id, slug: o.slug, name: o.name },
        publishableKey: created.publishableKey,
        secretKey: created.secretKey,
      },
      `created ${a.slug} (${a.id}) in ${o.slug}\npublishable key: ${created.publishableKey}\nsecret key (shown once): ${created.secretKey}`,
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
  throw new AppError('validation_failed', `unknown apps command ${sub ?? ''}\n\n${USAGE}`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const config = loadConfig();
      const logger = createLogger(config);
      const server = await startServer(config, logger);
      process.stdout.write(`svc listening on ${server.url} (console ${server.url}/auth/console, API docs ${server.url}/docs)\n`);
      onSignal(server.close);
      return;
    }
    case 'worker': {
      const config = loadConfig();
      const logger = createLogger(config);
      const database = await resolveDatabase(config);
      await migrateDatabase(database.url);
      const { db, close } = createDatabase({ url: database.url, max: 5, applicationName: 'svc-worker' });
      const worker = await startWorker({ connectionString: database.url, db, logger, concurrency: config.workerConcurrency });
      process.stdout.write('svc worker running\n');
      onSignal(async () => {
        await worker.stop();
        await close();
        await database.stop();
      });
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
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      throw new AppError('validation_failed', `unknown command ${command}\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // Operator-facing failures print one line; anything else is a bug and keeps its stack.
  if (error instanceof StartupError || error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`svc: ${error.message}\n`);
    process.exit(error instanceof AppError ? 1 : 2);
  }
  process.stderr.write(`svc: unexpected error\n${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
