import { z } from 'zod';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';
import { ZPermission, ZPermissionList, ZRoleKey } from './permissions.ts';

/**
 * The ids of the two system roles. They are not rows (contracts define them, every organization
 * has them), but they have ids so that clients can name them, and PATCH and DELETE answer
 * `system_role_immutable` rather than a puzzling 404.
 */
export const SYSTEM_ROLE_IDS = { org_admin: 'rol_org_admin', org_member: 'rol_org_member' } as const;

/** `rol_` + 20 base62 (a custom role), or a system role's id. Anything else is a 400. */
export const ZRoleId = z.string().regex(/^rol_(?:[0-9A-Za-z]{20}|org_admin|org_member)$/, 'expected a role id (rol_...)');

export const ZRole = z
  .object({
    id: z.string(),
    /** What memberships and invitations name (`roleKey`). */
    key: z.string(),
    name: z.string(),
    /** Sorted, from the permission catalog. */
    permissions: z.array(ZPermission),
    /** Built in (org_admin, org_member): cannot be changed or deleted. */
    system: z.boolean(),
    /** Null for system roles. */
    createdAt: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: 'Role' });
export type TRole = z.infer<typeof ZRole>;

/**
 * GET /v1/roles: the first page starts with the two system roles, then custom roles newest
 * first; `limit` and `cursor` page through the custom roles.
 */
export const ZListRolesRequest = ZListQuery.extend({ organization_slug: ZSlug.optional() });
export type TListRolesRequest = z.infer<typeof ZListRolesRequest>;
export const ZRolePage = ZPage(ZRole).meta({ id: 'RolePage' });

export const ZCreateRoleRequest = z.object({
  organization_slug: ZSlug.optional(),
  key: ZRoleKey,
  name: ZName,
  permissions: ZPermissionList,
});
export type TCreateRoleRequest = z.infer<typeof ZCreateRoleRequest>;

export const ZUpdateRoleRequest = z
  .object({
    id: ZRoleId,
    organization_slug: ZSlug.optional(),
    name: ZName.optional(),
    permissions: ZPermissionList.optional(),
  })
  .refine((v) => v.name !== undefined || v.permissions !== undefined, { message: 'send name or permissions' });
export type TUpdateRoleRequest = z.infer<typeof ZUpdateRoleRequest>;

/** DELETE /v1/roles/{id}?organization_slug=: a custom role that no member or pending invitation holds. */
export const ZDeleteRoleRequest = z.object({ id: ZRoleId, organization_slug: ZSlug.optional() });
export type TDeleteRoleRequest = z.infer<typeof ZDeleteRoleRequest>;
export const ZDeletedRole = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedRole' });
export type TDeletedRole = z.infer<typeof ZDeletedRole>;
