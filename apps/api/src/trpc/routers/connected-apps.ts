import {
  ZConnectedAppList,
  ZConnectedAppRef,
  ZGetThirdPartyAccessRequest,
  ZListConnectedAppsRequest,
  ZRevokedConnectedApp,
  ZSetThirdPartyAccessRequest,
  ZThirdPartyAccess,
} from '@svc/contracts/connected-apps';
import {
  getThirdPartyAccess,
  listConnectedApps,
  revokeConnectedApp,
  setThirdPartyAccessFor,
} from '../../modules/connected-apps/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

const tags = ['connected apps'];

/** Read with connected_apps.read, chosen and revoked by an org admin; the organization is `organization_slug`, else the caller's own. */
const read = { permission: 'connected_apps.read', organization: 'slug' } as const;
const manage = { permission: 'connected_apps.manage', organization: 'slug', adminOnly: true } as const;

/** Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third parties an organization allows"). */
export const connectedAppsRouter = router({
  getThirdPartyAccess: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/third-party-access',
        tags,
        summary: 'Which third-party apps and agents may connect to the organization',
      },
    })
    .input(ZGetThirdPartyAccessRequest)
    .use(resolveAccess)
    .output(ZThirdPartyAccess)
    .query(({ ctx }) => getThirdPartyAccess(ctx.services.db, ctx.access)),
  setThirdPartyAccess: controlProcedure
    .meta({
      access: manage,
      openapi: {
        method: 'PATCH',
        path: '/third-party-access',
        tags,
        summary: 'Allow no third-party app, any, or only the listed ones (client ids or https URL prefixes ending in *)',
      },
    })
    .input(ZSetThirdPartyAccessRequest)
    .use(resolveAccess)
    .output(ZThirdPartyAccess)
    .mutation(({ ctx, input }) => setThirdPartyAccessFor(ctx.services.db, ctx.access, ctx.request, input)),
  list: controlProcedure
    .meta({
      access: read,
      openapi: {
        method: 'GET',
        path: '/connected-apps',
        tags,
        summary: "What the organization's people allowed third-party apps and agents (their grants), newest first",
      },
    })
    .input(ZListConnectedAppsRequest)
    .use(resolveAccess)
    .output(ZConnectedAppList)
    .query(({ ctx }) => listConnectedApps(ctx.services.db, ctx.access)),
  revoke: controlProcedure
    .meta({
      access: manage,
      openapi: {
        method: 'DELETE',
        path: '/connected-apps/{id}',
        tags,
        summary: "Revoke a third-party app's grant: its refresh tokens stop at once",
      },
    })
    .input(ZConnectedAppRef)
    .use(resolveAccess)
    .output(ZRevokedConnectedApp)
    .mutation(({ ctx, input }) => revokeConnectedApp(ctx.services.db, ctx.access, ctx.request, input)),
});
