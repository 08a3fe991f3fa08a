import {
  ZCreateRoleRequest,
  ZDeletedRole,
  ZDeleteRoleRequest,
  ZListRolesRequest,
  ZRole,
  ZRolePage,
  ZUpdateRoleRequest,
} from '@svc/contracts/roles';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import { createRole, deleteRole, listRoles, updateRole } from './service.ts';

export const rolesRouter = router({
  list: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/roles',
        tags: ['roles'],
        summary: 'List the system roles, the product roles and the custom roles of an organization',
      },
    })
    .input(ZListRolesRequest)
    .output(ZRolePage)
    .query(({ ctx, input }) => listRoles(ctx.services.db, ctx.principal, input)),
  create: controlProcedure
    .meta({
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
    .output(ZRole)
    .mutation(({ ctx, input }) => createRole(ctx.services.db, ctx.principal, ctx.request, input)),
  update: controlProcedure
    .meta({
      errors: ['system_role_immutable', 'unknown_permission'],
      openapi: { method: 'PATCH', path: '/roles/{id}', tags: ['roles'], summary: 'Rename a custom role or replace its permissions' },
    })
    .input(ZUpdateRoleRequest)
    .output(ZRole)
    .mutation(({ ctx, input }) => updateRole(ctx.services.db, ctx.principal, ctx.request, input)),
  delete: controlProcedure
    .meta({
      errors: ['system_role_immutable', 'role_in_use'],
      openapi: {
        method: 'DELETE',
        path: '/roles/{id}',
        tags: ['roles'],
        summary: 'Delete a custom role that no member or pending invitation holds',
      },
    })
    .input(ZDeleteRoleRequest)
    .output(ZDeletedRole)
    .mutation(({ ctx, input }) => deleteRole(ctx.services.db, ctx.principal, ctx.request, input)),
});
