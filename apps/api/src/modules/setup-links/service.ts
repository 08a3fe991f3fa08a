import { createHash } from 'node:crypto';
import type { TCreateDomainRequest, TDomain } from '@svc/contracts/domains';
import { AppError } from '@svc/contracts/errors';
import { newId, randomBase62 } from '@svc/contracts/ids';
import type { Permission } from '@svc/contracts/permissions';
import {
  SETUP_LINK_MAX_HOURS,
  SETUP_LINK_TOKEN_PATTERN,
  type TCreateSetupLinkRequest,
  type TListSetupLinksRequest,
  type TSetupLink,
  type TSetupLinkPage,
  type TSetupLinkPurpose,
  type TSetupLinkRef,
  type TSetupLinkWithUrl,
  ZSetupLinkId,
} from '@svc/contracts/setup-links';
import type { TCreateSsoConnectionRequest, TSsoConnection, TSsoTestStart, TUpdateSsoConnectionRequest } from '@svc/contracts/sso';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { prepareFindApiKeyCreatorStanding } from '@svc/db/queries/api-keys';
import { findOrganizationById } from '@svc/db/queries/organizations';
import {
  findSetupLink,
  findSetupLinkByHash,
  findSetupLinkTenant,
  insertSetupLink,
  listSetupLinks as listRows,
  openSetupLink as openRow,
  revokeSetupLink as revokeRow,
  type SetupLinkRow,
  setSetupLinkTarget,
} from '@svc/db/queries/setup-links';
import type { DnsSettings } from '@svc/jobs/domains/dns-check';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, creatorAccessOf, type SetupLinkPrincipal } from '../access/authorize.ts';
import { createDirectory, type DirectoriesDeps, getDirectory, rotateDirectoryToken } from '../directories/service.ts';
import { createDomain, getDomain, verifyDomain } from '../domains/service.ts';
import { createSsoConnection, getSsoConnection, type SsoDeps, testSsoConnection, updateSsoConnection } from '../sso/service.ts';

const NOT_FOUND = 'setup link not found';

/** Random characters of a link's token and of its session cookie: 43 base62 (~256 bits). */
const TOKEN_LENGTH = 43;

/** The path of a link's hosted page; its session cookie is scoped to it. */
export const setupLinkPath = (id: string): string => `/setup/${id}`;

const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');

const iso = (at: Date | null): string | null => at?.toISOString() ?? null;

const PURPOSE_LABELS: Record<TSetupLinkPurpose, string> = {
  sso: 'SSO connection',
  directory: 'Directory sync',
  domain: 'Email domain',
};

/** unused, opened, expired or revoked at `now` (revoked wins over expired). */
export function statusOf(row: SetupLinkRow, now = new Date()): TSetupLink['status'] {
  if (row.revokedAt) {
    return 'revoked';
  }
  if (row.expiresAt.getTime() <= now.getTime()) {
    return 'expired';
  }
  return row.openedAt ? 'opened' : 'unused';
}

/** The answer's view of a row (docs/api.md "Setup links"): never a hash. */
export function toSetupLink(row: SetupLinkRow, now = new Date()): TSetupLink {
  return {
    id: row.id,
    purpose: row.purpose,
    label: row.label,
    status: statusOf(row, now),
    targetId: row.targetId,
    createdBy: row.createdByLabel,
    expiresAt: row.expiresAt.toISOString(),
    openedAt: iso(row.openedAt),
    revokedAt: iso(row.revokedAt),
    createdAt: row.createdAt.toISOString(),
  };
}

/** A link's `{id}` routes find their organization from the link (modules/access/access-rule.ts). */
export const SETUP_LINK_RECORD: RecordSource = { tenantOf: findSetupLinkTenant, notFound: NOT_FOUND };

export async function listSetupLinks(db: Db, { organization }: Access, input: TListSetupLinksRequest): Promise<TSetupLinkPage> {
  const scope = `setup-links:${organization.id}`;
  const rows = await listRows(db, { tenantId: organization.id, limit: input.limit, cursor: decodeCursor(scope, input.cursor) });
  const now = new Date();
  return toPage(scope, rows, input.limit, (row) => toSetupLink(row, now));
}

/** The person whose standing a link acts with: the signed-in admin, or the API key's creator. */
function creatorOf(access: Access): { userId: string; label: string } {
  const { principal } = access;
  if (principal.kind === 'user') {
    return { userId: principal.user.id, label: principal.user.email };
  }
  if (principal.kind === 'api_key') {
    return { userId: principal.apiKey.createdByUserId, label: principal.apiKey.name };
  }
  throw new AppError('forbidden', 'a setup link cannot create another');
}

/**
 * POST /v1/setup-links: a link for one purpose, living `expiresInHours` (at most a day). The
 * answer's URL carries the token and is shown once; svc keeps its SHA-256 only.
 */
export async function createSetupLink(
  deps: { db: Db; publicUrl: string },
  access: Access,
  request: RequestMeta,
  input: TCreateSetupLinkRequest,
): Promise<TSetupLinkWithUrl> {
  const creator = creatorOf(access);
  const token = randomBase62(TOKEN_LENGTH);
  const hours = input.expiresInHours ?? SETUP_LINK_MAX_HOURS;
  const tenantId = access.organization.id;
  return deps.db.transaction(async (tx) => {
    const row = await insertSetupLink(tx, {
      id: newId('setupLink'),
      tenantId,
      purpose: input.purpose,
      label: input.label ?? PURPOSE_LABELS[input.purpose],
      tokenHash: sha256(token),
      // An SSO link reserves its connection's id: the page shows the ACS URL and entity id the
      // IdP needs before the IdP has any metadata to give back.
      targetId: input.purpose === 'sso' ? newId('ssoConnection') : null,
      createdByUserId: creator.userId,
      createdByLabel: creator.label,
      expiresAt: new Date(Date.now() + hours * 3_600_000),
    });
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'setup_link.created',
      target: { type: 'setup_link', id: row.id },
      summary: { purpose: row.purpose, label: row.label, expiresAt: row.expiresAt },
    });
    const url = `${deps.publicUrl}${setupLinkPath(row.id)}?token=${token}`;
    return { ...toSetupLink(row), url };
  });
}

/** POST /v1/setup-links/{id}/revoke: the link stops at once, in the browser that opened it too. */
export async function revokeSetupLink(db: Db, access: Access, request: RequestMeta, input: TSetupLinkRef): Promise<TSetupLink> {
  const link = await recordIn(db, access, findSetupLink, input.id, NOT_FOUND);
  return db.transaction(async (tx) => {
    const row = await revokeRow(tx, { tenantId: access.organization.id, id: link.id, now: new Date() });
    if (!row) {
      throw new AppError('setup_link_already_revoked', 'this setup link was revoked already');
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'setup_link.revoked',
      target: { type: 'setup_link', id: row.id },
      summary: { purpose: row.purpose, label: row.label, wasOpened: row.openedAt !== null },
    });
    return toSetupLink(row);
  });
}

// The hosted page (http/hosted/setup.ts). Its requests carry no route's access: the link's token
// (first open) or its session cookie (after) is the credential, and the access built here is the
// link's: its organization, its creator's standing there, its purpose only.

/** What the hosted page's actions need beyond the database. */
export type SetupPageDeps = { db: Db; publicUrl: string; dns: DnsSettings; sso: SsoDeps };

/** A link whose session cookie matched: the row, and the access its page acts with. */
export type OpenedSetupLink = { link: SetupLinkRow; access: Access };

function refusalOf(row: SetupLinkRow, now: Date): AppError | undefined {
  if (row.revokedAt) {
    return new AppError('setup_link_revoked', "the organization's admin revoked this setup link; ask them for a new one");
  }
  if (row.expiresAt.getTime() <= now.getTime()) {
    return new AppError('setup_link_expired', "this setup link has expired; ask the organization's admin for a new one");
  }
  return undefined;
}

const finders = new WeakMap<object, ReturnType<typeof prepareFindApiKeyCreatorStanding>>();

/**
 * The access a link's page acts with: its organization and its creator's standing there now. A
 * link is an org admin's act, so it stops when its creator is no org admin (nor platform admin)
 * of the organization any more, like a tenant API key (docs/architecture.md section 7: no
 * credential does more than its holder may).
 */
async function accessOfLink(db: Db, row: SetupLinkRow): Promise<Access> {
  const organization = await findOrganizationById(db, row.tenantId);
  if (organization?.kind !== 'tenant') {
    throw new AppError('not_found', NOT_FOUND);
  }
  let find = finders.get(db);
  if (!find) {
    find = prepareFindApiKeyCreatorStanding(db);
    finders.set(db, find);
  }
  const standing = await find({ userId: row.createdByUserId, tenantId: row.tenantId });
  const creator = standing ? creatorAccessOf(standing) : null;
  if (!creator?.isOrgAdmin) {
    throw new AppError(
      'setup_link_revoked',
      'the admin who created this setup link is no longer an admin of the organization; ask an admin for a new one',
    );
  }
  const principal: SetupLinkPrincipal = {
    kind: 'setup_link',
    setupLink: { id: row.id, tenantId: row.tenantId, purpose: row.purpose, label: row.label, createdByUserId: row.createdByUserId },
  };
  return { organization, principal, permissions: creator.permissions as ReadonlySet<Permission>, isOrgAdmin: true };
}

/**
 * The first open of a link: its token matches, and it is unopened, unrevoked and unexpired. Binds
 * the link to a new session token (its SHA-256 stored; the token goes into the opening browser's
 * cookie) and records `setup_link.opened`, all in one statement's race: a second browser, even a
 * simultaneous one, gets 409 `setup_link_used`.
 */
export async function openSetupLinkPage(
  db: Db,
  request: RequestMeta,
  opts: { untrustedId: string; token: string },
): Promise<OpenedSetupLink & { sessionToken: string }> {
  if (!ZSetupLinkId.safeParse(opts.untrustedId).success || !SETUP_LINK_TOKEN_PATTERN.test(opts.token)) {
    throw new AppError('not_found', 'this setup link is not valid; copy the whole link');
  }
  const row = await findSetupLinkByHash(db, { untrustedId: opts.untrustedId, hash: sha256(opts.token), by: 'token' });
  if (!row) {
    throw new AppError('not_found', 'this setup link is not valid; copy the whole link');
  }
  const now = new Date();
  const refusal = refusalOf(row, now);
  if (refusal) {
    throw refusal;
  }
  if (row.openedAt) {
    throw new AppError(
      'setup_link_used',
      "this setup link was opened already, in another browser; ask the organization's admin for a new one",
    );
  }
  const access = await accessOfLink(db, row);
  const sessionToken = randomBase62(TOKEN_LENGTH);
  const opened = await db.transaction(async (tx) => {
    const updated = await openRow(tx, { tenantId: row.tenantId, id: row.id, sessionHash: sha256(sessionToken), now });
    if (!updated) {
      throw new AppError(
        'setup_link_used',
        "this setup link was opened already, in another browser; ask the organization's admin for a new one",
      );
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: updated.tenantId,
      action: 'setup_link.opened',
      target: { type: 'setup_link', id: updated.id },
      summary: { purpose: updated.purpose, label: updated.label },
    });
    return updated;
  });
  return { link: opened, access, sessionToken };
}

/** The link the page's session cookie belongs to, while it lives; 404, 410 otherwise. */
export async function setupLinkOfSession(db: Db, opts: { untrustedId: string; sessionToken: string }): Promise<OpenedSetupLink> {
  if (!ZSetupLinkId.safeParse(opts.untrustedId).success || !SETUP_LINK_TOKEN_PATTERN.test(opts.sessionToken)) {
    throw new AppError('not_found', NOT_FOUND);
  }
  const row = await findSetupLinkByHash(db, { untrustedId: opts.untrustedId, hash: sha256(opts.sessionToken), by: 'session' });
  if (!row) {
    throw new AppError('not_found', NOT_FOUND);
  }
  const refusal = refusalOf(row, new Date());
  if (refusal) {
    throw refusal;
  }
  return { link: row, access: await accessOfLink(db, row) };
}

/** Every action of the page checks the link's purpose first: a domain link makes no SSO connection. */
function assertPurpose(opened: OpenedSetupLink, purpose: TSetupLinkPurpose): void {
  if (opened.link.purpose !== purpose) {
    throw new AppError('forbidden', `this setup link is for ${PURPOSE_LABELS[opened.link.purpose].toLowerCase()} only`);
  }
}

/** The record the link works on, which only the link itself names (never the page's form). */
function targetOf(opened: OpenedSetupLink): string {
  if (!opened.link.targetId) {
    throw new AppError('validation_failed', 'nothing has been set up with this link yet');
  }
  return opened.link.targetId;
}

/** The link's first record: one per link; a second create is refused. */
async function claimTarget(db: DbOrTx, opened: OpenedSetupLink, targetId: string): Promise<void> {
  const row = await setSetupLinkTarget(db, { tenantId: opened.link.tenantId, id: opened.link.id, targetId });
  if (!row) {
    throw new AppError('conflict', 'this setup link has set something up already; reload the page');
  }
  opened.link = row;
}

function assertNoTarget(opened: OpenedSetupLink): void {
  if (opened.link.targetId) {
    throw new AppError('conflict', 'this setup link has set something up already; reload the page');
  }
}

/** What the page shows: the record the link made, if any (read through the same services as /v1). */
export type SetupTarget =
  | { purpose: 'domain'; domain: TDomain | null }
  | { purpose: 'directory'; directory: Awaited<ReturnType<typeof getDirectory>> | null }
  | { purpose: 'sso'; connection: TSsoConnection | null };

export async function setupTargetOf(deps: SetupPageDeps, opened: OpenedSetupLink): Promise<SetupTarget> {
  const id = opened.link.targetId;
  const orNull = async <T>(read: () => Promise<T>): Promise<T | null> => {
    try {
      return await read();
    } catch (error) {
      // Deleted since, in the console: the page shows that nothing is set up (the link stays spent).
      if (error instanceof AppError && error.code === 'not_found') {
        return null;
      }
      throw error;
    }
  };
  switch (opened.link.purpose) {
    case 'domain':
      return { purpose: 'domain', domain: id ? await orNull(() => getDomain(deps.db, opened.access, { id })) : null };
    case 'directory':
      return {
        purpose: 'directory',
        directory: id ? await orNull(() => getDirectory(directoriesDeps(deps), opened.access, { id })) : null,
      };
    case 'sso':
      return { purpose: 'sso', connection: id ? await orNull(() => getSsoConnection(deps.sso, opened.access, { id })) : null };
  }
}

const directoriesDeps = (deps: SetupPageDeps): DirectoriesDeps => ({ db: deps.db, publicUrl: deps.publicUrl });

/** Domain link: adds the domain (pending) through the domains service. */
export async function setupCreateDomain(
  deps: SetupPageDeps,
  opened: OpenedSetupLink,
  request: RequestMeta,
  input: Pick<TCreateDomainRequest, 'domain'>,
): Promise<TDomain> {
  assertPurpose(opened, 'domain');
  assertNoTarget(opened);
  const domain = await createDomain(deps.db, opened.access, request, { domain: input.domain });
  await claimTarget(deps.db, opened, domain.id);
  return domain;
}

/** Domain link: looks up the link's domain's TXT record now. */
export async function setupVerifyDomain(deps: SetupPageDeps, opened: OpenedSetupLink, request: RequestMeta): Promise<TDomain> {
  assertPurpose(opened, 'domain');
  return verifyDomain(deps.db, deps.dns, opened.access, request, { id: targetOf(opened) });
}

/** Directory link: creates the directory (default role org_member); the answer carries its token once. */
export async function setupCreateDirectory(deps: SetupPageDeps, opened: OpenedSetupLink, request: RequestMeta, input: { name: string }) {
  assertPurpose(opened, 'directory');
  assertNoTarget(opened);
  const directory = await createDirectory(directoriesDeps(deps), opened.access, request, { name: input.name });
  await claimTarget(deps.db, opened, directory.id);
  return directory;
}

/** Directory link: a new token for the link's directory (the old one stops), shown once. */
export async function setupRotateDirectoryToken(deps: SetupPageDeps, opened: OpenedSetupLink, request: RequestMeta) {
  assertPurpose(opened, 'directory');
  return rotateDirectoryToken(directoriesDeps(deps), opened.access, request, { id: targetOf(opened) });
}

/**
 * SSO link: the connection's IdP side (SAML metadata pasted or by URL, or OIDC settings). The
 * first save creates the connection; later saves change that one connection's IdP side. Roles and
 * the attribute mapping stay the admin's, in the console.
 */
export async function setupSaveSsoConnection(
  deps: SetupPageDeps,
  opened: OpenedSetupLink,
  request: RequestMeta,
  input: Pick<TCreateSsoConnectionRequest, 'name' | 'protocol' | 'saml' | 'oidc'>,
): Promise<TSsoConnection> {
  assertPurpose(opened, 'sso');
  const id = targetOf(opened);
  const existing = await setupTargetOf(deps, opened);
  if (existing.purpose === 'sso' && existing.connection) {
    const update: TUpdateSsoConnectionRequest = { id, name: input.name, saml: input.saml, oidc: input.oidc };
    return updateSsoConnection(deps.sso, opened.access, request, update);
  }
  try {
    return await createSsoConnection(deps.sso, opened.access, request, input, { id });
  } catch (error) {
    // The same form sent twice at once: the reserved id's primary key lets one through.
    if ((error as { cause?: { code?: string } }).cause?.code === '23505') {
      throw new AppError('conflict', 'the connection was saved already; reload the page');
    }
    throw error;
  }
}

/** SSO link: a test sign-in at the IdP that shows what it sent; nobody is signed in. */
export async function setupTestSsoConnection(deps: SetupPageDeps, opened: OpenedSetupLink): Promise<TSsoTestStart> {
  assertPurpose(opened, 'sso');
  const target = await setupTargetOf(deps, opened);
  if (target.purpose !== 'sso' || !target.connection) {
    throw new AppError('validation_failed', 'save the connection first, then test it');
  }
  return testSsoConnection(deps.sso, opened.access, { id: target.connection.id });
}
