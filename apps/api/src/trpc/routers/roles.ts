import {
  ZCreateRoleRequest,
  ZDeletedRole,
  ZDeleteRoleRequest,
  ZListRolesRequest,
  ZRole,
  ZRolePage,
  ZUpdateRoleRequest,
} from '@svc/contracts/roles';
import { createRole, deleteRole, listRoles, updateRole } from '../../modules/roles/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

/**
 * Reading roles needs roles.read, changing them roles.manage as an org admin, in the organization
 * named by organization_slug (or the caller's own); a role id is looked up within it.
 */
const read = { permission: 'roles.read', organization: 'slug' } as const;
const manage = { permission: 'roles.manage', organization: 'slug', adminOnly: true } as const;

export const rolesRouter = router({
  list: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/roles',
        tags: ['roles'],
        summary: 'List the system roles, the product roles and the custom roles of an organization',
      },
    })
    .input(ZListRolesRequest)
    .use(resolveAccess)
    .output(ZRolePage)
    .query(({ ctx, input }) => listRoles(ctx.services.db, ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      errors: ['role_key_taken', 'unknown_permission'],
      openapi: {
        method: 'POST',
        path: '/roles',
        tags: ['roles'],
        summary: "Create a custom role from svc's permission catalog and the product's permissions",
      },
      successStatus: 201,
    })
    .input(ZCreateRoleRequest)
    .use(resolveAccess)
    .output(ZRole)
    .mutation(({ ctx, input }) => createRole(ctx.services.db, ctx.access, ctx.request, input)),
  update: controlProcedure
    .meta({
      access: manage,
      errors: ['system_role_immutable', 'unknown_permission'],
      openapi: { method: 'PATCH', path: '/roles/{id}', tags: ['roles'], summary: 'Rename a custom role or replace its permissions' },
    })
    .input(ZUpdateRoleRequest)
    .use(resolveAccess)
    .output(ZRole)
    .mutation(({ ctx, input }) => updateRole(ctx.services.db, ctx.access, ctx.request, input)),
  delete: controlProcedure
    .meta({
      access: manage,
      errors: ['system_role_immutable', 'role_in_use'],
      openapi: {
        method: 'DELETE',
        path: '/roles/{id}',
        tags: ['roles'],
        summary: 'Delete a custom role that no member or pending invitation holds',
      },
    })
    .input(ZDeleteRoleRequest)
    .use(resolveAccess)
    .output(ZDeletedRole)
    .mutation(({ ctx, input }) => deleteRole(ctx.services.db, ctx.access, ctx.request, input)),
});
