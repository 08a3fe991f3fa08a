import { z } from 'zod';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';
import { ZPermission, type ZPermissionCatalog } from './permissions.ts';
import { ZMembershipStatus } from './users.ts';

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

/** GET /v1/tenants: the caller's organizations, newest first. */
export const ZListTenantsRequest = ZListQuery;
export type TListTenantsRequest = z.infer<typeof ZListTenantsRequest>;
export const ZTenantPage = ZPage(ZTenant).meta({ id: 'TenantPage' });
export type TTenantPage = z.infer<typeof ZTenantPage>;

/** POST /v1/tenants (API.md): the slug is derived from the name when absent. */
export const ZCreateTenantRequest = z.object({ name: ZName, slug: ZSlug.optional() });
export type TCreateTenantRequest = z.infer<typeof ZCreateTenantRequest>;

/** DELETE /v1/tenants/{id}. */
export const ZDeleteTenantRequest = z.object({ id: ZOrganizationId });
export const ZDeleteTenantResponse = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedTenant' });
export type TDeleteTenantResponse = z.infer<typeof ZDeleteTenantResponse>;

/** A member of an organization, as GET /v1/tenants/{id}/members lists it. */
export const ZTenantMember = z
  .object({
    userId: z.string(),
    email: z.string(),
    name: z.string(),
    roleKey: z.string(),
    /** The membership's status here: `invited` members show only what the organization typed. */
    status: ZMembershipStatus,
    /** When the membership began. */
    joinedAt: z.string(),
  })
  .meta({ id: 'TenantMember' });
export type TTenantMember = z.infer<typeof ZTenantMember>;

export const ZListTenantMembersRequest = ZListQuery.extend({ id: ZOrganizationId });
export type TListTenantMembersRequest = z.infer<typeof ZListTenantMembersRequest>;
export const ZTenantMemberPage = ZPage(ZTenantMember).meta({ id: 'TenantMemberPage' });
export type TTenantMemberPage = z.infer<typeof ZTenantMemberPage>;

/** GET /v1/tenants/{id}/permissions/check?permission=: a name outside the catalog is a 400. */
export const ZCheckPermissionRequest = z.object({ id: ZOrganizationId, permission: ZPermission });
export type TCheckPermissionRequest = z.infer<typeof ZCheckPermissionRequest>;
export const ZCheckPermissionResponse = z.object({ permission: ZPermission, allowed: z.boolean() }).meta({ id: 'PermissionCheck' });
export type TCheckPermissionResponse = z.infer<typeof ZCheckPermissionResponse>;

/** GET /v1/permissions (the schema is ZPermissionCatalog in permissions.ts). */
export type TPermissionCatalog = z.infer<typeof ZPermissionCatalog>;
