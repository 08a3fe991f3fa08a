import { z } from 'zod';

const ZWorkspace = z.object({ id: z.string(), slug: z.string(), name: z.string(), kind: z.enum(['platform', 'tenant']) });

/** GET /v1/me (API.md): who the session belongs to and where it is. */
export const ZMeResponse = z
  .object({
    user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
    memberships: z.array(z.object({ organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }), roleKey: z.string() })),
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
