import { z } from 'zod';
import { ZQueuedEmail } from './email-deliveries.ts';
import { ZEmail, ZListQuery, ZPage, ZSlug } from './lists.ts';
import { ZRoleKey } from './permissions.ts';

/**
 * Invitation tokens: `svc_inv_` + 40 base62 characters (~238 random bits). Shown once, in the
 * create answer and its invite link; svc keeps only the SHA-256.
 */
export const INVITATION_TOKEN_PREFIX = 'svc_inv_';
export const INVITATION_TOKEN_RANDOM_LENGTH = 40;
export const INVITATION_TOKEN_PATTERN = new RegExp(`^${INVITATION_TOKEN_PREFIX}[0-9A-Za-z]{${INVITATION_TOKEN_RANDOM_LENGTH}}$`);

/** `inv_` + 20 base62. Anything else is a 400, never a lookup. */
export const ZInvitationId = z.string().regex(/^inv_[0-9A-Za-z]{20}$/, 'expected an invitation id (inv_...)');

export const ZInvitationToken = z.string().regex(INVITATION_TOKEN_PATTERN, 'expected an invitation token (svc_inv_...)');

/**
 * Derived, never stored: revoked and accepted are final; a pending invitation past its expiry is
 * expired.
 */
export const ZInvitationStatus = z.enum(['pending', 'accepted', 'revoked', 'expired']).meta({ id: 'InvitationStatus' });
export type TInvitationStatus = z.infer<typeof ZInvitationStatus>;

/** An invitation as lists and answers show it: never its token nor the token's hash. */
export const ZInvitation = z
  .object({
    id: z.string(),
    email: z.string(),
    roleKey: z.string(),
    status: ZInvitationStatus,
    /** When false, any signed-in user holding the link may accept it. */
    requireEmailMatch: z.boolean(),
    invitedByUserId: z.string().nullable(),
    expiresAt: z.string(),
    acceptedAt: z.string().nullable(),
    acceptedByUserId: z.string().nullable(),
    revokedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Invitation' });
export type TInvitation = z.infer<typeof ZInvitation>;

export const ZCreateInvitationRequest = z.object({
  organization_slug: ZSlug.optional(),
  email: ZEmail,
  /** A system role or a custom role of the organization (checked now, not at acceptance). */
  roleKey: ZRoleKey.default('org_member'),
  /**
   * Only a user whose verified email is `email` may accept (default). A literal pair, not
   * z.boolean(): the REST adapter coerces boolean fields, which would read "false" or "no" as true.
   */
  requireEmailMatch: z.literal([true, false]).default(true),
});
export type TCreateInvitationRequest = z.infer<typeof ZCreateInvitationRequest>;

/**
 * 201: the invitation, and beside it the token and link, shown this once (docs/architecture.md section 7), and the
 * invitation email queued for it (id and status only), or null when email delivery is disabled.
 */
export const ZCreateInvitationResponse = z
  .object({ invitation: ZInvitation, invitationToken: z.string(), inviteLink: z.string(), emailDelivery: ZQueuedEmail })
  .meta({ id: 'CreatedInvitation' });
export type TCreateInvitationResponse = z.infer<typeof ZCreateInvitationResponse>;

export const ZListInvitationsRequest = ZListQuery.extend({
  organization_slug: ZSlug.optional(),
  status: ZInvitationStatus.optional(),
});
export type TListInvitationsRequest = z.infer<typeof ZListInvitationsRequest>;
export const ZInvitationPage = ZPage(ZInvitation).meta({ id: 'InvitationPage' });

/** GET /v1/invitations/{id}: `organization_slug` in the query (default: the session workspace, an API key its own). */
export const ZGetInvitationRequest = z.object({ id: ZInvitationId, organization_slug: ZSlug.optional() });
export type TGetInvitationRequest = z.infer<typeof ZGetInvitationRequest>;

/** POST /v1/invitations/{id}/revoke: `organization_slug` in the query (docs/api.md) or the body. */
export const ZRevokeInvitationRequest = z.object({ id: ZInvitationId, organization_slug: ZSlug.optional() });
export type TRevokeInvitationRequest = z.infer<typeof ZRevokeInvitationRequest>;

/**
 * POST /v1/invitations/{id}/resend: `organization_slug` in the query or the body, like revoke.
 * Answers 201 with the create answer's shape (the new invitation, its token and link once).
 */
export const ZResendInvitationRequest = z.object({ id: ZInvitationId, organization_slug: ZSlug.optional() });
export type TResendInvitationRequest = z.infer<typeof ZResendInvitationRequest>;

export const ZAcceptInvitationRequest = z.object({ token: ZInvitationToken });
export type TAcceptInvitationRequest = z.infer<typeof ZAcceptInvitationRequest>;

export const ZAcceptInvitationResponse = z
  .object({
    invitation: ZInvitation,
    organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    roleKey: z.string(),
  })
  .meta({ id: 'AcceptedInvitation' });
export type TAcceptInvitationResponse = z.infer<typeof ZAcceptInvitationResponse>;
