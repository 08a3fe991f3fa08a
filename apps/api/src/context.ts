import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ParsedUrlQuery } from 'node:querystring';
import type { Db, Sql } from '@svc/db/client';
import type { SecretBox } from '@svc/db/secret-box';
import type { Logger } from 'pino';
import type { Config } from './env.ts';
import type { ApiKeyUsage } from './modules/access/api-key-usage.ts';
import type { ApplicationCache } from './modules/applications/cache.ts';
import type { RelyingParty } from './modules/auth/oidc-client.ts';
import type { GrantUse } from './modules/connected-apps/last-used.ts';
import type { OpenIdProvider } from './modules/oidc-provider/provider.ts';
import type { AccessCache } from './modules/permission-check/cache.ts';
import type { SessionLookup } from './modules/session-store/service.ts';
import type { MachineTokenMeter } from './modules/usage/machine-tokens.ts';

/** Long-lived services of one API process, built once at startup. */
export type AppServices = {
  config: Config;
  db: Db;
  sql: Sql;
  /** `/healthz`'s database check, on a connection of its own, false within a second when down. */
  databaseHealth: { check: () => Promise<boolean> };
  /**
   * What `/readyz` judges besides the database (docs/operations.md "Probes"): whether the process
   * is shutting down, and whether its in-process job worker runs (null: no worker here).
   */
  readiness: { draining: boolean; workerRunning: (() => boolean) | null };
  logger: Logger;
  applications: ApplicationCache;
  /** The permission check's standings, organizations and subscription terms, dropped on NOTIFY (svc_access_changed). */
  access: AccessCache;
  /** Batched session reads (one indexed read per check, shared by concurrent checks). */
  sessions: SessionLookup;
  /** Tenant API keys' last-used times, written in batches. */
  apiKeyUsage: ApiKeyUsage;
  /** The client address under TRUST_PROXY (rate limits, audit entries, sessions). */
  clientIp: (req: IncomingMessage) => string;
  /** svc as an OIDC relying party of the identity engine. */
  rp: RelyingParty;
  /** svc as OpenID Provider of its applications (issuer PUBLIC_URL). */
  oidc: OpenIdProvider;
  /** AES-256-GCM under SVC_ENCRYPTION_KEY: webhook signing secrets, queued email bodies. */
  secretBox: SecretBox;
  /** Calls to svc's MCP tools, metered as usage of the organization (SVC_USAGE_EVENT_TYPES.mcpToolCall). */
  mcpToolCalls: Pick<MachineTokenMeter, 'record'>;
  /** Third-party grants' last use, for the Connected apps list. */
  grantUse: Pick<GrantUse, 'note'>;
};

/**
 * What every procedure receives, on /v1 (http/rest.ts) and /trpc alike: the Node request (with
 * its parsed query string) and response.
 */
export type RequestContext = {
  services: AppServices;
  req: IncomingMessage & { query?: ParsedUrlQuery };
  res: ServerResponse;
  requestId: string;
};
