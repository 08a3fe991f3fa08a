import { ZGetTenantRequest, ZTenant, ZUpdateTenantRequest } from '@svc/contracts/tenants';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import { getTenant, updateTenant } from './service.ts';

export const tenantsRouter = router({
  get: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/tenants/{id}', tags: ['tenants'], summary: 'Read an organization' } })
    .input(ZGetTenantRequest)
    .output(ZTenant)
    .query(({ ctx, input }) => getTenant(ctx.services.db, ctx.principal, input)),
  update: controlProcedure
    .meta({ openapi: { method: 'PATCH', path: '/tenants/{id}', tags: ['tenants'], summary: 'Rename an organization or change its slug' } })
    .input(ZUpdateTenantRequest)
    .output(ZTenant)
    .mutation(({ ctx, input }) => updateTenant(ctx.services.db, ctx.principal, ctx.request, input)),
});
