import { z } from 'zod';

/** How many registered clients GET /v1/platform/registered-clients answers at most (newest first). */
export const REGISTERED_CLIENTS_LIST_LIMIT = 500;

/**
 * A client of svc's OpenID Provider that registered itself (dynamic client registration, RFC 7591;
 * docs/oidc.md "Dynamic client registration"): what it said about itself, never its secret.
 */
export const ZRegisteredClient = z.object({
  /** Its client_id (`dcr_...`). */
  id: z.string(),
  /** The name it gave itself (unverified), or null. */
  name: z.string().nullable(),
  clientUri: z.string().nullable(),
  redirectUris: z.array(z.string()),
  /** `none` (public, PKCE) or `client_secret_basic` / `client_secret_post` (confidential). */
  tokenEndpointAuthMethod: z.string(),
  registeredAt: z.string(),
  /** When a token was last issued to it (to the minute); null: never. */
  lastUsedAt: z.string().nullable(),
  /** When the worker deletes it if no token is issued to it before then. */
  deletedAfter: z.string(),
});
export type TRegisteredClient = z.infer<typeof ZRegisteredClient>;

export const ZRegisteredClientList = z.object({
  /** OIDC_DYNAMIC_REGISTRATION: whether clients may register now. */
  registrationEnabled: z.boolean(),
  /** OIDC_DYNAMIC_REGISTRATION_UNUSED_DAYS. */
  unusedDays: z.number().int(),
  data: z.array(ZRegisteredClient),
});
export type TRegisteredClientList = z.infer<typeof ZRegisteredClientList>;
