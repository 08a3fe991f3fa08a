import {
  checkLogoUrl,
  type TApplication,
  type TApplicationPage,
  type TApplicationRef,
  type TApplicationWithSecret,
  type TCreateApplicationRequest,
  type TJwkSet,
  type TListApplicationsRequest,
  type TProductPermissionCatalog,
  type TSetApplicationStatusRequest,
  type TUpdateApplicationRequest,
} from '@svc/contracts/applications';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type ApplicationRow,
  type ApplicationWithOrganization,
  findApplication,
  findApplicationsByIdOrSlug,
  findApplicationTenantId,
  findKeylessApplication,
  insertApplication,
  listApplications,
  setApplicationSecret,
  setApplicationStatus,
  updateApplicationSettings,
} from '@svc/db/queries/applications';
import { listProductPermissionOptions } from '@svc/db/queries/machine-clients';
import { ensureOrganization, type OrganizationRow } from '@svc/db/queries/organizations';
import { type AddressPolicy, checkUrlWithoutDns } from '@svc/jobs/webhooks/ssrf';
import { type AccessRule, accessOf, type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';
import type { Principal } from '../access/principal.ts';
import { endSessions } from '../session-store/end.ts';
import type { ApplicationCache } from './cache.ts';
import { newPublishableKey, newSecretKey } from './keys.ts';
import {
  assertFitsClientType,
  assertHoldsMachinePermissions,
  assertNotAboveCaller,
  jwksSummary,
  type MachineColumns,
  type MachineInput,
  machineColumnsOf,
  NOT_MACHINE,
} from './machine.ts';

const KEYLESS_ORGANIZATION_SLUG = 'keyless-development';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/;

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/g, '');
  return slug || 'app';
}

export type CreatedApplication = {
  application: ApplicationRow;
  organization: OrganizationRow;
  publishableKey: string;
  /** Raw secret: returned this once, never stored. */
  secretKey: string;
};

/**
 * Creates an application (and its organization when missing). The slug is the name's slug,
 * suffixed -2, -3, ... when the organization already has it. An operator's act (the command
 * line), outside any organization's permissions: a machine client's permissions must exist, and
 * nothing more is asked of who grants them. `urlPolicy` judges a machine client's jwksUri
 * (default: public addresses only).
 */
export async function createApplication(
  db: Db,
  input: MachineInput & {
    organizationSlug: string;
    organizationName?: string;
    name: string;
    logoUrl?: string | null;
    status?: ApplicationRow['status'];
    redirectUrls?: string[];
    allowedOrigins?: string[];
    postLogoutRedirectUrls?: string[];
    backchannelLogoutUrl?: string | null;
    clientType?: ApplicationRow['clientType'];
    signInAudience?: ApplicationRow['signInAudience'];
    urlPolicy?: AddressPolicy;
  },
): Promise<CreatedApplication> {
  if (!SLUG_PATTERN.test(input.organizationSlug)) {
    throw new AppError('validation_failed', 'organization slug must be 1-48 of a-z, 0-9 and inner dashes');
  }
  if (input.organizationSlug === KEYLESS_ORGANIZATION_SLUG) {
    // The keyless workspace is public (anyone may read its config): no customer app belongs there.
    throw new AppError('validation_failed', `organization slug ${KEYLESS_ORGANIZATION_SLUG} is reserved`);
  }
  const name = input.name.trim();
  if (name.length === 0 || name.length > 100) {
    throw new AppError('validation_failed', 'application name must be 1-100 characters');
  }
  const logoUrl = logoUrlOf(input.logoUrl);
  const clientType = input.clientType ?? 'confidential';
  assertFitsClientType(clientType, input);
  const machine =
    clientType === 'machine' ? await machineColumnsOf(db, undefined, input, input.urlPolicy ?? { allowPrivate: false }) : NOT_MACHINE;
  return db.transaction(async (tx) => {
    const organization = await ensureOrganization(tx, {
      id: newId('organization'),
      slug: input.organizationSlug,
      name: input.organizationName ?? input.organizationSlug,
    });
    const created = await insertWithFreshKeys(tx, {
      tenantId: organization.id,
      name,
      logoUrl,
      status: input.status,
      redirectUrls: input.redirectUrls,
      allowedOrigins: input.allowedOrigins,
      postLogoutRedirectUrls: input.postLogoutRedirectUrls,
      backchannelLogoutUrl: input.backchannelLogoutUrl,
      clientType,
      signInAudience: input.signInAudience,
      machine,
    });
    return { ...created, organization };
  });
}

/**
 * Inserts an application of `tenantId` with a fresh publishable key and secret key. With `slug`
 * that exact slug (409 when the organization has it); without, the name's slug, suffixed -2,
 * -3, ... when taken.
 */
async function insertWithFreshKeys(
  tx: DbOrTx,
  input: {
    tenantId: string;
    name: string;
    slug?: string;
    logoUrl?: string | null;
    status?: ApplicationRow['status'];
    redirectUrls?: string[];
    allowedOrigins?: string[];
    postLogoutRedirectUrls?: string[];
    backchannelLogoutUrl?: string | null;
    clientType?: ApplicationRow['clientType'];
    signInAudience?: ApplicationRow['signInAudience'];
    oauth?: ApplicationRow['oauth'];
    machine: MachineColumns;
  },
): Promise<{ application: ApplicationRow; publishableKey: string; secretKey: string }> {
  const base = input.slug ?? slugify(input.name);
  const attempts = input.slug === undefined ? 50 : 1;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const slug = attempt === 1 ? base : `${base.slice(0, 44)}-${attempt}`;
    const publishableKey = newPublishableKey();
    const secret = newSecretKey();
    const id = newId('application');
    const inserted = await insertApplication(tx, {
      id,
      tenantId: input.tenantId,
      slug,
      name: input.name,
      logoUrl: input.logoUrl ?? null,
      status: input.status ?? 'active',
      publishableKey,
      secretKeyHash: secret.secretKeyHash,
      secretKeyPrefix: secret.secretKeyPrefix,
      redirectUrls: input.redirectUrls ?? [],
      allowedOrigins: input.allowedOrigins ?? [],
      postLogoutRedirectUrls: input.postLogoutRedirectUrls ?? [],
      backchannelLogoutUrl: input.backchannelLogoutUrl ?? null,
      clientType: input.clientType ?? 'confidential',
      signInAudience: input.signInAudience ?? 'anyone',
      oauth: input.oauth ?? {},
      ...input.machine,
    });
    if (inserted) {
      const application = await findApplication(tx, { tenantId: input.tenantId, id });
      if (!application) {
        throw new Error('inserted application not found');
      }
      return { application, publishableKey, secretKey: secret.secretKey };
    }
  }
  throw new AppError(
    'conflict',
    input.slug === undefined ? `could not find a free slug for ${input.name}` : `the slug ${input.slug} is taken in this organization`,
  );
}

/** Resolves an operator's `<id-or-slug>` to exactly one application, or explains why not. */
export async function resolveApplication(db: DbOrTx, idOrSlug: string, organizationSlug?: string): Promise<ApplicationWithOrganization> {
  const rows = await findApplicationsByIdOrSlug(db, { idOrSlug, organizationSlug });
  const exact = rows.find((r) => r.application.id === idOrSlug);
  if (exact) {
    return exact;
  }
  if (rows.length === 0) {
    throw new AppError('application_not_found', `no application ${idOrSlug}`);
  }
  if (rows.length > 1) {
    const orgs = rows.map((r) => r.organization.slug).join(', ');
    throw new AppError('conflict', `slug ${idOrSlug} exists in several organizations (${orgs}); pass --org or the id`);
  }
  return rows[0] as ApplicationWithOrganization;
}

/**
 * Enables or disables an application (the API route and `svc apps disable`). Disabling ends every
 * sign-in to it in the same transaction (endSessions: its grants and tokens go, back-channel
 * logout is queued); the svc sessions themselves stand.
 */
export async function changeApplicationStatus(
  db: DbOrTx,
  target: ApplicationWithOrganization,
  status: ApplicationRow['status'],
): Promise<ApplicationRow> {
  return db.transaction(async (tx) => {
    const row = await setApplicationStatus(tx, { tenantId: target.organization.id, id: target.application.id, status });
    if (!row) {
      throw new AppError('application_not_found', `no application ${target.application.id}`);
    }
    if (status === 'disabled') {
      await endSessions(tx, { kind: 'application_disabled', applicationId: row.id });
    }
    return row;
  });
}

/** Replaces the secret key; the old one stops working at once (row update + NOTIFY). */
export async function rotateApplicationSecret(
  db: DbOrTx,
  target: ApplicationWithOrganization,
): Promise<{ application: ApplicationRow; secretKey: string }> {
  const secret = newSecretKey();
  const row = await setApplicationSecret(db, {
    tenantId: target.organization.id,
    id: target.application.id,
    secretKeyHash: secret.secretKeyHash,
    secretKeyPrefix: secret.secretKeyPrefix,
  });
  if (!row) {
    throw new AppError('application_not_found', `no application ${target.application.id}`);
  }
  return { application: row, secretKey: secret.secretKey };
}

/**
 * The shared keyless-development application, created on first use. Concurrent first uses (any
 * number of processes) converge on one row: a partial unique index allows one keyless app.
 */
export async function getOrCreateKeylessApplication(db: Db): Promise<ApplicationWithOrganization> {
  const existing = await findKeylessApplication(db);
  if (existing) {
    return existing;
  }
  await db.transaction(async (tx) => {
    const organization = await ensureOrganization(tx, {
      id: newId('organization'),
      slug: KEYLESS_ORGANIZATION_SLUG,
      name: 'Keyless development',
      kind: 'keyless',
    });
    // Nobody ever learns this secret: the keyless app serves client config only.
    const secret = newSecretKey();
    await insertApplication(tx, {
      id: newId('application'),
      tenantId: organization.id,
      slug: 'keyless-development',
      name: 'Keyless development app',
      publishableKey: newPublishableKey(),
      secretKeyHash: secret.secretKeyHash,
      secretKeyPrefix: secret.secretKeyPrefix,
      isKeyless: true,
      // Its secret is never shown: it signs in as a public client (PKCE), on any loopback port.
      clientType: 'public',
    });
  });
  const created = await findKeylessApplication(db);
  if (!created) {
    throw new Error('keyless application missing after creation');
  }
  return created;
}

// Control plane (/v1/applications): every function authorizes first, every mutation writes one
// audit entry in its own transaction, and nothing returned carries the secret key's hash.

const NOT_FOUND = 'application not found';

/**
 * What a mutation that changes a cached application needs: it drops this process's cached copy
 * itself before answering (deterministic for the caller's next request here); other processes
 * drop theirs when the row's change notification arrives.
 */
type CacheAndDb = { db: Db; applications: Pick<ApplicationCache, 'invalidateApplication'> };

/**
 * What creating or changing an application needs besides the database: the address rule a
 * machine client's jwksUri and a back-channel logout URL are checked with (WEBHOOK_ALLOW_PRIVATE's,
 * the same as webhook URLs).
 */
type UrlPolicy = { urlPolicy: AddressPolicy };

/** The API view of an application (never the secret key or its hash). */
function toApplication(row: ApplicationRow): TApplication {
  if (row.isKeyless) {
    throw new Error('the keyless development application is never shown');
  }
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    logoUrl: row.logoUrl,
    status: row.status,
    publishableKey: row.publishableKey,
    secretKeyPrefix: row.secretKeyPrefix,
    redirectUrls: row.redirectUrls,
    allowedOrigins: row.allowedOrigins,
    postLogoutRedirectUrls: row.postLogoutRedirectUrls,
    backchannelLogoutUrl: row.backchannelLogoutUrl,
    clientType: row.clientType,
    signInAudience: row.signInAudience,
    oauth: { productionProvider: row.oauth.productionProvider ?? null },
    tokenEndpointAuthMethod: row.tokenEndpointAuthMethod,
    // Stored as checkJwks reduced it: public members only.
    jwks: row.jwks as TJwkSet | null,
    jwksUri: row.jwksUri,
    permissions: row.machinePermissions,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * A logo URL from a request as it is stored (checkLogoUrl's form); null clears it, undefined
 * leaves it. Anything checkLogoUrl refuses is 400 logo_url_invalid with its reason.
 */
function logoUrlOf(raw: string | null | undefined): string | null | undefined {
  if (raw === undefined || raw === null) {
    return raw;
  }
  const checked = checkLogoUrl(raw);
  if ('error' in checked) {
    throw new AppError('logo_url_invalid', checked.error);
  }
  return checked.value;
}

/**
 * A back-channel logout URL from a request, checked against the address rules the sender applies
 * (packages/jobs webhooks/ssrf.ts, one table): an IP literal in any notation and a known metadata
 * or loopback name are judged now, 400 backchannel_logout_url_not_allowed; a host name's
 * addresses are checked at every send, as for a webhook (DNS need not answer when it is saved).
 * Null clears it, undefined leaves it.
 */
function backchannelLogoutUrlOf(raw: string | null | undefined, urlPolicy: AddressPolicy): string | null | undefined {
  if (raw === undefined || raw === null) {
    return raw;
  }
  const checked = checkUrlWithoutDns(raw, urlPolicy);
  if ('problem' in checked) {
    throw new AppError(
      checked.problem.code === 'webhook_url_not_allowed' ? 'backchannel_logout_url_not_allowed' : 'validation_failed',
      checked.problem.code === 'webhook_url_not_allowed'
        ? 'the back-channel logout URL points at a private, loopback, link-local, reserved or cloud metadata address; svc sends logout tokens to public addresses only'
        : checked.problem.message,
    );
  }
  return raw;
}

function oauthSettings(input: TCreateApplicationRequest['oauth']): ApplicationRow['oauth'] {
  return input?.productionProvider ? { productionProvider: input.productionProvider } : {};
}

/**
 * An application's `{id}` routes find their organization from the application:
 * `organization_slug` when named, else the one the id claims (modules/access/access-rule.ts). An
 * unknown id, an id of an organization the caller cannot see, an id outside the named
 * organization and the keyless application all answer the same 404.
 */
export const APPLICATION_RECORD: RecordSource = {
  tenantOf: (db, { untrustedId }) => findApplicationTenantId(db, { id: untrustedId }),
  notFound: NOT_FOUND,
};

/** What reading one application needs: the rule of `GET /v1/applications/{id}` (router.ts). */
export const READ_APPLICATION: AccessRule = { permission: 'applications.read', organization: APPLICATION_RECORD };

/** The application an `{id}` route names, in the organization its access resolved. */
function applicationOf(db: DbOrTx, access: Access, ref: TApplicationRef): Promise<ApplicationRow> {
  return recordIn(db, access, findApplication, ref.id, NOT_FOUND);
}

export async function listApplicationsOf(db: Db, { organization }: Access, input: TListApplicationsRequest): Promise<TApplicationPage> {
  const scope = `applications:${organization.id}:${input.status ?? '*'}`;
  const rows = await listApplications(db, {
    tenantId: organization.id,
    status: input.status,
    cursor: decodeCursor(scope, input.cursor),
    limit: input.limit,
  });
  return toPage(scope, rows, input.limit, toApplication);
}

export async function getApplicationIn(db: Db, access: Access, input: TApplicationRef): Promise<TApplication> {
  return toApplication(await applicationOf(db, access, input));
}

/**
 * An application read outside a procedure (the console's try sign-in, a plain route): the
 * caller's access resolved by the route's own rule, then the same read.
 */
export async function getApplication(db: Db, principal: Principal, input: TApplicationRef): Promise<TApplication> {
  return getApplicationIn(db, await accessOf(db, principal, READ_APPLICATION, input), input);
}

/** Creates an application with fresh keys; the secret key is in the answer this once. */
export async function createApplicationFor(
  { db, urlPolicy }: { db: Db } & UrlPolicy,
  access: Access,
  request: RequestMeta,
  input: TCreateApplicationRequest,
): Promise<TApplicationWithSecret> {
  const { organization } = access;
  const logoUrl = logoUrlOf(input.logoUrl);
  const backchannelLogoutUrl = backchannelLogoutUrlOf(input.backchannelLogoutUrl, urlPolicy);
  const clientType = input.clientType ?? 'confidential';
  assertFitsClientType(clientType, input);
  let machine = NOT_MACHINE;
  if (clientType === 'machine') {
    machine = await machineColumnsOf(db, undefined, input, urlPolicy);
    await assertHoldsMachinePermissions(db, access, machine.machinePermissions);
  }
  return db.transaction(async (tx) => {
    const created = await insertWithFreshKeys(tx, {
      tenantId: organization.id,
      name: input.name,
      slug: input.slug,
      logoUrl,
      redirectUrls: input.redirectUrls,
      allowedOrigins: input.allowedOrigins,
      postLogoutRedirectUrls: input.postLogoutRedirectUrls,
      backchannelLogoutUrl,
      clientType,
      signInAudience: input.signInAudience,
      oauth: oauthSettings(input.oauth),
      machine,
    });
    const { application } = created;
    await recordAudit(tx, access.principal, request, {
      tenantId: organization.id,
      action: 'application.created',
      target: { type: 'application', id: application.id },
      summary: await createdSummary(application),
    });
    return { application: toApplication(application), secretKey: created.secretKey };
  });
}

/**
 * What the `application.created` audit entry records of a new application (created here, or
 * claimed from keyless mode: claim.ts adds how). Secrets never: the secret key's hash stays out,
 * and a JWK Set is summarised.
 */
export async function createdSummary(application: ApplicationRow): Promise<Record<string, unknown>> {
  return {
    name: application.name,
    slug: application.slug,
    logoUrl: application.logoUrl,
    publishableKey: application.publishableKey,
    redirectUrls: application.redirectUrls,
    allowedOrigins: application.allowedOrigins,
    postLogoutRedirectUrls: application.postLogoutRedirectUrls,
    backchannelLogoutUrl: application.backchannelLogoutUrl,
    clientType: application.clientType,
    signInAudience: application.signInAudience,
    oauth: application.oauth,
    // Named so the audit log's secret-name mask (which takes any field named like a token) keeps it.
    authMethod: application.tokenEndpointAuthMethod,
    jwks: await jwksSummary(application.jwks),
    jwksUri: application.jwksUri,
    permissions: application.machinePermissions,
  };
}

/**
 * Changes name, logo, allowlists, OpenID Connect client settings, the production OAuth provider
 * or a machine client's authentication and permissions; lists are replaced whole. A machine
 * client stays one and no other application becomes one (400 client_type_mismatch); a machine
 * client holding permissions beyond the caller's is not the caller's to change (403). The change
 * notification reaches every process's client registry.
 */
export async function updateApplication(
  services: CacheAndDb & UrlPolicy,
  access: Access,
  request: RequestMeta,
  input: TUpdateApplicationRequest,
): Promise<TApplication> {
  const application = await applicationOf(services.db, access, input);
  const wasMachine = application.clientType === 'machine';
  if (input.clientType !== undefined && input.clientType !== application.clientType && (wasMachine || input.clientType === 'machine')) {
    throw new AppError(
      'client_type_mismatch',
      wasMachine
        ? 'a machine client stays a machine client: create another application for people to sign in to'
        : 'an application people sign in to cannot become a machine client: create a machine client (clientType machine)',
    );
  }
  assertFitsClientType(application.clientType, input);
  let machine: MachineColumns | undefined;
  if (wasMachine) {
    // Changing it (its keys above all) would hand the caller a credential above their own.
    await assertNotAboveCaller(
      services.db,
      access,
      application,
      'you cannot change a machine client that holds permissions you do not hold',
    );
    machine = await machineColumnsOf(services.db, application, input, services.urlPolicy);
    if (input.permissions !== undefined) {
      await assertHoldsMachinePermissions(services.db, access, input.permissions);
    }
  }
  const changes = {
    name: input.name,
    logoUrl: logoUrlOf(input.logoUrl),
    redirectUrls: input.redirectUrls,
    allowedOrigins: input.allowedOrigins,
    postLogoutRedirectUrls: input.postLogoutRedirectUrls,
    backchannelLogoutUrl: backchannelLogoutUrlOf(input.backchannelLogoutUrl, services.urlPolicy),
    clientType: input.clientType,
    signInAudience: input.signInAudience,
    oauth: input.oauth === undefined ? undefined : oauthSettings(input.oauth),
  };
  const result = await services.db.transaction(async (tx) => {
    // The update fires the change notification: every process drops its cached copy, so hosted
    // sign-in checks return_to against the new allowlist at once, and the OpenID Provider sees a
    // machine client's new keys and permissions.
    const updated = await updateApplicationSettings(tx, {
      tenantId: access.organization.id,
      id: application.id,
      ...changes,
      ...(machine ?? {}),
    });
    if (!updated) {
      throw new AppError('not_found', NOT_FOUND);
    }
    const machineChanges = machine ? await machineChangesOf(application, machine) : { changes: {} };
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'application.updated',
      target: { type: 'application', id: application.id },
      summary: {
        changes: { ...changes, ...machineChanges.changes },
        ...(machineChanges.previous ? { previous: machineChanges.previous } : {}),
      },
    });
    return toApplication(updated);
  });
  services.applications.invalidateApplication(result.id);
  return result;
}

type MachineChanges = { changes: Record<string, unknown>; previous?: { permissions: string[] } };

/**
 * What an update changed of a machine client's own settings, for its audit entry and webhook
 * event: each changed field's new value (keys by kid and thumbprint, never more), and the
 * permissions before when they changed.
 */
async function machineChangesOf(before: MachineColumns, after: MachineColumns): Promise<MachineChanges> {
  const changes: Record<string, unknown> = {};
  if (after.tokenEndpointAuthMethod !== before.tokenEndpointAuthMethod) {
    // As in the created entry: `authMethod`, which the audit log's secret-name mask leaves readable.
    changes.authMethod = after.tokenEndpointAuthMethod;
  }
  if (JSON.stringify(after.jwks) !== JSON.stringify(before.jwks)) {
    changes.jwks = await jwksSummary(after.jwks);
  }
  if (after.jwksUri !== before.jwksUri) {
    changes.jwksUri = after.jwksUri;
  }
  const permissionsChanged = after.machinePermissions.join(' ') !== before.machinePermissions.join(' ');
  if (permissionsChanged) {
    changes.permissions = after.machinePermissions;
  }
  return permissionsChanged ? { changes, previous: { permissions: before.machinePermissions } } : { changes };
}

/** Enables or disables an application; public and backend routes follow on every process at once. */
export async function setApplicationStatusFor(
  services: CacheAndDb,
  access: Access,
  request: RequestMeta,
  input: TSetApplicationStatusRequest,
): Promise<TApplication> {
  const application = await applicationOf(services.db, access, input);
  if (application.clientType === 'machine' && input.status === 'active') {
    // Disabling takes power away, so anyone who manages applications may (a leaked machine
    // client is stopped by whoever sees it first); enabling gives it back.
    await assertNotAboveCaller(
      services.db,
      access,
      application,
      'you cannot enable a machine client that holds permissions you do not hold',
    );
  }
  const result = await services.db.transaction(async (tx) => {
    const updated = await changeApplicationStatus(tx, { application, organization: access.organization }, input.status);
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'application.updated',
      target: { type: 'application', id: application.id },
      summary: { changes: { status: input.status }, previous: { status: application.status } },
    });
    return toApplication(updated);
  });
  services.applications.invalidateApplication(result.id);
  return result;
}

/** A new secret key, shown once; the old one is refused on every process from the commit on. */
export async function rotateApplicationSecretFor(
  services: CacheAndDb,
  access: Access,
  request: RequestMeta,
  input: TApplicationRef,
): Promise<TApplicationWithSecret> {
  const application = await applicationOf(services.db, access, input);
  if (application.clientType === 'machine') {
    // The new secret would be a credential holding more than the caller does.
    await assertNotAboveCaller(
      services.db,
      access,
      application,
      'you cannot rotate the secret of a machine client that holds permissions you do not hold',
    );
  }
  const result = await services.db.transaction(async (tx) => {
    const rotated = await rotateApplicationSecret(tx, { application, organization: access.organization });
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'application.secret_rotated',
      target: { type: 'application', id: application.id },
      summary: { rotated: 'secret key' },
    });
    return { application: toApplication(rotated.application), secretKey: rotated.secretKey };
  });
  services.applications.invalidateApplication(result.application.id);
  return result;
}

/**
 * The product's permissions a machine client may be granted, with their API resource: readable by
 * whoever may read the organization's applications (and by platform admins).
 */
export async function listProductPermissionsFor(db: Db, _access: Access): Promise<TProductPermissionCatalog> {
  const rows = await listProductPermissionOptions(db);
  return {
    data: rows.map((r) => ({
      name: r.name,
      description: r.description,
      resource: { identifier: r.resourceIdentifier, name: r.resourceName },
    })),
    nextCursor: null,
  };
}
