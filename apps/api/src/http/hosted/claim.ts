import { isIdOf } from '@svc/contracts/ids';
import express, { type Request, type Response, Router } from 'express';
import type { AppServices } from '../../context.ts';
import { requestMetaOf } from '../../modules/access/audit.ts';
import {
  CLAIM_PATH,
  CLAIM_TOKEN_PATTERN,
  type ClaimRef,
  checkKeylessClaim,
  claimKeylessApplication,
  claimWorkspacesOf,
} from '../../modules/applications/claim.ts';
import { cookieNames, readCookie, setCookie } from '../../modules/auth/cookies.ts';
import { messagePage } from '../../modules/shared/hosted-page.ts';
import { requestIdOf } from '../../modules/shared/request-id.ts';
import { refusedInput } from '../input-guard.ts';
import { claimErrorPage, claimedPage, claimPage } from './claim-pages.ts';
import { ownOriginCheck, seeOtherNoStore, sendHostedPage, sendRefusalPage } from './page.ts';
import { pageSessionOrSignIn } from './require-session.ts';

/** Long enough to sign up at the engine; the cookie holds the claim link until the person is back. */
const PENDING_CLAIM_SECONDS = 60 * 60;

/**
 * The hosted claim page of the keyless development application (the claim link's target). As the
 * invite link: GET with `?application=&token=` keeps both in an HttpOnly cookie and redirects to
 * the bare path, so the token leaves the address bar and history and never travels through
 * sign-in in a return_to. A link that cannot be claimed is refused before anyone signs in;
 * otherwise the page needs a session (hosted sign-in, back to the bare path). Claiming is a
 * same-origin form POST (the CSP allows no inline script), refused from any other origin.
 */
export function keylessClaimRouter(services: AppServices): Router {
  const { config, db, secretBox, applications } = services;
  const deps = { db, secretBox, keylessEnabled: config.keylessEnabled, applications };
  const names = cookieNames(config.publicUrl);
  const cookieName = `${names.secure ? '__Host-' : ''}svc_keyless_claim`;
  const fromOwnPage = ownOriginCheck(config.publicUrl);
  const r = Router();

  const sendPage = (res: Response, status: number, html: string) => sendHostedPage(res, status, html, { noStore: true });
  const sendRefusal = (res: Response, error: unknown) => sendRefusalPage(res, error, claimErrorPage);

  function pendingClaim(req: Request): ClaimRef | undefined {
    const value = readCookie(req, cookieName) ?? '';
    const dot = value.indexOf('.');
    const ref = { applicationId: value.slice(0, dot), token: value.slice(dot + 1) };
    return dot > 0 && isIdOf('application', ref.applicationId) && CLAIM_TOKEN_PATTERN.test(ref.token) ? ref : undefined;
  }

  const noClaim = (res: Response) => sendPage(res, 400, messagePage('Nothing to claim here', 'Open the claim link again.', '/'));

  r.get(CLAIM_PATH, async (req, res) => {
    const { application, token } = req.query;
    if (application !== undefined || token !== undefined) {
      if (
        typeof application !== 'string' ||
        typeof token !== 'string' ||
        !isIdOf('application', application) ||
        !CLAIM_TOKEN_PATTERN.test(token)
      ) {
        sendPage(res, 400, claimErrorPage('validation_failed', 'This claim link is malformed; copy the whole link.'));
        return;
      }
      setCookie(res, names, cookieName, `${application}.${token}`, PENDING_CLAIM_SECONDS);
      seeOtherNoStore(res, CLAIM_PATH);
      return;
    }
    const ref = pendingClaim(req);
    if (!ref) {
      noClaim(res);
      return;
    }
    let claimable: Awaited<ReturnType<typeof checkKeylessClaim>>;
    try {
      claimable = await checkKeylessClaim(deps, ref);
    } catch (error) {
      sendRefusal(res, error);
      return;
    }
    const current = await pageSessionOrSignIn(services, req, res);
    if (!current) {
      return;
    }
    sendPage(res, 200, claimPage(claimable, claimWorkspacesOf({ kind: 'user', ...current }), current.user.email));
  });

  r.post(CLAIM_PATH, express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 }), async (req, res) => {
    // A form POST from any site would carry our cookies: only our own page may claim.
    if (!fromOwnPage(req)) {
      sendPage(res, 403, claimErrorPage('csrf_rejected', 'Claim the application from its svc page.'));
      return;
    }
    const current = await pageSessionOrSignIn(services, req, res);
    if (!current) {
      return;
    }
    const ref = pendingClaim(req);
    if (!ref) {
      noClaim(res);
      return;
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    const organizationId = body.organization;
    const name = body.name;
    if (typeof organizationId !== 'string' || (name !== undefined && typeof name !== 'string') || refusedInput({ organizationId, name })) {
      sendPage(res, 400, claimErrorPage('validation_failed', 'Choose one workspace and a name without control characters.'));
      return;
    }
    try {
      const claimed = await claimKeylessApplication(
        deps,
        { kind: 'user', ...current },
        requestMetaOf(req, services.clientIp, requestIdOf(req)),
        { ...ref, organizationId, name, clientType: body.client_type },
        { openWorkspace: true },
      );
      setCookie(res, names, cookieName, '', 0);
      sendPage(res, 200, claimedPage(claimed));
    } catch (error) {
      sendRefusal(res, error);
    }
  });

  return r;
}
