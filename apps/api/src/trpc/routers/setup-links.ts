import {
  ZCreateSetupLinkRequest,
  ZListSetupLinksRequest,
  ZSetupLink,
  ZSetupLinkPage,
  ZSetupLinkRef,
  ZSetupLinkWithUrl,
} from '@svc/contracts/setup-links';
import { createSetupLink, listSetupLinks, revokeSetupLink, SETUP_LINK_RECORD } from '../../modules/setup-links/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

const tags = ['setup-links'];

/**
 * Setup links for an organization's IT admin (docs/enterprise.md "Setup links"). A link sets up
 * SSO, directory sync or a domain, so every route needs sso.manage, an org admin's: the link
 * acts with its creator's standing. Tenant API keys with the scope may call every route.
 */
const manage = { permission: 'sso.manage', organization: 'slug', adminOnly: true } as const;
const manageOne = { permission: 'sso.manage', organization: SETUP_LINK_RECORD, adminOnly: true } as const;

export const setupLinksRouter = router({
  list: controlProcedure
    .meta({
      access: manage,
      openapi: { method: 'GET', path: '/setup-links', tags, summary: "List an organization's setup links and their status" },
    })
    .input(ZListSetupLinksRequest)
    .use(resolveAccess)
    .output(ZSetupLinkPage)
    .query(({ ctx, input }) => listSetupLinks(ctx.services.db, ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      openapi: {
        method: 'POST',
        path: '/setup-links',
        tags,
        summary: "Create a setup link for the organization's IT admin (SSO, directory sync or a domain); its URL is shown once",
      },
      successStatus: 201,
    })
    .input(ZCreateSetupLinkRequest)
    .use(resolveAccess)
    .output(ZSetupLinkWithUrl)
    .mutation(({ ctx, input }) =>
      createSetupLink({ db: ctx.services.db, publicUrl: ctx.services.config.publicUrl }, ctx.access, ctx.request, input),
    ),
  revoke: controlProcedure
    .meta({
      access: manageOne,
      errors: ['setup_link_already_revoked'],
      openapi: {
        method: 'POST',
        path: '/setup-links/{id}/revoke',
        tags,
        summary: 'Revoke a setup link: it stops at once, wherever it was opened',
      },
    })
    .input(ZSetupLinkRef)
    .use(resolveAccess)
    .output(ZSetupLink)
    .mutation(({ ctx, input }) => revokeSetupLink(ctx.services.db, ctx.access, ctx.request, input)),
});
