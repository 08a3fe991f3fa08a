import { createHash, randomBytes } from 'node:crypto';
import { isIdOf } from '@svc/contracts/ids';
import { SecretBoxError } from '@svc/db/secret-box';
import { type Response, Router } from 'express';
import { createLocalJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type { AppServices } from '../../context.ts';
import { consoleApplicationPath } from '../../modules/applications/console-link.ts';
import { getApplication } from '../../modules/applications/service.ts';
import { cookieNames, readCookie, setCookie } from '../../modules/auth/cookies.ts';
import { sessionOf } from '../../modules/auth/current-session.ts';
import { OIDC_ROUTES, TRY_CALLBACK_PATH, TRY_SIGN_IN_PATH } from '../../modules/oidc-provider/paths.ts';
import { userinfoOf } from '../../modules/oidc-provider/userinfo.ts';
import { escapeHtml, hostedPage, messagePage } from '../../modules/shared/hosted-page.ts';
import { asAppError } from '../errors.ts';
import { sendHostedPage } from '../hosted/page.ts';

/** How long a try sign-in may take between the console's button and the callback. */
export const TRY_SIGN_IN_TTL_SECONDS = 10 * 60;

/** What the try sign-in asks for: everything svc's provider has to show. */
export const TRY_SIGN_IN_SCOPE = 'openid email profile organization';

/** The secret-box context of the try sign-in cookie (a value sealed for anything else does not open). */
const COOKIE_CONTEXT = 'svc try sign-in state';

/** What the start route keeps in the (sealed, HttpOnly) cookie for the callback. */
type TryState = {
  applicationId: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  /** The svc session that started the try: only it may see the result. */
  sessionId: string;
  expiresAt: number;
};

/** Where the console shows an application. */
function consoleUrlOf(applicationId?: string): string {
  return applicationId ? consoleApplicationPath(applicationId) : '/auth/console/applications';
}

function random(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The console's "Try sign-in": a real authorization of one application against svc's OpenID
 * Provider, run by svc itself as the relying party, ending on a page of svc that shows the ID
 * token, the access token and the userinfo answer.
 *
 * - `GET /oidc/try/<application id>` needs a svc session of a person who may read the application
 *   (applications.read in its organization, through the applications service's check: 404 for
 *   an application the person cannot see, 403 without the permission). It makes a state, a nonce
 *   and a PKCE verifier, keeps them in a short-lived cookie sealed with SVC_ENCRYPTION_KEY
 *   (AES-GCM: nobody can read or forge it) and bound to that svc session, and redirects to the
 *   authorization endpoint with redirect_uri `${PUBLIC_URL}/oidc/try/callback`.
 * - `GET /oidc/try/callback` redeems a code only for the browser that started the try: the cookie
 *   must open, be unexpired, carry the request's state and belong to the current svc session;
 *   otherwise the code is discarded unredeemed. The cookie is cleared in every case (one use).
 *   The code is redeemed at svc's own token endpoint (OpenIdProvider.tryCodes, modules/oidc-provider/try-code.ts), the ID token
 *   and access token are verified with svc's JWKS (and the ID token's nonce), and userinfo is
 *   asked the same way the userinfo endpoint answers.
 */
export function trySignInRouter(services: AppServices): Router {
  const router = Router();
  const names = cookieNames(services.config.publicUrl);

  /** Every answer here: not cached, no Referer (the callback's URL carried a code). */
  function noStore(res: Response): void {
    res.set('Cache-Control', 'no-store');
    res.set('Referrer-Policy', 'no-referrer');
  }

  function refuse(res: Response, status: number, title: string, detail: string, applicationId?: string): void {
    sendHostedPage(res, status, messagePage(title, detail, consoleUrlOf(applicationId)));
  }

  // Before `/:applicationId`, which would take `callback` as an id.
  router.get(TRY_CALLBACK_PATH, async (req, res) => {
    noStore(res);
    const sealed = readCookie(req, names.trySignIn);
    setCookie(res, names, names.trySignIn, '', 0);
    let started: TryState | undefined;
    try {
      started = sealed ? (JSON.parse(services.secretBox.open(sealed, COOKIE_CONTEXT)) as TryState) : undefined;
    } catch (error) {
      if (!(error instanceof SecretBoxError || error instanceof SyntaxError)) {
        throw error;
      }
    }
    const state = typeof req.query.state === 'string' ? req.query.state : undefined;
    const current = await sessionOf(services, req);
    if (
      !started ||
      started.expiresAt <= Date.now() ||
      state === undefined ||
      started.state !== state ||
      !current ||
      current.session.id !== started.sessionId
    ) {
      // The code (if any) is not redeemed: it expires unused within a minute.
      refuse(
        res,
        400,
        'This try sign-in was not started here',
        'No token was issued: this browser did not start this try sign-in, or it expired. Start it again from the console.',
        started?.applicationId,
      );
      return;
    }
    const applicationId = started.applicationId;
    const application = await readableApplication(services, { kind: 'user', ...current }, applicationId);
    if ('refused' in application) {
      refuse(res, application.refused.status, application.refused.title, application.refused.detail);
      return;
    }
    const { name, clientType } = application.found;
    if (typeof req.query.error === 'string') {
      const description = typeof req.query.error_description === 'string' ? req.query.error_description : '';
      sendHostedPage(
        res,
        400,
        hostedPage(
          'Try sign-in: refused',
          `<h1 data-testid="try-heading">${escapeHtml(name)}: the sign-in was refused</h1>
<p>The authorization endpoint answered <code data-testid="try-error">${escapeHtml(req.query.error)}</code>${description ? `: ${escapeHtml(description)}` : ''}.</p>
<p class="muted">An application with "who may sign in: members of this organization only" refuses everyone else this way.</p>
<a class="button" href="${escapeHtml(consoleUrlOf(applicationId))}" data-testid="try-back">Back to the console</a>`,
        ),
      );
      return;
    }
    const code = typeof req.query.code === 'string' ? req.query.code : '';
    if (!code) {
      refuse(res, 400, 'No authorization code', 'The authorization endpoint sent neither a code nor an error.', applicationId);
      return;
    }
    const redeemed = await services.oidc.tryCodes.redeem({
      clientId: applicationId,
      confidential: clientType === 'confidential',
      code,
      codeVerifier: started.codeVerifier,
    });
    const idToken = redeemed.body.id_token;
    const accessToken = redeemed.body.access_token;
    if (redeemed.status !== 200 || typeof idToken !== 'string' || typeof accessToken !== 'string') {
      const error = typeof redeemed.body.error === 'string' ? redeemed.body.error : `HTTP ${redeemed.status}`;
      const detail = typeof redeemed.body.error_description === 'string' ? `: ${redeemed.body.error_description}` : '';
      refuse(res, 502, 'The token endpoint refused the code', `${error}${detail}`, applicationId);
      return;
    }
    const jwks = createLocalJWKSet(JSON.parse(services.oidc.jwks.json));
    const issuer = services.config.publicUrl;
    let id: { payload: JWTPayload };
    let at: { payload: JWTPayload };
    try {
      id = await jwtVerify(idToken, jwks, { issuer, audience: applicationId });
      at = await jwtVerify(accessToken, jwks, { issuer, audience: applicationId, typ: 'at+jwt' });
    } catch (error) {
      refuse(res, 502, 'The tokens do not verify', error instanceof Error ? error.message : String(error), applicationId);
      return;
    }
    if (id.payload.nonce !== started.nonce) {
      refuse(res, 502, 'The ID token does not answer this request', 'Its nonce is not the one sent.', applicationId);
      return;
    }
    const userinfo = await userinfoOf(services, accessToken);
    sendHostedPage(
      res,
      200,
      resultPage({
        name,
        applicationId,
        clientType,
        scope: typeof redeemed.body.scope === 'string' ? redeemed.body.scope : '',
        idToken: { header: decodeProtectedHeader(idToken), claims: id.payload },
        accessToken: { header: decodeProtectedHeader(accessToken), claims: at.payload },
        userinfo,
      }),
    );
  });

  router.get(`${TRY_SIGN_IN_PATH}/:applicationId`, async (req, res) => {
    noStore(res);
    const applicationId = req.params.applicationId;
    const current = await sessionOf(services, req);
    if (!current) {
      res.redirect(303, `/signin?return_to=${encodeURIComponent(`${TRY_SIGN_IN_PATH}/${applicationId}`)}`);
      return;
    }
    const application = await readableApplication(services, { kind: 'user', ...current }, applicationId);
    if ('refused' in application) {
      refuse(res, application.refused.status, application.refused.title, application.refused.detail);
      return;
    }
    if (application.found.status !== 'active') {
      refuse(res, 409, 'This application is disabled', 'A disabled application is no client: enable it to try signing in.', applicationId);
      return;
    }
    const started: TryState = {
      applicationId,
      state: random(),
      nonce: random(),
      codeVerifier: random(),
      sessionId: current.session.id,
      expiresAt: Date.now() + TRY_SIGN_IN_TTL_SECONDS * 1000,
    };
    // The sealed value is base64url parts joined by dots: cookie-safe as it is.
    setCookie(res, names, names.trySignIn, services.secretBox.seal(JSON.stringify(started), COOKIE_CONTEXT), TRY_SIGN_IN_TTL_SECONDS);
    const url = new URL(OIDC_ROUTES.authorization, services.config.publicUrl);
    url.search = new URLSearchParams({
      client_id: applicationId,
      response_type: 'code',
      scope: TRY_SIGN_IN_SCOPE,
      redirect_uri: services.oidc.tryCallbackUrl,
      state: started.state,
      nonce: started.nonce,
      code_challenge: createHash('sha256').update(started.codeVerifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    res.redirect(303, url.href);
  });

  return router;
}

type Refusal = { status: number; title: string; detail: string };

/** The application, when the person may read it (the applications service decides), else what to answer. */
async function readableApplication(
  services: AppServices,
  principal: Parameters<typeof getApplication>[1],
  applicationId: string,
): Promise<{ found: Awaited<ReturnType<typeof getApplication>> } | { refused: Refusal }> {
  const notFound = { refused: { status: 404, title: 'Application not found', detail: 'No application you can see has this id.' } };
  if (!isIdOf('application', applicationId)) {
    return notFound;
  }
  try {
    return { found: await getApplication(services.db, principal, { id: applicationId }) };
  } catch (error) {
    const appError = asAppError(error);
    if (appError?.code === 'not_found') {
      return notFound;
    }
    if (appError?.code === 'forbidden') {
      return { refused: { status: 403, title: 'Not allowed', detail: `You may not read this application: ${appError.message}.` } };
    }
    throw error;
  }
}

type Decoded = { header: Record<string, unknown>; claims: JWTPayload };

const TIME_CLAIMS = new Set(['exp', 'iat', 'nbf', 'auth_time']);

function claimsTable(claims: Record<string, unknown>, testId: string): string {
  const rows = Object.entries(claims)
    .map(([claim, value]) => {
      const shown = typeof value === 'string' ? value : JSON.stringify(value);
      const when =
        TIME_CLAIMS.has(claim) && typeof value === 'number' ? ` <span class="muted">${new Date(value * 1000).toISOString()}</span>` : '';
      return `<tr data-claim="${escapeHtml(claim)}"><th>${escapeHtml(claim)}</th><td><code>${escapeHtml(shown)}</code>${when}</td></tr>`;
    })
    .join('');
  return `<table data-testid="${escapeHtml(testId)}">${rows}</table>`;
}

function tokenSection(title: string, testId: string, token: Decoded, note: string): string {
  return `<section><h2>${escapeHtml(title)}</h2><p class="muted">${escapeHtml(note)}</p>
<h3>Header</h3><pre data-testid="${escapeHtml(testId)}-header">${escapeHtml(JSON.stringify(token.header, null, 2))}</pre>
<h3>Claims</h3>${claimsTable(token.claims, `${testId}-claims`)}</section>`;
}

function resultPage(result: {
  name: string;
  applicationId: string;
  clientType: string;
  scope: string;
  idToken: Decoded;
  accessToken: Decoded;
  userinfo: Awaited<ReturnType<typeof userinfoOf>>;
}): string {
  const who = typeof result.idToken.claims.email === 'string' ? result.idToken.claims.email : String(result.idToken.claims.sub);
  const userinfo =
    'claims' in result.userinfo
      ? claimsTable(result.userinfo.claims, 'try-userinfo-claims')
      : `<p data-testid="try-userinfo-refused">401 invalid_token: ${escapeHtml(result.userinfo.refused)}</p>`;
  return hostedPage(
    `Try sign-in: ${result.name}`,
    `<h1 data-testid="try-heading">Signed in to ${escapeHtml(result.name)}</h1>
<p data-testid="try-summary">As <strong>${escapeHtml(who)}</strong>, through svc's authorization and token endpoints with client id <code>${escapeHtml(result.applicationId)}</code> (${escapeHtml(result.clientType)} client). Granted scope: <code>${escapeHtml(result.scope)}</code>.</p>
${tokenSection('ID token', 'try-id-token', result.idToken, "Signature verified with svc's JWKS; issuer, audience, expiry and nonce checked.")}
${tokenSection('Access token', 'try-access-token', result.accessToken, "An RFC 9068 JWT for this application (aud = client id); signature verified with svc's JWKS.")}
<section><h2>Userinfo</h2><p class="muted">What GET /oidc/me answers for this access token.</p>${userinfo}</section>
<p class="muted">The tokens themselves are not shown and were not stored; they expire on their own.</p>
<a class="button" href="${escapeHtml(consoleUrlOf(result.applicationId))}" data-testid="try-back">Back to the console</a>`,
    { wide: true },
  );
}
