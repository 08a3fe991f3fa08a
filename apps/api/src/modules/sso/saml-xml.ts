import { SAML_METADATA_MAX_BYTES } from '@svc/contracts/sso';
import { DOMParser, type Document, type Element } from '@xmldom/xmldom';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

export class SamlXmlError extends Error {}

/**
 * Parses XML someone else sent (IdP metadata, a SAMLResponse), refusing what SAML never needs and
 * attacks use: any DOCTYPE (so no entity, internal or external: no XXE, no entity expansion) and
 * anything the parser only warns about. Size is the caller's bound.
 */
export function parseUntrustedXml(xml: string): Document {
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) {
    throw new SamlXmlError('XML with a DOCTYPE or entity declaration is refused');
  }
  const problems: string[] = [];
  let doc: ReturnType<DOMParser['parseFromString']>;
  try {
    doc = new DOMParser({
      onError: (level, message) => {
        problems.push(`${level}: ${message}`);
      },
    }).parseFromString(xml, 'text/xml');
  } catch {
    // The parser throws on fatal errors (unclosed tags, bad characters).
    throw new SamlXmlError('not well-formed XML');
  }
  if (problems.length > 0 || !doc.documentElement) {
    throw new SamlXmlError('not well-formed XML');
  }
  return doc;
}

export type IdpMetadata = { entityId: string; ssoUrl: string; certificates: string[] };

function childrenNamed(parent: Element, ns: string, local: string): Element[] {
  const found: Element[] = [];
  const list = parent.getElementsByTagNameNS(ns, local);
  for (let i = 0; i < list.length; i++) {
    const item = list.item(i);
    if (item) {
      found.push(item);
    }
  }
  return found;
}

/** A PEM certificate from the base64 body metadata and forms carry (whitespace ignored). */
export function toPem(certificate: string): string {
  const body = certificate
    .replace(/-----(BEGIN|END) CERTIFICATE-----/g, '')
    .replace(/\s+/g, '')
    .trim();
  if (!/^[A-Za-z0-9+/]+=*$/.test(body) || body.length < 100) {
    throw new SamlXmlError('a certificate is not base64 X.509');
  }
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/**
 * The IdP side of SAML metadata: the entityID of the first EntityDescriptor with an
 * IDPSSODescriptor, its HTTP-Redirect SingleSignOnService and its signing certificates.
 */
export function parseIdpMetadata(xml: string): IdpMetadata {
  if (Buffer.byteLength(xml) > SAML_METADATA_MAX_BYTES) {
    throw new SamlXmlError(`IdP metadata is at most ${SAML_METADATA_MAX_BYTES} bytes`);
  }
  const doc = parseUntrustedXml(xml);
  const root = rootOf(doc);
  const entities = root.localName === 'EntityDescriptor' ? [root] : childrenNamed(root, MD, 'EntityDescriptor');
  for (const entity of entities) {
    const idp = childrenNamed(entity, MD, 'IDPSSODescriptor')[0];
    if (!idp) {
      continue;
    }
    const entityId = entity.getAttribute('entityID') ?? '';
    const sso = childrenNamed(idp, MD, 'SingleSignOnService').find((s) => s.getAttribute('Binding') === REDIRECT_BINDING);
    const certificates = childrenNamed(idp, MD, 'KeyDescriptor')
      .filter((k) => (k.getAttribute('use') ?? 'signing') === 'signing')
      .flatMap((k) => childrenNamed(k, DS, 'X509Certificate'))
      .map((c) => toPem(c.textContent ?? ''));
    const ssoUrl = sso?.getAttribute('Location') ?? '';
    if (!entityId || !ssoUrl || certificates.length === 0) {
      throw new SamlXmlError('the IdP descriptor needs an entityID, an HTTP-Redirect SingleSignOnService and a signing certificate');
    }
    if (!URL.canParse(ssoUrl) || !/^https?:$/.test(new URL(ssoUrl).protocol)) {
      throw new SamlXmlError('the SingleSignOnService Location is not an http(s) URL');
    }
    return { entityId, ssoUrl, certificates: [...new Set(certificates)].slice(0, 4) };
  }
  throw new SamlXmlError('no IDPSSODescriptor in the metadata');
}

/** The root element of a document parseUntrustedXml answered (it refuses one without). */
export function rootOf(doc: Document): Element {
  if (!doc.documentElement) {
    throw new SamlXmlError('the XML has no root element');
  }
  return doc.documentElement;
}
