import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '@svc/contracts/errors';
import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { RequestContext } from '../context.ts';
import { asAppError, errorBody, errorFields } from '../http/errors.ts';
import { refusedInput } from '../http/input-guard.ts';
import type { AccessRule } from '../modules/access/access-rule.ts';
import { classifyError, toTrpcError } from './errors.ts';
import type { SubscriptionRule } from './subscription-gate.ts';

/** How an operation authenticates; drives its OpenAPI `security` and the docs. */
export type AuthKind = 'none' | 'publishableKey' | 'secretKey' | 'session' | 'sessionOrApiKey';
export type Meta = OpenApiMeta & {
  auth?: AuthKind;
  /** HTTP status of a successful `/v1` answer (default 200): 201 for creates (docs/api.md). */
  successStatus?: 201 | 202;
  /**
   * The route creates only sometimes (an upsert, a replayed idempotency key): `successStatus`
   * when `when(answer)` holds, else 200, which the OpenAPI document describes as `otherwise`.
   */
  created?: { when: (answer: never) => boolean; otherwise: string };
  /**
   * Error codes particular to this route, beyond those its method and `auth` bring (every route:
   * validation_failed, rate_limited, ...; a session route: unauthenticated, ...: http/openapi.ts
   * `errorCodesOf`). The OpenAPI document lists exactly these per operation, and the API test
   * suite fails on an answer with a code the operation does not list (test/support/openapi-answers.ts).
   */
  errors?: readonly ErrorCode[];
  /**
   * The control-plane ladder (trpc/procedures.ts): the caller is a session or a tenant API key,
   * and the route resolves an organization and the caller's permission in it, so it may answer
   * invalid_secret_key, not_found and forbidden whatever its `auth`.
   */
  control?: true;
  /**
   * What the route needs of its caller: the permission, how its organization is found and
   * whether only an org admin may call it. `resolveAccess` (trpc/access.ts), placed after the
   * route's input, applies it and hands the handler `ctx.access`; the OpenAPI document carries the
   * permission as `x-svc-permission`.
   */
  access?: AccessRule;
  /**
   * A credential-free route browsers on any origin may call: CORS `*`, no credentials
   * (http/cors.ts, through http/route-policy.ts).
   */
  publicCors?: true;
  /**
   * The rate-limit class: `backend` for a route a backend calls with its secret key, which spends
   * that key's own budget (http/edge.ts); every other route spends the caller's (a tenant API
   * key's, else the client IP's).
   */
  rateLimit?: 'backend';
  /** Only platform admins may call it (`platformProcedure`): no organization, no permission to resolve. */
  platformOnly?: true;
  /**
   * The route is a project, user, webhook or usage route under the subscription rule: its
   * mutations answer 402 while the organization's subscription blocks them (subscription-gate.ts).
   */
  subscription?: SubscriptionRule;
  /**
   * Writes a successful `/v1` answer itself (http/rest.ts), for a route with more than one
   * representation or conditional requests; errors are still the adapter's.
   */
  answer?: (req: IncomingMessage, res: ServerResponse, data: unknown) => void;
};

/**
 * Request ids of errors raised before a context exists (body parsing, content type): the
 * adapters' onError records them here so the formatter can still put one in the body.
 */
export const errorRequestIds = new WeakMap<object, string>();

const t = initTRPC
  .context<RequestContext>()
  .meta<Meta>()
  .create({
    errorFormatter({ shape, error, ctx }) {
      const classified = classifyError(error);
      const requestId = ctx?.requestId ?? errorRequestIds.get(error) ?? 'unknown';
      const body = errorBody(classified.code, classified.message, requestId, {
        // A 402's limit, max, used, requested, periodEnd, plan and upgradeUrl (ZSubscriptionRefusal).
        ...errorFields(classified.appError, ctx?.services.config ?? { subscriptionUpgradeUrl: null }),
        ...(classified.issues ? { issues: classified.issues } : {}),
      });
      // `/trpc` keeps tRPC's numeric envelope, with our code and request id under `data` and the
      // body under `error`. `/v1` answers `{ error: body }` itself (http/rest.ts).
      const formatted = {
        code: shape.code,
        message: classified.message,
        requestId,
        data: { code: classified.code, httpStatus: shape.data.httpStatus, requestId, path: shape.data.path },
        error: body,
      };
      return formatted;
    },
  });

export const router = t.router;
export const middleware = t.middleware;

/**
 * The first middleware of every procedure, on `/trpc` and `/v1` alike (one level, as every
 * middleware costs each call):
 * - the raw input passes the one input rule (NUL, unpaired surrogates, nesting depth:
 *   http/input-guard.ts) before any schema, credential lookup or query sees it. Here rather than
 *   in each schema so that no route, field or free-form JSON value can be left out;
 * - services throw AppError; it becomes the TRPCError carrying the right status. An unreachable
 *   database becomes 503 service_unavailable here (asAppError), never a 500.
 */
const entry = t.middleware(async ({ getRawInput, next }) => {
  const refused = refusedInput(await getRawInput());
  if (refused) {
    // BAD_REQUEST caused by a ZodError: answered 400 validation_failed with its issues (errors.ts).
    throw new TRPCError({ code: 'BAD_REQUEST', message: 'Input validation failed', cause: refused });
  }
  const result = await next();
  const appError = result.ok ? undefined : asAppError(result.error.cause);
  if (appError) {
    throw toTrpcError(appError);
  }
  return result;
});

export const publicProcedure = t.procedure.use(entry);
