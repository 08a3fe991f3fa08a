import type { AppError } from '@svc/contracts/errors';
import type { Db, Sql } from '@svc/db/client';
import { revokeOidcPayloadsByGrantId } from '@svc/db/queries/oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { allowFormRedirectTo } from '../shared/csp.ts';
import { SubscriptionRefusal } from './claims.ts';
import type { ProviderInstance } from './library.ts';
import { OIDC_ROUTES } from './paths.ts';
import { introspectAccessToken, isStructuredToken } from './userinfo.ts';

/**
 * svc's middleware around oidc-provider's routes (provider.ts says in which order they run): each
 * adjusts one answer of the library, through its public `use` seam.
 */

/**
 * OpenID Connect grants `offline_access` only with prompt=consent "unless other conditions for
 * processing the request permitting offline access are in place" (Core 11). svc's applications
 * are first-party and svc shows no consent screen, and a refresh token lives only as long as the
 * svc session: an authorization request asking for `offline_access` without naming a prompt is
 * read as prompt=consent, so any OIDC library gets its refresh token. A third-party client's
 * consent page (http/oidc/routes.ts) then shows only when something is asked that its grant does not hold
 * yet, so an agent asking for offline_access is not asked again each time. An explicit prompt is left
 * as sent (prompt=none cannot be combined, and drops offline_access as the standard says).
 */
export async function offlineAccessWithoutConsentScreen(
  ctx: { method: string; path: string; querystring: string },
  next: () => Promise<unknown>,
) {
  if (ctx.method === 'GET' && ctx.path === OIDC_ROUTES.authorization) {
    const query = new URLSearchParams(ctx.querystring);
    const scopes = query.getAll('scope');
    if (scopes.length === 1 && scopes[0]?.split(' ').includes('offline_access') && !query.has('prompt')) {
      query.set('prompt', 'consent');
      ctx.querystring = query.toString();
    }
  }
  await next();
}

/**
 * response_mode=form_post answers the authorization (or its resume after the hosted pages) with
 * a page of svc whose form posts the code to the redirect_uri, another origin: its form-action
 * names that origin (oidc-provider already adds its script's hash to script-src). Only a
 * redirect_uri oidc-provider checked against the client's registration, and still registered.
 */
export async function formPostToRedirectUri(ctx: KoaContextWithOIDC, next: () => Promise<unknown>) {
  await next();
  const route = ctx.oidc?.route;
  const params = ctx.oidc?.params;
  const redirectUri = params?.redirect_uri;
  if (
    (route === 'authorization' || route === 'resume') &&
    params?.response_mode === 'form_post' &&
    ctx.oidc.redirectUriCheckPerformed &&
    typeof redirectUri === 'string' &&
    ctx.oidc.client?.redirectUriAllowed(redirectUri) &&
    ctx.type === 'text/html'
  ) {
    allowFormRedirectTo(ctx.res, redirectUri);
  }
}

/**
 * An authorization code presented by a client it was not issued to has leaked. oidc-provider
 * refuses it (invalid_grant) but leaves it redeemable; svc treats it as a reused code: the code
 * and every token of its grant are revoked.
 */
export function codesOfOtherClientsRevoked(db: Db, provider: ProviderInstance) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => {
    await next();
    const params = ctx.oidc?.params;
    const presentedBy = ctx.oidc?.client?.clientId;
    if (
      ctx.path !== OIDC_ROUTES.token ||
      ctx.status !== 400 ||
      (ctx.body as { error?: unknown } | undefined)?.error !== 'invalid_grant' ||
      params?.grant_type !== 'authorization_code' ||
      typeof params.code !== 'string' ||
      !presentedBy
    ) {
      return;
    }
    const code = await provider.AuthorizationCode.find(params.code, { ignoreExpiration: true });
    if (code?.grantId && code.clientId !== presentedBy) {
      await revokeOidcPayloadsByGrantId(db, code.grantId);
    }
  };
}

/**
 * RFC 7662 for svc's access tokens, which are JWTs and not stored: oidc-provider refuses to
 * introspect structured tokens (unsupported_token_type) after it has authenticated the client.
 * For a confidential client asking about its own token, svc answers instead: verified with its
 * keys, and active only while its grant and svc session stand (userinfo.ts).
 */
export function structuredTokenIntrospection(deps: { db: Db; sql: Sql; issuer: string; jwks: () => string }) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => {
    await next();
    const client = ctx.oidc?.client;
    const token = ctx.oidc?.params?.token;
    if (
      ctx.oidc?.route !== 'introspection' ||
      ctx.status !== 400 ||
      (ctx.body as { error?: unknown } | undefined)?.error !== 'unsupported_token_type' ||
      !client ||
      typeof token !== 'string' ||
      !isStructuredToken(token)
    ) {
      return;
    }
    ctx.status = 200;
    ctx.body =
      client.clientAuthMethod === 'none'
        ? { active: false }
        : await introspectAccessToken(
            {
              db: deps.db,
              sql: deps.sql,
              issuer: deps.issuer,
              jwks: JSON.parse(deps.jwks()),
              provider: ctx.oidc.provider,
            },
            token,
            client.clientId,
          );
  };
}

/**
 * The token endpoint's 402 (a plan limit or a blocked subscription, claims.ts SubscriptionRefusal)
 * carries what every other 402 of svc carries beside its code and message (docs/api.md
 * "The 402 body"): `upgradeUrl`, `limit`, `max`, `used`, `requested`, `periodEnd`, `plan`,
 * as `fields` makes them (the one error writer's errorFields). `error` and `error_description`
 * stay as oidc-provider wrote them; RFC 6749 section 5.2 lets an error answer carry more members.
 * A listener of the token endpoint's error event (`grant.error`), which oidc-provider emits right
 * after it wrote the error body and before the answer is sent.
 */
export function refusalFieldsOnError(fields: (refusal: AppError) => Record<string, unknown>) {
  return (ctx: KoaContextWithOIDC, error: unknown): void => {
    if (!(error instanceof SubscriptionRefusal) || ctx.status !== 402 || typeof ctx.body !== 'object' || ctx.body === null) {
      return;
    }
    const out = ctx.body as Record<string, unknown>;
    const extra = Object.entries(fields(error.refusal)).filter(([name]) => !(name in out));
    ctx.body = { ...out, ...Object.fromEntries(extra) };
  };
}
