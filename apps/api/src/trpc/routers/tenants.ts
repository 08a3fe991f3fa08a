import { ZPermissionCatalog } from '@svc/contracts/permissions';
import {
  ZCheckPermissionRequest,
  ZCheckPermissionResponse,
  ZCreateTenantRequest,
  ZDeleteTenantRequest,
  ZDeleteTenantResponse,
  ZGetTenantRequest,
  ZListTenantMembersRequest,
  ZListTenantsRequest,
  ZTenant,
  ZTenantMemberPage,
  ZTenantOverview,
  ZTenantOverviewRequest,
  ZTenantPage,
  ZUpdateTenantRequest,
} from '@svc/contracts/tenants';
import { z } from 'zod';
import {
  checkPermission,
  createTenant,
  deleteTenant,
  getTenant,
  getTenantOverview,
  LIST_TENANTS_ACCESS,
  listPermissions,
  listTenantMembers,
  listTenants,
  updateTenant,
} from '../../modules/tenants/service.ts';
import { accessOr, resolveAccess, resolveAccessOrOwnRule } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, userControlProcedure } from '../procedures.ts';

/**
 * The `/tenants/{id}` routes act on the organization `id` names. Listing is not declared: a
 * person sees their own organizations (a platform admin every one) with no permission to check,
 * and only an API key is authorized, in its own organization (listTenants).
 */
const read = { permission: 'tenant.read', organization: 'id' } as const;

export const tenantsRouter = router({
  list: controlProcedure
    .meta({
      access: LIST_TENANTS_ACCESS,
      openapi: {
        method: 'GET',
        path: '/tenants',
        tags: ['tenants'],
        summary: "The caller's organizations, optionally searched by name or slug",
        description:
          "A user's organizations; every organization for a platform admin, each with its summary (member count, subscription plan and status); a tenant API key's own. `q` keeps those whose name or slug contains it, ignoring case.",
      },
    })
    .input(ZListTenantsRequest)
    .use(resolveAccessOrOwnRule)
    .output(ZTenantPage)
    .query(({ ctx, input }) => listTenants(ctx.services.db, accessOr(ctx.access, ctx.principal, 'user'), input)),
  create: userControlProcedure
    .meta({
      errors: ['conflict'],
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/tenants',
        tags: ['tenants'],
        summary: 'Create an organization (the caller becomes its org admin)',
      },
    })
    .input(ZCreateTenantRequest)
    .output(ZTenant)
    .mutation(({ ctx, input }) => createTenant(ctx.services.db, ctx.principal, ctx.request, input)),
  get: controlProcedure
    .meta({ access: read, openapi: { method: 'GET', path: '/tenants/{id}', tags: ['tenants'], summary: 'Read an organization' } })
    .input(ZGetTenantRequest)
    .use(resolveAccess)
    .output(ZTenant)
    .query(({ ctx }) => getTenant(ctx.access)),
  update: controlProcedure
    .meta({
      access: { permission: 'tenant.update', organization: 'id' },
      errors: ['conflict'],
      openapi: { method: 'PATCH', path: '/tenants/{id}', tags: ['tenants'], summary: 'Rename an organization or change its slug' },
    })
    .input(ZUpdateTenantRequest)
    .use(resolveAccess)
    .output(ZTenant)
    .mutation(({ ctx, input }) => updateTenant(ctx.services.db, ctx.access, ctx.request, input)),
  delete: userControlProcedure
    .meta({
      access: { permission: 'tenant.delete', organization: 'id', adminOnly: true },
      errors: ['conflict'],
      openapi: { method: 'DELETE', path: '/tenants/{id}', tags: ['tenants'], summary: 'Delete an organization and everything it owns' },
    })
    .input(ZDeleteTenantRequest)
    .use(resolveAccess)
    .output(ZDeleteTenantResponse)
    .mutation(({ ctx }) => deleteTenant(ctx.services.db, ctx.access, ctx.request)),
  overview: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/tenants/{id}/overview',
        tags: ['tenants'],
        summary: "An organization's counts, this month's usage and its getting-started checklist",
      },
    })
    .input(ZTenantOverviewRequest)
    .use(resolveAccess)
    .output(ZTenantOverview)
    .query(({ ctx }) => getTenantOverview(ctx.services.db, ctx.access)),
  member: router({
    list: controlProcedure
      .meta({
        access: { permission: 'members.read', organization: 'id' },
        openapi: { method: 'GET', path: '/tenants/{id}/members', tags: ['tenants'], summary: "An organization's members and roles" },
      })
      .input(ZListTenantMembersRequest)
      .use(resolveAccess)
      .output(ZTenantMemberPage)
      .query(({ ctx, input }) => listTenantMembers(ctx.services.db, ctx.access, input)),
  }),
  permission: router({
    list: controlProcedure
      .meta({ openapi: { method: 'GET', path: '/permissions', tags: ['permissions'], summary: 'The permission catalog' } })
      .input(z.void())
      .output(ZPermissionCatalog)
      .query(() => listPermissions()),
    check: controlProcedure
      .meta({
        access: read,
        openapi: {
          method: 'GET',
          path: '/tenants/{id}/permissions/check',
          tags: ['permissions'],
          summary: 'Whether the caller holds a permission in an organization',
        },
      })
      .input(ZCheckPermissionRequest)
      .use(resolveAccess)
      .output(ZCheckPermissionResponse)
      .query(({ ctx, input }) => checkPermission(ctx.access, input)),
  }),
});
