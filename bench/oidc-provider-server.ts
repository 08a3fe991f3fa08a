/**
 * svc's OpenID Provider alone (apps/api/src/modules/oidc-provider/provider.ts, the same
 * configuration `svc serve` builds) on a plain node:http server, for bench/oidc-tokens.ts.
 *
 * OIDC_STORAGE=memory: oidc-provider's own in-memory adapter instead of PostgreSQL (the baseline
 * of the token endpoint figures). OIDC_STORAGE=postgres: the PostgreSQL adapter, used only to
 * mint codes and refresh tokens into the database a real `svc serve` then redeems.
 *
 * POST /bench/mint {kind, count, ...} mints `count` authorization codes or refresh tokens through
 * oidc-provider's own models (one grant each, as one sign-in makes) and answers their values.
 * Settings: DATABASE_URL, PORT, HOST, PUBLIC_URL (the issuer), SVC_ENCRYPTION_KEY, OIDC_SIGNING_ALG.
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolveEncryptionKey } from '@svc/api/encryption-key';
import { loadConfig } from '@svc/api/env';
import { createLogger } from '@svc/api/logging';
import { ApplicationCache } from '@svc/api/modules/applications/cache';
import { clientResource } from '@svc/api/modules/oidc-provider/claims';
import { OpenIdProvider } from '@svc/api/modules/oidc-provider/provider';
import { createDatabase } from '@svc/db/client';
import { createSecretBox } from '@svc/db/secret-box';

type Storage = NonNullable<Parameters<typeof OpenIdProvider.start>[0]['storage']>;

/** oidc-provider's MemoryAdapter on a store large enough for a whole run (its default keeps 1,000 entries). */
async function memoryStorage(): Promise<Storage> {
  const fromApi = createRequire(path.join(import.meta.dirname, '../apps/api/package.json'));
  const load = (file: string) => import(pathToFileURL(fromApi.resolve(`oidc-provider/${file}`)).href);
  const { default: MemoryAdapter } = (await load('lib/adapters/memory_adapter.js')) as {
    default: new (model: string, store: unknown) => ReturnType<Storage>;
  };
  const { default: LRU } = (await load('lib/helpers/lru.js')) as { default: new (opts: { maxSize: number }) => unknown };
  const store = new LRU({ maxSize: 2_000_000 });
  return (model) => new MemoryAdapter(model, store);
}

export type MintRequest = {
  kind: 'code' | 'refresh';
  count: number;
  clientId: string;
  accountId: string;
  /** The svc session the tokens are bound to (sid). */
  sid: string;
  organization: { id: string; slug: string };
  redirectUri: string;
  codeChallenge: string;
  /** One of the product's API resources the code is for (RFC 8707), instead of the client itself. */
  apiResource?: string;
};

export const MINT_SCOPE = 'openid email offline_access organization';

const config = loadConfig(process.env);
const storageKind = process.env.OIDC_STORAGE;
if (storageKind !== 'memory' && storageKind !== 'postgres') {
  throw new Error('OIDC_STORAGE must be memory or postgres');
}
const logger = createLogger(config);
const database = createDatabase({
  url: config.databaseUrl as string,
  max: config.databasePoolSize,
  applicationName: `bench-oidc-${storageKind}`,
});
const applications = new ApplicationCache(database.db, { ttlMs: config.applicationCacheTtlMs });
await applications.listen(database.sql);
const encryptionKey = resolveEncryptionKey(config);
const op = await OpenIdProvider.start({
  db: database.db,
  sql: database.sql,
  logger,
  applications,
  secretBox: createSecretBox(encryptionKey),
  encryptionKey,
  issuer: config.publicUrl,
  signingAlg: config.oidc.signingAlg,
  keylessEnabled: false,
  // Token requests carry no browser session.
  sessionOf: async () => null,
  clientIp: () => '127.0.0.1',
  // Token requests never sign out.
  engineEndSessionUrl: async () => undefined,
  ...(storageKind === 'memory' ? { storage: await memoryStorage() } : {}),
});

async function mintOne(input: MintRequest): Promise<string> {
  const { provider } = op;
  const client = await provider.Client.find(input.clientId);
  if (!client) {
    throw new Error(`no client ${input.clientId}`);
  }
  const resource = input.apiResource ?? clientResource(input.clientId);
  const grant = new provider.Grant({ accountId: input.accountId, clientId: input.clientId });
  grant.addOIDCScope(MINT_SCOPE);
  grant.addResourceScope(resource, input.apiResource ? '' : MINT_SCOPE);
  Object.assign(grant, { organization: input.organization });
  const grantId = await grant.save();
  // What the authorization endpoint and the code exchange store (offline_access: not bound to the provider session).
  const common = {
    accountId: input.accountId,
    authTime: Math.floor(Date.now() / 1000),
    client,
    expiresWithSession: false,
    grantId,
    resource,
    scope: MINT_SCOPE,
    sid: input.sid,
  };
  if (input.kind === 'code') {
    return new provider.AuthorizationCode({
      ...common,
      gty: 'authorization_code',
      codeChallenge: input.codeChallenge,
      codeChallengeMethod: 'S256',
      redirectUri: input.redirectUri,
    }).save();
  }
  return new provider.RefreshToken({ ...common, gty: 'authorization_code', rotations: 0 }).save();
}

async function mint(input: MintRequest): Promise<string[]> {
  const values: string[] = [];
  for (let i = 0; i < input.count; i += 32) {
    values.push(...(await Promise.all(Array.from({ length: Math.min(32, input.count - i) }, () => mintOne(input)))));
  }
  return values;
}

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  if (req.method === 'POST' && req.url === '/bench/mint') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      mint(JSON.parse(Buffer.concat(chunks).toString()) as MintRequest).then(
        (values) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(values)),
        (error: Error) => res.writeHead(500).end(error.stack),
      );
    });
    return;
  }
  op.handle(req, res);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.closeAllConnections();
    server.close();
    void op
      .close()
      .then(() => applications.close())
      .then(() => database.close())
      .finally(() => process.exit(0));
  });
}
