import { randomBytes } from 'node:crypto';
import { PUBLISHABLE_KEY_PATTERN } from '@svc/contracts/keys';
import { findApplication, findApplicationTenantId } from '@svc/db/queries/applications';
import { type Request, type Response, Router } from 'express';
import type { AppServices } from '../../context.ts';
import { requestMetaOf } from '../../modules/access/audit.ts';
import { cookieNames, readCookie, setCookie } from '../../modules/auth/cookies.ts';
import { sessionOf } from '../../modules/auth/current-session.ts';
import { type HandOff, handOffUrl } from '../../modules/auth/engine-presets.ts';
import { OidcError } from '../../modules/auth/oidc-client.ts';
import { createPendingLogin, PENDING_LOGIN_TTL_MS, redeemPendingLogin } from '../../modules/auth/pending-login.ts';
import { DEFAULT_RETURN_TO, MAX_RETURN_TO, sanitizeReturnTo } from '../../modules/auth/return-to.ts';
import { signInFromEngine } from '../../modules/identity/service.ts';
import { createSession, engineIdTokenOf, revokeSession } from '../../modules/session-store/service.ts';
import { hostedPage, messagePage } from '../../modules/shared/hosted-page.ts';
import { requestIdOf } from '../../modules/shared/request-id.ts';
import { connectionForEmail } from '../../modules/sso/flow.ts';
import type { RateLimiter } from '../rate-limit.ts';
import { ownOriginCheck, sendHostedPage } from './page.ts';

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

function one(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_RETURN_TO ? value : undefined;
}

/**
 * Hosted sign-in and its engine hand-offs (README.md "Sign-in", docs/architecture.md section 6). svc never
 * sees a password: every route here ends at the engine or comes back from it.
 */
export function authRouter(services: AppServices, limiter: RateLimiter): Router {
  const { config, db, rp, logger } = services;
  const names = cookieNames(config.publicUrl);
  const r = Router();

  const fromOwnPage = ownOriginCheck(config.publicUrl);

  async function applicationAllowlist(publishableKey: string | undefined): Promise<{ id: string; redirectUrls: string[] } | null> {
    if (!publishableKey || !PUBLISHABLE_KEY_PATTERN.test(publishableKey)) {
      return null;
    }
    const found = await services.applications.byPublishableKey(publishableKey);
    // The keyless application's lists are URLs it remembers for its claim, never return targets.
    return found && found.application.status === 'active'
      ? { id: found.application.id, redirectUrls: found.application.isKeyless ? [] : found.application.redirectUrls }
      : null;
  }

  /**
   * The redirect allowlist of the application a sign-in started for, as it is now: the address
   * stored at the start is judged again where it becomes a Location header.
   */
  async function currentAllowlist(applicationId: string | null): Promise<string[]> {
    if (!applicationId) {
      return [];
    }
    const tenantId = await findApplicationTenantId(db, { id: applicationId });
    const application = tenantId ? await findApplication(db, { tenantId, id: applicationId }) : undefined;
    return application?.status === 'active' ? application.redirectUrls : [];
  }

  /** Starts a sign-in: fresh state, nonce and PKCE; only an HttpOnly pending-login cookie is set. */
  async function startHandOff(req: Request, res: Response, handOff: HandOff, loginHint?: string): Promise<void> {
    if (handOff !== 'password' && !config.engine.offers.handOffs[handOff]) {
      // Never a link into a page the engine does not have (docs/engines.md): svc says so itself.
      sendHostedPage(
        res,
        404,
        messagePage(
          'Not available here',
          'Your identity provider does not offer this through svc. Ask your administrator.',
          one(req.query.return_to)?.startsWith('/user') ? '/user' : '/signin',
        ),
      );
      return;
    }
    const application = await applicationAllowlist(one(req.query.publishable_key));
    const returnTo = sanitizeReturnTo(one(req.query.return_to), {
      publicUrl: config.publicUrl,
      allowlist: application?.redirectUrls,
      fallback: DEFAULT_RETURN_TO,
    });
    const started = await rp.startAuthorization();
    if (one(req.query.prompt) === 'login') {
      // A fresh sign-in was asked for (an application's prompt=login or max_age): the engine
      // must authenticate the person again rather than reuse its own session.
      started.url.searchParams.set('prompt', 'login');
    }
    const handle = await createPendingLogin(db, {
      state: started.state,
      nonce: started.nonce,
      codeVerifier: started.codeVerifier,
      returnTo,
      applicationId: application?.id ?? null,
    });
    setCookie(res, names, names.pendingLogin, handle, PENDING_LOGIN_TTL_MS / 1000);
    const target = handOffUrl({
      kind: config.engine.kind,
      authorizationUrl: started.url,
      handOff,
      loginHint,
      socialProvider: config.engine.socialProvider,
      overrides: config.engine.overrides,
    });
    res.redirect(303, target.toString());
  }

  r.get('/auth/login', async (req, res) => {
    const loginHint = one(req.query.login_hint)?.trim().toLowerCase();
    if (loginHint !== undefined && loginHint !== '' && !EMAIL.test(loginHint)) {
      sendHostedPage(res, 400, messagePage('That does not look like an email address', 'Go back and check it.', '/signin'));
      return;
    }
    if (loginHint) {
      // Credential stuffing goes through here: a tight budget per email, shared by all processes.
      const decision = await limiter.take(`signin:${loginHint}`, config.rateLimit.signinPerMinute);
      if (!decision.allowed) {
        res.setHeader('Retry-After', String(decision.resetSeconds));
        sendHostedPage(res, 429, messagePage('Too many sign-in attempts', `Try again in ${decision.resetSeconds} seconds.`, '/signin'));
        return;
      }
    }
    const handOff: HandOff = req.query.method === 'social' ? 'social' : req.query.intent === 'signup' ? 'signup' : 'password';
    if (loginHint && handOff !== 'social') {
      // A domain an organization verified, with a connection: its people sign in at their own
      // IdP (docs/enterprise.md "Who goes where"); an unverified domain never leaves here.
      const sso = await connectionForEmail(db, loginHint);
      if (sso) {
        const returnTo = one(req.query.return_to);
        res.redirect(303, `/sso/${sso.connection.id}/start${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`);
        return;
      }
    }
    await startHandOff(req, res, handOff, loginHint || undefined);
  });

  // Account hand-offs (docs/architecture.md section 6): the engine runs recovery, verification, MFA and passkey
  // setup; svc only starts a fresh authorization so the user comes back signed in, to return_to.
  const ACCOUNT_ROUTES: [string, HandOff][] = [
    ['/auth/recovery', 'recovery'],
    ['/auth/verify-email', 'email_verification'],
    ['/auth/mfa', 'mfa_setup'],
    ['/auth/passkeys', 'passkey_setup'],
  ];
  for (const [path, handOff] of ACCOUNT_ROUTES) {
    r.get(path, async (req, res) => {
      await startHandOff(req, res, handOff);
    });
  }

  r.get('/auth/callback', async (req, res) => {
    const handle = readCookie(req, names.pendingLogin);
    setCookie(res, names, names.pendingLogin, '', 0);
    const fail = (reason: string, engine?: OidcError['engine']) => {
      if (engine) {
        // The engine refused svc itself (client settings, PKCE, grant): the operator's to fix.
        logger.warn({ reason, engine }, 'sign-in callback refused by the identity engine');
      } else {
        logger.info({ reason }, 'sign-in callback refused');
      }
      sendHostedPage(
        res,
        400,
        messagePage('Sign-in could not be completed', 'It may have expired or been opened twice. Please start again.', '/signin'),
      );
    };
    if (!handle) {
      fail('no pending-login cookie');
      return;
    }
    // Consumed before anything else: a replayed or reordered callback finds nothing.
    const pending = await redeemPendingLogin(db, handle);
    if (!pending) {
      fail('unknown, used or expired pending login');
      return;
    }
    const state = one(req.query.state);
    const code = one(req.query.code);
    if (!state || state !== pending.state) {
      fail('state mismatch');
      return;
    }
    if (!code) {
      const error = one(req.query.error);
      fail(
        `engine answered ${error ?? 'without a code'}`,
        error ? { status: 302, error: error.slice(0, 200), error_description: one(req.query.error_description)?.slice(0, 500) } : undefined,
      );
      return;
    }
    try {
      const { identity, idToken } = await rp.completeAuthorization({ code, codeVerifier: pending.codeVerifier, nonce: pending.nonce });
      // "Require SSO": the domain's people sign in at their organization's IdP, never with the
      // engine, whatever email they typed where; platform admins excepted (docs/enterprise.md).
      if (!identity.groups.includes(config.platformAdminGroup) && (await connectionForEmail(db, identity.email))?.required) {
        logger.info({ reason: 'sso_required' }, 'engine sign-in refused: the domain requires SSO');
        sendHostedPage(
          res,
          403,
          messagePage(
            'Sign in with your organization',
            'Your organization requires single sign-on for your email address (sso_required). Sign in again with your email: svc sends you to your organization’s identity provider.',
            '/signin',
          ),
        );
        return;
      }
      const outcome = await signInFromEngine(db, identity, {
        platformAdminGroup: config.platformAdminGroup,
        request: requestMetaOf(req, services.clientIp, requestIdOf(req)),
      });
      const { token } = await createSession(db, config.session, {
        userId: outcome.user.id,
        activeTenantId: outcome.workspace.id,
        isPlatformAdmin: outcome.isPlatformAdmin,
        ipAddress: services.clientIp(req),
        userAgent: one(req.headers['user-agent']),
        // Kept sealed for the engine's end-session (id_token_hint); never sent to the browser.
        engineIdToken: { value: idToken, secretBox: services.secretBox },
      });
      setCookie(res, names, names.session, token, config.session.absoluteMs / 1000);
      // The same sanitizer again, on the stored string (rows written by an older svc included).
      const returnTo = sanitizeReturnTo(pending.returnTo, {
        publicUrl: config.publicUrl,
        allowlist: await currentAllowlist(pending.applicationId),
        fallback: DEFAULT_RETURN_TO,
      });
      res.redirect(303, returnTo);
    } catch (error) {
      if (error instanceof OidcError) {
        fail(error.message, error.engine);
        return;
      }
      if ((error as { code?: string }).code === 'user_suspended') {
        sendHostedPage(res, 403, messagePage('This account is suspended', 'Ask an administrator of your organization.', '/'));
        return;
      }
      throw error;
    }
  });

  r.get('/auth/logout', (_req, res) => {
    res
      .type('html')
      .send(
        hostedPage(
          'Sign out',
          '<h1>Sign out?</h1><form method="post" action="/auth/logout"><button type="submit" data-testid="confirm-logout">Sign out</button></form>',
        ),
      );
  });

  r.post('/auth/logout', async (req, res) => {
    // A form POST from any site would carry our cookie: only our own pages may sign out.
    if (!fromOwnPage(req)) {
      sendHostedPage(res, 403, messagePage('Sign-out refused', 'Sign out from svc itself.', '/auth/logout'));
      return;
    }
    const current = await sessionOf(services, req);
    // Only the ID token of the session this browser holds: read before the session (and with it
    // the token) is revoked.
    const idTokenHint = current ? await engineIdTokenOf(db, services.secretBox, current.session.id) : undefined;
    if (current) {
      await revokeSession(db, current.session.id);
    }
    setCookie(res, names, names.session, '', 0);
    const engineLogout = await rp
      // A state as RP-Initiated Logout 1.0 has it: some engines (glewlwyd) return the browser to
      // post_logout_redirect_uri only when the request carries one.
      .endSessionUrl({ postLogoutRedirectUri: `${config.publicUrl}/signin`, idTokenHint, state: randomBytes(16).toString('base64url') })
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'engine end-session URL unavailable; signing out of svc only');
        return undefined;
      });
    res.redirect(303, engineLogout?.toString() ?? '/signin');
  });

  return r;
}
