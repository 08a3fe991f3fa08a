import type { SessionWithUser } from '@svc/db/queries/sessions';
import type { Request, Response } from 'express';
import type { AppServices } from '../../context.ts';
import { sessionOf } from '../../modules/auth/current-session.ts';
import { DEFAULT_RETURN_TO, MAX_RETURN_TO, sanitizeReturnTo } from '../../modules/auth/return-to.ts';

/** Hosted sign-in, coming back to `returnTo` (sanitized here and again by /auth/login). */
export function signInLocation(returnTo: string, publicUrl: string): string {
  const safe = sanitizeReturnTo(returnTo, { publicUrl, fallback: DEFAULT_RETURN_TO });
  return `/signin?return_to=${encodeURIComponent(safe)}`;
}

/**
 * The session behind a protected hosted page (README.md "Sign-in": /auth/console, /user). Anonymous
 * requests (no cookie, or an unknown, revoked or expired session) are answered here with a 303 to
 * hosted sign-in that returns to the page and query asked for, and get null.
 */
export async function pageSessionOrSignIn(services: AppServices, req: Request, res: Response): Promise<SessionWithUser | null> {
  const current = await sessionOf(services, req);
  if (current) {
    return current;
  }
  const asked = req.originalUrl.length <= MAX_RETURN_TO ? req.originalUrl : (req.originalUrl.split('?')[0] ?? '/');
  // Never cached: the same URL answers differently once the browser has a session.
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(303, signInLocation(asked, services.config.publicUrl));
  return null;
}
