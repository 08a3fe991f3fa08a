import { randomBytes } from 'node:crypto';
import { type CacheProvider, SAML, SamlStatusError, ValidateInResponseTo } from '@node-saml/node-saml';
import type { SsoSignInError } from '@svc/contracts/sso';
import type { SsoConnectionRow } from '@svc/db/queries/sso';
import type { Document, Element } from '@xmldom/xmldom';
import { parseUntrustedXml, rootOf, SamlXmlError } from './saml-xml.ts';

/** A refused SSO sign-in, with the stable code svc's page shows (docs/enterprise.md "Sign-in errors"). */
export class SsoError extends Error {
  constructor(
    readonly code: SsoSignInError,
    message: string,
  ) {
    super(message);
  }
}

/** How far the IdP's clock may be from svc's (NotBefore, NotOnOrAfter). */
export const SAML_CLOCK_SKEW_MS = 60_000;
/** How long an AuthnRequest may wait for its answer. */
export const SAML_REQUEST_TTL_MS = 10 * 60_000;
/** The largest SAMLResponse (base64) svc reads. */
export const SAML_RESPONSE_MAX_CHARS = 512 * 1024;

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const SAML_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DS = 'http://www.w3.org/2000/09/xmldsig#';

export type SpUrls = { entityId: string; acsUrl: string; metadataUrl: string };

/** svc's SP URLs for a connection: one entity per connection, so each IdP trusts only its own. */
export function spUrlsOf(publicUrl: string, connectionId: string): SpUrls {
  const base = `${publicUrl}/sso/saml/${connectionId}`;
  return { entityId: base, acsUrl: `${base}/acs`, metadataUrl: `${base}/metadata` };
}

/** A cache that knows exactly one request id: the one the relay state named (or none). */
function oneRequestCache(expected: { id: string; createdAt: Date } | null): CacheProvider {
  return {
    saveAsync: async (_key, value) => ({ value, createdAt: Date.now() }),
    getAsync: async (key) => (expected && key === expected.id ? expected.createdAt.toISOString() : null),
    // svc marks the request used itself, in the sign-in's transaction.
    removeAsync: async () => null,
  };
}

function samlOf(
  publicUrl: string,
  connection: SsoConnectionRow,
  opts: { requestId?: string; expected?: { id: string; createdAt: Date } | null },
): SAML {
  const sp = spUrlsOf(publicUrl, connection.id);
  return new SAML({
    callbackUrl: sp.acsUrl,
    issuer: sp.entityId,
    audience: sp.entityId,
    entryPoint: connection.samlIdpSsoUrl ?? undefined,
    idpIssuer: connection.samlIdpEntityId ?? undefined,
    idpCert: connection.samlIdpCertificates?.length ? connection.samlIdpCertificates : 'missing',
    // One of the two signed is required: node-saml refuses a response where neither verifies.
    wantAssertionsSigned: false,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: SAML_CLOCK_SKEW_MS,
    requestIdExpirationPeriodMs: SAML_REQUEST_TTL_MS,
    validateInResponseTo: opts.expected === null ? ValidateInResponseTo.never : ValidateInResponseTo.always,
    cacheProvider: oneRequestCache(opts.expected ?? null),
    generateUniqueId: () => opts.requestId ?? `_${randomBytes(20).toString('hex')}`,
    identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    disableRequestedAuthnContext: true,
  });
}

/** svc's SP metadata for a connection (no signing or encryption key: AuthnRequests are unsigned). */
export function spMetadata(publicUrl: string, connection: SsoConnectionRow): string {
  return samlOf(publicUrl, connection, {}).generateServiceProviderMetadata(null, null);
}

/** The IdP URL (HTTP-Redirect binding) carrying a fresh AuthnRequest with this id and relay state. */
export async function authnRequestUrl(
  publicUrl: string,
  connection: SsoConnectionRow,
  opts: { requestId: string; relayState: string },
): Promise<string> {
  return samlOf(publicUrl, connection, { requestId: opts.requestId }).getAuthorizeUrlAsync(opts.relayState, undefined, {});
}

export type SamlAssertionFacts = {
  assertionId: string;
  nameId: string;
  attributes: Record<string, string[]>;
  notOnOrAfter: Date;
  inResponseTo: string | null;
};

function elements(parent: Element | Document, ns: string, local: string): Element[] {
  const list = parent.getElementsByTagNameNS(ns, local);
  const found: Element[] = [];
  for (let i = 0; i < list.length; i++) {
    const item = list.item(i);
    if (item) {
      found.push(item);
    }
  }
  return found;
}

/** Why node-saml refused, as svc's code; the refusal itself is node-saml's. */
function classify(error: unknown, doc: Document): SsoError {
  if (error instanceof SamlStatusError) {
    return new SsoError('sso_idp_error', 'the identity provider refused the sign-in');
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/InResponseTo/i.test(message)) {
    return new SsoError('sso_in_response_to_mismatch', 'the response answers another sign-in request');
  }
  if (/audience|AudienceRestriction/i.test(message)) {
    return new SsoError('sso_audience_mismatch', 'the assertion is meant for another service provider');
  }
  if (/not yet valid/i.test(message)) {
    return new SsoError('sso_assertion_not_yet_valid', 'the assertion is not valid yet');
  }
  if (/expired/i.test(message)) {
    return new SsoError('sso_assertion_expired', 'the assertion has expired');
  }
  if (/subject confirmation/i.test(message)) {
    // The subject confirmation's window is over or not yet open: which one, from its times.
    const data = elements(doc, SAML_NS, 'SubjectConfirmationData')[0];
    const notBefore = data?.getAttribute('NotBefore');
    if (notBefore && Date.parse(notBefore) > Date.now() + SAML_CLOCK_SKEW_MS) {
      return new SsoError('sso_assertion_not_yet_valid', 'the assertion is not valid yet');
    }
    return new SsoError('sso_assertion_expired', 'the assertion has expired');
  }
  if (/issuer/i.test(message)) {
    return new SsoError('sso_issuer_mismatch', 'the response comes from another identity provider');
  }
  if (/signature|signed/i.test(message)) {
    return new SsoError('sso_signature_invalid', 'the signature does not verify with the connection’s certificate');
  }
  return new SsoError('sso_response_malformed', 'the SAML response could not be read');
}

/**
 * Validates a SAMLResponse posted to the connection's ACS (docs/enterprise.md "SAML"): XML without
 * DOCTYPE; some signature present (else `sso_response_unsigned`); then node-saml: the response or
 * its one assertion signed by a certificate of the connection (the signed node is the one read:
 * no signature wrapping), the issuer, InResponseTo (only `expected`'s id, or none when
 * IdP-initiated), the time windows with bounded skew and the audience. Then svc's own checks on
 * the verified assertion: the Destination and every bearer SubjectConfirmationData Recipient
 * must be this connection's ACS URL.
 */
export async function validateSamlResponse(
  publicUrl: string,
  connection: SsoConnectionRow,
  opts: { samlResponse: string; expected: { id: string; createdAt: Date } | null },
): Promise<SamlAssertionFacts> {
  if (opts.samlResponse.length > SAML_RESPONSE_MAX_CHARS || !/^[A-Za-z0-9+/=\s]+$/.test(opts.samlResponse)) {
    throw new SsoError('sso_response_malformed', 'the SAML response is not base64 or too large');
  }
  const xml = Buffer.from(opts.samlResponse, 'base64').toString('utf8');
  let doc: Document;
  try {
    doc = parseUntrustedXml(xml);
  } catch (error) {
    if (error instanceof SamlXmlError) {
      throw new SsoError('sso_response_malformed', error.message);
    }
    throw error;
  }
  const root = rootOf(doc);
  if (root.localName !== 'Response' || root.namespaceURI !== SAMLP) {
    throw new SsoError('sso_response_malformed', 'not a SAML Response');
  }
  if (elements(doc, DS, 'Signature').length === 0) {
    throw new SsoError('sso_response_unsigned', 'neither the response nor its assertion is signed');
  }
  const sp = spUrlsOf(publicUrl, connection.id);
  let profile: Awaited<ReturnType<SAML['validatePostResponseAsync']>>['profile'];
  try {
    ({ profile } = await samlOf(publicUrl, connection, { expected: opts.expected }).validatePostResponseAsync({
      SAMLResponse: opts.samlResponse,
    }));
  } catch (error) {
    throw classify(error, doc);
  }
  if (!profile) {
    throw new SsoError('sso_response_malformed', 'the response carries no assertion');
  }
  const destination = root.getAttribute('Destination');
  if (destination && destination !== sp.acsUrl) {
    throw new SsoError('sso_recipient_mismatch', 'the response is addressed to another service provider');
  }
  // The verified assertion (never the unsigned document around it).
  const assertionXml = profile.getAssertionXml?.();
  if (!assertionXml) {
    throw new SsoError('sso_response_malformed', 'the response carries no assertion');
  }
  const assertion = rootOf(parseUntrustedXml(assertionXml));
  const confirmations = elements(assertion, SAML_NS, 'SubjectConfirmationData');
  if (confirmations.length === 0 || confirmations.some((c) => c.getAttribute('Recipient') !== sp.acsUrl)) {
    throw new SsoError('sso_recipient_mismatch', 'the assertion is addressed to another service provider');
  }
  const assertionId = assertion.getAttribute('ID');
  if (!assertionId || !profile.nameID) {
    throw new SsoError('sso_response_malformed', 'the assertion has no ID or no NameID');
  }
  const attributes: Record<string, string[]> = {};
  for (const attribute of elements(assertion, SAML_NS, 'Attribute')) {
    const name = attribute.getAttribute('Name');
    if (name) {
      attributes[name] = elements(attribute, SAML_NS, 'AttributeValue').map((v) => (v.textContent ?? '').trim());
    }
  }
  const times = [
    ...elements(assertion, SAML_NS, 'Conditions').map((c) => c.getAttribute('NotOnOrAfter')),
    ...confirmations.map((c) => c.getAttribute('NotOnOrAfter')),
  ]
    .filter((t): t is string => Boolean(t))
    .map((t) => Date.parse(t))
    .filter((t) => Number.isFinite(t));
  // Remembered until the last window closes (at most a day): no replay inside it.
  const notOnOrAfter = new Date(Math.min(Math.max(...times, Date.now()), Date.now() + 86_400_000) + SAML_CLOCK_SKEW_MS);
  return {
    assertionId,
    nameId: profile.nameID,
    attributes,
    notOnOrAfter,
    inResponseTo: root.getAttribute('InResponseTo') || null,
  };
}
