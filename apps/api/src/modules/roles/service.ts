import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { isSystemRole, PERMISSIONS, type Permission, SYSTEM_ROLES, type SystemRoleKey } from '@svc/contracts/permissions';
import {
  SYSTEM_ROLE_IDS,
  type TCreateRoleRequest,
  type TDeletedRole,
  type TDeleteRoleRequest,
  type TListRolesRequest,
  type TRole,
  type TUpdateRoleRequest,
} from '@svc/contracts/roles';
import type { Db } from '@svc/db/client';
import { decodeCursor, toPage } from '@svc/db/pagination';
import { findProductRoleByKey, listBuiltinProductRoles, lockRoleKey } from '@svc/db/queries/authorization';
import { countAutoJoinDomainsWithRole } from '@svc/db/queries/domains';
import { countPendingInvitationsWithRole } from '@svc/db/queries/invitations';
import {
  countMembershipsWithRole,
  deleteRole as deleteRoleRow,
  findRoleById,
  insertRole,
  type ListedRoleRow,
  listRoles as listRoleRows,
  type RoleRow,
  updateRole as updateRoleRow,
} from '@svc/db/queries/roles';
import { type RequestMeta, recordAudit } from '../access/audit.ts';
import { type Access, assertGrantable } from '../access/authorize.ts';
import { assertProductGrantable, heldProductPermissions } from '../access/product-grants.ts';
import { assertPermissionsExist } from '../authorization/service.ts';

const KNOWN = new Set<string>(PERMISSIONS);

/** A system role, with the product permissions its built-in product row gives it. */
function systemRole(key: SystemRoleKey, productPermissions: readonly string[]): TRole {
  const role = SYSTEM_ROLES[key];
  return {
    id: SYSTEM_ROLE_IDS[key],
    key,
    name: role.name,
    permissions: [...role.permissions].sort(),
    productPermissions: [...productPermissions].sort(),
    system: true,
    kind: 'system',
    createdAt: null,
    updatedAt: null,
  };
}

export function toRole(row: RoleRow): TRole {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    // Names never leave the catalog (docs/api.md); a stray one would fail the answer's schema.
    permissions: row.permissions.filter((p): p is Permission => KNOWN.has(p)),
    productPermissions: row.productPermissions,
    system: false,
    kind: 'custom',
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * A row of the list: a custom role, or a product role of the platform, which an organization
 * assigns but never changes (`system: true`), holding what org_member holds in svc's control
 * plane (access/role-grants.ts).
 */
function toListedRole(row: ListedRoleRow): TRole {
  if (row.kind === 'custom') {
    return toRole(row);
  }
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    permissions: [...SYSTEM_ROLES.org_member.permissions].sort(),
    productPermissions: row.productPermissions,
    system: true,
    kind: 'product',
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * GET /v1/roles: the two system roles first (first page only, with their product permissions),
 * then the product roles and the organization's custom roles together, newest first.
 */
export async function listRoles(
  db: Db,
  { organization }: Access,
  input: TListRolesRequest,
): Promise<{ data: TRole[]; nextCursor: string | null }> {
  const scope = `roles:${organization.id}`;
  const after = decodeCursor(scope, input.cursor);
  const rows = await listRoleRows(db, { tenantId: organization.id, after, limit: input.limit + 1 });
  const page = toPage(scope, rows, input.limit, toListedRole);
  if (after) {
    return page;
  }
  const builtin = new Map((await listBuiltinProductRoles(db)).map((r) => [r.key, r.permissions]));
  return {
    data: [
      systemRole('org_admin', builtin.get('org_admin') ?? []),
      systemRole('org_member', builtin.get('org_member') ?? []),
      ...page.data,
    ],
    nextCursor: page.nextCursor,
  };
}

/** Product roles are the platform's: an organization assigns them but never changes them here. */
function assertNotProductRole(id: string, verb: 'changed' | 'deleted'): void {
  if (id.startsWith('prl_')) {
    throw new AppError(
      'system_role_immutable',
      `product roles are defined by the platform and cannot be ${verb} by an organization; create a custom role`,
    );
  }
}

/**
 * POST /v1/roles: a custom role (409 role_key_taken for a taken key, a system role's or a product
 * role's). Its product permissions must exist (400 unknown_permission) and be held by the caller
 * (403: access/product-grants.ts).
 */
export async function createRole(db: Db, access: Access, request: RequestMeta, input: TCreateRoleRequest): Promise<TRole> {
  if (isSystemRole(input.key)) {
    throw new AppError('role_key_taken', `${input.key} is a system role`);
  }
  assertGrantable(access, input.permissions);
  const heldProduct = await heldProductPermissions(db, access);
  return db.transaction(async (tx) => {
    // The product roles' key space is shared by every organization (authorization/service.ts
    // takes the same lock before it checks the custom roles').
    await lockRoleKey(tx, input.key);
    if (await findProductRoleByKey(tx, input.key)) {
      throw new AppError('role_key_taken', `${input.key} is a product role every organization has: assign it, or choose another key`);
    }
    const productPermissions = input.productPermissions ?? [];
    await assertPermissionsExist(tx, productPermissions);
    assertProductGrantable(heldProduct, productPermissions);
    const row = await insertRole(tx, {
      id: newId('role'),
      tenantId: access.organization.id,
      key: input.key,
      name: input.name,
      permissions: input.permissions,
      productPermissions,
    });
    if (!row) {
      throw new AppError('role_key_taken', `the organization already has a role ${input.key}`);
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'role.created',
      target: { type: 'role', id: row.id },
      summary: { key: row.key, name: row.name, permissions: row.permissions, productPermissions: row.productPermissions },
    });
    return toRole(row);
  });
}

/**
 * PATCH /v1/roles/{id}: rename a custom role or replace its permissions (either catalog); system
 * and product roles never change here.
 */
export async function updateRole(db: Db, access: Access, request: RequestMeta, input: TUpdateRoleRequest): Promise<TRole> {
  if (input.id === SYSTEM_ROLE_IDS.org_admin || input.id === SYSTEM_ROLE_IDS.org_member) {
    throw new AppError('system_role_immutable', 'org_admin and org_member are built in and cannot be changed; create a custom role');
  }
  assertNotProductRole(input.id, 'changed');
  if (input.permissions) {
    assertGrantable(access, input.permissions);
  }
  const heldProduct = await heldProductPermissions(db, access);
  return db.transaction(async (tx) => {
    const before = await findRoleById(tx, { tenantId: access.organization.id, id: input.id });
    // Within the authorized organization only: another organization's role id is simply not here.
    if (!before) {
      throw new AppError('not_found', 'role not found');
    }
    // A role above the caller is not the caller's to rename or reshape (its members hold more).
    assertGrantable(access, before.permissions, 'you cannot change a role that holds permissions you do not hold');
    assertProductGrantable(
      heldProduct,
      before.productPermissions,
      'you cannot change a role that holds product permissions you do not hold',
    );
    if (input.productPermissions !== undefined) {
      await assertPermissionsExist(tx, input.productPermissions);
      assertProductGrantable(heldProduct, input.productPermissions);
    }
    const row = await updateRoleRow(tx, {
      tenantId: access.organization.id,
      id: input.id,
      name: input.name,
      permissions: input.permissions,
      productPermissions: input.productPermissions,
    });
    if (!row) {
      throw new AppError('not_found', 'role not found');
    }
    await recordAudit(tx, access.principal, request, {
      tenantId: access.organization.id,
      action: 'role.updated',
      target: { type: 'role', id: row.id },
      summary: {
        key: row.key,
        changes: {
          ...(input.name !== undefined ? { name: { from: before.name, to: row.name } } : {}),
          ...(input.permissions !== undefined ? { permissions: { from: before.permissions, to: row.permissions } } : {}),
          ...(input.productPermissions !== undefined
            ? { productPermissions: { from: before.productPermissions, to: row.productPermissions } }
            : {}),
        },
      },
    });
    return toRole(row);
  });
}

function counted(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * DELETE /v1/roles/{id}: a custom role nobody holds. System roles are 409 system_role_immutable;
 * a role still held by a membership (any status) or a pending invitation is 409 role_in_use,
 * saying how many: give them another role (or revoke the invitations) first.
 */
export async function deleteRole(
  db: Db,
  access: Access,
  request: RequestMeta,
  input: TDeleteRoleRequest,
  now = new Date(),
): Promise<TDeletedRole> {
  if (input.id === SYSTEM_ROLE_IDS.org_admin || input.id === SYSTEM_ROLE_IDS.org_member) {
    throw new AppError('system_role_immutable', 'org_admin and org_member are built in and cannot be deleted');
  }
  assertNotProductRole(input.id, 'deleted');
  const heldProduct = await heldProductPermissions(db, access);
  const tenantId = access.organization.id;
  return db.transaction(async (tx) => {
    const role = await findRoleById(tx, { tenantId, id: input.id });
    // Within the authorized organization only: another organization's role id is simply not here.
    if (!role) {
      throw new AppError('not_found', 'role not found');
    }
    // As for a change: a role above the caller is not the caller's to delete.
    assertGrantable(access, role.permissions, 'you cannot delete a role that holds permissions you do not hold');
    assertProductGrantable(heldProduct, role.productPermissions, 'you cannot delete a role that holds product permissions you do not hold');
    const members = await countMembershipsWithRole(tx, { tenantId, roleKey: role.key });
    const invitations = await countPendingInvitationsWithRole(tx, { tenantId, roleKey: role.key, now });
    if (members > 0 || invitations > 0) {
      const holders = [
        ...(members > 0 ? [counted(members, 'member', 'members')] : []),
        ...(invitations > 0 ? [counted(invitations, 'pending invitation', 'pending invitations')] : []),
      ].join(' and ');
      const remedy =
        members > 0 && invitations > 0
          ? 'give the members another role and revoke the invitations'
          : members > 0
            ? 'give them another role'
            : 'revoke them';
      throw new AppError('role_in_use', `the role ${role.key} is held by ${holders}: ${remedy} before deleting it`);
    }
    // A domain's auto-join would otherwise hand out a role that no longer exists (docs/enterprise.md "Domains").
    const domains = await countAutoJoinDomainsWithRole(tx, { tenantId, roleKey: role.key });
    if (domains > 0) {
      throw new AppError(
        'role_in_use',
        `the role ${role.key} is the auto-join role of ${counted(domains, 'domain', 'domains')}: change their policy before deleting it`,
      );
    }
    const row = await deleteRoleRow(tx, { tenantId, id: role.id });
    if (!row) {
      throw new AppError('not_found', 'role not found');
    }
    await recordAudit(tx, access.principal, request, {
      tenantId,
      action: 'role.deleted',
      target: { type: 'role', id: row.id },
      summary: { key: row.key, name: row.name, permissions: row.permissions, productPermissions: row.productPermissions },
    });
    return { id: row.id, deleted: true as const };
  });
}
