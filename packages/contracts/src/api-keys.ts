import { z } from 'zod';
import { ZInstant, ZListQuery, ZName, ZOrganizationId } from './lists.ts';
import { ZPermissionList } from './permissions.ts';

/** `key_` + 20 base62: a tenant API key id. Anything else is a 400, never a lookup. */
export const ZApiKeyId = z.string().regex(/^key_[0-9A-Za-z]{20}$/, 'expected an API key id (key_...)');

/** Derived, never stored: revoked wins over expired. */
export const ZApiKeyStatus = z.enum(['active', 'revoked', 'expired']).meta({ id: 'ApiKeyStatus' });
export type TApiKeyStatus = z.infer<typeof ZApiKeyStatus>;

/**
 * A tenant API key as every read shows it (docs/architecture.md section 7: id, prefix, scopes, timestamps,
 * revocation state). Never the secret nor its hash: the secret is shown once, beside the key, on
 * create and rotate.
 */
export const ZApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    /** Permission names the key may use in its organization. */
    scopes: z.array(z.string()),
    /** `sk_live_` + 4 characters: enough to tell keys apart, useless to authenticate. */
    secretPrefix: z.string(),
    status: ZApiKeyStatus,
    createdAt: z.string(),
    expiresAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    /** Kept to within about a minute (uses are recorded in batches, not per request). */
    lastUsedAt: z.string().nullable(),
    rotatedAt: z.string().nullable(),
    /** The user who created it (null once that user is gone). */
    createdBy: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });
export type TApiKey = z.infer<typeof ZApiKey>;

/** GET /v1/tenants/{id}/api-keys. */
export const ZListApiKeysRequest = ZListQuery.extend({ id: ZOrganizationId });
export type TListApiKeysRequest = z.infer<typeof ZListApiKeysRequest>;

export const ZApiKeyPage = z.object({ data: z.array(ZApiKey), nextCursor: z.string().nullable() }).meta({ id: 'ApiKeyPage' });
export type TApiKeyPage = z.infer<typeof ZApiKeyPage>;

/**
 * The body of POST /v1/tenants/{id}/api-keys (the console's form uses it as is). `scopes` come
 * from the permission catalog, at least one; `expiresAt` is an ISO 8601 time in the future.
 */
export const ZCreateApiKeyBody = z.object({
  name: ZName,
  scopes: ZPermissionList.refine((list) => list.length > 0, { message: 'Choose at least one scope.' }),
  expiresAt: ZInstant.refine((v) => Date.parse(v) > Date.now(), { message: 'expiresAt must be in the future' }).optional(),
});
export type TCreateApiKeyBody = z.infer<typeof ZCreateApiKeyBody>;

export const ZCreateApiKeyRequest = ZCreateApiKeyBody.extend({ id: ZOrganizationId });
export type TCreateApiKeyRequest = z.infer<typeof ZCreateApiKeyRequest>;

/** 201 of create and 200 of rotate: `secretKey` is the raw secret, shown this once. */
export const ZApiKeyWithSecret = z.object({ apiKey: ZApiKey, secretKey: z.string() }).meta({ id: 'ApiKeyWithSecret' });
export type TApiKeyWithSecret = z.infer<typeof ZApiKeyWithSecret>;

/** POST /v1/api-keys/{id}/rotate and /revoke. */
export const ZApiKeyActionRequest = z.object({ id: ZApiKeyId });
export type TApiKeyActionRequest = z.infer<typeof ZApiKeyActionRequest>;
