import { z } from 'zod';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';
import { ZUserId } from './users.ts';

/** `ses_` + 20 base62: a session id (what admins see and revoke; never the cookie token). */
export const ZSessionId = z.string().regex(/^ses_[0-9A-Za-z]{20}$/, 'expected a session id (ses_...)');

export const ZSessionStatus = z.enum(['active', 'revoked', 'expired']).meta({ id: 'SessionStatus' });
export type TSessionStatus = z.infer<typeof ZSessionStatus>;

/**
 * An application the session signed in to through svc's OpenID Provider: one of the
 * organization's applications, or another application the sign-in spoke for the organization to.
 */
export const ZSessionApplication = z
  .object({
    /** The application's id (`app_...`, its OIDC client id). */
    id: z.string(),
    name: z.string(),
    /** The organization the sign-in speaks for (scope `organization`); null without that scope. */
    organizationId: z.string().nullable(),
    firstSignedInAt: z.string(),
    lastSignedInAt: z.string(),
    /** When the sign-in ended (the session, the membership or the application did); null while it stands. */
    endedAt: z.string().nullable(),
  })
  .meta({ id: 'SessionApplication' });
export type TSessionApplication = z.infer<typeof ZSessionApplication>;

/** A hosted sign-in session of a member, in the organization it is active in (GET /v1/sessions). */
export const ZSession = z
  .object({
    id: z.string(),
    user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
    status: ZSessionStatus,
    /** A short label from the user agent, e.g. "Chrome on macOS". */
    device: z.string(),
    userAgent: z.string().nullable(),
    ipAddress: z.string().nullable(),
    createdAt: z.string(),
    /** When the session was last used, to within an hour (its expiry slides at most hourly). */
    lastSeenAt: z.string(),
    expiresAt: z.string(),
    revokedAt: z.string().nullable(),
    /** The caller's own session. */
    current: z.boolean(),
    /** The applications the session signed in to (most recent first) that concern this organization. */
    applications: z.array(ZSessionApplication),
  })
  .meta({ id: 'Session' });
export type TSession = z.infer<typeof ZSession>;

export const ZSessionPage = ZPage(ZSession).meta({ id: 'SessionPage' });
export type TSessionPage = z.infer<typeof ZSessionPage>;

/** GET /v1/sessions?organization_slug=&state=&user_id=&limit=&cursor= */
export const ZListSessionsRequest = ZListQuery.extend({
  organization_slug: ZSlug.optional(),
  /** `active` (default): live sessions only; `all`: revoked and expired ones too. */
  state: z.enum(['active', 'all']).default('active'),
  /** One member's sessions. */
  user_id: ZUserId.optional(),
});
export type TListSessionsRequest = z.infer<typeof ZListSessionsRequest>;

/**
 * POST /v1/sessions/{id}/revoke?organization_slug=: `organization_slug` in the query (as docs/api.md
 * writes it) or in the JSON body.
 */
/** GET /v1/sessions/{id}: `organization_slug` in the query (default: the session workspace, an API key its own). */
export const ZGetSessionRequest = z.object({ id: ZSessionId, organization_slug: ZSlug.optional() });
export type TGetSessionRequest = z.infer<typeof ZGetSessionRequest>;
export const ZRevokeSessionRequest = z.object({ id: ZSessionId, organization_slug: ZSlug.optional() });
export type TRevokeSessionRequest = z.infer<typeof ZRevokeSessionRequest>;
