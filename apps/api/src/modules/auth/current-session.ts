import type { IncomingMessage } from 'node:http';
import type { SessionWithUser } from '@svc/db/queries/sessions';
import type { AppServices } from '../../context.ts';
import { validateSessionToken } from '../sessions/service.ts';
import { cookieNames, readCookie } from './cookies.ts';

/** The session behind a request's cookie, or null. One indexed read, no write (see sessions). */
export function sessionOf(services: AppServices, req: IncomingMessage): Promise<SessionWithUser | null> {
  const token = readCookie(req, cookieNames(services.config.publicUrl).session);
  return token ? validateSessionToken(services.db, services.config.session, token) : Promise.resolve(null);
}
