import {
  ZApplication,
  ZApplicationPage,
  ZApplicationRef,
  ZApplicationWithSecret,
  ZCreateApplicationRequest,
  ZListApplicationsRequest,
  ZSetApplicationStatusRequest,
  ZUpdateApplicationRequest,
} from '@svc/contracts/applications';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import {
  createApplicationFor,
  getApplication,
  listApplicationsOf,
  rotateApplicationSecretFor,
  setApplicationStatusFor,
  updateApplication,
} from './service.ts';

const tags = ['applications'];

export const applicationsRouter = router({
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/applications', tags, summary: "List an organization's applications" } })
    .input(ZListApplicationsRequest)
    .output(ZApplicationPage)
    .query(({ ctx, input }) => listApplicationsOf(ctx.services.db, ctx.principal, input)),
  create: controlProcedure
    .meta({
      errors: ['conflict', 'logo_url_invalid'],
      openapi: { method: 'POST', path: '/applications', tags, summary: 'Create an application; its secret key is shown once' },
      successStatus: 201,
      subscription: {},
    })
    .input(ZCreateApplicationRequest)
    .output(ZApplicationWithSecret)
    .mutation(({ ctx, input }) => createApplicationFor(ctx.services.db, ctx.principal, ctx.request, input)),
  get: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/applications/{id}', tags, summary: 'Read an application' } })
    .input(ZApplicationRef)
    .output(ZApplication)
    .query(({ ctx, input }) => getApplication(ctx.services.db, ctx.principal, input)),
  update: controlProcedure
    .meta({
      errors: ['logo_url_invalid'],
      openapi: {
        method: 'PATCH',
        path: '/applications/{id}',
        tags,
        summary: 'Rename an application or change its redirect URLs, origins or production OAuth provider',
      },
      subscription: {},
    })
    .input(ZUpdateApplicationRequest)
    .output(ZApplication)
    .mutation(({ ctx, input }) => updateApplication(ctx.services, ctx.principal, ctx.request, input)),
  setStatus: controlProcedure
    .meta({
      openapi: { method: 'POST', path: '/applications/{id}/status', tags, summary: 'Enable or disable an application' },
      subscription: {},
    })
    .input(ZSetApplicationStatusRequest)
    .output(ZApplication)
    .mutation(({ ctx, input }) => setApplicationStatusFor(ctx.services, ctx.principal, ctx.request, input)),
  rotateSecret: controlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/applications/{id}/rotate-secret',
        tags,
        summary: 'Replace the secret key (shown once); the old one stops working at once',
      },
      subscription: {},
    })
    .input(ZApplicationRef)
    .output(ZApplicationWithSecret)
    .mutation(({ ctx, input }) => rotateApplicationSecretFor(ctx.services, ctx.principal, ctx.request, input)),
});
