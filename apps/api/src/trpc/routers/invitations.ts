import type { ServerResponse } from 'node:http';
import {
  ZAcceptInvitationRequest,
  ZAcceptInvitationResponse,
  ZCreateInvitationRequest,
  ZCreateInvitationResponse,
  ZGetInvitationRequest,
  ZInvitation,
  ZInvitationPage,
  ZListInvitationsRequest,
  ZResendInvitationRequest,
  ZRevokeInvitationRequest,
} from '@svc/contracts/invitations';
import type { AppServices } from '../../context.ts';
import {
  acceptInvitation,
  createInvitation,
  getInvitation,
  type InvitationSettings,
  listInvitations,
  resendInvitation,
  revokeInvitation,
} from '../../modules/invitations/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { invitationSendLimit } from '../invitation-send-limit.ts';
import { controlProcedure, controlProcedureWithQuerySlug, userControlProcedure } from '../procedures.ts';

/** What issuing an invitation (create, resend) needs from the running service. */
function settingsOf(services: AppServices, res: ServerResponse): InvitationSettings {
  return {
    publicUrl: services.config.publicUrl,
    ttlMs: services.config.invitationTtlMs,
    throttle: invitationSendLimit(services, res),
    email: services.config.email.enabled ? { secretBox: services.secretBox } : null,
  };
}

/**
 * Reading needs invitations.read, issuing and revoking invitations.manage as an org admin, in the
 * organization named by organization_slug (or the caller's own); an invitation id is looked up
 * within it. Accepting is the invitee's, in the invitation's organization (acceptInvitation).
 */
const read = { permission: 'invitations.read', organization: 'slug' } as const;
const manage = { permission: 'invitations.manage', organization: 'slug', adminOnly: true } as const;

export const invitationsRouter = router({
  list: controlProcedure
    .meta({
      access: read,
      openapi: { method: 'GET', path: '/invitations', tags: ['invitations'], summary: "List an organization's invitations" },
    })
    .input(ZListInvitationsRequest)
    .use(resolveAccess)
    .output(ZInvitationPage)
    .query(({ ctx, input }) => listInvitations(ctx.services.db, ctx.access, input)),
  get: controlProcedure
    .meta({
      access: read,
      errors: ['invitation_not_found'],
      openapi: { method: 'GET', path: '/invitations/{id}', tags: ['invitations'], summary: 'Read one invitation of an organization' },
    })
    .input(ZGetInvitationRequest)
    .use(resolveAccess)
    .output(ZInvitation)
    .query(({ ctx, input }) => getInvitation(ctx.services.db, ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      errors: ['invitation_already_pending', 'platform_workspace_managed', 'unknown_role'],
      openapi: {
        method: 'POST',
        path: '/invitations',
        tags: ['invitations'],
        summary: 'Invite an email address; the token and invite link are returned this once',
      },
      successStatus: 201,
    })
    .input(ZCreateInvitationRequest)
    .use(resolveAccess)
    .output(ZCreateInvitationResponse)
    .mutation(({ ctx, input }) => createInvitation(ctx.services.db, settingsOf(ctx.services, ctx.res), ctx.access, ctx.request, input)),
  revoke: controlProcedureWithQuerySlug
    .meta({
      access: manage,
      errors: ['invitation_already_accepted', 'invitation_not_found', 'invitation_revoked'],
      openapi: { method: 'POST', path: '/invitations/{id}/revoke', tags: ['invitations'], summary: 'Revoke a pending invitation' },
    })
    .input(ZRevokeInvitationRequest)
    .use(resolveAccess)
    .output(ZInvitation)
    .mutation(({ ctx, input }) => revokeInvitation(ctx.services.db, ctx.access, ctx.request, input)),
  resend: controlProcedureWithQuerySlug
    .meta({
      access: manage,
      errors: [
        'invitation_already_accepted',
        'invitation_already_pending',
        'invitation_not_found',
        'platform_workspace_managed',
        'unknown_role',
      ],
      openapi: {
        method: 'POST',
        path: '/invitations/{id}/resend',
        tags: ['invitations'],
        summary: 'Replace an invitation with a new link in one step (a pending one is revoked); the token and link are returned this once',
      },
      successStatus: 201,
    })
    .input(ZResendInvitationRequest)
    .use(resolveAccess)
    .output(ZCreateInvitationResponse)
    .mutation(({ ctx, input }) => resendInvitation(ctx.services.db, settingsOf(ctx.services, ctx.res), ctx.access, ctx.request, input)),
  accept: userControlProcedure
    .meta({
      errors: [
        'already_member',
        'invitation_already_accepted',
        'invitation_email_mismatch',
        'invitation_expired',
        'invitation_not_found',
        'invitation_revoked',
      ],
      openapi: {
        method: 'POST',
        path: '/invitations/accept',
        tags: ['invitations'],
        summary: 'Accept an invitation as the signed-in user',
      },
      // Joining takes a seat: the handler applies the subscription rule (claimSeat) to the
      // invitation's organization, so this route may answer 402 too.
      subscription: { organization: 'handler', seats: 'adds' },
    })
    .input(ZAcceptInvitationRequest)
    .output(ZAcceptInvitationResponse)
    .mutation(({ ctx, input }) => acceptInvitation(ctx.services.db, ctx.principal, ctx.request, input)),
});
