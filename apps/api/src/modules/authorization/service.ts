import {
  reservedPermissionReason,
  type TApiPermission,
  type TApiResource,
  type TCreateApiPermissionRequest,
  type TCreateApiResourceRequest,
  type TCreateProductRoleRequest,
  type TDeleteApiPermissionRequest,
  type TDeleteApiResourceRequest,
  type TDeletedApiPermission,
  type TDeletedApiResource,
  type TDeletedProductRole,
  type TDeleteProductRoleRequest,
  type TGetApiResourceRequest,
  type TListApiResourcesRequest,
  type TListProductRolesRequest,
  type TProductRole,
  type TUpdateApiPermissionRequest,
  type TUpdateApiResourceRequest,
  type TUpdateProductRoleRequest,
} from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { isSystemRole } from '@svc/contracts/permissions';
import type { Db, DbOrTx } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import {
  type ApiResourceWithPermissions,
  apiResourceIdentifierTaken,
  customRoleKeyUsedAnywhere,
  deleteApiPermission as deleteApiPermissionRow,
  deleteApiResource as deleteApiResourceRow,
  deleteProductRole as deleteProductRoleRow,
  findApiResourceById,
  findPlatformOrganizationId,
  findProductRoleById,
  insertApiPermissions,
  insertApiResource,
  insertProductRole,
  listApiResources as listApiResourceRows,
  listBuiltinProductRoles,
  listProductRoles as listProductRoleRows,
  lockExistingPermissions,
  lockResourceIdentifier,
  lockRoleKey,
  type PermissionRemoval,
  type ProductRoleRow,
  removePermissionsEverywhere,
  touchApiResource,
  updateApiPermission as updateApiPermissionRow,
  updateApiResource as updateApiResourceRow,
  updateProductRole as updateProductRoleRow,
} from '@svc/db/queries/authorization';
import { countPendingInvitationsWithRole } from '@svc/db/queries/invitations';
import { countMembershipsWithRole } from '@svc/db/queries/roles';
import { type AuditEntry, type RequestMeta, recordAudit } from '../access/audit.ts';
import type { Access } from '../access/authorize.ts';
import type { UserPrincipal } from '../access/principal.ts';

/**
 * The product's authorization catalog (docs/authorization.md): API resources with their
 * permissions, and product roles. Changes are the platform's: `actor` is a platform admin
 * (platformProcedure has checked it), or null for the operator at the command line (`svc
 * resources ...`), who holds the database. Reads are also open to whoever holds roles.read in an
 * organization, who needs the catalog to build custom roles.
 */
export type CatalogActor = UserPrincipal | null;

// Reading --------------------------------------------------------------------------------------

/**
 * The catalog is the same for every organization, but reading it is a right of an organization's
 * role managers: roles.read in the organization named (or the session's workspace, an API key's
 * own), declared on the read routes (router.ts). A platform admin holds it everywhere. The read
 * functions take that Access, unused beyond proving the route resolved it.
 */

function toApiPermission(p: ApiResourceWithPermissions['permissions'][number]): TApiPermission {
  return { name: p.name, description: p.description, createdAt: p.createdAt.toISOString() };
}

export function toApiResource(row: ApiResourceWithPermissions): TApiResource {
  return {
    id: row.id,
    identifier: row.identifier,
    name: row.name,
    description: row.description,
    permissions: row.permissions.map(toApiPermission),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** One page of API resources, newest first (no caller check: listApiResources and the CLI). */
export async function apiResourcePage(
  db: DbOrTx,
  input: { limit: number; cursor?: string },
): Promise<{ data: TApiResource[]; nextCursor: string | null }> {
  const scope = 'api_resources';
  const rows = await listApiResourceRows(db, { after: decodeCursor(scope, input.cursor), limit: input.limit + 1 });
  return toPage(scope, rows, input.limit, toApiResource);
}

/** GET /v1/api-resources. */
export async function listApiResources(
  db: Db,
  _access: Access,
  input: TListApiResourcesRequest,
): Promise<{ data: TApiResource[]; nextCursor: string | null }> {
  return apiResourcePage(db, input);
}

const RESOURCE_NOT_FOUND = 'API resource not found';

/** GET /v1/api-resources/{id}. */
export async function getApiResource(db: Db, _access: Access, input: TGetApiResourceRequest): Promise<TApiResource> {
  const row = await findApiResourceById(db, { id: input.id });
  if (!row) {
    throw new AppError('not_found', RESOURCE_NOT_FOUND);
  }
  return toApiResource(row);
}

export function toProductRole(row: ProductRoleRow): TProductRole {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    description: row.description,
    permissions: [...row.permissions].sort(),
    builtin: row.builtin,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * One page of product roles: the first starts with the two built-in rows (org_admin, org_member),
 * then the platform's product roles newest first; `limit` and `cursor` page through those.
 */
export async function productRolePage(
  db: DbOrTx,
  input: { limit: number; cursor?: string },
): Promise<{ data: TProductRole[]; nextCursor: string | null }> {
  const scope = 'product_roles';
  const after = decodeCursor(scope, input.cursor);
  const rows = await listProductRoleRows(db, { after, limit: input.limit + 1 });
  const page = toPage(scope, rows, input.limit, toProductRole);
  const builtin = after ? [] : (await listBuiltinProductRoles(db)).map(toProductRole);
  return { data: [...builtin, ...page.data], nextCursor: page.nextCursor };
}

/** GET /v1/product-roles. */
export async function listProductRoles(
  db: Db,
  _access: Access,
  input: TListProductRolesRequest,
): Promise<{ data: TProductRole[]; nextCursor: string | null }> {
  return productRolePage(db, input);
}

// Shared rules -------------------------------------------------------------------------------

/** 400 permission_name_reserved for a name svc keeps for itself (contracts' reservedPermissionReason). */
function assertNotReserved(names: readonly string[]): void {
  for (const name of names) {
    const reason = reservedPermissionReason(name);
    if (reason) {
      throw new AppError('permission_name_reserved', `${name} cannot be a product permission: ${reason}`);
    }
  }
}

/**
 * 400 unknown_permission naming every one of `names` that no API resource declares. Call it in
 * the transaction that stores the names: the ones found stay locked until it ends, so a
 * permission deleted meanwhile cannot be left behind in what this transaction writes.
 */
export async function assertPermissionsExist(tx: DbOrTx, names: readonly string[]): Promise<void> {
  const found = await lockExistingPermissions(tx, names);
  const missing = names.filter((n) => !found.has(n));
  if (missing.length > 0) {
    throw new AppError(
      'unknown_permission',
      `no API resource declares ${missing.join(', ')} (GET /v1/api-resources lists the product's permissions)`,
    );
  }
}

/**
 * The identifiers that mean the same audience as `identifier`: itself and, for an empty path,
 * the other spelling of its trailing slash (`https://api.example` and `https://api.example/`).
 * Contracts' resourceIdentifierProblem admits exactly these two spellings.
 */
function sameAudience(identifier: string): { canonical: string; spellings: string[] } {
  const url = new URL(identifier);
  if (url.pathname !== '/') {
    return { canonical: identifier, spellings: [identifier] };
  }
  const bare = identifier.endsWith('/') ? identifier.slice(0, -1) : identifier;
  return { canonical: bare, spellings: [bare, `${bare}/`] };
}

/**
 * svc's own origin is not an API of the product: a token whose audience is svc itself would be
 * one that svc's endpoints might take for their own.
 */
function assertNotSvc(identifier: string, publicUrl: string): void {
  if (new URL(identifier).origin === new URL(publicUrl).origin) {
    throw new AppError('validation_failed', `${identifier} is svc's own address, not an API of the product: use your API's URL`);
  }
}

/**
 * Platform-level changes (no organization) are audited with tenantId null, like subscription
 * plans, and announced as webhook events to the platform workspace's endpoints (when the
 * workspace exists: the first platform admin's sign-in creates it).
 */
async function recordPlatformChange(
  tx: DbOrTx,
  actor: CatalogActor,
  request: RequestMeta,
  entry: Omit<AuditEntry, 'tenantId'>,
): Promise<void> {
  const platformId = await findPlatformOrganizationId(tx);
  await recordAudit(tx, actor, request, { ...entry, tenantId: null, ...(platformId ? { eventTenantId: platformId } : {}) });
}

/** What an audit entry says of the holders a deleted permission was taken from (only those that had it). */
function removedFrom(removal: PermissionRemoval): Record<string, number> {
  return Object.fromEntries(Object.entries(removal).filter(([, n]) => n > 0));
}

// API resources ------------------------------------------------------------------------------

/**
 * POST /v1/api-resources: a resource and, optionally, its first permissions, in one transaction.
 * 409 resource_identifier_taken when a resource has the identifier (either spelling of an empty
 * path's trailing slash); 400 permission_name_reserved; 409 permission_name_taken when any
 * resource has one of the names (the unique index decides, so a race has one winner).
 */
export async function createApiResource(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TCreateApiResourceRequest,
  opts: { publicUrl: string },
): Promise<TApiResource> {
  assertNotSvc(input.identifier, opts.publicUrl);
  assertNotReserved(input.permissions.map((p) => p.name));
  const { canonical, spellings } = sameAudience(input.identifier);
  return db.transaction(async (tx) => {
    await lockResourceIdentifier(tx, canonical);
    const taken = () => new AppError('resource_identifier_taken', `another API resource has the identifier ${input.identifier}`);
    if (await apiResourceIdentifierTaken(tx, spellings)) {
      throw taken();
    }
    const resource = await insertApiResource(tx, {
      id: newId('apiResource'),
      identifier: input.identifier,
      name: input.name,
      description: input.description,
    });
    if (!resource) {
      throw taken();
    }
    await insertPermissionsOrRefuse(tx, resource.id, input.permissions);
    const row = await findApiResourceById(tx, { id: resource.id });
    if (!row) {
      throw new Error('inserted API resource not found');
    }
    await recordPlatformChange(tx, actor, request, {
      action: 'api_resource.created',
      target: { type: 'api_resource', id: row.id },
      summary: { identifier: row.identifier, name: row.name, permissions: row.permissions.map((p) => p.name) },
    });
    return toApiResource(row);
  });
}

/** Inserts permissions of a resource, or 409 permission_name_taken naming those another resource (or this one) has. */
async function insertPermissionsOrRefuse(
  tx: DbOrTx,
  resourceId: string,
  permissions: readonly { name: string; description: string }[],
): Promise<void> {
  const inserted = new Set(
    await insertApiPermissions(
      tx,
      permissions.map((p) => ({ id: newId('apiPermission'), resourceId, name: p.name, description: p.description })),
    ),
  );
  const taken = permissions.map((p) => p.name).filter((name) => !inserted.has(name));
  if (taken.length > 0) {
    throw new AppError(
      'permission_name_taken',
      `an API resource already has ${taken.join(', ')}: permission names are unique across the product`,
    );
  }
}

/** PATCH /v1/api-resources/{id}: name and description (the identifier is what tokens carry: it never changes). */
export async function updateApiResource(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TUpdateApiResourceRequest,
): Promise<TApiResource> {
  return db.transaction(async (tx) => {
    const before = await findApiResourceById(tx, { id: input.id, forUpdate: true });
    if (!before) {
      throw new AppError('not_found', RESOURCE_NOT_FOUND);
    }
    await updateApiResourceRow(tx, { id: input.id, name: input.name, description: input.description });
    const row = await findApiResourceById(tx, { id: input.id });
    if (!row) {
      throw new AppError('not_found', RESOURCE_NOT_FOUND);
    }
    await recordPlatformChange(tx, actor, request, {
      action: 'api_resource.updated',
      target: { type: 'api_resource', id: row.id },
      summary: {
        identifier: row.identifier,
        changes: {
          ...(input.name !== undefined ? { name: { from: before.name, to: row.name } } : {}),
          ...(input.description !== undefined ? { description: { from: before.description, to: row.description } } : {}),
        },
      },
    });
    return toApiResource(row);
  });
}

/**
 * DELETE /v1/api-resources/{id}: the resource, its permissions, and those names from every
 * product role, custom role and machine client, in one transaction.
 */
export async function deleteApiResource(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TDeleteApiResourceRequest,
): Promise<TDeletedApiResource> {
  return db.transaction(async (tx) => {
    // Locked first: a permission being added meanwhile (which locks the resource too) either
    // commits before the delete reads the permissions, and goes with them from every holder, or
    // waits and finds no resource. Never a permission deleted by the cascade alone, left in roles.
    if (!(await findApiResourceById(tx, { id: input.id, forUpdate: true }))) {
      throw new AppError('not_found', RESOURCE_NOT_FOUND);
    }
    const deleted = await deleteApiResourceRow(tx, input.id);
    if (!deleted) {
      throw new AppError('not_found', RESOURCE_NOT_FOUND);
    }
    const removal = await removePermissionsEverywhere(tx, deleted.permissionNames);
    await recordPlatformChange(tx, actor, request, {
      action: 'api_resource.deleted',
      target: { type: 'api_resource', id: deleted.resource.id },
      summary: {
        identifier: deleted.resource.identifier,
        name: deleted.resource.name,
        permissions: deleted.permissionNames,
        removedFrom: removedFrom(removal),
      },
    });
    return { id: deleted.resource.id, deleted: true as const };
  });
}

/** POST /v1/api-resources/{id}/permissions: one more permission; 201 with it. */
export async function createApiPermission(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TCreateApiPermissionRequest,
): Promise<TApiPermission> {
  assertNotReserved([input.name]);
  return db.transaction(async (tx) => {
    // Locked: a delete of the resource waits, and cannot leave this permission behind it.
    const resource = await findApiResourceById(tx, { id: input.id, forUpdate: true });
    if (!resource) {
      throw new AppError('not_found', RESOURCE_NOT_FOUND);
    }
    await insertPermissionsOrRefuse(tx, resource.id, [{ name: input.name, description: input.description }]);
    await touchApiResource(tx, resource.id);
    const row = await findApiResourceById(tx, { id: resource.id });
    const permission = row?.permissions.find((p) => p.name === input.name);
    if (!permission) {
      throw new Error('inserted permission not found');
    }
    await recordPlatformChange(tx, actor, request, {
      action: 'api_resource.updated',
      target: { type: 'api_resource', id: resource.id },
      summary: {
        identifier: resource.identifier,
        changes: { permissions: { added: [{ name: input.name, description: input.description }] } },
      },
    });
    return toApiPermission(permission);
  });
}

const PERMISSION_NOT_FOUND = 'the API resource has no permission of that name';

/** PATCH /v1/api-resources/{id}/permissions/{name}: its description (the name is what roles and tokens hold). */
export async function updateApiPermission(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TUpdateApiPermissionRequest,
): Promise<TApiPermission> {
  return db.transaction(async (tx) => {
    const resource = await findApiResourceById(tx, { id: input.id, forUpdate: true });
    const before = resource?.permissions.find((p) => p.name === input.name);
    if (!resource || !before) {
      throw new AppError('not_found', resource ? PERMISSION_NOT_FOUND : RESOURCE_NOT_FOUND);
    }
    const row = await updateApiPermissionRow(tx, { resourceId: resource.id, name: input.name, description: input.description });
    if (!row) {
      throw new AppError('not_found', PERMISSION_NOT_FOUND);
    }
    await touchApiResource(tx, resource.id);
    await recordPlatformChange(tx, actor, request, {
      action: 'api_resource.updated',
      target: { type: 'api_resource', id: resource.id },
      summary: {
        identifier: resource.identifier,
        changes: { permissions: { updated: [{ name: row.name, description: { from: before.description, to: row.description } }] } },
      },
    });
    return toApiPermission(row);
  });
}

/**
 * DELETE /v1/api-resources/{id}/permissions/{name}: the permission, and its name from every
 * product role, custom role and machine client, in one transaction.
 */
export async function deleteApiPermission(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TDeleteApiPermissionRequest,
): Promise<TDeletedApiPermission> {
  return db.transaction(async (tx) => {
    const resource = await findApiResourceById(tx, { id: input.id, forUpdate: true });
    if (!resource) {
      throw new AppError('not_found', RESOURCE_NOT_FOUND);
    }
    const row = await deleteApiPermissionRow(tx, { resourceId: resource.id, name: input.name });
    if (!row) {
      throw new AppError('not_found', PERMISSION_NOT_FOUND);
    }
    const removal = await removePermissionsEverywhere(tx, [row.name]);
    await touchApiResource(tx, resource.id);
    await recordPlatformChange(tx, actor, request, {
      action: 'api_resource.updated',
      target: { type: 'api_resource', id: resource.id },
      summary: { identifier: resource.identifier, changes: { permissions: { removed: [row.name] } }, removedFrom: removedFrom(removal) },
    });
    return { id: resource.id, name: row.name, deleted: true as const };
  });
}

// Product roles ------------------------------------------------------------------------------

/**
 * POST /v1/product-roles. The key is free across both key spaces: not a system role's, not
 * another product role's, not any organization's custom role's (409 product_role_key_taken);
 * the roles service refuses a custom role of a product role's key in turn, under the same lock.
 * Permissions must exist (400 unknown_permission).
 */
export async function createProductRole(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TCreateProductRoleRequest,
): Promise<TProductRole> {
  if (isSystemRole(input.key)) {
    throw new AppError(
      'product_role_key_taken',
      `${input.key} is a built-in role: change its product permissions with PATCH /v1/product-roles/prl_${input.key}`,
    );
  }
  return db.transaction(async (tx) => {
    await lockRoleKey(tx, input.key);
    const taken = () => new AppError('product_role_key_taken', `the role key ${input.key} is taken: choose another key`);
    if (await customRoleKeyUsedAnywhere(tx, input.key)) {
      // Both would answer to one key in that organization: one of them would silently lose.
      throw new AppError('product_role_key_taken', `an organization has a custom role ${input.key}: choose another key`);
    }
    await assertPermissionsExist(tx, input.permissions);
    const row = await insertProductRole(tx, {
      id: newId('productRole'),
      key: input.key,
      name: input.name,
      description: input.description,
      permissions: input.permissions,
    });
    if (!row) {
      throw taken();
    }
    await recordPlatformChange(tx, actor, request, {
      action: 'product_role.created',
      target: { type: 'product_role', id: row.id },
      summary: { key: row.key, name: row.name, permissions: row.permissions },
    });
    return toProductRole(row);
  });
}

const PRODUCT_ROLE_NOT_FOUND = 'product role not found';

/**
 * PATCH /v1/product-roles/{id}: name, description, permissions. The built-in rows (org_admin,
 * org_member) take permissions only: their name and description are svc's (409
 * builtin_role_immutable).
 */
export async function updateProductRole(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TUpdateProductRoleRequest,
): Promise<TProductRole> {
  return db.transaction(async (tx) => {
    const before = await findProductRoleById(tx, { id: input.id, forUpdate: true });
    if (!before) {
      throw new AppError('not_found', PRODUCT_ROLE_NOT_FOUND);
    }
    if (before.builtin && (input.name !== undefined || input.description !== undefined)) {
      throw new AppError('builtin_role_immutable', `${before.key} is built in: only its product permissions change`);
    }
    if (input.permissions !== undefined) {
      await assertPermissionsExist(tx, input.permissions);
    }
    const row = await updateProductRoleRow(tx, {
      id: before.id,
      name: input.name,
      description: input.description,
      permissions: input.permissions,
    });
    if (!row) {
      throw new AppError('not_found', PRODUCT_ROLE_NOT_FOUND);
    }
    await recordPlatformChange(tx, actor, request, {
      action: 'product_role.updated',
      target: { type: 'product_role', id: row.id },
      summary: {
        key: row.key,
        changes: {
          ...(input.name !== undefined ? { name: { from: before.name, to: row.name } } : {}),
          ...(input.description !== undefined ? { description: { from: before.description, to: row.description } } : {}),
          ...(input.permissions !== undefined ? { permissions: { from: before.permissions, to: row.permissions } } : {}),
        },
      },
    });
    return toProductRole(row);
  });
}

function counted(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * DELETE /v1/product-roles/{id}: a product role no membership (any status, in any organization)
 * and no pending invitation holds (409 role_in_use, saying how many); the built-in rows never
 * (409 builtin_role_immutable).
 */
export async function deleteProductRole(
  db: Db,
  actor: CatalogActor,
  request: RequestMeta,
  input: TDeleteProductRoleRequest,
  now = new Date(),
): Promise<TDeletedProductRole> {
  return db.transaction(async (tx) => {
    const role = await findProductRoleById(tx, { id: input.id, forUpdate: true });
    if (!role) {
      throw new AppError('not_found', PRODUCT_ROLE_NOT_FOUND);
    }
    if (role.builtin) {
      throw new AppError('builtin_role_immutable', `${role.key} is built in and cannot be deleted`);
    }
    const members = await countMembershipsWithRole(tx, { tenantId: null, roleKey: role.key });
    const invitations = await countPendingInvitationsWithRole(tx, { tenantId: null, roleKey: role.key, now });
    if (members > 0 || invitations > 0) {
      const holders = [
        ...(members > 0 ? [counted(members, 'member', 'members')] : []),
        ...(invitations > 0 ? [counted(invitations, 'pending invitation', 'pending invitations')] : []),
      ].join(' and ');
      throw new AppError(
        'role_in_use',
        `the product role ${role.key} is held by ${holders} across organizations: they need another role before it can be deleted`,
      );
    }
    const row = await deleteProductRoleRow(tx, role.id);
    if (!row) {
      throw new AppError('not_found', PRODUCT_ROLE_NOT_FOUND);
    }
    await recordPlatformChange(tx, actor, request, {
      action: 'product_role.deleted',
      target: { type: 'product_role', id: row.id },
      summary: { key: row.key, name: row.name, permissions: row.permissions },
    });
    return { id: row.id, deleted: true as const };
  });
}
