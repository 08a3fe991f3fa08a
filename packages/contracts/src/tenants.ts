import { z } from 'zod';
import { ZName, ZSlug } from './lists.ts';

/** `ten_` + 20 base62: an organization id. Anything else is a 400, never a lookup. */
export const ZOrganizationId = z.string().regex(/^ten_[0-9A-Za-z]{20}$/, 'expected an organization id (ten_...)');

export const ZTenant = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    kind: z.enum(['tenant', 'platform']),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Tenant' });
export type TTenant = z.infer<typeof ZTenant>;

export const ZGetTenantRequest = z.object({ id: ZOrganizationId });

export const ZUpdateTenantRequest = z
  .object({ id: ZOrganizationId, name: ZName.optional(), slug: ZSlug.optional() })
  .refine((v) => v.name !== undefined || v.slug !== undefined, { message: 'send name or slug' });
export type TUpdateTenantRequest = z.infer<typeof ZUpdateTenantRequest>;
