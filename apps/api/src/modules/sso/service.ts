import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import {
  DEFAULT_OIDC_MAPPING,
  DEFAULT_SAML_MAPPING,
  SAML_METADATA_MAX_BYTES,
  type TCreateSsoConnectionRequest,
  type TDeletedSsoConnection,
  type TListSsoConnectionsRequest,
  type TSamlIdpInput,
  type TSsoConnection,
  type TSsoConnectionPage,
  type TSsoConnectionRef,
  type TSsoTestStart,
  type TUpdateSsoConnectionRequest,
} from '@svc/contracts/sso';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  countSsoSignIns,
  deleteSsoConnection as deleteRow,
  findSsoConnection,
  findSsoConnectionTenant,
  insertSsoConnection,
  listSsoConnections as listRows,
  type SsoConnectionRow,
  updateSsoConnection as updateRow,
} from '@svc/db/queries/sso';
import type { SecretBox } from '@svc/db/secret-box';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable, assertMembershipsManaged } from '../access/authorize.ts';
import { permissionsOfExistingRole } from '../domains/service.ts';
import { beginSsoSignIn } from './flow.ts';
import { spUrlsOf } from './saml.ts';
import { parseIdpMetadata, SamlXmlError, toPem } from './saml-xml.ts';
import { oidcSecretContext } from './secret-context.ts';

const NOT_FOUND = 'SSO connection not found';

/** What the connection routes need beyond the database. */
export type SsoDeps = {
  db: Db;
  publicUrl: string;
  secretBox: SecretBox;
  /** A GET under the webhook sender's address rules (@svc/jobs/webhooks/guarded-fetch). */
  fetch: typeof fetch;
};

const iso = (at: Date | null): string | null => at?.toISOString() ?? null;

/** The answer's view of a row (docs/api.md "SSO connections"): never the client secret. */
export function toSsoConnection(
  publicUrl: string,
  row: SsoConnectionRow,
  signIns: ReadonlyMap<string, number> = new Map(),
): TSsoConnection {
  const sp = spUrlsOf(publicUrl, row.id);
  return {
    id: row.id,
    name: row.name,
    protocol: row.protocol,
    enabled: row.enabled,
    signInUrl: `${publicUrl}/sso/${row.id}/start`,
    saml:
      row.protocol === 'saml'
        ? {
            spEntityId: sp.entityId,
            acsUrl: sp.acsUrl,
            spMetadataUrl: sp.metadataUrl,
            idpEntityId: row.samlIdpEntityId,
            idpSsoUrl: row.samlIdpSsoUrl,
            idpMetadataUrl: row.samlIdpMetadataUrl,
            idpCertificateCount: row.samlIdpCertificates?.length ?? 0,
            allowIdpInitiated: row.samlAllowIdpInitiated,
          }
        : null,
    oidc:
      row.protocol === 'oidc'
        ? {
            issuer: row.oidcIssuer ?? '',
            clientId: row.oidcClientId ?? '',
            clientSecretSet: row.oidcClientSecretSealed !== null,
            redirectUri: `${publicUrl}/sso/oidc/${row.id}/callback`,
          }
        : null,
    attributeMapping: row.attributeMapping,
    defaultRoleKey: row.defaultRoleKey,
    groupRoles: row.groupRoles,
    lastSignInAt: iso(row.lastSignInAt),
    signInsLast30Days: signIns.get(row.id) ?? 0,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const SIGN_IN_WINDOW_MS = 30 * 24 * 3_600_000;

/** Sign-ins of the last 30 days per connection of the organization (docs/enterprise.md "Sign-ins of a connection"). */
function recentSignIns(db: DbOrTx, tenantId: string): Promise<Map<string, number>> {
  return countSsoSignIns(db, { tenantId, since: new Date(Date.now() - SIGN_IN_WINDOW_MS) });
}

/** A connection's `{id}` routes find their organization from the connection (modules/access/access-rule.ts). */
export const SSO_CONNECTION_RECORD: RecordSource = { tenantOf: findSsoConnectionTenant, notFound: NOT_FOUND };

/** The connection an `{id}` route names, in the organization its access resolved. */
function connectionOf(db: DbOrTx, access: Access, ref: TSsoConnectionRef): Promise<SsoConnectionRow> {
  return recordIn(db, access, findSsoConnection, ref.id, NOT_FOUND);
}

/** Roles a connection gives must exist and be grantable by the caller (the invitation rule). */
async function checkRoles(db: DbOrTx, access: Access, roleKeys: string[]): Promise<void> {
  for (const roleKey of new Set(roleKeys)) {
    const permissions = await permissionsOfExistingRole(db, access.organization.id, roleKey);
    if (!permissions) {
      throw new AppError('unknown_role', `the organization has no role ${roleKey}`);
    }
    assertGrantable(access, permissions, 'a connection cannot give a role that holds permissions you do not hold');
  }
}

/** Reads IdP metadata from a URL under the webhook sender's address rules, size-bounded. */
async function fetchMetadata(deps: SsoDeps, url: string): Promise<string> {
  let response: Response;
  try {
    response = await deps.fetch(url, {
      signal: AbortSignal.timeout(5_000),
      headers: { accept: 'application/samlmetadata+xml, application/xml' },
    });
  } catch {
    throw new AppError('sso_metadata_unreachable', 'the metadata URL could not be fetched (refused address, timeout or connection error)');
  }
  if (response.status !== 200 || !response.body) {
    throw new AppError('sso_metadata_unreachable', `the metadata URL answered ${response.status}, not 200`);
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    size += value.byteLength;
    if (size > SAML_METADATA_MAX_BYTES) {
      await reader.cancel();
      throw new AppError('sso_metadata_unreachable', `the metadata is larger than ${SAML_METADATA_MAX_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The SAML columns from the input: metadata (pasted or by URL) first, then fields by hand. */
async function samlColumns(deps: SsoDeps, input: TSamlIdpInput, current?: SsoConnectionRow) {
  let entityId = input.entityId ?? current?.samlIdpEntityId ?? null;
  let ssoUrl = input.ssoUrl ?? current?.samlIdpSsoUrl ?? null;
  let certificates = current?.samlIdpCertificates ?? null;
  let metadataUrl = current?.samlIdpMetadataUrl ?? null;
  const xml = input.metadataXml ?? (input.metadataUrl ? await fetchMetadata(deps, input.metadataUrl) : undefined);
  try {
    if (xml !== undefined) {
      const metadata = parseIdpMetadata(xml);
      entityId = input.entityId ?? metadata.entityId;
      ssoUrl = input.ssoUrl ?? metadata.ssoUrl;
      certificates = metadata.certificates;
      metadataUrl = input.metadataUrl ?? null;
    }
    if (input.certificates) {
      certificates = input.certificates.map(toPem);
    }
  } catch (error) {
    if (error instanceof SamlXmlError) {
      throw new AppError('sso_metadata_invalid', error.message);
    }
    throw error;
  }
  if (!entityId || !ssoUrl || !certificates?.length) {
    throw new AppError('sso_connection_incomplete', "a SAML connection needs the IdP's entity id, sign-in URL and signing certificate");
  }
  return {
    samlIdpEntityId: entityId,
    samlIdpSsoUrl: ssoUrl,
    samlIdpCertificates: certificates,
    samlIdpMetadataUrl: metadataUrl,
    samlAllowIdpInitiated: input.allowIdpInitiated ?? current?.samlAllowIdpInitiated ?? false,
  };
}

export async function listSsoConnections(deps: SsoDeps, access: Access, input: TListSsoConnectionsRequest): Promise<TSsoConnectionPage> {
  const { organization } = access;
  const scope = `sso-connections:${organization.id}`;
  const [rows, signIns] = await Promise.all([
    listRows(deps.db, { tenantId: organization.id, limit: input.limit, cursor: decodeCursor(scope, input.cursor) }),
    recentSignIns(deps.db, organization.id),
  ]);
  return toPage(scope, rows, input.limit, (row) => toSsoConnection(deps.publicUrl, row, signIns));
}

export async function getSsoConnection(deps: SsoDeps, access: Access, input: TSsoConnectionRef): Promise<TSsoConnection> {
  const row = await connectionOf(deps.db, access, input);
  return toSsoConnection(deps.publicUrl, row, await recentSignIns(deps.db, access.organization.id));
}

/** What the audit entry and event say about a connection (never the secret). */
function summaryOf(row: SsoConnectionRow): Record<string, unknown> {
  return {
    name: row.name,
    protocol: row.protocol,
    enabled: row.enabled,
    idpEntityId: row.samlIdpEntityId ?? row.oidcIssuer,
    defaultRoleKey: row.defaultRoleKey,
    groupRoles: row.groupRoles,
    allowIdpInitiated: row.samlAllowIdpInitiated,
  };
}

/**
 * POST /v1/sso-connections. SAML: the IdP's metadata (pasted, or fetched from its URL under the
 * webhook sender's address rules), or its entity id, sign-in URL and certificate by hand; OIDC:
 * the issuer, client id and secret (sealed). Roles must exist and be grantable by the caller.
 */
export async function createSsoConnection(
  deps: SsoDeps,
  access: Access,
  request: RequestMeta,
  input: TCreateSsoConnectionRequest,
  /** `id`: the id a setup link reserved, so that its page could show the SP URLs before this. */
  opts: { id?: string } = {},
): Promise<TSsoConnection> {
  assertMembershipsManaged(access.organization);
  const defaultRoleKey = input.defaultRoleKey ?? 'org_member';
  const groupRoles = input.groupRoles ?? [];
  await checkRoles(deps.db, access, [defaultRoleKey, ...groupRoles.map((g) => g.roleKey)]);
  const id = opts.id ?? newId('ssoConnection');
  const defaults = input.protocol === 'saml' ? DEFAULT_SAML_MAPPING : DEFAULT_OIDC_MAPPING;
  let protocolColumns: Partial<SsoConnectionRow>;
  if (input.protocol === 'saml' && input.saml) {
    protocolColumns = await samlColumns(deps, input.saml);
  } else if (input.oidc) {
    if (!input.oidc.clientSecret) {
      throw new AppError('sso_connection_incomplete', 'an OIDC connection needs the client secret the IdP issued');
    }
    protocolColumns = {
      oidcIssuer: input.oidc.issuer,
      oidcClientId: input.oidc.clientId,
      oidcClientSecretSealed: deps.secretBox.seal(input.oidc.clientSecret, oidcSecretContext(id)),
    };
  } else {
    throw new AppError('sso_connection_incomplete', 'send `saml` or `oidc`');
  }
  const tenantId = access.organization.id;
  return deps.db.transaction(async (tx) => {
    const row = await insertSsoConnection(tx, {
      id,
      tenantId,
      name: input.name,
      protocol: input.protocol,
      enabled: input.enabled ?? true,
      ...protocolColumns,
      attributeMapping: { ...defaults, ...input.attributeMapping },
      defaultRoleKey,
      groupRoles,
    });
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'sso.connection_created',
      target: { type: 'sso_connection', id: row.id },
      summary: summaryOf(row),
    });
    return toSsoConnection(deps.publicUrl, row);
  });
}

/** PATCH /v1/sso-connections/{id}: what is sent changes (the protocol stays). */
export async function updateSsoConnection(
  deps: SsoDeps,
  access: Access,
  request: RequestMeta,
  input: TUpdateSsoConnectionRequest,
): Promise<TSsoConnection> {
  const connection = await connectionOf(deps.db, access, input);
  const roles = [...(input.defaultRoleKey ? [input.defaultRoleKey] : []), ...(input.groupRoles ?? []).map((g) => g.roleKey)];
  await checkRoles(deps.db, access, roles);
  let protocolColumns: Partial<SsoConnectionRow> = {};
  if (input.saml) {
    if (connection.protocol !== 'saml') {
      throw new AppError('validation_failed', 'this is an OIDC connection: send `oidc`');
    }
    protocolColumns = await samlColumns(deps, input.saml, connection);
  }
  if (input.oidc) {
    if (connection.protocol !== 'oidc') {
      throw new AppError('validation_failed', 'this is a SAML connection: send `saml`');
    }
    protocolColumns = {
      ...(input.oidc.issuer ? { oidcIssuer: input.oidc.issuer } : {}),
      ...(input.oidc.clientId ? { oidcClientId: input.oidc.clientId } : {}),
      ...(input.oidc.clientSecret
        ? { oidcClientSecretSealed: deps.secretBox.seal(input.oidc.clientSecret, oidcSecretContext(connection.id)) }
        : {}),
    };
  }
  return deps.db.transaction(async (tx) => {
    const row = await updateRow(tx, {
      tenantId: access.organization.id,
      id: connection.id,
      set: {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
        ...(input.attributeMapping ? { attributeMapping: { ...connection.attributeMapping, ...input.attributeMapping } } : {}),
        ...(input.defaultRoleKey ? { defaultRoleKey: input.defaultRoleKey } : {}),
        ...(input.groupRoles ? { groupRoles: input.groupRoles } : {}),
        ...protocolColumns,
        updatedAt: new Date(),
      },
    });
    if (!row) {
      throw new AppError('not_found', NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'sso.connection_updated',
      target: { type: 'sso_connection', id: row.id },
      summary: { ...summaryOf(row), previous: summaryOf(connection), clientSecretChanged: Boolean(input.oidc?.clientSecret) },
    });
    return toSsoConnection(deps.publicUrl, row, await recentSignIns(tx, row.tenantId));
  });
}

export async function deleteSsoConnection(
  deps: SsoDeps,
  access: Access,
  request: RequestMeta,
  input: TSsoConnectionRef,
): Promise<TDeletedSsoConnection> {
  const connection = await connectionOf(deps.db, access, input);
  return deps.db.transaction(async (tx) => {
    const row = await deleteRow(tx, { tenantId: access.organization.id, id: connection.id });
    if (!row) {
      throw new AppError('not_found', NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'sso.connection_deleted',
      target: { type: 'sso_connection', id: row.id },
      summary: summaryOf(row),
    });
    return { id: row.id, deleted: true as const };
  });
}

/**
 * POST /v1/sso-connections/{id}/test: a real sign-in at the IdP whose end shows what the IdP sent
 * (mapped and raw) instead of signing anyone in or adding anyone.
 */
export async function testSsoConnection(deps: SsoDeps, access: Access, input: TSsoConnectionRef): Promise<TSsoTestStart> {
  const connection = await connectionOf(deps.db, access, input);
  if (!connection.enabled) {
    throw new AppError('validation_failed', 'enable the connection to test it');
  }
  const started = await beginSsoSignIn(deps, connection, { returnTo: '/auth/console', applicationId: null, test: true });
  return { url: started.url, expiresAt: started.expiresAt.toISOString() };
}
