import type { Db, Sql } from '@svc/db/client';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Config } from './env.ts';
import type { ApplicationCache } from './modules/applications/cache.ts';
import type { RelyingParty } from './modules/auth/oidc-client.ts';
import type { SessionLookup } from './modules/sessions/service.ts';

/** Long-lived services of one API process, built once at startup. */
export type AppServices = {
  config: Config;
  db: Db;
  sql: Sql;
  logger: Logger;
  applications: ApplicationCache;
  /** Batched session reads (one indexed read per check, shared by concurrent checks). */
  sessions: SessionLookup;
  /** svc as an OIDC relying party of the identity engine. */
  rp: RelyingParty;
};

/** What every procedure receives. */
export type RequestContext = {
  services: AppServices;
  req: Request;
  res: Response;
  requestId: string;
};
