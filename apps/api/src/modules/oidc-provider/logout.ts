import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIdOf } from '@svc/contracts/ids';
import type { DbOrTx } from '@svc/db/client';
import { revokeOidcPayloadsByGrantId } from '@svc/db/queries/oidc-provider';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { cookieNames, readCookie, setCookie } from '../auth/cookies.ts';
import { MAX_RETURN_TO } from '../auth/return-to.ts';
import { revokeSession } from '../session-store/service.ts';
import { allowFormRedirectTo } from '../shared/csp.ts';
import { escapeHtml, hostedPage } from '../shared/hosted-page.ts';
import type { SvcSessionOf } from './accounts.ts';
import { oidcErrorPage } from './error-page.ts';
import { COOKIE_NAMES, LONG_COOKIE } from './paths.ts';

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) at /oidc/session/end.
 *
 * oidc-provider checks the request (id_token_hint signed by svc for the client, client_id
 * matching it, post_logout_redirect_uri registered, no repeated parameters) and keeps what it
 * asked in its session, with an xsrf secret. svc adds the checks below; with an id_token_hint of
 * the browser's current svc session it signs out at once (renderLogout), otherwise it renders the
 * confirmation page (docs/oidc.md, "RP-initiated logout"); either way it ends the svc session and
 * the engine's before the browser goes back to the application:
 *
 *   GET /oidc/session/end        confirmation page "Also sign out of svc?" (form with the xsrf)
 *   POST /oidc/session/end/confirm   oidc-provider ends its session (logout=yes); svc revokes
 *                                the svc sessions of the browser, clears its cookie, and sends
 *                                the browser to the engine's end-session endpoint with
 *                                post_logout_redirect_uri <PUBLIC_URL>/signin and a fresh state
 *   GET /signin?state=<that>     (continueLogout) on to the application's post_logout_redirect_uri
 *                                with its state, judged again against the client's registration
 *
 * What the application asked for travels in a short-lived cookie of svc (LOGOUT_COOKIE_SECONDS),
 * bound to the state the engine hands back.
 */

/** Longest value of each end-session parameter; anything longer is refused (error page). */
export const LOGOUT_PARAM_LIMITS: Readonly<Record<string, number>> = {
  id_token_hint: 8192,
  client_id: 64,
  post_logout_redirect_uri: MAX_RETURN_TO,
  state: 512,
  ui_locales: 64,
  logout_hint: 512,
};

/** How long the browser has to come back from the engine's end-session endpoint. */
export const LOGOUT_COOKIE_SECONDS = 600;

/** Where the engine sends the browser after its end-session: registered with every engine already. */
export function enginePostLogoutRedirectUri(publicUrl: string): string {
  return `${publicUrl}/signin`;
}

/**
 * What is wrong with an end-session request that oidc-provider let through, or undefined. It drops
 * a post_logout_redirect_uri it cannot check (no id_token_hint, no client_id) silently; the
 * specification says such a request must name its client, so svc refuses it.
 */
export function logoutRequestProblem(ctx: KoaContextWithOIDC): string | undefined {
  const params = (ctx.oidc.params ?? {}) as Record<string, unknown>;
  const raw = ctx.method === 'POST' ? (ctx.oidc.body ?? {}) : ctx.query;
  for (const [name, max] of Object.entries(LOGOUT_PARAM_LIMITS)) {
    const value = params[name] ?? raw[name];
    if (typeof value === 'string' && value.length > max) {
      return `${name} is longer than ${max} characters`;
    }
  }
  if (raw.post_logout_redirect_uri !== undefined && !ctx.oidc.client) {
    return 'post_logout_redirect_uri needs id_token_hint or client_id';
  }
  return undefined;
}

/**
 * The confirmation page, for a request that did not prove it comes from the person's current
 * session: one form posting oidc-provider's xsrf secret to the confirm endpoint. The application
 * has ended its own session before sending the browser here (RP-Initiated Logout 1.0), so the
 * question is about svc's: "Sign out of svc" (logout=yes) ends the svc session, every
 * application's authorization in this browser and the engine's session; "Stay signed in to svc"
 * ends nothing of svc's (single sign-on goes on) and goes back to the application. No scripts.
 */
export function logoutPage(opts: { action: string; xsrf: string; appName: string | undefined; signedInAs: string | undefined }): string {
  const title = 'Also sign out of svc?';
  const asked = opts.appName
    ? `<p data-testid="logout-asked-by">${escapeHtml(opts.appName)} asks svc to sign you out.</p>`
    : '<p data-testid="logout-asked-by">An application asks svc to sign you out.</p>';
  const who = opts.signedInAs ? `<p class="muted" data-testid="signed-in-as">Signed in to svc as ${escapeHtml(opts.signedInAs)}.</p>` : '';
  const back = opts.appName ? `back to ${escapeHtml(opts.appName)}` : 'back to the application';
  return hostedPage(
    title,
    `<h1 data-testid="hosted-heading">${escapeHtml(title)}</h1>${asked}${who}
<form method="post" action="${escapeHtml(opts.action)}"><input type="hidden" name="xsrf" value="${escapeHtml(opts.xsrf)}">
<button type="submit" name="logout" value="yes" data-testid="confirm-logout">Sign out of svc</button>
<button type="submit" class="button secondary" data-testid="stay-signed-in">Stay signed in to svc</button></form>
<p class="muted">Signing out of svc ends your session here and at your identity provider, for every application. Staying signed in keeps it: the next sign-in to any application needs no password. Either way you go ${back}.</p>`,
  );
}

/** After a logout without a post_logout_redirect_uri. */
export function signedOutPage(appName: string | undefined): string {
  const detail = appName ? `You have signed out of ${appName}.` : 'You have signed out.';
  return hostedPage(
    'Signed out',
    `<h1 data-testid="hosted-heading">Signed out</h1><p>${escapeHtml(detail)}</p><a class="button" href="/signin">Sign in again</a>`,
  );
}

/** What the application asked for, kept while the browser visits the engine. */
type Continuation = { nonce: string; clientId?: string; uri?: string; state?: string };

function encodeContinuation(c: Continuation): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeContinuation(value: string | undefined): Continuation | undefined {
  if (!value || value.length > 4096) {
    return undefined;
  }
  try {
    const c = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as Record<string, unknown>;
    const optional = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return typeof c.nonce === 'string' && c.nonce.length > 0
      ? { nonce: c.nonce, clientId: optional(c.clientId), uri: optional(c.uri), state: optional(c.state) }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The URL an application's logout ends on: its post_logout_redirect_uri, with its state. */
function applicationReturn(uri: string, state: string | undefined): string {
  const url = new URL(uri);
  if (state !== undefined) {
    url.searchParams.set('state', state);
  }
  return url.href;
}

export type SvcLogoutDeps = {
  db: DbOrTx;
  sessionOf: SvcSessionOf;
  publicUrl: string;
  /** The engine's end-session URL (rp.endSessionUrl), or undefined when the engine has none. */
  engineEndSessionUrl: (opts: { postLogoutRedirectUri: string; state: string; idTokenHint?: string }) => Promise<URL | undefined>;
  /** The engine's ID token kept with a svc session (its id_token_hint), or undefined. */
  engineIdTokenOf?: (sessionId: string) => Promise<string | undefined>;
};

/**
 * Runs after oidc-provider confirmed a full logout (logout=yes: its session is destroyed, the
 * grants of every application in it revoked). Revokes the svc sessions of this browser: the one
 * of its cookie and those the provider session's authorizations were made under (their sid; an
 * application's refresh tokens live only as long as that session). Never a session named by the
 * id_token_hint alone: an ID token is no proof of holding the session. Clears the svc cookie,
 * then answers where the browser goes next: the engine's end-session endpoint, or (without one)
 * the application's post_logout_redirect_uri.
 */
export async function endSvcSession(ctx: KoaContextWithOIDC, deps: SvcLogoutDeps): Promise<string> {
  const session = ctx.oidc.session;
  const sids = new Set<string>();
  const current = await deps.sessionOf(ctx.req);
  if (current) {
    sids.add(current.session.id);
  }
  // The engine's ID token of the session this browser holds (never of a session the
  // application's id_token_hint names), read before the session is revoked.
  const idTokenHint = current && deps.engineIdTokenOf ? await deps.engineIdTokenOf(current.session.id) : undefined;
  for (const authorization of Object.values(session?.authorizations ?? {})) {
    if (typeof authorization.sid === 'string' && isIdOf('session', authorization.sid)) {
      sids.add(authorization.sid);
    }
  }
  for (const sid of sids) {
    await revokeSession(deps.db, sid);
  }
  const names = cookieNames(deps.publicUrl);
  setCookie(ctx.res, names, names.session, '', 0);

  const asked = (session?.state ?? {}) as { clientId?: unknown; postLogoutRedirectUri?: unknown; state?: unknown };
  const continuation: Continuation = {
    nonce: randomBytes(16).toString('base64url'),
    clientId: typeof asked.clientId === 'string' ? asked.clientId : undefined,
    uri: typeof asked.postLogoutRedirectUri === 'string' ? asked.postLogoutRedirectUri : undefined,
    state: typeof asked.state === 'string' ? asked.state : undefined,
  };
  const engine = await deps
    .engineEndSessionUrl({ postLogoutRedirectUri: enginePostLogoutRedirectUri(deps.publicUrl), state: continuation.nonce, idTokenHint })
    .catch(() => undefined);
  if (engine) {
    setCookie(ctx.res, names, names.logout, encodeContinuation(continuation), LOGOUT_COOKIE_SECONDS);
    return engine.href;
  }
  return continuation.uri ? applicationReturn(continuation.uri, continuation.state) : ctx.oidc.urlFor('end_session_success');
}

/** The clients of the provider, as far as the end of a logout needs them. */
export type LogoutClients = {
  find(clientId: string): Promise<{ clientName?: string | undefined; postLogoutRedirectUriAllowed(uri: string): boolean } | undefined>;
};

/**
 * GET /signin with the state of a logout this browser started: the engine's end-session is
 * done, on to the application's post_logout_redirect_uri (still registered for it, else the
 * signed-out page). Answers false (nothing sent) when the request is no such return.
 */
export async function continueLogout(
  req: IncomingMessage & { query: Record<string, unknown> },
  res: ServerResponse,
  deps: { publicUrl: string; clients: LogoutClients },
): Promise<boolean> {
  const names = cookieNames(deps.publicUrl);
  const raw = readCookie(req, names.logout);
  const state = req.query.state;
  if (raw === undefined || typeof state !== 'string') {
    return false;
  }
  const continuation = decodeContinuation(raw);
  if (continuation?.nonce !== state) {
    return false;
  }
  setCookie(res, names, names.logout, '', 0);
  const client = continuation.clientId ? await deps.clients.find(continuation.clientId) : undefined;
  if (client && continuation.uri && client.postLogoutRedirectUriAllowed(continuation.uri)) {
    res.statusCode = 303;
    res.setHeader('Location', applicationReturn(continuation.uri, continuation.state));
    res.end();
    return true;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(signedOutPage(client?.clientName));
  return true;
}

/**
 * RP-initiated logout (features.rpInitiatedLogout.logoutSource): the error page when the request
 * is one svc refuses (logout.ts); straight on, without a page, when its id_token_hint names the
 * browser's current svc session (hintNamesSession); otherwise the confirmation page
 * (docs/oidc.md, "RP-initiated logout").
 */
export async function renderLogout(deps: SvcLogoutDeps, ctx: KoaContextWithOIDC): Promise<void> {
  ctx.type = 'html';
  const problem = logoutRequestProblem(ctx);
  if (problem) {
    ctx.status = 400;
    ctx.body = oidcErrorPage({ error: 'invalid_request', error_description: problem }, 'sign-out');
    return;
  }
  const current = await deps.sessionOf(ctx.req);
  if (current && (await hintNamesSession(ctx, current))) {
    await logOutWithoutConfirmation(deps, ctx);
    return;
  }
  const xsrf = (ctx.oidc.session?.state as { secret?: unknown } | undefined)?.secret;
  // Either button's answer ends on the application's post_logout_redirect_uri (checked by
  // oidc-provider against the client's registration), through the engine for Sign out.
  const destination = ctx.oidc.params?.post_logout_redirect_uri;
  if (typeof destination === 'string') {
    allowFormRedirectTo(ctx.res, destination);
  }
  ctx.status = 200;
  ctx.body = logoutPage({
    action: ctx.oidc.urlFor('end_session_confirm'),
    xsrf: typeof xsrf === 'string' ? xsrf : '',
    appName: ctx.oidc.client?.clientName ?? ctx.oidc.client?.clientId,
    signedInAs: current?.user.email,
  });
}

/**
 * Whether the end-session request's id_token_hint is an ID token svc issued to its client for
 * the browser's current svc session: signed by svc (verified again here), its `sid` that
 * session and its `sub` that person. OpenID Connect RP-Initiated Logout 1.0 section 2 lets the
 * provider skip the question then. A hint of an earlier or another session, of another person,
 * or one the browser does not hold the session of (no svc cookie) keeps the question.
 */
async function hintNamesSession(ctx: KoaContextWithOIDC, current: SessionWithUser): Promise<boolean> {
  const hint = ctx.oidc.params?.id_token_hint;
  const client = ctx.oidc.client;
  if (typeof hint !== 'string' || !client) {
    return false;
  }
  try {
    const { payload } = (await ctx.oidc.provider.IdToken.validate(hint, client)) as { payload: Record<string, unknown> };
    return payload.sid === current.session.id && payload.sub === current.user.id;
  } catch {
    return false;
  }
}

/**
 * A confirmed full logout without the page: what oidc-provider's confirm endpoint does for
 * logout=yes (every authorization's grant revoked with its tokens, its session destroyed and its
 * cookie cleared), then svc's part (endSvcSession) and on to the engine.
 */
async function logOutWithoutConfirmation(deps: SvcLogoutDeps, ctx: KoaContextWithOIDC): Promise<void> {
  const session = ctx.oidc.session;
  const grantIds = Object.values(session?.authorizations ?? {})
    .map((authorization) => authorization.grantId)
    .filter((grantId): grantId is string => typeof grantId === 'string');
  for (const grantId of grantIds) {
    await revokeOidcPayloadsByGrantId(deps.db, grantId);
  }
  // Read before the session goes: where the application asked to land, and the sids of its sign-ins.
  const destination = await endSvcSession(ctx, deps);
  await session?.destroy();
  ctx.cookies.set(COOKIE_NAMES.session, null, LONG_COOKIE);
  ctx.status = 303;
  ctx.redirect(destination);
}

/**
 * Around oidc-provider's end-session routes. Without an account in its session, oidc-provider
 * answers the end-session request with an auto-submitting form (an inline script svc's CSP
 * blocks): svc's confirmation page instead, since the svc and engine sessions may still be
 * there. After a confirmed full logout: svc's part (endSvcSession), then the engine's.
 */
export function logoutMiddleware(deps: SvcLogoutDeps) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    const route = ctx.oidc?.route;
    if (route === 'end_session' && ctx.status === 200 && !ctx.oidc.session?.accountId) {
      await renderLogout(deps, ctx);
    } else if (route === 'end_session_confirm' && ctx.status === 303 && ctx.oidc.params?.logout) {
      ctx.redirect(await endSvcSession(ctx, deps));
    }
  };
}
