import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import * as samlifyModule from 'samlify';

// Node's ESM loader (the bench runs under tsx) sees only some of samlify's CommonJS exports by
// name; its default export is the whole module, as vitest's named imports are.
const samlify = ((samlifyModule as { default?: typeof samlifyModule }).default ?? samlifyModule) as typeof samlifyModule;

// A customer's SAML IdP for tests: samlify's IdentityProvider (code svc did not write) behind a
// small HTTP server: its metadata, and an HTTP-Redirect SSO endpoint that parses svc's
// AuthnRequest with samlify and answers the auto-posting form a real IdP answers.

samlify.setSchemaValidator({ validate: async () => 'skipped' });

/** A fresh RSA key and self-signed certificate (openssl from the Debian base system). */
export function makeKeyPair(cn = 'test-idp'): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'saml-idp-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '2',
        '-subj',
        `/CN=${cn}`,
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export type IdpUser = { email: string; name?: string; groups?: string[]; nameId?: string };

/** Values of samlify's login response template a test may override (wrong audience, times, ...). */
export type ResponseOverrides = Partial<{
  Audience: string;
  SubjectRecipient: string;
  Destination: string;
  InResponseTo: string;
  ConditionsNotBefore: string;
  ConditionsNotOnOrAfter: string;
  SubjectConfirmationDataNotOnOrAfter: string;
  Issuer: string;
  AssertionID: string;
}>;

const xmlEscape = (value: string) => value.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function attributeStatement(user: IdpUser): string {
  const attribute = (name: string, values: string[]) =>
    `<saml:Attribute Name="${name}">${values.map((v) => `<saml:AttributeValue xsi:type="xs:string">${xmlEscape(v)}</saml:AttributeValue>`).join('')}</saml:Attribute>`;
  return `<saml:AttributeStatement>${attribute('email', [user.email])}${attribute('name', [user.name ?? ''])}${attribute('groups', user.groups ?? [])}</saml:AttributeStatement>`;
}

export type TestIdp = {
  url: string;
  entityId: string;
  metadataUrl: string;
  metadata: string;
  cert: string;
  key: string;
  /** Who the next sign-in at /sso is (the IdP's login form, filled). */
  user: IdpUser;
  /** A signed SAMLResponse (base64) for an SP, answering `inResponseTo` (empty: IdP-initiated). */
  respond: (opts: { spMetadata: string; inResponseTo?: string; user?: IdpUser; overrides?: ResponseOverrides }) => Promise<string>;
  close: () => Promise<void>;
};

export async function startSamlIdp(): Promise<TestIdp> {
  const { key, cert } = makeKeyPair();
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const entityId = `${url}/idp`;
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    privateKey: key,
    signingCert: cert,
    isAssertionEncrypted: false,
    wantAuthnRequestsSigned: false,
    singleSignOnService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: `${url}/sso` }],
  });
  const metadata = idp.getMetadata();
  const state: { user: IdpUser } = { user: { email: 'nobody@example.com' } };

  async function respond(opts: { spMetadata: string; inResponseTo?: string; user?: IdpUser; overrides?: ResponseOverrides }) {
    const sp = samlify.ServiceProvider({ metadata: opts.spMetadata });
    const user = opts.user ?? state.user;
    const now = new Date();
    const later = new Date(now.getTime() + 5 * 60_000).toISOString();
    const acs = sp.entityMeta.getAssertionConsumerService('post') as string;
    const values: Record<string, string> = {
      ID: `_${randomBytes(16).toString('hex')}`,
      AssertionID: `_${randomBytes(16).toString('hex')}`,
      Destination: acs,
      Audience: sp.entityMeta.getEntityID(),
      EntityID: sp.entityMeta.getEntityID(),
      SubjectRecipient: acs,
      Issuer: entityId,
      IssueInstant: now.toISOString(),
      StatusCode: samlify.Constants.StatusCode.Success,
      ConditionsNotBefore: now.toISOString(),
      ConditionsNotOnOrAfter: later,
      SubjectConfirmationDataNotOnOrAfter: later,
      NameIDFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      NameID: user.nameId ?? user.email,
      InResponseTo: opts.inResponseTo ?? '',
      AuthnStatement: '',
      ...opts.overrides,
    };
    const { context } = await idp.createLoginResponse(sp, null as never, 'post', {}, (template: string) => ({
      id: values.ID ?? '',
      // samlify escapes every value: the attribute statement (XML) goes in as it is.
      context: samlify.SamlLib.replaceTagsByValue(template.replace('{AttributeStatement}', attributeStatement(user)), values),
    }));
    return context;
  }

  server.on('request', (req, res) => {
    void (async () => {
      const here = new URL(req.url ?? '/', url);
      if (here.pathname === '/metadata') {
        res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(metadata);
        return;
      }
      if (here.pathname === '/sso') {
        // The SP is whoever the AuthnRequest's Issuer names: its metadata is fetched from there.
        const query = Object.fromEntries(here.searchParams);
        const spMetadata = await (await fetch(`${spEntityOf(query.SAMLRequest ?? '')}/metadata`)).text();
        const sp = samlify.ServiceProvider({ metadata: spMetadata });
        const parsed = await idp.parseLoginRequest(sp, 'redirect', { query, octetString: '' } as never);
        const response = await respond({ spMetadata, inResponseTo: String(parsed.extract.request?.id ?? '') });
        const acs = sp.entityMeta.getAssertionConsumerService('post') as string;
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<form method="post" action="${acs}"><input type="hidden" name="SAMLResponse" value="${response}"><input type="hidden" name="RelayState" value="${xmlEscape(query.RelayState ?? '')}"></form>`,
          );
        return;
      }
      res.writeHead(404).end();
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });

  return {
    url,
    entityId,
    metadataUrl: `${url}/metadata`,
    metadata,
    cert,
    key,
    get user() {
      return state.user;
    },
    set user(value: IdpUser) {
      state.user = value;
    },
    respond,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The Issuer of a deflated, base64 AuthnRequest (what svc's SP names itself). */
export function spEntityOf(samlRequest: string): string {
  const xml = inflateRawSync(Buffer.from(samlRequest, 'base64')).toString('utf8');
  return /<saml:Issuer[^>]*>([^<]+)<\/saml:Issuer>/.exec(xml)?.[1] ?? '';
}

/** The form fields of an auto-posting HTML form. */
export function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1] ?? '';
  const fields = Object.fromEntries([...html.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]));
  return { action, fields };
}

/** The ID of a deflated, base64 AuthnRequest. */
export function requestIdOf(samlRequest: string): string {
  const xml = inflateRawSync(Buffer.from(samlRequest, 'base64')).toString('utf8');
  return /\sID="([^"]+)"/.exec(xml)?.[1] ?? '';
}
