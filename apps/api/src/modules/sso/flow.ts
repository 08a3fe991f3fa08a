import { createHash, randomBytes } from 'node:crypto';
import { emailDomainOf } from '@svc/contracts/domains';
import type { Db } from '@svc/db/client';
import { findVerifiedDomain } from '@svc/db/queries/domains';
import { findOrganizationBySlug } from '@svc/db/queries/organizations';
import {
  enabledSsoConnectionsOf,
  findSsoRequestByRelay,
  insertSsoRequest,
  type SsoConnectionRow,
  type SsoRequestRow,
} from '@svc/db/queries/sso';
import type { SecretBox } from '@svc/db/secret-box';
import { OidcError, type RelyingParty } from '../auth/oidc-client.ts';
import { classifyOidcError, relyingPartyOf } from './oidc.ts';
import { authnRequestUrl, SAML_REQUEST_TTL_MS } from './saml.ts';

export const relayHashOf = (relay: string): string => createHash('sha256').update(relay).digest('hex');

/**
 * Starts a sign-in at a connection: a request row (its id is the AuthnRequest's ID) bound to a
 * fresh relay state, which is all the browser carries; answers the IdP URL to send it to.
 */
export async function beginSsoSignIn(
  deps: { db: Db; publicUrl: string; secretBox: SecretBox; fetch: typeof fetch },
  connection: SsoConnectionRow,
  opts: { returnTo: string; applicationId: string | null; test: boolean },
): Promise<{ url: string; expiresAt: Date }> {
  const expiresAt = new Date(Date.now() + SAML_REQUEST_TTL_MS);
  const common = { connectionId: connection.id, returnTo: opts.returnTo, applicationId: opts.applicationId, test: opts.test, expiresAt };
  if (connection.protocol === 'oidc') {
    let started: Awaited<ReturnType<RelyingParty['startAuthorization']>>;
    try {
      started = await relyingPartyOf(deps, connection).startAuthorization();
    } catch (error) {
      if (error instanceof OidcError) {
        throw classifyOidcError(error);
      }
      throw error;
    }
    // The OIDC state is the relay: the browser carries it, the verifier and nonce stay here.
    await insertSsoRequest(deps.db, {
      id: `oidc_${randomBytes(20).toString('hex')}`,
      relayHash: relayHashOf(started.state),
      codeVerifier: started.codeVerifier,
      nonce: started.nonce,
      ...common,
    });
    return { url: started.url.toString(), expiresAt };
  }
  const requestId = `_${randomBytes(20).toString('hex')}`;
  const relayState = randomBytes(24).toString('base64url');
  await insertSsoRequest(deps.db, { id: requestId, relayHash: relayHashOf(relayState), ...common });
  return { url: await authnRequestUrl(deps.publicUrl, connection, { requestId, relayState }), expiresAt };
}

/** The request a relay state names at this connection, if any. */
export async function requestOfRelay(db: Db, connectionId: string, relay: string | undefined): Promise<SsoRequestRow | undefined> {
  if (!relay || relay.length > 200) {
    return undefined;
  }
  return findSsoRequestByRelay(db, { connectionId, relayHash: relayHashOf(relay) });
}

/**
 * Where an email's sign-in goes (docs/enterprise.md "Who goes where"): a domain some
 * organization has verified, with an enabled connection there, goes to that connection (the
 * oldest); `required` when the domain's policy is require_sso. An unverified domain never goes
 * anywhere: anyone can type any domain.
 */
export async function connectionForEmail(db: Db, email: string): Promise<{ connection: SsoConnectionRow; required: boolean } | undefined> {
  const name = emailDomainOf(email.trim().toLowerCase());
  const domain = name ? await findVerifiedDomain(db, name) : undefined;
  if (!domain?.verifiedAt) {
    return undefined;
  }
  const [connection] = await enabledSsoConnectionsOf(db, domain.tenantId);
  return connection ? { connection, required: domain.policy === 'require_sso' } : undefined;
}

/** The first enabled connection of the organization with this slug (`organization=<slug>` on an authorization request). */
export async function connectionForOrganizationSlug(db: Db, slug: string): Promise<SsoConnectionRow | undefined> {
  const organization = await findOrganizationBySlug(db, slug);
  if (organization?.kind !== 'tenant') {
    return undefined;
  }
  return (await enabledSsoConnectionsOf(db, organization.id))[0];
}
