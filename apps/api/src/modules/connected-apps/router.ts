import {
  ZConnectedAppList,
  ZConnectedAppRef,
  ZGetThirdPartyAccessRequest,
  ZListConnectedAppsRequest,
  ZRevokedConnectedApp,
  ZSetThirdPartyAccessRequest,
  ZThirdPartyAccess,
} from '@svc/contracts/connected-apps';
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import { getThirdPartyAccess, listConnectedApps, revokeConnectedApp, setThirdPartyAccessFor } from './service.ts';

const tags = ['connected apps'];

/** Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third parties an organization allows"). */
export const connectedAppsRouter = router({
  getThirdPartyAccess: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/third-party-access',
        tags,
        summary: 'Which third-party apps and agents may connect to the organization',
      },
    })
    .input(ZGetThirdPartyAccessRequest)
    .output(ZThirdPartyAccess)
    .query(({ ctx, input }) => getThirdPartyAccess(ctx.services.db, ctx.principal, input)),
  setThirdPartyAccess: controlProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/third-party-access',
        tags,
        summary: 'Allow no third-party app, any, or only the listed ones (client ids or https URL prefixes ending in *)',
      },
    })
    .input(ZSetThirdPartyAccessRequest)
    .output(ZThirdPartyAccess)
    .mutation(({ ctx, input }) => setThirdPartyAccessFor(ctx.services.db, ctx.principal, ctx.request, input)),
  list: controlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/connected-apps',
        tags,
        summary: "What the organization's people allowed third-party apps and agents (their grants), newest first",
      },
    })
    .input(ZListConnectedAppsRequest)
    .output(ZConnectedAppList)
    .query(({ ctx, input }) => listConnectedApps(ctx.services.db, ctx.principal, input)),
  revoke: controlProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/connected-apps/{id}',
        tags,
        summary: "Revoke a third-party app's grant: its refresh tokens stop at once",
      },
    })
    .input(ZConnectedAppRef)
    .output(ZRevokedConnectedApp)
    .mutation(({ ctx, input }) => revokeConnectedApp(ctx.services.db, ctx.principal, ctx.request, input)),
});
