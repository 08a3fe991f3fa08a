import { newId } from '@svc/contracts/ids';
import { DEFAULT_SAML_MAPPING } from '@svc/contracts/sso';
import type { Db } from '@svc/db/client';
import { ssoConnections } from '@svc/db/schema/sso';
import { makeKeyPair } from './saml-idp.fixtures.ts';

let cert: string | undefined;

/** A SAML connection of `tenantId` straight in the table (an IdP that is never asked). */
export async function seedSsoConnection(db: Db, opts: { tenantId: string }): Promise<{ id: string }> {
  cert ??= makeKeyPair().cert;
  const id = newId('ssoConnection');
  await db.insert(ssoConnections).values({
    id,
    tenantId: opts.tenantId,
    name: 'Seeded IdP',
    protocol: 'saml',
    samlIdpEntityId: 'https://idp.example.org/saml',
    samlIdpSsoUrl: 'https://idp.example.org/saml/sso',
    samlIdpCertificates: [cert],
    attributeMapping: DEFAULT_SAML_MAPPING,
  });
  return { id };
}
