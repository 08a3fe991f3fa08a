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
import {
  APPLICATION_RECORD,
  createApplicationFor,
  getApplicationIn,
  listApplicationsOf,
  listProductPermissionsFor,
  READ_APPLICATION,
  rotateApplicationSecretFor,
  setApplicationStatusFor,
  updateApplication,
} from '../../modules/applications/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

const tags = ['applications'];

/** A machine client's jwksUri and a back-channel logout URL are judged by the webhook URL rule (WEBHOOK_ALLOW_PRIVATE). */
function urlPolicyOf(services: AppServices): AddressPolicy {
  return { allowPrivate: services.config.webhooks.allowPrivate };
}

/** Errors of the routes that set a machine client's settings. */
const MACHINE_ERRORS = ['client_type_mismatch', 'jwks_invalid', 'unknown_permission'] as const;

/**
 * Reads need applications.read, changes applications.manage, in the organization named by
 * organization_slug (or the caller's own); `{id}` routes find it from the application.
 */
const read = { permission: 'applications.read', organization: 'slug' } as const;
const manage = { permission: 'applications.manage', organization: 'slug' } as const;
const manageOne = { permission: 'applications.manage', organization: APPLICATION_RECORD } as const;

export const applicationsRouter = router({
  list: controlProcedure
    .meta({ access: read, openapi: { method: 'GET', path: '/applications', tags, summary: "List an organization's applications" } })
    .input(ZListApplicationsRequest)
    .use(resolveAccess)
    .output(ZApplicationPage)
    .query(({ ctx, input }) => listApplicationsOf(ctx.services.db, ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      errors: ['conflict', 'logo_url_invalid', 'backchannel_logout_url_not_allowed', ...MACHINE_ERRORS],
      openapi: { method: 'POST', path: '/applications', tags, summary: 'Create an application; its secret key is shown once' },
      successStatus: 201,
      subscription: {},
    })
    .input(ZCreateApplicationRequest)
    .use(resolveAccess)
    .output(ZApplicationWithSecret)
    .mutation(({ ctx, input }) =>
      createApplicationFor({ db: ctx.services.db, urlPolicy: urlPolicyOf(ctx.services) }, ctx.access, ctx.request, input),
    ),
  get: controlProcedure
    .meta({ access: READ_APPLICATION, openapi: { method: 'GET', path: '/applications/{id}', tags, summary: 'Read an application' } })
    .input(ZApplicationRef)
    .use(resolveAccess)
    .output(ZApplication)
    .query(({ ctx, input }) => getApplicationIn(ctx.services.db, ctx.access, input)),
  update: controlProcedure
    .meta({
      access: manageOne,
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
    .use(resolveAccess)
    .output(ZApplication)
    .mutation(({ ctx, input }) =>
      updateApplication(
        { db: ctx.services.db, applications: ctx.services.applications, urlPolicy: urlPolicyOf(ctx.services) },
        ctx.access,
        ctx.request,
        input,
      ),
    ),
  setStatus: controlProcedure
    .meta({
      access: manageOne,
      openapi: { method: 'POST', path: '/applications/{id}/status', tags, summary: 'Enable or disable an application' },
      subscription: {},
    })
    .input(ZSetApplicationStatusRequest)
    .use(resolveAccess)
    .output(ZApplication)
    .mutation(({ ctx, input }) => setApplicationStatusFor(ctx.services, ctx.access, ctx.request, input)),
  rotateSecret: controlProcedure
    .meta({
      access: manageOne,
      openapi: {
        method: 'POST',
        path: '/applications/{id}/rotate-secret',
        tags,
        summary: 'Replace the secret key (shown once); the old one stops working at once',
      },
      subscription: {},
    })
    .input(ZApplicationRef)
    .use(resolveAccess)
    .output(ZApplicationWithSecret)
    .mutation(({ ctx, input }) => rotateApplicationSecretFor(ctx.services, ctx.access, ctx.request, input)),
  productPermissions: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/product-permissions',
        tags,
        summary: "List the product's permissions, with their API resource, that machine clients may be granted",
      },
    })
    .input(ZListProductPermissionsRequest)
    .use(resolveAccess)
    .output(ZProductPermissionCatalog)
    .query(({ ctx }) => listProductPermissionsFor(ctx.services.db, ctx.access)),
});
