import { AppError } from '@svc/contracts/errors';
import { requestMetaOf } from '../modules/access/audit.ts';
import { assertPlatformAdmin } from '../modules/access/authorize.ts';
import { principalOf } from '../modules/access/principal.ts';
import { resolvePublishableKeyFromRequest, resolveSecretKey } from '../modules/applications/resolve.ts';
import { NO_SESSION_MESSAGE, sessionOf } from '../modules/auth/current-session.ts';
import { type CheckCaller, checkCallerOf } from '../modules/permission-check/caller.ts';
import { publicProcedure } from './init.ts';
import { type GateCall, subscriptionGuard } from './subscription-gate.ts';

/** Procedures authenticated by a publishable key (or keyless=1). */
export const publishableKeyProcedure = publicProcedure.meta({ auth: 'publishableKey' }).use(async ({ ctx, getRawInput, next }) => {
  const raw = ((await getRawInput()) ?? {}) as { publishable_key?: unknown; keyless?: unknown };
  const resolved = await resolvePublishableKeyFromRequest(ctx.services, ctx.req.headers, raw);
  return next({ ctx: { resolved } });
});

/** Procedures authenticated by an application secret key. */
export const secretKeyProcedure = publicProcedure.meta({ auth: 'secretKey' }).use(async ({ ctx, next }) => {
  const found = await resolveSecretKey(ctx.services, ctx.req.headers.authorization);
  return next({ ctx: { application: found } });
});

/**
 * The permission check (POST /v1/permissions/check): an application secret key, a tenant API key
 * or a session; anonymous gets 401. What each may ask about is declared on the route
 * (PERMISSION_CHECK_ACCESS, modules/permission-check/service.ts): `resolveAccessOrOwnRule`
 * applies the control plane's rule to the last two, the check its own rule to an application.
 */
export const permissionCheckProcedure = publicProcedure.meta({ auth: 'sessionOrApiKey', control: true }).use(({ ctx, next }) => {
  const found = checkCallerOf(ctx.services, ctx.req);
  const proceed = (caller: CheckCaller | null) => {
    if (!caller) {
      throw new AppError('unauthenticated', NO_SESSION_MESSAGE);
    }
    return next({ ctx: { caller } });
  };
  // A cached application answers without a promise (checkCallerOf); anything else is awaited.
  return found instanceof Promise ? found.then(proceed) : proceed(found);
});

/** Procedures for a signed-in browser (the HttpOnly session cookie); anonymous gets 401. */
export const sessionProcedure = publicProcedure.meta({ auth: 'session' }).use(async ({ ctx, next }) => {
  const current = await sessionOf(ctx.services, ctx.req);
  if (!current) {
    throw new AppError('unauthenticated', NO_SESSION_MESSAGE);
  }
  return next({ ctx: { current, session: current.session, user: current.user } });
});

/**
 * Control-plane procedures (docs/api.md "Tenants, members and permissions"): a session cookie, or a tenant API key as
 * `Authorization: Bearer sk_live_...`; anonymous gets 401. What the caller may do in which
 * organization is decided per procedure by `authorize` (modules/access).
 */
const authenticatedControlProcedure = publicProcedure.meta({ auth: 'sessionOrApiKey', control: true }).use(async ({ ctx, next }) => {
  const principal = await principalOf(ctx.services, ctx.req);
  if (!principal) {
    throw new AppError('unauthenticated', NO_SESSION_MESSAGE);
  }
  return next({ ctx: { principal, request: requestMetaOf(ctx.req, ctx.services.clientIp, ctx.requestId) } });
});

/**
 * A mutation whose meta declares `subscription` gets the subscription rule (subscription-gate.ts)
 * attached to its caller: `authorize` applies it to the organization it resolves for the route.
 */
function withSubscriptionGuard<C extends { principal: object }, R>(opts: GateCall & { ctx: C; next: (opts?: { ctx: C }) => R }): R {
  const organizationGuard = subscriptionGuard(opts);
  return organizationGuard ? opts.next({ ctx: { ...opts.ctx, principal: { ...opts.ctx.principal, organizationGuard } } }) : opts.next();
}

/**
 * Control-plane procedures, with the route's subscription rule attached to the caller
 * (withSubscriptionGuard). Nothing is read here.
 */
export const controlProcedure = authenticatedControlProcedure.use((opts) => withSubscriptionGuard(opts));

/** Control-plane procedures only a signed-in person may call (an API key gets 403). */
export const userControlProcedure = controlProcedure.meta({ auth: 'session' }).use(async ({ ctx, next }) => {
  if (ctx.principal.kind !== 'user') {
    throw new AppError('forbidden', 'this route needs a signed-in user; API keys cannot call it');
  }
  return next({ ctx: { ...ctx, principal: ctx.principal } });
});

/**
 * Platform-only procedures (the engine's platform admin group, `isPlatformAdmin` in
 * modules/access): an API key gets the 403 of `userControlProcedure`, anyone else signed in one
 * and the same 403 whatever they ask, before the input is looked at. The service behind it
 * receives the platform admin and checks nothing more about who calls.
 */
export const platformProcedure = userControlProcedure.meta({ platformOnly: true }).use(async ({ ctx, next }) => {
  assertPlatformAdmin(ctx.principal);
  return next({ ctx: { ...ctx, principal: ctx.principal } });
});

/**
 * docs/api.md writes some POST routes with `?organization_slug=` in the query (e.g.
 * POST /v1/invitations/{id}/revoke), but the REST adapter builds a POST's input from the body and
 * the path only. This procedure also takes the query's `organization_slug`, as if it were in the
 * body; sent in both places with different values it is a 400 rather than a guess.
 */
export const controlProcedureWithQuerySlug = authenticatedControlProcedure
  .use(async ({ ctx, getRawInput, next }) => {
    const fromQuery = ctx.req.query?.organization_slug;
    if (fromQuery === undefined) {
      return next();
    }
    return next({
      getRawInput: async () => {
        const raw = (await getRawInput()) ?? {};
        if (typeof raw !== 'object' || Array.isArray(raw)) {
          return raw;
        }
        const fromBody = (raw as { organization_slug?: unknown }).organization_slug;
        if (fromBody !== undefined && fromBody !== fromQuery) {
          throw new AppError('validation_failed', 'organization_slug differs between the query and the body');
        }
        return { ...raw, organization_slug: fromQuery };
      },
    });
  })
  .use((opts) => withSubscriptionGuard(opts));

/**
 * `platformProcedure` for a platform route that names an organization in the query
 * (PATCH /v1/subscription?organization_slug=): the query's `organization_slug` merged as in
 * `controlProcedureWithQuerySlug`. Every credential other than a platform admin's session,
 * an API key included, gets the platform-only 403.
 */
export const platformProcedureWithQuerySlug = controlProcedureWithQuerySlug
  .meta({ auth: 'session', platformOnly: true })
  .use(async ({ ctx, next }) => {
    assertPlatformAdmin(ctx.principal);
    return next({ ctx: { ...ctx, principal: ctx.principal } });
  });
