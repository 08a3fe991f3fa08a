import type { SessionWithUser } from '@svc/db/queries/sessions';
import express, { type Request, type Response, Router } from 'express';
import { decodeJwt } from 'jose';
import type { AppServices } from '../../context.ts';
import { sessionOf } from '../../modules/auth/current-session.ts';
import { mayConnect } from '../../modules/connected-apps/service.ts';
import { controlPlaneResource } from '../../modules/mcp/resource.ts';
import { organizationOfGrant, selectableOrganizations } from '../../modules/oidc-provider/accounts.ts';
import { corsAllowed } from '../../modules/oidc-provider/clients.ts';
import { consentAsked, consentOrganization, consentView, heldPermissions } from '../../modules/oidc-provider/consent.ts';
import { NOT_ALLOWED_BY_ORGANIZATION } from '../../modules/oidc-provider/grants.ts';
import { isThirdPartyClient, thirdPartyHostOf } from '../../modules/oidc-provider/metadata-documents.ts';
import {
  AUTHORIZATION_SERVER_METADATA_PATH,
  DISCOVERY_PATH,
  INTERACTION_PATH,
  OIDC_PREFIX,
  OIDC_ROUTES,
} from '../../modules/oidc-provider/paths.ts';
import { isRegisteredClient, REGISTRATION_MAX_BYTES } from '../../modules/oidc-provider/registration.ts';
import { userinfoOf } from '../../modules/oidc-provider/userinfo.ts';
import { allowFormRedirectTo } from '../../modules/shared/csp.ts';
import { messagePage } from '../../modules/shared/hosted-page.ts';
import { connectionForOrganizationSlug } from '../../modules/sso/flow.ts';
import { asAppError, sendAppError, sendError } from '../errors.ts';
import { ownOriginCheck, sendBrandedPage, sendHostedPage } from '../hosted/page.ts';
import { type ApplicationBrand, consentPage, organizationPage, signInPage } from '../hosted/sign-in-pages.ts';
import { spendBudget } from '../rate-limit.ts';
import { trySignInRouter } from './try-sign-in.ts';

/**
 * svc's OpenID Provider on the HTTP server: the hosted interaction, userinfo, then everything
 * under /oidc/ and the discovery document handed to oidc-provider. Plain Express, before the CSRF
 * guard: the token, revocation and introspection endpoints take form posts from applications'
 * back ends, and oidc-provider checks what each endpoint needs itself. (Discovery and JWKS are
 * answered from memory (http/provider-documents.ts) before Express sees them; the provider answers them too.)
 */
export function oidcProviderRouter(services: AppServices): Router {
  const router = Router();
  const fromOwnPage = ownOriginCheck(services.config.publicUrl);

  function expired(res: Response): void {
    sendHostedPage(res, 400, messagePage('This sign-in request has expired', 'Go back to the application and sign in again.', '/'));
  }

  /** The interaction of a request, or undefined (answered) when it is unknown or expired. */
  async function detailsOf(req: Request, res: Response) {
    try {
      const details = await services.oidc.provider.interactionDetails(req, res);
      return details.uid === req.params.uid ? details : undefined;
    } catch {
      return undefined;
    }
  }

  type Interaction = NonNullable<Awaited<ReturnType<typeof detailsOf>>>;

  /**
   * The consent page of a third-party client (modules/oidc-provider/consent.ts): after the organization (picked here
   * when the person has several and the request names none), what the client asks that its grant
   * does not hold yet, each permission marked grantable when the person holds it there.
   */
  async function showConsent(
    req: Request,
    res: Response,
    input: {
      details: Interaction;
      current: SessionWithUser;
      clientId: string;
      application: ApplicationBrand;
      /** The name with the host, for the organization page shown before the consent page. */
      brand: ApplicationBrand;
      here: string;
    },
  ): Promise<void> {
    const { details, current, application } = input;
    const chosen = consentOrganization(
      current,
      details.params.organization,
      (details.result as { organization?: unknown } | undefined)?.organization,
    );
    if ('refused' in chosen) {
      await services.oidc.provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: chosen.refused },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if ('pick' in chosen) {
      sendBrandedPage(res, input.brand, organizationPage(input.here, input.brand, current.memberships));
      return;
    }
    // Nobody is asked to allow what the organization does not (modules/connected-apps/service.ts).
    if (!(await mayConnect(services.db, { organizationId: chosen.organization.id, clientId: input.clientId }))) {
      await services.oidc.provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: NOT_ALLOWED_BY_ORGANIZATION },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    // Nothing asked beyond what the grant already answered: only prompt=consent (how any
    // client asks for offline_access) brought the person here. Asked again only for more.
    if (details.grantId && details.prompt.reasons.every((reason) => reason === 'consent_prompt')) {
      const existing = await services.oidc.provider.Grant.find(details.grantId);
      if (
        existing?.accountId === current.user.id &&
        existing.clientId === input.clientId &&
        organizationOfGrant(existing)?.id === chosen.organization.id
      ) {
        await services.oidc.provider.interactionFinished(
          req,
          res,
          { consent: { grantId: existing.jti } },
          { mergeWithLastSubmission: true },
        );
        return;
      }
    }
    const held = await heldPermissions(services.db, chosen.organization);
    const view = await consentView(services.db, {
      client: {
        ...application,
        host: thirdPartyHostOf(input.clientId, details.params.redirect_uri) ?? input.clientId,
        registered: isRegisteredClient(input.clientId),
      },
      organization: chosen.organization,
      asked: consentAsked(details),
      held,
      controlPlane: controlPlaneResource(services.config.publicUrl),
    });
    res.set('Cache-Control', 'no-store');
    sendBrandedPage(res, application, consentPage(input.here, view));
  }

  /**
   * The person's answer on the consent page. Deny: access_denied to the client's redirect_uri.
   * Allow: the grant (this provider session's for the client and organization, else a new one)
   * gains what was asked that the person holds there; what they do not hold is recorded as
   * refused, so it is neither granted nor asked for again. The organization and what is asked
   * are read again here, never from the form.
   */
  async function decideConsent(
    req: Request,
    res: Response,
    input: { details: Interaction; current: SessionWithUser; clientId: string; decision: string },
  ): Promise<void> {
    const { details, current, clientId } = input;
    const provider = services.oidc.provider;
    if (input.decision === 'deny') {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'the person did not allow the client' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const chosen = consentOrganization(
      current,
      details.params.organization,
      (details.result as { organization?: unknown } | undefined)?.organization,
    );
    if (input.decision !== 'allow' || !('organization' in chosen)) {
      expired(res);
      return;
    }
    const { organization } = chosen;
    if (!(await mayConnect(services.db, { organizationId: organization.id, clientId }))) {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: NOT_ALLOWED_BY_ORGANIZATION },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const held = await heldPermissions(services.db, organization);
    const asked = consentAsked(details);
    const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    const grant =
      existing &&
      existing.accountId === current.user.id &&
      existing.clientId === clientId &&
      organizationOfGrant(existing)?.id === organization.id
        ? existing
        : new provider.Grant({ accountId: current.user.id, clientId });
    if (asked.oidcScopes.length > 0) {
      grant.addOIDCScope(asked.oidcScopes.join(' '));
    }
    for (const [indicator, scopes] of Object.entries(asked.resourceScopes)) {
      const allowed = scopes.filter((s) => held.has(s));
      const refused = scopes.filter((s) => !held.has(s));
      if (allowed.length > 0) {
        grant.addResourceScope(indicator, allowed.join(' '));
      }
      if (refused.length > 0) {
        grant.rejectResourceScope(indicator, refused.join(' '));
      }
    }
    Object.assign(grant, { organization: { id: organization.id, slug: organization.slug } });
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  /**
   * The hosted interaction of an authorization request. Login: with a live svc session (signed in
   * after the request when it said prompt=login, recently enough for its max_age), straight on
   * (single sign-on); otherwise svc's sign-in page, branded with the application, whose engine
   * hand-off comes back here. Consent: there is no consent screen; this is where a person in
   * several organizations picks the one the application signs in for.
   */
  router.get(`${INTERACTION_PATH}/:uid`, async (req, res) => {
    const details = await detailsOf(req, res);
    if (!details) {
      expired(res);
      return;
    }
    const here = `${INTERACTION_PATH}/${details.uid}`;
    const client = await services.oidc.provider.Client.find(String(details.params.client_id));
    // Which application the person signs in to: the client of the request (modules/oidc-provider/clients.ts gives it
    // the application's name and logo).
    // A third-party client without a name is named by its client_id URL's host (a registered
    // client: its redirect_uri's host).
    const thirdPartyHost = client ? thirdPartyHostOf(client.clientId, details.params.redirect_uri) : undefined;
    const application: ApplicationBrand = {
      name: client?.clientName ?? thirdPartyHost ?? 'the application',
      logoUrl: client?.logoUri ?? null,
    };
    // A third-party client's name is whatever its metadata document says (the name of the
    // product's own app, say): the pages before its consent page name its host beside it.
    const brand: ApplicationBrand =
      thirdPartyHost && client?.clientName ? { ...application, name: `${client.clientName} (${thirdPartyHost})` } : application;
    // Both pages below are forms whose answer can end on the application: the sign-in hand-off
    // when the engine still has a session (engine, svc's callback, back here, on to the
    // redirect_uri), the organization choice always. The origin is that of the redirect_uri the
    // interaction stored (checked at the authorization endpoint) and still registered for the
    // client; nothing the browser sends to this page counts.
    const redirectUri = details.params.redirect_uri;
    if (client && typeof redirectUri === 'string' && client.redirectUriAllowed(redirectUri)) {
      allowFormRedirectTo(res, redirectUri);
    }
    const current = await sessionOf(services, req);
    const now = Math.floor(Date.now() / 1000);
    if (details.prompt.name === 'login') {
      const signIn = (reauthenticate = false) =>
        sendBrandedPage(
          res,
          brand,
          signInPage({
            intent: 'signin',
            application: brand,
            returnTo: here,
            socialProvider: services.config.engine.offers.handOffs.social ? services.config.engine.socialProvider : null,
            signUp: services.config.engine.offers.handOffs.signup,
            reauthenticate,
          }),
        );
      if (!current) {
        // `organization=<slug>`: that organization's people go straight to its SSO connection
        // (docs/enterprise.md "Who goes where"), which comes back here signed in.
        const named = details.params.organization;
        const sso = typeof named === 'string' ? await connectionForOrganizationSlug(services.db, named) : undefined;
        if (sso) {
          res.redirect(303, `/sso/${sso.id}/start?return_to=${encodeURIComponent(here)}`);
          return;
        }
        signIn();
        return;
      }
      const signedInAt = Math.floor(current.session.createdAt.getTime() / 1000);
      // prompt=login, or a sign-in older than max_age: the svc session the request found must be
      // replaced by a fresh engine sign-in. Which one that was is kept in the interaction.
      const replace = (details.result as { replaceSession?: unknown } | undefined)?.replaceSession;
      const maxAge = details.params.max_age === undefined ? undefined : Number(details.params.max_age);
      const tooOld = maxAge !== undefined && now - signedInAt > maxAge;
      if (current.session.id === replace || (tooOld && replace === undefined)) {
        signIn(true);
        return;
      }
      if (replace === undefined && details.prompt.reasons.includes('login_prompt')) {
        await services.oidc.provider.interactionResult(
          req,
          res,
          { replaceSession: current.session.id },
          { mergeWithLastSubmission: false },
        );
        signIn(true);
        return;
      }
      if (details.session?.accountId && details.session.accountId !== current.user.id) {
        // The browser's provider session is another person's (they signed out of svc, someone
        // else signed in): end it here rather than have oidc-provider ask to log out first.
        const previous = await services.oidc.provider.Session.findByUid(details.session.uid);
        await previous?.destroy();
        details.session = undefined;
        await details.save(Math.max(1, (details.exp ?? now + 60) - now));
      }
      await services.oidc.provider.interactionFinished(
        req,
        res,
        { login: { accountId: current.user.id, ts: signedInAt } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (details.prompt.name === 'consent' && current && current.user.id === details.session?.accountId) {
      if (client && isThirdPartyClient(client.clientId)) {
        await showConsent(req, res, { details, current, clientId: client.clientId, application, brand, here });
        return;
      }
      const scopes = String(details.params.scope ?? '').split(' ');
      const pick =
        scopes.includes('organization') && details.params.organization === undefined && selectableOrganizations(current).length > 1;
      if (pick) {
        sendBrandedPage(res, application, organizationPage(here, application, current.memberships));
        return;
      }
      // prompt=consent (how an application asks for offline_access): nothing to ask.
      await services.oidc.provider.interactionFinished(req, res, { consent: {} }, { mergeWithLastSubmission: true });
      return;
    }
    expired(res);
  });

  router.post(`${INTERACTION_PATH}/:uid`, express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    if (!fromOwnPage(req)) {
      sendHostedPage(res, 403, messagePage('Request refused', 'Pick the organization on svc itself.', '/'));
      return;
    }
    const details = await detailsOf(req, res);
    const current = await sessionOf(services, req);
    if (details?.prompt.name !== 'consent' || !current || current.user.id !== details.session?.accountId) {
      expired(res);
      return;
    }
    const clientId = String(details.params.client_id);
    if (isThirdPartyClient(clientId) && typeof req.body?.decision === 'string') {
      await decideConsent(req, res, { details, current, clientId, decision: req.body.decision });
      return;
    }
    const picked = typeof req.body?.organization === 'string' ? req.body.organization : '';
    if (!selectableOrganizations(current).some((o) => o.id === picked)) {
      sendHostedPage(
        res,
        400,
        messagePage('Pick one of your organizations', 'Go back and pick again.', `${INTERACTION_PATH}/${details.uid}`),
      );
      return;
    }
    if (isThirdPartyClient(clientId)) {
      // The organization is picked first; the consent page for it follows.
      await services.oidc.provider.interactionResult(req, res, { organization: picked }, { mergeWithLastSubmission: true });
      res.redirect(303, `${INTERACTION_PATH}/${details.uid}`);
      return;
    }
    await services.oidc.provider.interactionFinished(req, res, { consent: {}, organization: picked }, { mergeWithLastSubmission: true });
  });

  // Userinfo (modules/oidc-provider/userinfo.ts): the claims of the access token's scopes as they are now.
  // CORS as oidc-provider answers it at the token endpoint (clientBasedCORS): a preflight from any
  // origin (it carries no token); the answer itself is readable by an origin only when the
  // token's client allows it (its allowedOrigins), and the claims are never answered to another.
  router.all(OIDC_ROUTES.userinfo, async (req, res) => {
    const origin = req.headers.origin;
    if (origin) {
      res.vary('Origin');
    }
    if (req.method === 'OPTIONS' && origin && req.headers['access-control-request-method']) {
      res
        .status(204)
        .set({
          'Access-Control-Allow-Origin': origin,
          'Access-Control-Allow-Methods': 'GET,POST',
          'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? 'authorization',
          'Access-Control-Max-Age': '3600',
        })
        .end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      res.status(405).set('Allow', 'GET, POST').end();
      return;
    }
    if (origin) {
      res.set({ 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': 'WWW-Authenticate' });
    }
    res.set('Cache-Control', 'no-store');
    const header = req.headers.authorization ?? '';
    const token = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header)?.[1];
    if (!token) {
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'invalid_request', error_description: 'no access token' });
      return;
    }
    const answer = await userinfoOf(services, token);
    if ('refused' in answer) {
      res
        .status(401)
        .set('WWW-Authenticate', `Bearer error="invalid_token", error_description="${answer.refused}"`)
        .json({ error: 'invalid_token', error_description: answer.refused });
      return;
    }
    if (origin) {
      // The token verified (userinfoOf): its client_id is svc's own.
      const clientId = decodeJwt(token).client_id;
      const client = typeof clientId === 'string' ? await services.oidc.provider.Client.find(clientId) : undefined;
      if (!client || !corsAllowed(client.metadata(), origin)) {
        res.removeHeader('Access-Control-Allow-Origin');
        res.removeHeader('Access-Control-Expose-Headers');
        res
          .status(400)
          .json({ error: 'invalid_request', error_description: `origin ${origin} not allowed for this access token's client` });
        return;
      }
    }
    res.json(answer.claims);
  });

  router.use(trySignInRouter(services));

  // The logout confirmation is a form on svc's own page: a post from any other site is refused
  // before oidc-provider checks its xsrf secret (which such a post cannot know either).
  router.post(`${OIDC_ROUTES.end_session}/confirm`, (req, res, next) => {
    if (!fromOwnPage(req)) {
      sendHostedPage(res, 403, messagePage('Sign-out refused', 'Sign out from the page svc shows you.', '/'));
      return;
    }
    next();
  });

  // One owner per path: discovery, its RFC 8414 twin and the JWKS are svc's documents
  // (http/provider-documents.ts answers GET and HEAD) and userinfo is svc's route above, so the
  // library's own handlers of those paths are never reached; any other method is refused here.
  router.all([DISCOVERY_PATH, AUTHORIZATION_SERVER_METADATA_PATH, OIDC_ROUTES.jwks], (req, res) => {
    res.set('Allow', 'GET, HEAD');
    sendError(req, res, 'method_not_allowed', 'this document is read with GET');
  });

  // Dynamic client registration (docs/oidc.md "Dynamic client registration"): anonymous, so each
  // client address may register RATE_LIMIT_REGISTRATIONS_PER_MINUTE clients a minute (429
  // rate_limited with Retry-After, counted across every API process), and a request is at most
  // REGISTRATION_MAX_BYTES (a client's metadata is a few hundred bytes). Off: the path is unknown.
  router.post(OIDC_ROUTES.registration, async (req, res, next) => {
    if (!services.config.oidc.dynamicRegistration.enabled) {
      sendError(req, res, 'not_found', 'dynamic client registration is not offered by this installation');
      return;
    }
    const length = Number(req.headers['content-length'] ?? Number.NaN);
    if (!Number.isFinite(length) || length > REGISTRATION_MAX_BYTES) {
      res
        .status(400)
        .set('Cache-Control', 'no-store')
        .json({
          error: 'invalid_client_metadata',
          error_description: `a registration request is a JSON object of at most ${REGISTRATION_MAX_BYTES} bytes, with its Content-Length`,
        });
      return;
    }
    const perMinute = services.config.rateLimit.registrationsPerMinute;
    try {
      await spendBudget(services, res, {
        key: `register:${services.clientIp(req)}`,
        perMinute,
        refusal: `at most ${perMinute} client registrations per address per minute`,
      });
    } catch (error) {
      const refused = asAppError(error);
      if (!refused) {
        next(error);
        return;
      }
      sendAppError(req, res, refused, services.config);
      return;
    }
    next();
  });

  router.use((req, res, next) => {
    if (req.path.startsWith(`${OIDC_PREFIX}/`)) {
      services.oidc.handle(req, res);
      return;
    }
    next();
  });
  return router;
}
