import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ParsedUrlQuery, parse as parseQuery } from 'node:querystring';
import { getTRPCErrorFromUnknown, type TRPCError } from '@trpc/server';
import type { AppServices, RequestContext } from '../context.ts';
import { markRoute } from '../metrics.ts';
import { type CompiledProcedure, callProcedure, compileProcedure, isMemoizedAnswer, type ProcedureDef } from '../trpc/call.ts';
import { classifyError } from '../trpc/errors.ts';
import type { Meta } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';
import { runBehindEdge } from './behind-edge.ts';
import { csrfRefusal } from './csrf.ts';
import { type Edge, REST_BASE } from './edge.ts';
import { errorFields, sendError, sendJson } from './errors.ts';
import { answerBodyRefusal, readJsonBody } from './json-body.ts';

type Procedure = { _def: ProcedureDef & { inputs: { _zod?: { def?: { type?: string } } }[] } };

type Operation = {
  /** The procedure's router path (`tenants.get`), as /trpc names it. */
  path: string;
  procedure: CompiledProcedure;
  meta: Meta;
  /** The procedure takes no input (`z.void()`): the query string is not read. */
  voidInput: boolean;
  /** GET and DELETE read the query string; the others a JSON body. */
  readsBody: boolean;
  /** `{name}` segments of the path, in order (templates only). */
  params: string[];
  /** The path template under /v1 (`/v1/tenants/{id}`): the route label of its metrics. */
  route: string;
};

type Match = { operation: Operation; pathInput: Record<string, string> };

const VOID_TYPES = new Set(['void', 'undefined', 'never']);

/** `/a/b/` and `a/b` as `/a/b`: one trailing or leading slash does not make another route. */
function trimSlashes(path: string): string {
  return `/${path.replace(/^\/|\/$/g, '')}`;
}

/**
 * Every procedure with `openapi` meta as a route: method -> exact paths (lower-cased) and
 * templates with `{param}` segments (matched in declaration order, case-insensitively, as the
 * OpenAPI document lists them).
 */
function routeTable() {
  const exact = new Map<string, Operation>();
  const templates = new Map<string, { pattern: RegExp; operation: Operation }[]>();
  for (const [path, candidate] of Object.entries(appRouter._def.procedures)) {
    const procedure = candidate as unknown as Procedure;
    const meta = procedure._def.meta;
    if (!meta?.openapi || meta.openapi.enabled === false || procedure._def.type === 'subscription') {
      continue;
    }
    const { method } = meta.openapi;
    const template = trimSlashes(`${REST_BASE}${trimSlashes(meta.openapi.path)}`);
    const params = [...template.matchAll(/\{(.+?)\}/g)].map(([, name]) => name as string);
    const [input] = procedure._def.inputs;
    const operation: Operation = {
      path,
      procedure: compileProcedure(path, procedure._def),
      meta,
      voidInput: VOID_TYPES.has(input?._zod?.def?.type ?? ''),
      readsBody: method !== 'GET' && method !== 'DELETE',
      params,
      route: template,
    };
    if (params.length === 0) {
      exact.set(`${method} ${template.toLowerCase()}`, operation);
    } else {
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(.+?)\\?\}/g, '([^/]+)');
      const list = templates.get(method) ?? [];
      list.push({ pattern: new RegExp(`^${source}$`, 'i'), operation });
      templates.set(method, list);
    }
  }
  return (method: string, rawPath: string): Match | undefined => {
    const path = trimSlashes(rawPath);
    const found = exact.get(`${method} ${path.toLowerCase()}`);
    if (found) {
      return { operation: found, pathInput: {} };
    }
    for (const { pattern, operation } of templates.get(method) ?? []) {
      const groups = pattern.exec(path);
      if (groups) {
        const pathInput: Record<string, string> = {};
        operation.params.forEach((name, i) => {
          pathInput[name] = groups[i + 1] as string;
        });
        return { operation, pathInput };
      }
    }
    return undefined;
  };
}

/** A procedure's `successStatus` meta (201 for creates; see `created` for sometimes), else 200. */
function successStatusOf(meta: Meta, data: unknown): number {
  if (meta.created && !meta.created.when(data as never)) {
    return 200;
  }
  return meta.successStatus ?? 200;
}

/**
 * Serialized answers by identity, only for the answers the procedure runner memoized (call.ts
 * isMemoizedAnswer: a frozen answer's checked copy, which nothing changes afterwards): client
 * config answers the same one per cached application.
 */
const serialized = new WeakMap<object, string>();

function jsonOf(data: unknown): string {
  if (!isMemoizedAnswer(data)) {
    return JSON.stringify(data);
  }
  let json = serialized.get(data as object);
  if (json === undefined) {
    json = JSON.stringify(data);
    serialized.set(data as object, json);
  }
  return json;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `/v1`: every procedure whose meta declares `openapi`, served over plain Node HTTP before
 * Express. One thin way through for every route, in docs/architecture.md section 3's order: the edge
 * (request id, log, headers, CORS, rate limit), the CSRF rule, the input (query string for GET
 * and DELETE, a JSON body otherwise, path parameters over both), then the procedure itself,
 * which is the route's one definition (/trpc serves the same procedure): its middleware
 * authenticates, checks the input rule and schema, runs the handler and checks the output. The
 * answer is its JSON with the meta's status, or the one error body. HEAD runs the GET route
 * (Node drops the body).
 *
 * Returns a function that takes the request (true) or leaves it to Express (false): routes that
 * are not procedures (streams, the engine proxy, OpenID Provider, pages) and unknown paths, which
 * Express answers 404.
 */
export function createRestAdapter(services: AppServices, edge: Edge): (req: IncomingMessage, res: ServerResponse) => boolean {
  const match = routeTable();
  const allowedOrigins = new Set([new URL(services.config.publicUrl).origin]);

  function fail(req: IncomingMessage, res: ServerResponse, cause: unknown): void {
    const error: TRPCError = getTRPCErrorFromUnknown(cause);
    const classified = classifyError(error);
    if (classified.code === 'internal') {
      services.logger.error({ err: error, requestId: (req as { id?: string }).id }, 'unhandled error');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(req, res, classified.code, classified.message, {
      ...errorFields(classified.appError, services.config),
      ...(classified.issues ? { issues: classified.issues } : {}),
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse, { operation, pathInput }: Match, query: ParsedUrlQuery): Promise<void> {
    const refusal = csrfRefusal(req, allowedOrigins);
    if (refusal) {
      sendError(req, res, 'csrf_rejected', refusal);
      return;
    }
    let input: unknown;
    if (operation.readsBody) {
      const contentType = (req.headers['content-type'] ?? '').toLowerCase();
      if (!contentType.startsWith('application/json')) {
        sendError(req, res, 'unsupported_media_type', 'Send a JSON body with content-type application/json');
        return;
      }
      let body: unknown;
      try {
        body = await readJsonBody(req);
      } catch (error) {
        if (answerBodyRefusal(req, res, error)) {
          return;
        }
        throw error;
      }
      // Path parameters over the body's fields; without any, the body itself, which the input
      // rule has checked already (input-guard.ts).
      input = operation.params.length === 0 ? (body ?? {}) : isPlainObject(body) ? { ...body, ...pathInput } : (body ?? { ...pathInput });
    } else if (!operation.voidInput) {
      input = { ...query, ...pathInput };
    }
    const ctx: RequestContext = { services, req, res, requestId: (req as { id?: string }).id ?? 'unknown' };
    const data = await callProcedure(operation.procedure, operation.path, ctx, input);
    if (operation.meta.answer) {
      operation.meta.answer(req, res, data);
      return;
    }
    if (data === undefined) {
      res.statusCode = successStatusOf(operation.meta, data);
      res.end();
      return;
    }
    sendJson(res, successStatusOf(operation.meta, data), data, jsonOf(data));
  }

  return (req, res) => {
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    if (!rawPath.toLowerCase().startsWith(REST_BASE)) {
      return false;
    }
    const found = match(method, rawPath);
    if (!found) {
      return false;
    }
    // querystring.parse, Express's default parser: a repeated name becomes an array.
    const query = parseQuery(q === -1 ? '' : url.slice(q + 1));
    // Procedures that also take the query on a POST (controlProcedureWithQuerySlug) read it here.
    (req as IncomingMessage & { query?: ParsedUrlQuery }).query = query;
    markRoute(req, found.operation.route);
    runBehindEdge(services, edge, req, res, rawPath, () => handle(req, res, found, query).catch((error: unknown) => fail(req, res, error)));
    return true;
  };
}
