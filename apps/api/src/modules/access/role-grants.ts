import { isSystemRole, PERMISSIONS, type Permission, SYSTEM_ROLES } from '@svc/contracts/permissions';
import type { DbOrTx } from '@svc/db/client';
import { findRoleKeyRows, type RoleKeyRows } from '@svc/db/queries/role-grants';

/**
 * What a membership's role key grants, in both catalogs (docs/authorization.md):
 * - `control`: svc's control-plane permissions, checked by svc's own API and never put in a token;
 * - `product`: the product's permissions, which the product's tokens, userinfo and the check API
 *   carry.
 * A key resolves, in this order, to a built-in role (org_admin, org_member: control from the
 * catalog, product from its product row), a product role of the platform (product from it,
 * control what org_member holds), or the organization's custom role (both lists of its own).
 */
export type RoleGrants = {
  kind: 'system' | 'product' | 'custom';
  name: string;
  control: readonly Permission[];
  product: readonly string[];
};

const KNOWN: ReadonlySet<string> = new Set(PERMISSIONS);

/** The one resolution rule, from the rows findRoleKeyRows (or a standing read) returned. */
export function grantsOfRoleRows(key: string, rows: RoleKeyRows): RoleGrants | undefined {
  if (isSystemRole(key)) {
    return {
      kind: 'system',
      name: SYSTEM_ROLES[key].name,
      control: SYSTEM_ROLES[key].permissions,
      product: rows.productRole?.permissions ?? [],
    };
  }
  if (rows.productRole && !rows.productRole.builtin) {
    return {
      kind: 'product',
      name: rows.productRole.name,
      control: SYSTEM_ROLES.org_member.permissions,
      product: rows.productRole.permissions,
    };
  }
  if (rows.customRole) {
    return {
      kind: 'custom',
      name: rows.customRole.name,
      control: rows.customRole.permissions.filter((p): p is Permission => KNOWN.has(p)),
      product: rows.customRole.productPermissions,
    };
  }
  return undefined;
}

/** What `roleKey` grants in the organization; undefined when no role has that key there. */
export async function grantsOfRole(db: DbOrTx, tenantId: string, roleKey: string): Promise<RoleGrants | undefined> {
  return grantsOfRoleRows(roleKey, await findRoleKeyRows(db, { tenantId, key: roleKey }));
}
