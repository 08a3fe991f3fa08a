import { z } from 'zod';

const ZWorkspace = z.object({ id: z.string(), slug: z.string(), name: z.string(), kind: z.enum(['platform', 'tenant']) });

/** GET /v1/me (docs/api.md): who the session belongs to and where it is. */
export const ZMeResponse = z
  .object({
    user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
    /** The organizations the user may act in (active memberships). */
    memberships: z.array(z.object({ organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }), roleKey: z.string() })),
    /**
     * Organizations that added the user (POST /v1/users) and wait for the user to accept or
     * decline (POST /v1/me/memberships/{organizationId}/accept or /decline). They grant nothing
     * until accepted.
     */
    pendingMemberships: z.array(
      z.object({
        organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
        roleKey: z.string(),
        invitedAt: z.string(),
      }),
    ),
    activeWorkspace: ZWorkspace.nullable(),
    isPlatformAdmin: z.boolean(),
  })
  .meta({ id: 'Me' });
export type TMeResponse = z.infer<typeof ZMeResponse>;

/** POST /v1/me/workspace: which of the caller's organizations the session acts in. */
export const ZSwitchWorkspaceRequest = z.object({
  organization_slug: z.string().min(1).max(64),
});
export type TSwitchWorkspaceRequest = z.infer<typeof ZSwitchWorkspaceRequest>;

/** POST /v1/me/memberships/{organizationId}/accept and /decline: a membership an organization added the caller to. */
export const ZMembershipDecisionRequest = z.object({
  organizationId: z.string().regex(/^ten_[0-9A-Za-z]{20}$/, 'expected an organization id (ten_...)'),
});
export type TMembershipDecisionRequest = z.infer<typeof ZMembershipDecisionRequest>;

export const ZMembershipDecisionResponse = z
  .object({
    organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    roleKey: z.string(),
    /** `active`: the caller is now a member; `declined`: the membership is gone. */
    status: z.enum(['active', 'declined']),
  })
  .meta({ id: 'MembershipDecision' });
export type TMembershipDecisionResponse = z.infer<typeof ZMembershipDecisionResponse>;
