import { ZMembershipDecisionRequest, ZMembershipDecisionResponse, ZMeResponse, ZSwitchWorkspaceRequest } from '@svc/contracts/me';
import { z } from 'zod';
import { acceptMembership, declineMembership, describeMe, switchWorkspace } from '../../modules/me/service.ts';
import { router } from '../init.ts';
import { sessionProcedure, userControlProcedure } from '../procedures.ts';

export const meRouter = router({
  get: sessionProcedure
    .meta({ openapi: { method: 'GET', path: '/me', tags: ['session'], summary: 'The signed-in user, memberships and active workspace' } })
    .input(z.void())
    .output(ZMeResponse)
    .query(({ ctx }) => describeMe(ctx.services.db, ctx.current)),
  switchWorkspace: userControlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/me/workspace',
        tags: ['session'],
        summary: 'Switch the session to another of your organizations (a platform admin: any organization)',
      },
    })
    .input(ZSwitchWorkspaceRequest)
    .output(ZMeResponse)
    .mutation(({ ctx, input }) => switchWorkspace(ctx.services.db, ctx.principal, ctx.request, input.organization_slug)),
  acceptMembership: userControlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/me/memberships/{organizationId}/accept',
        tags: ['session'],
        summary: 'Accept a membership an organization added you to',
      },
    })
    .input(ZMembershipDecisionRequest)
    .output(ZMembershipDecisionResponse)
    .mutation(({ ctx, input }) => acceptMembership(ctx.services.db, ctx.principal, ctx.request, input.organizationId)),
  declineMembership: userControlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/me/memberships/{organizationId}/decline',
        tags: ['session'],
        summary: 'Decline a membership an organization added you to',
      },
    })
    .input(ZMembershipDecisionRequest)
    .output(ZMembershipDecisionResponse)
    .mutation(({ ctx, input }) => declineMembership(ctx.services.db, ctx.principal, ctx.request, input.organizationId)),
});
