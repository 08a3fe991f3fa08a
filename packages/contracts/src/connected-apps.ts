import { z } from 'zod';
import { isIdOf } from './ids.ts';
import { ZSlug } from './lists.ts';

// Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third
// parties an organization allows"). A third-party client is one identified by a Client ID Metadata
// Document (its client_id is the https URL of that document) or one that registered itself by
// dynamic client registration (its client_id is dcr_...).

/** Who may connect: nobody, any third-party client, or only the listed ones. */
export const ZThirdPartyMode = z.enum(['off', 'any', 'listed']);
export type TThirdPartyMode = z.infer<typeof ZThirdPartyMode>;

/** What an organization that never chose allows: any client, each still asking each person's consent. */
export const DEFAULT_THIRD_PARTY_MODE: TThirdPartyMode = 'any';

/** Most entries of a list. */
export const MAX_THIRD_PARTY_CLIENTS = 50;

/**
 * One entry of the list: a client id (the metadata document's https URL, or a registered client's
 * `dcr_...`) exactly, or a prefix of
 * such URLs ending in `*` (`https://agents.example.com/*`: every document under that path). The
 * origin is always written out: no wildcard in the scheme or host.
 */
export const ZThirdPartyClientPattern = z
  .string()
  .trim()
  .min(1)
  .max(300)
  .refine(
    (v) => {
      // A client that registered itself (dynamic client registration) is listed by its id, exactly.
      if (isIdOf('registeredClient', v)) {
        return true;
      }
      const body = v.endsWith('*') ? v.slice(0, -1) : v;
      if (body.includes('*')) {
        return false;
      }
      try {
        const url = new URL(body);
        return (
          url.protocol === 'https:' && url.hash === '' && url.username === '' && url.password === '' && body.startsWith(`${url.origin}/`)
        );
      } catch {
        return false;
      }
    },
    {
      message:
        'expected a client id (an https URL, or dcr_... for a registered client) or an https URL prefix ending in *, with its origin written out',
    },
  );

/** GET /v1/third-party-access and the answer of PATCH. */
export const ZThirdPartyAccess = z
  .object({
    organizationId: z.string(),
    mode: ZThirdPartyMode,
    clients: z.array(z.string()),
    /** Null while the organization has never chosen (the default applies). */
    updatedAt: z.string().nullable(),
  })
  .meta({ id: 'ThirdPartyAccess' });
export type TThirdPartyAccess = z.infer<typeof ZThirdPartyAccess>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

export const ZGetThirdPartyAccessRequest = z.object({ organization_slug: organizationSlug });
export type TGetThirdPartyAccessRequest = z.infer<typeof ZGetThirdPartyAccessRequest>;

export const ZSetThirdPartyAccessRequest = z
  .object({
    organization_slug: organizationSlug,
    mode: ZThirdPartyMode,
    /** The allowed clients, used while `mode` is `listed`; omitted: the list is kept as it is. */
    clients: z.array(ZThirdPartyClientPattern).max(MAX_THIRD_PARTY_CLIENTS).optional(),
  })
  .refine((v) => v.mode !== 'listed' || (v.clients !== undefined && v.clients.length > 0), {
    message: 'mode listed names its clients (at least one; or use off)',
    path: ['clients'],
  });
export type TSetThirdPartyAccessRequest = z.infer<typeof ZSetThirdPartyAccessRequest>;

/** Whether `clientId` may connect under the organization's choice. */
export function thirdPartyClientAllowed(access: { mode: TThirdPartyMode; clients: readonly string[] }, clientId: string): boolean {
  if (access.mode === 'any') {
    return true;
  }
  if (access.mode === 'off') {
    return false;
  }
  return access.clients.some((pattern) => (pattern.endsWith('*') ? clientId.startsWith(pattern.slice(0, -1)) : clientId === pattern));
}

/** One grant a person gave a third-party app or agent for the organization (GET /v1/connected-apps). */
export const ZConnectedApp = z
  .object({
    /** The grant's id: what DELETE /v1/connected-apps/{id} revokes. */
    id: z.string(),
    /** The client id: its metadata document's https URL. */
    clientId: z.string(),
    /** The host of that URL, the one thing about the client svc can vouch for. */
    clientHost: z.string(),
    /** Who allowed it. */
    user: z.object({ id: z.string(), email: z.string().nullable() }),
    /** The OpenID scopes granted. */
    scopes: z.array(z.string()),
    /** Per API resource (its identifier), the permissions granted. */
    permissions: z.record(z.string(), z.array(z.string())),
    grantedAt: z.string(),
    expiresAt: z.string().nullable(),
    /** When a token was last issued under the grant or used on svc's MCP server, to the minute; null: not since it was granted. */
    lastUsedAt: z.string().nullable(),
  })
  .meta({ id: 'ConnectedApp' });
export type TConnectedApp = z.infer<typeof ZConnectedApp>;

export const ZConnectedAppList = z.object({ data: z.array(ZConnectedApp) }).meta({ id: 'ConnectedAppList' });
export type TConnectedAppList = z.infer<typeof ZConnectedAppList>;

export const ZListConnectedAppsRequest = z.object({ organization_slug: organizationSlug });
export type TListConnectedAppsRequest = z.infer<typeof ZListConnectedAppsRequest>;

/** A grant id as oidc-provider makes them: anything else is a 400, never a lookup. */
export const ZConnectedAppRef = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'expected a connected app id'),
  organization_slug: organizationSlug,
});
export type TConnectedAppRef = z.infer<typeof ZConnectedAppRef>;

export const ZRevokedConnectedApp = z.object({ id: z.string(), revoked: z.literal(true) }).meta({ id: 'RevokedConnectedApp' });
export type TRevokedConnectedApp = z.infer<typeof ZRevokedConnectedApp>;
