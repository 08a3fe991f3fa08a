import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '@svc/db/client';
import { findSsoRequestByRelay, insertSsoRequest, type SsoConnectionRow, type SsoRequestRow } from '@svc/db/queries/sso';
import { authnRequestUrl, SAML_REQUEST_TTL_MS } from './saml.ts';

export const relayHashOf = (relay: string): string => createHash('sha256').update(relay).digest('hex');

/**
 * Starts a sign-in at a connection: a request row (its id is the AuthnRequest's ID) bound to a
 * fresh relay state, which is all the browser carries; answers the IdP URL to send it to.
 */
export async function beginSsoSignIn(
  db: Db,
  publicUrl: string,
  connection: SsoConnectionRow,
  opts: { returnTo: string; applicationId: string | null; test: boolean },
): Promise<{ url: string; expiresAt: Date }> {
  const requestId = `_${randomBytes(20).toString('hex')}`;
  const relayState = randomBytes(24).toString('base64url');
  const expiresAt = new Date(Date.now() + SAML_REQUEST_TTL_MS);
  await insertSsoRequest(db, {
    id: requestId,
    connectionId: connection.id,
    relayHash: relayHashOf(relayState),
    returnTo: opts.returnTo,
    applicationId: opts.applicationId,
    test: opts.test,
    expiresAt,
  });
  if (connection.protocol !== 'saml') {
    throw new Error('OIDC connections start in oidc.ts');
  }
  return { url: await authnRequestUrl(publicUrl, connection, { requestId, relayState }), expiresAt };
}

/** The request a relay state names at this connection, if any. */
export async function requestOfRelay(db: Db, connectionId: string, relay: string | undefined): Promise<SsoRequestRow | undefined> {
  if (!relay || relay.length > 200) {
    return undefined;
  }
  return findSsoRequestByRelay(db, { connectionId, relayHash: relayHashOf(relay) });
}
