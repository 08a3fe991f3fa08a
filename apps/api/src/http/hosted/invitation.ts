import { INVITATION_TOKEN_PATTERN } from '@svc/contracts/invitations';
import { type Request, type Response, Router } from 'express';
import type { AppServices } from '../../context.ts';
import { requestMetaOf } from '../../modules/access/audit.ts';
import type { UserPrincipal } from '../../modules/access/principal.ts';
import { cookieNames, readCookie, setCookie } from '../../modules/auth/cookies.ts';
import { sessionOf } from '../../modules/auth/current-session.ts';
import { acceptInvitation, previewInvitation } from '../../modules/invitations/service.ts';
import { messagePage } from '../../modules/shared/hosted-page.ts';
import { requestIdOf } from '../../modules/shared/request-id.ts';
import { invitationAcceptPage, invitationErrorPage, invitationSignInPage } from './invitation-pages.ts';
import { ownOriginCheck, seeOtherNoStore, sendHostedPage, sendRefusalPage } from './page.ts';
import { pageSessionOrSignIn } from './require-session.ts';

const PATH = '/invitations/accept';
/** Long enough to sign up at the engine; the cookie holds the token until the invitee is back. */
const PENDING_INVITATION_SECONDS = 60 * 60;

/**
 * The hosted accept page (the invite link's target). GET with `?token=` keeps the token in an
 * HttpOnly cookie and redirects to the bare path, so the token leaves the address bar and history
 * and never travels through sign-in as part of a return_to (svc stores invitation tokens only as
 * hashes). The page then needs a session: anonymous visitors are offered sign-in or sign-up,
 * coming back here. Accepting is a same-origin form POST (the CSP allows no inline script),
 * refused from any other origin, like /auth/logout.
 */
export function invitationPagesRouter(services: AppServices): Router {
  const { config, db } = services;
  const names = cookieNames(config.publicUrl);
  const cookieName = `${names.secure ? '__Host-' : ''}svc_invitation`;
  const fromOwnPage = ownOriginCheck(config.publicUrl);
  const r = Router();

  const sendPage = (res: Response, status: number, html: string) => sendHostedPage(res, status, html, { noStore: true });
  const sendRefusal = (res: Response, error: unknown) =>
    sendRefusalPage(res, error, (code, message) =>
      invitationErrorPage(code, message, { verifyEmail: services.config.engine.offers.handOffs.email_verification }),
    );

  function pendingToken(req: Request): string | undefined {
    const token = readCookie(req, cookieName);
    return token && INVITATION_TOKEN_PATTERN.test(token) ? token : undefined;
  }

  r.get(PATH, async (req, res) => {
    const fromLink = req.query.token;
    if (fromLink !== undefined) {
      if (typeof fromLink !== 'string' || !INVITATION_TOKEN_PATTERN.test(fromLink)) {
        sendPage(res, 400, invitationErrorPage('validation_failed', 'This invite link is malformed; copy the whole link.'));
        return;
      }
      setCookie(res, names, cookieName, fromLink, PENDING_INVITATION_SECONDS);
      seeOtherNoStore(res, PATH);
      return;
    }
    const token = pendingToken(req);
    if (!token) {
      sendPage(res, 400, messagePage('No invitation here', 'Open the invite link you were sent.', '/'));
      return;
    }
    const current = await sessionOf(services, req);
    if (!current) {
      sendPage(res, 200, invitationSignInPage({ signUp: services.config.engine.offers.handOffs.signup }));
      return;
    }
    try {
      const preview = await previewInvitation(db, { kind: 'user', ...current }, token);
      sendPage(res, 200, invitationAcceptPage(preview, current.user.email));
    } catch (error) {
      sendRefusal(res, error);
    }
  });

  r.post(PATH, async (req, res) => {
    // A form POST from any site would carry our cookies: only our own page may accept.
    if (!fromOwnPage(req)) {
      sendPage(res, 403, invitationErrorPage('csrf_rejected', 'Accept the invitation from its svc page.'));
      return;
    }
    const current = await pageSessionOrSignIn(services, req, res);
    if (!current) {
      return;
    }
    const token = pendingToken(req);
    if (!token) {
      sendPage(res, 400, messagePage('No invitation here', 'Open the invite link you were sent.', '/'));
      return;
    }
    const principal: UserPrincipal = { kind: 'user', ...current };
    try {
      await acceptInvitation(db, principal, requestMetaOf(req, services.clientIp, requestIdOf(req)), { token }, { openWorkspace: true });
    } catch (error) {
      sendRefusal(res, error);
      return;
    }
    setCookie(res, names, cookieName, '', 0);
    res.redirect(303, '/auth/console/');
  });

  return r;
}
