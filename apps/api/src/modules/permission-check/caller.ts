import type { IncomingMessage } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { ApplicationCaller } from '../access/access-rule.ts';
import { type Principal, type PrincipalServices, principalOf } from '../access/principal.ts';
import { parseBearer, sha256Hex } from '../applications/keys.ts';

/**
 * Who asks the permission check: a product's backend with its application's secret key, or a
 * control-plane caller (a tenant API key, a signed-in person). docs/authorization.md
 * "Checking a permission" says what each may ask about.
 */
export type CheckCaller = ApplicationCaller | Principal;

/**
 * The caller behind a request, or null for an anonymous one. A bearer `sk_live_` secret is first
 * looked up as an application's (the cached lookup every backend route makes), then as a tenant
 * API key's (principalOf, which answers 401 for a key that is neither, revoked or void); without
 * an Authorization header, the session cookie.
 */
export function checkCallerOf(services: PrincipalServices, req: IncomingMessage): CheckCaller | Promise<CheckCaller | null> {
  const token = req.headers.authorization === undefined ? undefined : parseBearer(req.headers.authorization);
  if (token && SECRET_KEY_PATTERN.test(token)) {
    const hash = sha256Hex(token);
    // The steady state of a product's backend: its application is cached, answered without a promise.
    const known = services.applications.peekBySecretKeyHash(hash);
    if (known) {
      return applicationCaller(known);
    }
    if (known === undefined) {
      return services.applications.bySecretKeyHash(hash).then((found) => (found ? applicationCaller(found) : principalOf(services, req)));
    }
  }
  return principalOf(services, req);
}

function applicationCaller(found: ApplicationWithOrganization): CheckCaller {
  if (found.application.status === 'disabled') {
    throw new AppError('application_disabled', 'this application is disabled');
  }
  return { kind: 'application', found };
}
