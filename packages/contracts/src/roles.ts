import { z } from 'zod';
import { ZProductPermissionList } from './authorization.ts';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';
import { ZPermission, ZPermissionList, ZRoleKey } from './permissions.ts';

/**
 * The ids of the two system roles. They are not rows (contracts define them, every organization
 * has them), but they have ids so that clients can name them, and PATCH and DELETE answer
 * `system_role_immutable` rather than a puzzling 404.
 */
export const SYSTEM_ROLE_IDS = { org_admin: 'rol_org_admin', org_member: 'rol_org_member' } as const;

/**
 * `rol_` + 20 base62 (a custom role), a system role's id, or a product role's (`prl_`: the
 * platform's, listed here so an organization can assign them, changed only at
 * /v1/product-roles). Anything else is a 400.
 */
export const ZRoleId = z
  .string()
  .regex(/^(?:rol_(?:[0-9A-Za-z]{20}|org_admin|org_member)|prl_[0-9A-Za-z]{20})$/, 'expected a role id (rol_...)');

/**
 * Where a role comes from: `system` (org_admin, org_member), `product` (a product role the
 * platform defines for every organization), `custom` (the organization's own).
 */
export const ZRoleKind = z.enum(['system', 'product', 'custom']);
export type TRoleKind = z.infer<typeof ZRoleKind>;

export const ZRole = z
  .object({
    id: z.string(),
    /** What memberships and invitations name (`roleKey`). */
    key: z.string(),
    name: z.string(),
    /** svc's control-plane permissions, sorted, from the permission catalog (a product role: what org_member holds). */
    permissions: z.array(ZPermission),
    /** The product's permissions (API resources' permission names), sorted: what the product's tokens and checks carry. */
    productPermissions: z.array(z.string()),
    /** Built in (org_admin, org_member): cannot be changed or deleted. Product roles cannot be changed here either. */
    system: z.boolean(),
    kind: ZRoleKind,
    /** Null for system roles. */
    createdAt: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: 'Role' });
export type TRole = z.infer<typeof ZRole>;

/**
 * GET /v1/roles: the first page starts with the two system roles, then product roles and custom
 * roles together, newest first; `limit` and `cursor` page through those.
 */
export const ZListRolesRequest = ZListQuery.extend({ organization_slug: ZSlug.optional() });
export type TListRolesRequest = z.infer<typeof ZListRolesRequest>;
export const ZRolePage = ZPage(ZRole).meta({ id: 'RolePage' });

export const ZCreateRoleRequest = z.object({
  organization_slug: ZSlug.optional(),
  key: ZRoleKey,
  name: ZName,
  permissions: ZPermissionList,
  /**
   * Product permissions (names some API resource declares); never more than the caller holds.
   * Optional rather than defaulted, so a form's input and output types stay the same shape.
   */
  productPermissions: ZProductPermissionList.optional(),
});
export type TCreateRoleRequest = z.infer<typeof ZCreateRoleRequest>;

export const ZUpdateRoleRequest = z
  .object({
    id: ZRoleId,
    organization_slug: ZSlug.optional(),
    name: ZName.optional(),
    permissions: ZPermissionList.optional(),
    productPermissions: ZProductPermissionList.optional(),
  })
  .refine((v) => v.name !== undefined || v.permissions !== undefined || v.productPermissions !== undefined, {
    message: 'send name, permissions or productPermissions',
  });
export type TUpdateRoleRequest = z.infer<typeof ZUpdateRoleRequest>;

/** DELETE /v1/roles/{id}?organization_slug=: a custom role that no member or pending invitation holds. */
export const ZDeleteRoleRequest = z.object({ id: ZRoleId, organization_slug: ZSlug.optional() });
export type TDeleteRoleRequest = z.infer<typeof ZDeleteRoleRequest>;
export const ZDeletedRole = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedRole' });
export type TDeletedRole = z.infer<typeof ZDeletedRole>;
