import type { Db, Sql } from '@svc/db/client';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Config } from './env.ts';
import type { ApplicationCache } from './modules/applications/cache.ts';

/** Long-lived services of one API process, built once at startup. */
export type AppServices = {
  config: Config;
  db: Db;
  sql: Sql;
  logger: Logger;
  applications: ApplicationCache;
};

/** What every procedure receives. */
export type RequestContext = {
  services: AppServices;
  req: Request;
  res: Response;
  requestId: string;
};
