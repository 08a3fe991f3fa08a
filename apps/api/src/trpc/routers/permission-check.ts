import { ZPermissionCheckRequest, ZPermissionCheckResult } from '@svc/contracts/authorization';
import { checkPermission, PERMISSION_CHECK_ACCESS } from '../../modules/permission-check/service.ts';
import { accessOr, resolveAccessOrOwnRule } from '../access.ts';
import { router } from '../init.ts';
import { permissionCheckProcedure } from '../procedures.ts';

/** The permission and feature check (docs/authorization.md, "Checking a permission"). */
export const permissionCheckRouter = router({
  check: permissionCheckProcedure
    .meta({
      access: PERMISSION_CHECK_ACCESS,
      rateLimit: 'backend',
      errors: ['application_disabled', 'unknown_permission'],
      openapi: {
        method: 'POST',
        path: '/permissions/check',
        tags: ['permissions'],
        summary: 'May a person do something in an organization, or may an organization use a feature now',
        description:
          'With `userId` and `permission` (a product permission or one of svc’s): whether the person, as an active member of the organization, holds it now. With `feature` (no user needed): whether the organization’s plan includes it, its subscription is active or trialing and, for a usage-limited feature, quantity is left this month. Callers: an application secret key (its own organization; an `anyone` application also about a person who signed in to it for another organization), a tenant API key (its organization; members.read, or subscription.read for a feature), a signed-in person (members.read or subscription.read there). An organization the caller may not ask about is 404 not_found, exactly like one that does not exist. A permission in neither catalog is 400 unknown_permission.',
      },
    })
    .input(ZPermissionCheckRequest)
    .use(resolveAccessOrOwnRule)
    .output(ZPermissionCheckResult)
    .query(({ ctx, input }) =>
      checkPermission({ db: ctx.services.db, access: ctx.services.access }, accessOr(ctx.access, ctx.caller, 'application'), input),
    ),
});
