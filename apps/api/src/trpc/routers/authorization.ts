import {
  ZApiPermission,
  ZApiResource,
  ZApiResourcePage,
  ZCreateApiPermissionRequest,
  ZCreateApiResourceRequest,
  ZCreateProductRoleRequest,
  ZDeleteApiPermissionRequest,
  ZDeleteApiResourceRequest,
  ZDeletedApiPermission,
  ZDeletedApiResource,
  ZDeletedProductRole,
  ZDeleteProductRoleRequest,
  ZGetApiResourceRequest,
  ZListApiResourcesRequest,
  ZListProductRolesRequest,
  ZProductRole,
  ZProductRolePage,
  ZUpdateApiPermissionRequest,
  ZUpdateApiResourceRequest,
  ZUpdateProductRoleRequest,
} from '@svc/contracts/authorization';
import {
  createApiPermission,
  createApiResource,
  createProductRole,
  deleteApiPermission,
  deleteApiResource,
  deleteProductRole,
  getApiResource,
  listApiResources,
  listProductRoles,
  updateApiPermission,
  updateApiResource,
  updateProductRole,
} from '../../modules/authorization/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, platformProcedure } from '../procedures.ts';

const tags = ['authorization'];
const READERS =
  'Platform admins, and whoever holds roles.read in the organization named by organization_slug (default: the session workspace, an API key its own), who build custom roles from it.';
/** The catalog's reads: roles.read in the organization named (or the caller's own). */
const read = { permission: 'roles.read', organization: 'slug' } as const;
const PLATFORM_ONLY = 'Platform admins only (anyone else signed in gets 403 forbidden; an API key 403).';

/** The product's API resources and permissions, and its product roles (docs/authorization.md). */
export const authorizationRouter = router({
  resource: router({
    list: controlProcedure
      .meta({
        access: read,
        openapi: {
          method: 'GET',
          path: '/api-resources',
          tags,
          summary: "List the product's API resources with their permissions",
          description: `${READERS} Newest first.`,
        },
      })
      .input(ZListApiResourcesRequest)
      .use(resolveAccess)
      .output(ZApiResourcePage)
      .query(({ ctx, input }) => listApiResources(ctx.services.db, ctx.access, input)),
    get: controlProcedure
      .meta({
        access: read,
        openapi: {
          method: 'GET',
          path: '/api-resources/{id}',
          tags,
          summary: 'Read an API resource and its permissions',
          description: READERS,
        },
      })
      .input(ZGetApiResourceRequest)
      .use(resolveAccess)
      .output(ZApiResource)
      .query(({ ctx, input }) => getApiResource(ctx.services.db, ctx.access, input)),
    create: platformProcedure
      .meta({
        errors: ['permission_name_reserved', 'permission_name_taken', 'resource_identifier_taken'],
        openapi: {
          method: 'POST',
          path: '/api-resources',
          tags,
          summary: 'Register an API of the product, with its first permissions',
          description: `${PLATFORM_ONLY} The identifier is the RFC 8707 resource and the audience of its access tokens; it never changes.`,
        },
        successStatus: 201,
      })
      .input(ZCreateApiResourceRequest)
      .output(ZApiResource)
      .mutation(({ ctx, input }) =>
        createApiResource(ctx.services.db, ctx.principal, ctx.request, input, { publicUrl: ctx.services.config.publicUrl }),
      ),
    update: platformProcedure
      .meta({
        openapi: {
          method: 'PATCH',
          path: '/api-resources/{id}',
          tags,
          summary: 'Rename an API resource or change its description',
          description: PLATFORM_ONLY,
        },
      })
      .input(ZUpdateApiResourceRequest)
      .output(ZApiResource)
      .mutation(({ ctx, input }) => updateApiResource(ctx.services.db, ctx.principal, ctx.request, input)),
    delete: platformProcedure
      .meta({
        openapi: {
          method: 'DELETE',
          path: '/api-resources/{id}',
          tags,
          summary: 'Delete an API resource and its permissions',
          description: `${PLATFORM_ONLY} Its permissions are taken out of every product role, custom role and machine client in the same transaction.`,
        },
      })
      .input(ZDeleteApiResourceRequest)
      .output(ZDeletedApiResource)
      .mutation(({ ctx, input }) => deleteApiResource(ctx.services.db, ctx.principal, ctx.request, input)),
    permission: router({
      create: platformProcedure
        .meta({
          errors: ['permission_name_reserved', 'permission_name_taken'],
          openapi: {
            method: 'POST',
            path: '/api-resources/{id}/permissions',
            tags,
            summary: 'Add a permission to an API resource',
            description: `${PLATFORM_ONLY} Names are unique across the product.`,
          },
          successStatus: 201,
        })
        .input(ZCreateApiPermissionRequest)
        .output(ZApiPermission)
        .mutation(({ ctx, input }) => createApiPermission(ctx.services.db, ctx.principal, ctx.request, input)),
      update: platformProcedure
        .meta({
          openapi: {
            method: 'PATCH',
            path: '/api-resources/{id}/permissions/{name}',
            tags,
            summary: "Change a permission's description",
            description: PLATFORM_ONLY,
          },
        })
        .input(ZUpdateApiPermissionRequest)
        .output(ZApiPermission)
        .mutation(({ ctx, input }) => updateApiPermission(ctx.services.db, ctx.principal, ctx.request, input)),
      delete: platformProcedure
        .meta({
          openapi: {
            method: 'DELETE',
            path: '/api-resources/{id}/permissions/{name}',
            tags,
            summary: 'Delete a permission of an API resource',
            description: `${PLATFORM_ONLY} It is taken out of every product role, custom role and machine client in the same transaction.`,
          },
        })
        .input(ZDeleteApiPermissionRequest)
        .output(ZDeletedApiPermission)
        .mutation(({ ctx, input }) => deleteApiPermission(ctx.services.db, ctx.principal, ctx.request, input)),
    }),
  }),
  productRole: router({
    list: controlProcedure
      .meta({
        access: read,
        openapi: {
          method: 'GET',
          path: '/product-roles',
          tags,
          summary: 'List the product roles every organization has',
          description: `${READERS} The first page starts with the built-in org_admin and org_member rows (builtin: true), then product roles newest first.`,
        },
      })
      .input(ZListProductRolesRequest)
      .use(resolveAccess)
      .output(ZProductRolePage)
      .query(({ ctx, input }) => listProductRoles(ctx.services.db, ctx.access, input)),
    create: platformProcedure
      .meta({
        errors: ['product_role_key_taken', 'unknown_permission'],
        openapi: {
          method: 'POST',
          path: '/product-roles',
          tags,
          summary: 'Create a product role for every organization',
          description: PLATFORM_ONLY,
        },
        successStatus: 201,
      })
      .input(ZCreateProductRoleRequest)
      .output(ZProductRole)
      .mutation(({ ctx, input }) => createProductRole(ctx.services.db, ctx.principal, ctx.request, input)),
    update: platformProcedure
      .meta({
        errors: ['builtin_role_immutable', 'unknown_permission'],
        openapi: {
          method: 'PATCH',
          path: '/product-roles/{id}',
          tags,
          summary: "Change a product role's name, description or permissions",
          description: `${PLATFORM_ONLY} The built-in rows take permissions only.`,
        },
      })
      .input(ZUpdateProductRoleRequest)
      .output(ZProductRole)
      .mutation(({ ctx, input }) => updateProductRole(ctx.services.db, ctx.principal, ctx.request, input)),
    delete: platformProcedure
      .meta({
        errors: ['builtin_role_immutable', 'role_in_use'],
        openapi: {
          method: 'DELETE',
          path: '/product-roles/{id}',
          tags,
          summary: 'Delete a product role that no member or pending invitation holds',
          description: PLATFORM_ONLY,
        },
      })
      .input(ZDeleteProductRoleRequest)
      .output(ZDeletedProductRole)
      .mutation(({ ctx, input }) => deleteProductRole(ctx.services.db, ctx.principal, ctx.request, input)),
  }),
});
