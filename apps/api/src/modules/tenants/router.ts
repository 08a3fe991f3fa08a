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
import { router } from '../../trpc/init.ts';
import { controlProcedure, userControlProcedure } from '../../trpc/procedures.ts';
import {
  checkPermission,
  createTenant,
  deleteTenant,
  getTenant,
  getTenantOverview,
  listPermissions,
  listTenantMembers,
  listTenants,
  updateTenant,
} from './service.ts';

export const tenantsRouter = router({
  list: controlProcedure
    .meta({
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
    .output(ZTenantPage)
    .query(({ ctx, input }) => listTenants(ctx.services.db, ctx.principal, input)),
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
    .meta({ openapi: { method: 'GET', path: '/tenants/{id}', tags: ['tenants'], summary: 'Read an organization' } })
    .input(ZGetTenantRequest)
    .output(ZTenant)
    .query(({ ctx, input }) => getTenant(ctx.services.db, ctx.principal, input)),
  update: controlProcedure
    .meta({
      errors: ['conflict'],
      openapi: { method: 'PATCH', path: '/tenants/{id}', tags: ['tenants'], summary: 'Rename an organization or change its slug' },
    })
    .input(ZUpdateTenantRequest)
    .output(ZTenant)
    .mutation(({ ctx, input }) => updateTenant(ctx.services.db, ctx.principal, ctx.request, input)),
  delete: userControlProcedure
    .meta({
      errors: ['conflict'],
      openapi: { method: 'DELETE', path: '/tenants/{id}', tags: ['tenants'], summary: 'Delete an organization and everything it owns' },
    })
    .input(ZDeleteTenantRequest)
    .output(ZDeleteTenantResponse)
    .mutation(({ ctx, input }) => deleteTenant(ctx.services.db, ctx.principal, ctx.request, input)),
  overview: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/tenants/{id}/overview',
        tags: ['tenants'],
        summary: "An organization's counts, this month's usage and its getting-started checklist",
      },
    })
    .input(ZTenantOverviewRequest)
    .output(ZTenantOverview)
    .query(({ ctx, input }) => getTenantOverview(ctx.services.db, ctx.principal, input)),
  member: router({
    list: controlProcedure
      .meta({
        openapi: { method: 'GET', path: '/tenants/{id}/members', tags: ['tenants'], summary: "An organization's members and roles" },
      })
      .input(ZListTenantMembersRequest)
      .output(ZTenantMemberPage)
      .query(({ ctx, input }) => listTenantMembers(ctx.services.db, ctx.principal, input)),
  }),
  permission: router({
    list: controlProcedure
      .meta({ openapi: { method: 'GET', path: '/permissions', tags: ['permissions'], summary: 'The permission catalog' } })
      .input(z.void())
      .output(ZPermissionCatalog)
      .query(() => listPermissions()),
    check: controlProcedure
      .meta({
        openapi: {
          method: 'GET',
          path: '/tenants/{id}/permissions/check',
          tags: ['permissions'],
          summary: 'Whether the caller holds a permission in an organization',
        },
      })
      .input(ZCheckPermissionRequest)
      .output(ZCheckPermissionResponse)
      .query(({ ctx, input }) => checkPermission(ctx.services.db, ctx.principal, input)),
  }),
});
