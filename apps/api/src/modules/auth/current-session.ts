import type { IncomingMessage } from 'node:http';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import type { Config } from '../../env.ts';
import type { SessionLookup } from '../session-store/service.ts';
import { cookieNames, readCookie } from './cookies.ts';

/** The session behind a request's cookie, or null. One (batched) indexed read, no write (see sessions). */
export function sessionOf(
  services: { config: Pick<Config, 'publicUrl'>; sessions: SessionLookup },
  req: IncomingMessage,
): Promise<SessionWithUser | null> {
  const token = readCookie(req, cookieNames(services.config.publicUrl).session);
  return token ? services.sessions.validate(token) : Promise.resolve(null);
}

/** What every cookie-authenticated route answers without a live session (401 unauthenticated). */
export const NO_SESSION_MESSAGE = 'sign in first: no valid session';
