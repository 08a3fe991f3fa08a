import { ZCreateDomainRequest } from '@svc/contracts/domains';
import { AppError, statusOf } from '@svc/contracts/errors';
import { ZName } from '@svc/contracts/lists';
import { ZSetupLinkId } from '@svc/contracts/setup-links';
import { ZCreateSsoConnectionRequest } from '@svc/contracts/sso';
import express, { type Request, type Response, Router } from 'express';
import { ZodError } from 'zod';
import type { AppServices } from '../../context.ts';
import { requestMetaOf } from '../../modules/access/audit.ts';
import { cookieNames, readCookie } from '../../modules/auth/cookies.ts';
import {
  type OpenedSetupLink,
  openSetupLinkPage,
  type SetupPageDeps,
  type SetupTarget,
  setupCreateDirectory,
  setupCreateDomain,
  setupLinkOfSession,
  setupLinkPath,
  setupRotateDirectoryToken,
  setupSaveSsoConnection,
  setupTargetOf,
  setupTestSsoConnection,
  setupVerifyDomain,
} from '../../modules/setup-links/service.ts';
import { escapeHtml, hostedPage } from '../../modules/shared/hosted-page.ts';
import { requestIdOf } from '../../modules/shared/request-id.ts';
import { spUrlsOf } from '../../modules/sso/saml.ts';
import { ssoDeps } from '../../trpc/routers/sso.ts';
import { COPY_SCRIPT_TAG } from '../copy-button.ts';
import { refusedInput } from '../input-guard.ts';
import { ownOriginCheck, seeOtherNoStore, sendHostedPage } from './page.ts';

/** The cookie a link's first open sets; scoped to the link's own path. */
const COOKIE = 'svc_setup';

/** What a form may carry: SAML metadata XML is the largest (contracts/sso.ts SAML_METADATA_MAX_BYTES), encoded. */
const FORM_LIMIT = '800kb';

/** A value with a copy button (http/copy-button.ts: the script is same-origin, the CSP allows it). */
function copyable(id: string, label: string, value: string): string {
  return `<tr><th>${escapeHtml(label)}</th><td><code id="${id}" data-testid="${id}">${escapeHtml(value)}</code><br><button type="button" class="copy secondary button" data-copy="${id}" data-testid="${id}-copy">Copy</button></td></tr>`;
}

const PURPOSE_HEADINGS = { sso: 'Set up single sign-on', directory: 'Set up directory sync (SCIM)', domain: 'Verify your email domain' };

/** What a form answered: shown above the page, once. */
type Outcome = { error?: AppError; notice?: string; directoryToken?: string };

function errorBlock(error: AppError): string {
  return `<div role="alert" data-testid="setup-error"><p><strong>${escapeHtml(error.message)}</strong></p><p class="muted">Code: <code data-testid="setup-error-code">${escapeHtml(error.code)}</code></p></div>`;
}

function domainSection(action: string, target: Extract<SetupTarget, { purpose: 'domain' }>): string {
  const domain = target.domain;
  if (!domain) {
    return `<p>Enter the email domain your people sign in with. svc then shows the DNS TXT record that proves your organization controls it.</p>
<form method="post" action="${action}/domain"><label for="domain">Domain</label><input id="domain" name="domain" required maxlength="253" placeholder="acme.com" autocomplete="off" data-testid="setup-domain-input">
<button type="submit" data-testid="setup-domain-add">Add domain</button></form>`;
  }
  const verified = domain.status === 'verified';
  return `<p><strong data-testid="setup-domain-name">${escapeHtml(domain.domain)}</strong>: <span data-testid="setup-domain-status" data-status="${domain.status}">${verified ? 'verified' : 'not verified yet'}</span></p>
${verified ? '<p>Nothing more to do: the organization now owns this domain.</p>' : `<p>Add this TXT record at your DNS provider, wait for it to publish, then check.</p>`}
<table>${copyable('setup-txt-name', 'Record name', domain.verification.name)}${copyable('setup-txt-value', 'Record value', domain.verification.value)}</table>
${domain.lastCheckError && !verified ? `<p class="muted" data-testid="setup-domain-last-error">Last check: ${escapeHtml(domain.lastCheckError)}</p>` : ''}
${verified ? '' : `<form method="post" action="${action}/domain/verify"><button type="submit" data-testid="setup-domain-verify">Check the record now</button></form>`}`;
}

function directorySection(action: string, target: Extract<SetupTarget, { purpose: 'directory' }>, token?: string): string {
  const directory = target.directory;
  if (!directory) {
    return `<p>Name the directory after your identity provider. svc then shows the SCIM base URL and the bearer token to paste into its provisioning settings.</p>
<form method="post" action="${action}/directory"><label for="name">Name</label><input id="name" name="name" required maxlength="100" placeholder="Okta" autocomplete="off" data-testid="setup-directory-name">
<button type="submit" data-testid="setup-directory-create">Create the directory</button></form>`;
  }
  const tokenRow = token
    ? copyable('setup-scim-token', 'Bearer token', token)
    : `<tr><th>Bearer token</th><td><code data-testid="setup-scim-token-prefix">${escapeHtml(directory.tokenPrefix)}…</code></td></tr>`;
  return `<p>In your identity provider's SCIM provisioning settings (Okta: Provisioning -> Integration, "SCIM connector base URL" and an "HTTP Header" token; Entra ID: Provisioning, "Tenant URL" and "Secret Token"), paste:</p>
<table>${copyable('setup-scim-url', 'SCIM base URL', directory.scimBaseUrl)}${tokenRow}</table>
${token ? '<p><strong>Copy the token now: it is shown only this once.</strong> svc keeps only its hash.</p>' : '<p class="muted">The token was shown once, when it was made. Lost it? Make a new one: the old one stops working at once.</p>'}
<form method="post" action="${action}/directory/rotate"><button type="submit" class="button secondary" data-testid="setup-directory-rotate">Make a new token</button></form>
<p class="muted">Provisioned so far: <span data-testid="setup-directory-users">${directory.userCount}</span> people, ${directory.groupCount} groups.</p>`;
}

function ssoSection(action: string, publicUrl: string, connectionId: string, target: Extract<SetupTarget, { purpose: 'sso' }>): string {
  const sp = spUrlsOf(publicUrl, connectionId);
  const connection = target.connection;
  const redirectUri = `${publicUrl}/sso/oidc/${connectionId}/callback`;
  const status = connection
    ? `<h2>Your connection</h2><p><strong data-testid="setup-sso-name">${escapeHtml(connection.name)}</strong> (${connection.protocol === 'saml' ? 'SAML 2.0' : 'OpenID Connect'}) is saved${connection.saml?.idpEntityId ? `, trusting <code>${escapeHtml(connection.saml.idpEntityId)}</code>` : ''}${connection.oidc ? `, issuer <code>${escapeHtml(connection.oidc.issuer)}</code>` : ''}.</p>
<p><a class="button" href="${action}/sso/test" data-testid="setup-sso-test">Test the connection</a></p>
<p class="muted">The test signs you in at your identity provider and shows what it sent; nobody is signed in to svc or added.</p>`
    : '';
  const protocol = connection?.protocol;
  return `<h2>1. In your identity provider</h2>
<p>SAML: create an application with these values.</p>
<table>${copyable('setup-sp-acs-url', 'ACS (reply) URL', sp.acsUrl)}${copyable('setup-sp-entity-id', 'Entity ID (audience)', sp.entityId)}</table>
<p class="muted">Send the email address (or NameID in email format), and optionally <code>name</code> and <code>groups</code> attributes. svc's SP metadata is at <code>${escapeHtml(sp.metadataUrl)}</code> once the connection is saved.</p>
<p>OpenID Connect instead: register a web application with this redirect URI.</p>
<table>${copyable('setup-oidc-redirect-uri', 'Redirect URI', redirectUri)}</table>
<h2>2. Back here</h2>
<form method="post" action="${action}/sso">
<label for="name">Name</label><input id="name" name="name" required maxlength="100" value="${escapeHtml(connection?.name ?? '')}" placeholder="Okta" data-testid="setup-sso-name-input">
${
  protocol
    ? `<input type="hidden" name="protocol" value="${protocol}">`
    : `<fieldset><legend>Protocol</legend><div class="choice"><input type="radio" id="p-saml" name="protocol" value="saml" checked data-testid="setup-sso-protocol-saml"> <label for="p-saml">SAML 2.0</label></div><div class="choice"><input type="radio" id="p-oidc" name="protocol" value="oidc" data-testid="setup-sso-protocol-oidc"> <label for="p-oidc">OpenID Connect</label></div></fieldset>`
}
${
  protocol !== 'oidc'
    ? `<label for="metadata_url">SAML: IdP metadata URL</label><input id="metadata_url" name="metadata_url" type="url" maxlength="2000" placeholder="https://idp.example.com/metadata" data-testid="setup-sso-metadata-url">
<label for="metadata_xml">or the IdP metadata XML</label><textarea id="metadata_xml" name="metadata_xml" rows="5" data-testid="setup-sso-metadata-xml"></textarea>`
    : ''
}
${
  protocol !== 'saml'
    ? `<label for="issuer">OpenID Connect: issuer</label><input id="issuer" name="issuer" type="url" maxlength="2000" value="${escapeHtml(connection?.oidc?.issuer ?? '')}" placeholder="https://idp.example.com" data-testid="setup-sso-issuer">
<label for="client_id">Client id</label><input id="client_id" name="client_id" maxlength="500" value="${escapeHtml(connection?.oidc?.clientId ?? '')}" autocomplete="off" data-testid="setup-sso-client-id">
<label for="client_secret">Client secret${connection?.oidc?.clientSecretSet ? ' (leave empty to keep the one saved)' : ''}</label><input id="client_secret" name="client_secret" type="password" maxlength="2000" autocomplete="off" data-testid="setup-sso-client-secret">`
    : ''
}
<button type="submit" data-testid="setup-sso-save">${connection ? 'Save changes' : 'Save the connection'}</button></form>
${status}`;
}

/** The page of an opened link: what the purpose needs, the outcome of the last form, no scripts but the copy buttons'. */
function setupPage(publicUrl: string, opened: OpenedSetupLink, target: SetupTarget, organizationName: string, outcome: Outcome): string {
  const { link } = opened;
  const action = setupLinkPath(link.id);
  const body =
    target.purpose === 'domain'
      ? domainSection(action, target)
      : target.purpose === 'directory'
        ? directorySection(action, target, outcome.directoryToken)
        : ssoSection(action, publicUrl, link.targetId ?? '', target);
  return hostedPage(
    PURPOSE_HEADINGS[link.purpose],
    `<h1 data-testid="hosted-heading">${escapeHtml(PURPOSE_HEADINGS[link.purpose])}</h1>
<p>For <strong data-testid="setup-organization">${escapeHtml(organizationName)}</strong>. This page works in this browser only, until <span data-testid="setup-expires">${escapeHtml(link.expiresAt.toUTCString())}</span>.</p>
${outcome.error ? errorBlock(outcome.error) : ''}${outcome.notice ? `<p role="status" data-testid="setup-notice">${escapeHtml(outcome.notice)}</p>` : ''}
<div data-testid="setup-purpose" data-purpose="${link.purpose}">${body}</div>
${COPY_SCRIPT_TAG}`,
    { wide: true },
  );
}

/** Why the link cannot be used, with the error code: a clear page, never the link's page. */
function refusalPage(error: AppError): string {
  const heading =
    error.code === 'setup_link_used'
      ? 'This setup link was opened already'
      : error.code === 'setup_link_expired'
        ? 'This setup link has expired'
        : error.code === 'setup_link_revoked'
          ? 'This setup link no longer works'
          : 'This setup link cannot be used';
  return hostedPage(
    heading,
    `<h1 data-testid="hosted-heading">${escapeHtml(heading)}</h1>
<p data-testid="setup-refusal-message">${escapeHtml(error.message)}.</p>
<p class="muted">Code: <code data-testid="setup-refusal-code">${escapeHtml(error.code)}</code></p>
<p class="muted">A setup link opens in one browser only, and for a day at most. The organization's admin can create a new one in the console.</p>`,
  );
}

/** The form's value of `name`, if it is one string (urlencoded: repeated names are arrays). */
function field(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

function asAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) {
    return error;
  }
  if (error instanceof ZodError) {
    const issue = error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    return new AppError('validation_failed', `${where}${issue?.message ?? 'invalid input'}`);
  }
  return undefined;
}

/** The SSO form as the connection routes' input (ZCreateSsoConnectionRequest judges it, as on /v1). */
function ssoInputOf(body: Record<string, unknown>) {
  const protocol = field(body, 'protocol');
  const metadataUrl = field(body, 'metadata_url');
  const metadataXml = field(body, 'metadata_xml');
  const secret = field(body, 'client_secret');
  return ZCreateSsoConnectionRequest.parse({
    name: field(body, 'name') ?? '',
    protocol,
    ...(protocol === 'saml' ? { saml: { ...(metadataUrl ? { metadataUrl } : {}), ...(metadataXml ? { metadataXml } : {}) } } : {}),
    ...(protocol === 'oidc'
      ? {
          oidc: {
            issuer: field(body, 'issuer') ?? '',
            clientId: field(body, 'client_id') ?? '',
            ...(secret ? { clientSecret: secret } : {}),
          },
        }
      : {}),
  });
}

/**
 * The hosted page of a setup link (docs/enterprise.md "Setup links"), for an IT admin without a
 * console account. `GET /setup/<id>?token=` opens the link once: it binds the link to this
 * browser with an HttpOnly, SameSite=Strict cookie scoped to the link's path, valid until the
 * link expires; any other browser opening the URL is refused (409 setup_link_used). The forms are
 * same-origin POSTs (the CSP allows no inline script), refused from any other origin, that call the
 * same domain services as /v1, with the link as the actor; every action is the link's purpose's
 * and works on the link's own record only (no form names an id). Pages are never cached.
 */
export function setupLinkRouter(services: AppServices): Router {
  const { config, db } = services;
  const names = cookieNames(config.publicUrl);
  const cookieName = names.secure ? `__Secure-${COOKIE}` : COOKIE;
  const fromOwnPage = ownOriginCheck(config.publicUrl);
  const deps = (): SetupPageDeps => ({ db, publicUrl: config.publicUrl, dns: config.dns, sso: ssoDeps(services) });
  const r = Router();

  // Every answer of the page is the link's own (a secret, a token shown once): never stored.
  const send = (res: Response, status: number, html: string) => sendHostedPage(res, status, html, { noStore: true });

  function refuse(res: Response, error: unknown): void {
    const appError = asAppError(error);
    if (!appError) {
      throw error;
    }
    send(res, statusOf(appError.code), refusalPage(appError));
  }

  function setSessionCookie(res: Response, id: string, token: string, expiresAt: Date): void {
    const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
    const attributes = [`${cookieName}=${token}`, `Path=${setupLinkPath(id)}`, 'HttpOnly', 'SameSite=Strict', `Max-Age=${maxAge}`];
    if (names.secure) {
      attributes.push('Secure');
    }
    res.append('Set-Cookie', attributes.join('; '));
  }

  /** The link this browser opened, from its cookie; refused (page sent) otherwise. */
  async function openedOf(req: Request, res: Response): Promise<OpenedSetupLink | undefined> {
    const sessionToken = readCookie(req, cookieName);
    if (!sessionToken) {
      refuse(res, new AppError('setup_link_used', 'open the setup link you were sent, in the browser that opened it first'));
      return undefined;
    }
    try {
      return await setupLinkOfSession(db, { untrustedId: String(req.params.id), sessionToken });
    } catch (error) {
      refuse(res, error);
      return undefined;
    }
  }

  async function render(res: Response, opened: OpenedSetupLink, outcome: Outcome = {}): Promise<void> {
    const target = await setupTargetOf(deps(), opened);
    const status = outcome.error ? statusOf(outcome.error.code) : 200;
    send(res, status, setupPage(config.publicUrl, opened, target, opened.access.organization.name, outcome));
  }

  r.get('/setup/:id', async (req, res) => {
    const id = String(req.params.id);
    if (!ZSetupLinkId.safeParse(id).success) {
      refuse(res, new AppError('not_found', 'this setup link is not valid; copy the whole link'));
      return;
    }
    const token = req.query.token;
    const sessionToken = readCookie(req, cookieName);
    // This browser opened the link already (a reload of the link, or the bare page): its cookie decides.
    if (sessionToken) {
      try {
        await render(res, await setupLinkOfSession(db, { untrustedId: id, sessionToken }));
        return;
      } catch (error) {
        if (token === undefined) {
          refuse(res, error);
          return;
        }
      }
    }
    if (typeof token !== 'string') {
      refuse(res, new AppError('not_found', 'open the setup link you were sent (it carries a token)'));
      return;
    }
    try {
      const opened = await openSetupLinkPage(db, requestMetaOf(req, services.clientIp, requestIdOf(req)), { untrustedId: id, token });
      setSessionCookie(res, id, opened.sessionToken, opened.link.expiresAt);
      // Answered here, not by a redirect: a SameSite=Strict cookie set by a cross-site navigation's
      // answer is not sent on its redirect, and the token is spent now anyway.
      await render(res, opened);
    } catch (error) {
      refuse(res, error);
    }
  });

  r.get('/setup/:id/sso/test', async (req, res) => {
    const opened = await openedOf(req, res);
    if (!opened) {
      return;
    }
    try {
      const started = await setupTestSsoConnection(deps(), opened);
      seeOtherNoStore(res, started.url);
    } catch (error) {
      const appError = asAppError(error);
      if (!appError) {
        throw error;
      }
      await render(res, opened, { error: appError });
    }
  });

  const actions: Record<string, (opened: OpenedSetupLink, req: Request, body: Record<string, unknown>) => Promise<Outcome>> = {
    domain: async (opened, req, body) => {
      const { domain } = ZCreateDomainRequest.pick({ domain: true }).parse({ domain: field(body, 'domain') ?? '' });
      const created = await setupCreateDomain(deps(), opened, meta(req), { domain });
      return { notice: `${created.domain} added: now publish its TXT record.` };
    },
    'domain/verify': async (opened, req) => {
      const domain = await setupVerifyDomain(deps(), opened, meta(req));
      return { notice: domain.status === 'verified' ? `${domain.domain} is verified.` : 'The record was not found yet.' };
    },
    directory: async (opened, req, body) => {
      const name = ZName.parse(field(body, 'name') ?? '');
      const created = await setupCreateDirectory(deps(), opened, meta(req), { name });
      return { notice: 'The directory is ready: paste both values into your identity provider.', directoryToken: created.token };
    },
    'directory/rotate': async (opened, req) => {
      const rotated = await setupRotateDirectoryToken(deps(), opened, meta(req));
      return { notice: 'A new token: the old one no longer works.', directoryToken: rotated.token };
    },
    sso: async (opened, req, body) => {
      const saved = await setupSaveSsoConnection(deps(), opened, meta(req), ssoInputOf(body));
      return { notice: `${saved.name} is saved: test it now.` };
    },
  };
  const meta = (req: Request) => requestMetaOf(req, services.clientIp, requestIdOf(req));

  r.post(
    ['/setup/:id/domain', '/setup/:id/domain/verify', '/setup/:id/directory', '/setup/:id/directory/rotate', '/setup/:id/sso'],
    express.urlencoded({ extended: false, limit: FORM_LIMIT, parameterLimit: 20 }),
    async (req, res) => {
      // A form POST from any site would carry the cookie (were it not Strict): only the page itself may act.
      if (!fromOwnPage(req)) {
        send(res, 403, refusalPage(new AppError('csrf_rejected', 'use the forms of the setup page itself')));
        return;
      }
      const opened = await openedOf(req, res);
      if (!opened) {
        return;
      }
      const action = req.path.slice(setupLinkPath(opened.link.id).length + 1);
      const run = actions[action];
      const body = (req.body ?? {}) as Record<string, unknown>;
      if (!run || refusedInput(body)) {
        await render(res, opened, { error: new AppError('validation_failed', 'fill in the form without control characters') });
        return;
      }
      try {
        await render(res, opened, await run(opened, req, body));
      } catch (error) {
        const appError = asAppError(error);
        if (!appError) {
          throw error;
        }
        await render(res, opened, { error: appError });
      }
    },
  );

  return r;
}
