import type { IncomingMessage, ServerResponse } from 'node:http';
import { scimBaseUrl } from '@svc/contracts/directories';
import { AppError } from '@svc/contracts/errors';
import type { DirectoryRow } from '@svc/db/queries/directories';
import express from 'express';
import { ZodError } from 'zod';
import type { AppServices } from '../context.ts';
import { requestMetaOf } from '../modules/access/audit.ts';
import { listOf, resourceTypes, schemas, serviceProviderConfig } from '../modules/scim/discovery.ts';
import { ScimError } from '../modules/scim/errors.ts';
import { ScimFilterError } from '../modules/scim/filter.ts';
import { ERROR_SCHEMA, SEARCH_SCHEMA } from '../modules/scim/resources.ts';
import {
  authenticateDirectory,
  createGroup,
  createUser,
  deleteGroup,
  deleteUser,
  getGroup,
  getUser,
  type ListQuery,
  listGroups,
  listUsers,
  logRequest,
  patchGroupResource,
  patchUserResource,
  replaceGroup,
  replaceUser,
  type ScimCaller,
  type ScimDeps,
} from '../modules/scim/service.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { asAppError } from './errors.ts';
import { readJsonBody } from './json-body.ts';

// The SCIM 2.0 service provider of every directory (docs/enterprise.md "Directory sync"):
// `/scim/v2/{directory}/...`, authenticated by the directory's bearer token, answered as
// application/scim+json with RFC 7644's error bodies. No cookie is read, so it sits before the
// CSRF guard.

const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

function send(res: ServerResponse, status: number, body?: unknown): void {
  res.statusCode = status;
  if (body === undefined) {
    res.end();
    return;
  }
  const json = JSON.stringify(body);
  res.setHeader('Content-Type', SCIM_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

function sendScimError(res: ServerResponse, error: ScimError): void {
  if (error.status === 401) {
    res.setHeader('WWW-Authenticate', 'Bearer realm="scim"');
  }
  send(res, error.status, {
    schemas: [ERROR_SCHEMA],
    status: String(error.status),
    ...(error.scimType ? { scimType: error.scimType } : {}),
    detail: error.detail,
  });
}

/** A body SCIM clients send: JSON as application/scim+json or application/json. */
async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/scim+json' && type !== 'application/json') {
    throw new ScimError(415, 'send the body as application/scim+json (or application/json)');
  }
  try {
    return await readJsonBody(req);
  } catch (error) {
    if (error instanceof AppError) {
      throw error.code === 'payload_too_large'
        ? new ScimError(413, 'the body is too large')
        : new ScimError(400, 'the body is not valid JSON', 'invalidSyntax');
    }
    if (error instanceof ZodError) {
      throw new ScimError(400, 'the body holds input svc refuses (too deep, too long or with NUL characters)', 'invalidSyntax');
    }
    throw error;
  }
}

function queryOf(req: express.Request): ListQuery {
  const q = req.query;
  const one = (v: unknown) => (typeof v === 'string' ? v : Array.isArray(v) ? undefined : undefined);
  for (const key of ['filter', 'startIndex', 'count', 'excludedAttributes'] as const) {
    if (Array.isArray(q[key]) || (q[key] !== undefined && typeof q[key] !== 'string')) {
      throw new ScimError(400, `give ${key} once`, 'invalidValue');
    }
  }
  return { filter: one(q.filter), startIndex: one(q.startIndex), count: one(q.count), excludedAttributes: one(q.excludedAttributes) };
}

/** A SearchRequest body (RFC 7644 section 3.4.3) as a list query. */
function searchQueryOf(body: unknown): ListQuery {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScimError(400, 'a search is a JSON object', 'invalidSyntax');
  }
  const fields = body as Record<string, unknown>;
  const schemasList = fields.schemas;
  if (schemasList !== undefined && !(Array.isArray(schemasList) && schemasList.includes(SEARCH_SCHEMA))) {
    throw new ScimError(400, `schemas must include ${SEARCH_SCHEMA}`, 'invalidSyntax');
  }
  const filter = fields.filter;
  if (filter !== undefined && typeof filter !== 'string') {
    throw new ScimError(400, 'filter must be a string', 'invalidFilter');
  }
  const number = (v: unknown, name: string) => {
    if (v === undefined || typeof v === 'number') {
      return v as number | undefined;
    }
    throw new ScimError(400, `${name} must be a number`, 'invalidValue');
  };
  return { filter, startIndex: number(fields.startIndex, 'startIndex'), count: number(fields.count, 'count') };
}

type Handler = (deps: ScimDeps, caller: ScimCaller, req: express.Request) => Promise<[number, unknown?]>;

const RESOURCE_ID = /^[A-Za-z0-9_-]{1,64}$/;

function idOf(req: express.Request): string {
  const id = String(req.params.id ?? '');
  if (!RESOURCE_ID.test(id)) {
    throw new ScimError(404, 'no such resource in this directory');
  }
  return id;
}

const routes: [method: string, path: string, handler: Handler][] = [
  ['GET', '/ServiceProviderConfig', async (deps, c) => [200, serviceProviderConfig(scimBaseUrl(deps.publicUrl, c.directory.id))]],
  ['GET', '/ResourceTypes', async (deps, c) => [200, listOf(resourceTypes(scimBaseUrl(deps.publicUrl, c.directory.id)))]],
  [
    'GET',
    '/ResourceTypes/:id',
    async (deps, c, req) => {
      const found = resourceTypes(scimBaseUrl(deps.publicUrl, c.directory.id)).find((r) => r.id === req.params.id);
      if (!found) {
        throw new ScimError(404, 'no such resource type');
      }
      return [200, found];
    },
  ],
  ['GET', '/Schemas', async (deps, c) => [200, listOf(schemas(scimBaseUrl(deps.publicUrl, c.directory.id)))]],
  [
    'GET',
    '/Schemas/:id',
    async (deps, c, req) => {
      const found = schemas(scimBaseUrl(deps.publicUrl, c.directory.id)).find((r) => r.id === req.params.id);
      if (!found) {
        throw new ScimError(404, 'no such schema');
      }
      return [200, found];
    },
  ],
  ['GET', '/Users', async (deps, c, req) => [200, await listUsers(deps, c, queryOf(req))]],
  ['POST', '/Users/.search', async (deps, c, req) => [200, await listUsers(deps, c, searchQueryOf(await bodyOf(req)))]],
  ['POST', '/Users', async (deps, c, req) => [201, await createUser(deps, c, await bodyOf(req))]],
  ['GET', '/Users/:id', async (deps, c, req) => [200, await getUser(deps, c, idOf(req))]],
  ['PUT', '/Users/:id', async (deps, c, req) => [200, await replaceUser(deps, c, idOf(req), await bodyOf(req))]],
  ['PATCH', '/Users/:id', async (deps, c, req) => [200, await patchUserResource(deps, c, idOf(req), await bodyOf(req))]],
  [
    'DELETE',
    '/Users/:id',
    async (deps, c, req) => {
      await deleteUser(deps, c, idOf(req));
      return [204];
    },
  ],
  ['GET', '/Groups', async (deps, c, req) => [200, await listGroups(deps, c, queryOf(req))]],
  ['POST', '/Groups/.search', async (deps, c, req) => [200, await listGroups(deps, c, searchQueryOf(await bodyOf(req)))]],
  ['POST', '/Groups', async (deps, c, req) => [201, await createGroup(deps, c, await bodyOf(req))]],
  ['GET', '/Groups/:id', async (deps, c, req) => [200, await getGroup(deps, c, idOf(req), queryOf(req))]],
  ['PUT', '/Groups/:id', async (deps, c, req) => [200, await replaceGroup(deps, c, idOf(req), await bodyOf(req))]],
  [
    'PATCH',
    '/Groups/:id',
    async (deps, c, req) => {
      const answer = await patchGroupResource(deps, c, idOf(req), await bodyOf(req), false);
      return answer ? [200, answer] : [204];
    },
  ],
  [
    'DELETE',
    '/Groups/:id',
    async (deps, c, req) => {
      await deleteGroup(deps, c, idOf(req));
      return [204];
    },
  ],
];

/** The routes under `/scim/v2/{directory}`. */
export function scimRouter(services: AppServices): express.Router {
  const deps: ScimDeps = { db: services.db, publicUrl: services.config.publicUrl };
  const outer = express.Router();
  const inner = express.Router({ mergeParams: true });

  async function run(handler: Handler, req: express.Request, res: express.Response): Promise<void> {
    let directory: DirectoryRow | undefined;
    let status = 500;
    try {
      directory = await authenticateDirectory(services.db, String(req.params.directory ?? ''), req.headers.authorization);
      const caller: ScimCaller = { directory, request: requestMetaOf(req, services.clientIp, requestIdOf(req)) };
      const [answerStatus, body] = await handler(deps, caller, req);
      status = answerStatus;
      send(res, status, body);
    } catch (error) {
      const scim = toScimError(error);
      if (!scim) {
        services.logger.error({ err: error, requestId: requestIdOf(req) }, 'unhandled error');
      }
      const answer = scim ?? new ScimError(500, `internal error (request id ${requestIdOf(req)})`);
      status = answer.status;
      sendScimError(res, answer);
    }
    if (directory) {
      await logRequest(services.db, directory, { method: req.method, path: req.path, status }).catch((err: unknown) =>
        services.logger.warn({ err, requestId: requestIdOf(req) }, 'SCIM request log write failed'),
      );
    }
  }

  for (const [method, path, handler] of routes) {
    inner[method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete'](path, (req, res) => {
      void run(handler, req, res);
    });
  }
  inner.use((req, res) => {
    void run(
      async () => {
        throw new ScimError(404, `no SCIM endpoint ${req.method} ${req.path}`);
      },
      req,
      res,
    );
  });
  outer.use('/scim/v2/:directory', inner);
  return outer;
}

function toScimError(error: unknown): ScimError | undefined {
  if (error instanceof ScimError) {
    return error;
  }
  if (error instanceof ScimFilterError) {
    return new ScimError(400, error.message, error.scimType);
  }
  const app = asAppError(error);
  if (!app) {
    return undefined;
  }
  if (app.code === 'service_unavailable') {
    return new ScimError(500, 'the database is unavailable; retry shortly');
  }
  if (app.code === 'validation_failed' || app.code === 'malformed_request') {
    return new ScimError(400, app.message, 'invalidValue');
  }
  return new ScimError(400, app.message);
}
