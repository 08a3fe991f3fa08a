import {
  ZApplication,
  ZApplicationPage,
  ZApplicationRef,
  ZApplicationWithSecret,
  ZCreateApplicationRequest,
  ZListApplicationsRequest,
  ZListProductPermissionsRequest,
  ZProductPermissionCatalog,
  ZSetApplicationStatusRequest,
  ZUpdateApplicationRequest,
} from '@svc/contracts/applications';
import type { AddressPolicy } from '@svc/jobs/webhooks/ssrf';
import type { AppServices } from '../../context.ts';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import {
  createApplicationFor,
  getApplication,
  listApplicationsOf,
  listProductPermissionsFor,
  rotateApplicationSecretFor,
  setApplicationStatusFor,
  updateApplication,
} from './service.ts';

const tags = ['applications'];

/** A machine client's jwksUri and a back-channel logout URL are judged by the webhook URL rule (WEBHOOK_ALLOW_PRIVATE). */
function urlPolicyOf(services: AppServices): AddressPolicy {
  return { allowPrivate: services.config.webhooks.allowPrivate };
}

/** Errors of the routes that set a machine client's settings. */
const MACHINE_ERRORS = ['client_type_mismatch', 'jwks_invalid', 'unknown_permission'] as const;

export const applicationsRouter = router({
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/applications', tags, summary: "List an organization's applications" } })
    .input(ZListApplicationsRequest)
    .output(ZApplicationPage)
    .query(({ ctx, input }) => listApplicationsOf(ctx.services.db, ctx.principal, input)),
  create: controlProcedure
    .meta({
      errors: ['conflict', 'logo_url_invalid', 'backchannel_logout_url_not_allowed', ...MACHINE_ERRORS],
      openapi: { method: 'POST', path: '/applications', tags, summary: 'Create an application; its secret key is shown once' },
      successStatus: 201,
      subscription: {},
    })
    .input(ZCreateApplicationRequest)
    .output(ZApplicationWithSecret)
    .mutation(({ ctx, input }) =>
      createApplicationFor({ db: ctx.services.db, urlPolicy: urlPolicyOf(ctx.services) }, ctx.principal, ctx.request, input),
    ),
  get: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/applications/{id}', tags, summary: 'Read an application' } })
    .input(ZApplicationRef)
    .output(ZApplication)
    .query(({ ctx, input }) => getApplication(ctx.services.db, ctx.principal, input)),
  update: controlProcedure
    .meta({
      errors: ['logo_url_invalid', 'backchannel_logout_url_not_allowed', ...MACHINE_ERRORS],
      openapi: {
        method: 'PATCH',
        path: '/applications/{id}',
        tags,
        summary:
          "Rename an application or change its redirect URLs, origins, production OAuth provider, or a machine client's keys and permissions",
      },
      subscription: {},
    })
    .input(ZUpdateApplicationRequest)
    .output(ZApplication)
    .mutation(({ ctx, input }) =>
      updateApplication(
        { db: ctx.services.db, applications: ctx.services.applications, urlPolicy: urlPolicyOf(ctx.services) },
        ctx.principal,
        ctx.request,
        input,
      ),
    ),
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
  productPermissions: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/product-permissions',
        tags,
        summary: "List the product's permissions, with their API resource, that machine clients may be granted",
      },
    })
    .input(ZListProductPermissionsRequest)
    .output(ZProductPermissionCatalog)
    .query(({ ctx, input }) => listProductPermissionsFor(ctx.services.db, ctx.principal, input)),
});
