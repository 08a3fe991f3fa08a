import { ZSsoConnectionId } from '@svc/contracts/sso';
import { findSsoConnectionById, rememberAssertion, type SsoConnectionRow, useSsoRequest } from '@svc/db/queries/sso';
import express, { type Request, type Response, Router } from 'express';
import type { AppServices } from '../context.ts';
import { requestMetaOf } from '../modules/access/audit.ts';
import { cookieNames, setCookie } from '../modules/auth/cookies.ts';
import { OidcError, type RelyingParty } from '../modules/auth/oidc-client.ts';
import { DEFAULT_RETURN_TO, MAX_RETURN_TO, sanitizeReturnTo } from '../modules/auth/return-to.ts';
import { createSession } from '../modules/session-store/service.ts';
import { escapeHtml, hostedPage } from '../modules/shared/hosted-page.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { beginSsoSignIn, requestOfRelay } from '../modules/sso/flow.ts';
import { classifyOidcError, oidcProfile, relyingPartyOf } from '../modules/sso/oidc.ts';
import { SAML_RESPONSE_MAX_CHARS, SsoError, spMetadata, validateSamlResponse } from '../modules/sso/saml.ts';
import { type SsoProfile, samlProfile, signInWithSso } from '../modules/sso/sign-in.ts';
import { ssoDeps } from '../trpc/routers/sso.ts';

function one(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_RETURN_TO ? value : undefined;
}

/** The page of a refused SSO sign-in: the stable code, never what the IdP sent. */
export function refuse(res: Response, error: SsoError, status = 400): void {
  res
    .status(status)
    .type('html')
    .send(
      hostedPage(
        'Sign-in refused',
        `<h1>Single sign-on could not be completed</h1><p>${escapeHtml(error.message)}.</p><p>Error code: <code data-testid="sso-error">${escapeHtml(error.code)}</code></p><a class="button" href="/signin">Back to sign-in</a>`,
      ),
    );
}

/** What a console test sign-in shows: what the IdP sent, mapped; nobody is signed in or added. */
function testResultPage(connection: SsoConnectionRow, profile: SsoProfile, attributes: Record<string, string[]>): string {
  const rows = Object.entries(attributes)
    .map(([name, values]) => `<tr><td>${escapeHtml(name)}</td><td>${escapeHtml(values.join(', '))}</td></tr>`)
    .join('');
  return hostedPage(
    'SSO connection test',
    `<h1>The connection works</h1><p>${escapeHtml(connection.name)} signed this person in. Nobody was signed in to svc or added.</p>
<dl data-testid="sso-test-profile"><dt>Subject</dt><dd>${escapeHtml(profile.subject)}</dd><dt>Email</dt><dd data-testid="sso-test-email">${escapeHtml(profile.email)}</dd><dt>Name</dt><dd>${escapeHtml(profile.name)}</dd><dt>Groups</dt><dd>${escapeHtml(profile.groups.join(', '))}</dd></dl>
<table><thead><tr><th>Attribute</th><th>Values</th></tr></thead><tbody>${rows}</tbody></table>`,
    { wide: true },
  );
}

/**
 * svc as the SAML service provider and OIDC relying party of organizations' identity providers
 * (docs/enterprise.md "SSO connections"). Public routes: each names its connection; the ACS is a
 * cross-site form POST from the IdP, so it sits before the CSRF guard and trusts only the
 * signed response.
 */
export function ssoRouter(services: AppServices): Router {
  const { config, db, logger } = services;
  const names = cookieNames(config.publicUrl);
  const r = Router();

  async function connectionOf(raw: unknown, protocol?: 'saml' | 'oidc'): Promise<SsoConnectionRow | undefined> {
    const id = ZSsoConnectionId.safeParse(raw);
    if (!id.success) {
      return undefined;
    }
    const connection = await findSsoConnectionById(db, id.data);
    return connection?.enabled && (!protocol || connection.protocol === protocol) ? connection : undefined;
  }

  const notFound = new SsoError('sso_connection_not_found', 'there is no such SSO connection, or it is disabled');

  r.get('/sso/saml/:id/metadata', async (req, res) => {
    const connection = await connectionOf(req.params.id, 'saml');
    if (!connection) {
      refuse(res, notFound, 404);
      return;
    }
    res.type('application/samlmetadata+xml').send(spMetadata(config.publicUrl, connection));
  });

  r.get('/sso/:id/start', async (req, res) => {
    const connection = await connectionOf(req.params.id);
    if (!connection) {
      refuse(res, notFound, 404);
      return;
    }
    const returnTo = sanitizeReturnTo(one(req.query.return_to), { publicUrl: config.publicUrl, fallback: DEFAULT_RETURN_TO });
    try {
      const started = await beginSsoSignIn(ssoDeps(services), connection, { returnTo, applicationId: null, test: false });
      res.redirect(303, started.url);
    } catch (error) {
      if (error instanceof SsoError) {
        logger.warn({ code: error.code, connection: connection.id }, 'sso sign-in could not start');
        refuse(res, error, 502);
        return;
      }
      throw error;
    }
  });

  async function finish(req: Request, res: Response, connection: SsoConnectionRow, profile: SsoProfile, returnTo: string) {
    const { user, organizationId } = await signInWithSso(db, connection, profile, requestMetaOf(req, services.clientIp, requestIdOf(req)));
    const { token } = await createSession(db, config.session, {
      userId: user.id,
      activeTenantId: organizationId,
      // An IdP of one organization never makes a platform admin (docs/enterprise.md).
      isPlatformAdmin: false,
      ipAddress: services.clientIp(req),
      userAgent: one(req.headers['user-agent']),
    });
    setCookie(res, names, names.session, token, config.session.absoluteMs / 1000);
    res.redirect(303, sanitizeReturnTo(returnTo, { publicUrl: config.publicUrl, fallback: DEFAULT_RETURN_TO }));
  }

  r.post(
    '/sso/saml/:id/acs',
    express.urlencoded({ extended: false, limit: SAML_RESPONSE_MAX_CHARS + 8192, parameterLimit: 10 }),
    async (req, res) => {
      try {
        const connection = await connectionOf(req.params.id, 'saml');
        if (!connection) {
          throw notFound;
        }
        const samlResponse = typeof req.body?.SAMLResponse === 'string' ? req.body.SAMLResponse : '';
        if (samlResponse === '') {
          throw new SsoError('sso_response_malformed', 'the form carries no SAMLResponse');
        }
        const request = await requestOfRelay(db, connection.id, one(req.body?.RelayState));
        if (!request && !connection.samlAllowIdpInitiated) {
          throw new SsoError('sso_idp_initiated_disabled', 'this connection accepts only sign-ins started at svc');
        }
        if (request && request.expiresAt.getTime() < Date.now()) {
          throw new SsoError('sso_request_expired', 'the sign-in took too long; start again');
        }
        const facts = await validateSamlResponse(config.publicUrl, connection, {
          samlResponse,
          expected: request ? { id: request.id, createdAt: new Date(request.expiresAt.getTime() - 10 * 60_000) } : null,
        });
        if (!request && facts.inResponseTo) {
          throw new SsoError('sso_in_response_to_mismatch', 'the response answers a sign-in request svc does not know');
        }
        if (
          !(await rememberAssertion(db, { connectionId: connection.id, assertionId: facts.assertionId, expiresAt: facts.notOnOrAfter }))
        ) {
          throw new SsoError('sso_assertion_replayed', 'this assertion was used already');
        }
        if (request && !(await useSsoRequest(db, { id: request.id, at: new Date() }))) {
          throw new SsoError('sso_in_response_to_mismatch', 'the sign-in request was answered already');
        }
        const profile = samlProfile(connection, facts);
        if (request?.test) {
          res.type('html').send(testResultPage(connection, profile, facts.attributes));
          return;
        }
        await finish(req, res, connection, profile, request?.returnTo ?? DEFAULT_RETURN_TO);
      } catch (error) {
        if (error instanceof SsoError) {
          logger.info({ code: error.code, connection: req.params.id }, 'sso sign-in refused');
          refuse(res, error, error.code === 'sso_connection_not_found' ? 404 : 400);
          return;
        }
        throw error;
      }
    },
  );

  r.get('/sso/oidc/:id/callback', async (req, res) => {
    try {
      const connection = await connectionOf(req.params.id, 'oidc');
      if (!connection) {
        throw notFound;
      }
      const request = await requestOfRelay(db, connection.id, one(req.query.state));
      if (!request?.codeVerifier || !request.nonce) {
        throw new SsoError('sso_in_response_to_mismatch', 'the answer names no sign-in svc started');
      }
      if (request.expiresAt.getTime() < Date.now()) {
        throw new SsoError('sso_request_expired', 'the sign-in took too long; start again');
      }
      // Used before the code is redeemed: a replayed callback finds it used.
      if (!(await useSsoRequest(db, { id: request.id, at: new Date() }))) {
        throw new SsoError('sso_assertion_replayed', 'this sign-in was completed already');
      }
      const code = one(req.query.code);
      if (!code) {
        throw new SsoError('sso_idp_error', 'the identity provider refused the sign-in');
      }
      let identity: Awaited<ReturnType<RelyingParty['completeAuthorization']>>['identity'];
      try {
        ({ identity } = await relyingPartyOf(ssoDeps(services), connection).completeAuthorization({
          code,
          codeVerifier: request.codeVerifier,
          nonce: request.nonce,
        }));
      } catch (error) {
        if (error instanceof OidcError) {
          throw classifyOidcError(error);
        }
        throw error;
      }
      const profile = oidcProfile(identity);
      if (request.test) {
        res.type('html').send(
          testResultPage(connection, profile, {
            sub: [identity.subject],
            email: [identity.email],
            email_verified: [String(identity.emailVerified)],
            name: [identity.name],
            groups: identity.groups,
          }),
        );
        return;
      }
      await finish(req, res, connection, profile, request.returnTo);
    } catch (error) {
      if (error instanceof SsoError) {
        logger.info({ code: error.code, connection: req.params.id }, 'sso sign-in refused');
        refuse(res, error, error.code === 'sso_connection_not_found' ? 404 : 400);
        return;
      }
      throw error;
    }
  });

  return r;
}
