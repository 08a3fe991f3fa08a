import { createHash } from 'node:crypto';
import {
  DIRECTORY_TOKEN_PREFIX,
  scimBaseUrl,
  type TCreateDirectoryRequest,
  type TDeletedDirectory,
  type TDirectory,
  type TDirectoryPage,
  type TDirectoryRef,
  type TDirectoryRequestLog,
  type TDirectoryWithToken,
  type TGroupRole,
  type TListDirectoriesRequest,
  type TUpdateDirectoryRequest,
} from '@svc/contracts/directories';
import { AppError } from '@svc/contracts/errors';
import { newId, randomBase62 } from '@svc/contracts/ids';
import { isSystemRole, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type DirectoryWithCounts,
  deleteDirectory as deleteDirectoryRow,
  findDirectory,
  findDirectoryTenant,
  insertDirectory,
  listDirectories as listDirectoryRows,
  listScimRequests,
  updateDirectory as updateDirectoryRow,
} from '@svc/db/queries/directories';
import { type RecordSource, recordIn } from '../access/access-rule.ts';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable, assertMembershipsManaged } from '../access/authorize.ts';
import { grantsOfRole } from '../access/role-grants.ts';
import { restandDirectory } from '../scim/service.ts';

const DIRECTORY_NOT_FOUND = 'directory not found';

/** Random characters of a directory token: 40 base62 (~238 bits). */
const TOKEN_LENGTH = 40;

export type DirectoriesDeps = { db: Db; publicUrl: string };

const iso = (at: Date | null): string | null => at?.toISOString() ?? null;

function newToken(): { token: string; tokenHash: string; tokenPrefix: string } {
  const token = `${DIRECTORY_TOKEN_PREFIX}${randomBase62(TOKEN_LENGTH)}`;
  return {
    token,
    tokenHash: createHash('sha256').update(token).digest('hex'),
    tokenPrefix: token.slice(0, DIRECTORY_TOKEN_PREFIX.length + 6),
  };
}

/** The answer's view of a row (docs/api.md "Directories"): never the token's hash. */
function toDirectory(publicUrl: string, row: DirectoryWithCounts): TDirectory {
  return {
    id: row.id,
    name: row.name,
    scimBaseUrl: scimBaseUrl(publicUrl, row.id),
    tokenPrefix: row.tokenPrefix,
    defaultRoleKey: row.defaultRoleKey,
    groupRoles: row.groupRoles,
    userCount: row.userCount,
    groupCount: row.groupCount,
    lastRequestAt: iso(row.lastRequestAt),
    tokenRotatedAt: iso(row.tokenRotatedAt),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** A directory's `{id}` routes find their organization from the directory (modules/access/access-rule.ts). */
export const DIRECTORY_RECORD: RecordSource = { tenantOf: findDirectoryTenant, notFound: DIRECTORY_NOT_FOUND };

/** The directory an `{id}` route names, in the organization its access resolved. */
function directoryOf(db: DbOrTx, access: Access, ref: TDirectoryRef): Promise<DirectoryWithCounts> {
  return recordIn(db, access, findDirectory, ref.id, DIRECTORY_NOT_FOUND);
}

/**
 * The roles a directory may give: each must be a role of the organization (400 unknown_role)
 * that the caller could grant themselves (403 forbidden): a directory does no more than its
 * configurer may do directly.
 */
async function assertRolesGrantable(db: DbOrTx, access: Access, roleKeys: string[]): Promise<void> {
  for (const roleKey of new Set(roleKeys)) {
    const permissions = isSystemRole(roleKey)
      ? SYSTEM_ROLES[roleKey].permissions
      : (await grantsOfRole(db, access.organization.id, roleKey))?.control;
    if (!permissions) {
      throw new AppError('unknown_role', `the organization has no role ${roleKey}`);
    }
    assertGrantable(access, permissions, 'a directory cannot give a role that holds permissions you do not hold');
  }
}

const rolesOf = (defaultRoleKey: string, groupRoles: TGroupRole[]) => [defaultRoleKey, ...groupRoles.map((m) => m.roleKey)];

export async function listDirectories(deps: DirectoriesDeps, access: Access, input: TListDirectoriesRequest): Promise<TDirectoryPage> {
  const { organization } = access;
  const scope = `directories:${organization.id}`;
  const rows = await listDirectoryRows(deps.db, {
    tenantId: organization.id,
    limit: input.limit,
    cursor: decodeCursor(scope, input.cursor),
  });
  return toPage(scope, rows, input.limit, (row) => toDirectory(deps.publicUrl, row));
}

export async function getDirectory(deps: DirectoriesDeps, access: Access, input: TDirectoryRef): Promise<TDirectory> {
  return toDirectory(deps.publicUrl, await directoryOf(deps.db, access, input));
}

/** POST /v1/directories: the directory and its bearer token, shown in this answer only. */
export async function createDirectory(
  deps: DirectoriesDeps,
  access: Access,
  request: RequestMeta,
  input: TCreateDirectoryRequest,
): Promise<TDirectoryWithToken> {
  assertMembershipsManaged(access.organization);
  const defaultRoleKey = input.defaultRoleKey ?? 'org_member';
  const groupRoles = input.groupRoles ?? [];
  await assertRolesGrantable(deps.db, access, rolesOf(defaultRoleKey, groupRoles));
  const tenantId = access.organization.id;
  const { token, tokenHash, tokenPrefix } = newToken();
  return deps.db.transaction(async (tx) => {
    const row = await insertDirectory(tx, {
      id: newId('directory'),
      tenantId,
      name: input.name,
      tokenHash,
      tokenPrefix,
      defaultRoleKey,
      groupRoles,
      createdByUserId: access.principal.kind === 'user' ? access.principal.user.id : null,
    });
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'directory.created',
      target: { type: 'directory', id: row.id },
      summary: { name: row.name, defaultRoleKey, groupRoles },
    });
    return { ...toDirectory(deps.publicUrl, { ...row, userCount: 0, groupCount: 0 }), token };
  });
}

/** PATCH /v1/directories/{id}: name, default role, group-to-role mapping; every provisioned person gets the role it now maps to. */
export async function updateDirectory(
  deps: DirectoriesDeps,
  access: Access,
  request: RequestMeta,
  input: TUpdateDirectoryRequest,
): Promise<TDirectory> {
  const directory = await directoryOf(deps.db, access, input);
  const defaultRoleKey = input.defaultRoleKey ?? directory.defaultRoleKey;
  const groupRoles = input.groupRoles ?? directory.groupRoles;
  await assertRolesGrantable(deps.db, access, rolesOf(defaultRoleKey, groupRoles));
  const tenantId = access.organization.id;
  return deps.db.transaction(async (tx) => {
    const row = await updateDirectoryRow(tx, {
      tenantId,
      id: directory.id,
      set: { ...(input.name !== undefined ? { name: input.name } : {}), defaultRoleKey, groupRoles },
      now: new Date(),
    });
    if (!row) {
      throw new AppError('not_found', DIRECTORY_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'directory.updated',
      target: { type: 'directory', id: row.id },
      summary: {
        name: row.name,
        defaultRoleKey,
        groupRoles,
        previous: { name: directory.name, defaultRoleKey: directory.defaultRoleKey, groupRoles: directory.groupRoles },
      },
    });
    const mappingChanged =
      defaultRoleKey !== directory.defaultRoleKey || JSON.stringify(groupRoles) !== JSON.stringify(directory.groupRoles);
    if (mappingChanged) {
      await restandDirectory(tx, row, request);
    }
    const fresh = await findDirectory(tx, { tenantId, id: row.id });
    if (!fresh) {
      throw new AppError('not_found', DIRECTORY_NOT_FOUND);
    }
    return toDirectory(deps.publicUrl, fresh);
  });
}

/** POST /v1/directories/{id}/rotate-token: a new token, shown once; the old one stops at once. */
export async function rotateDirectoryToken(
  deps: DirectoriesDeps,
  access: Access,
  request: RequestMeta,
  input: TDirectoryRef,
): Promise<TDirectoryWithToken> {
  const directory = await directoryOf(deps.db, access, input);
  const { token, tokenHash, tokenPrefix } = newToken();
  const now = new Date();
  return deps.db.transaction(async (tx) => {
    const row = await updateDirectoryRow(tx, {
      tenantId: access.organization.id,
      id: directory.id,
      set: { tokenHash, tokenPrefix, tokenRotatedAt: now },
      now,
    });
    if (!row) {
      throw new AppError('not_found', DIRECTORY_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'directory.token_rotated',
      target: { type: 'directory', id: row.id },
      summary: { name: row.name, tokenPrefix },
    });
    return { ...toDirectory(deps.publicUrl, { ...row, userCount: directory.userCount, groupCount: directory.groupCount }), token };
  });
}

/**
 * DELETE /v1/directories/{id}: the directory, its token and its SCIM users and groups go; the
 * memberships it made stay (an admin removes people in Members).
 */
export async function deleteDirectory(
  deps: DirectoriesDeps,
  access: Access,
  request: RequestMeta,
  input: TDirectoryRef,
): Promise<TDeletedDirectory> {
  const directory = await directoryOf(deps.db, access, input);
  return deps.db.transaction(async (tx) => {
    const row = await deleteDirectoryRow(tx, { tenantId: access.organization.id, id: directory.id });
    if (!row) {
      throw new AppError('not_found', DIRECTORY_NOT_FOUND);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: row.tenantId,
      action: 'directory.deleted',
      target: { type: 'directory', id: row.id },
      summary: { name: row.name, userCount: directory.userCount, groupCount: directory.groupCount },
    });
    return { id: row.id, deleted: true as const };
  });
}

/** GET /v1/directories/{id}/requests: the last SCIM requests, newest first (method, path, status). */
export async function listDirectoryRequests(deps: DirectoriesDeps, access: Access, input: TDirectoryRef): Promise<TDirectoryRequestLog> {
  const directory = await directoryOf(deps.db, access, input);
  const rows = await listScimRequests(deps.db, { tenantId: access.organization.id, directoryId: directory.id });
  return { data: rows.map((r) => ({ at: r.at.toISOString(), method: r.method, path: r.path, status: r.status })), nextCursor: null };
}
