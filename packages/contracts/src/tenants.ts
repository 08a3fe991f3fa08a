import { z } from 'zod';
import { ZListQuery, ZName, ZOrganizationId, ZPage, ZSlug } from './lists.ts';
import { ZPermission, type ZPermissionCatalog } from './permissions.ts';
import { ZSubscriptionStatus } from './subscriptions.ts';
import { ZMembershipStatus } from './users.ts';

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

/** GET /v1/tenants: the caller's organizations, newest first, optionally narrowed by a search. */
export const ZListTenantsRequest = ZListQuery.extend({
  q: z
    .string()
    .trim()
    .max(100)
    .optional()
    .describe(
      'organizations whose name or slug contains this text, ignoring case; taken literally (% and _ are no wildcards); empty: no filter',
    ),
});
export type TListTenantsRequest = z.infer<typeof ZListTenantsRequest>;

/**
 * What the platform admins' Organizations page shows of each organization beside the
 * organization itself: read with the page, in the list's one statement.
 */
export const ZTenantSummary = z
  .object({
    /** Its memberships in any status (invited, active, suspended): the seats in use, as the Members page lists them. */
    memberCount: z.number().int(),
    /** Its manual subscription (plan and status), null for an organization without one (the platform workspace). */
    subscription: z
      .object({
        plan: z.object({ key: z.string(), name: z.string() }),
        status: ZSubscriptionStatus,
      })
      .nullable(),
  })
  .meta({ id: 'TenantSummary' });
export type TTenantSummary = z.infer<typeof ZTenantSummary>;

/** An organization as GET /v1/tenants lists it. */
export const ZTenantListItem = ZTenant.extend({
  /** Filled for a platform admin; null for every other caller, who reads these through the routes their permissions open. */
  summary: ZTenantSummary.nullable(),
}).meta({ id: 'TenantListItem' });
export type TTenantListItem = z.infer<typeof ZTenantListItem>;

export const ZTenantPage = ZPage(ZTenantListItem).meta({ id: 'TenantPage' });
export type TTenantPage = z.infer<typeof ZTenantPage>;

/** POST /v1/tenants (docs/api.md): the slug is derived from the name when absent. */
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

/** GET /v1/tenants/{id}/overview. */
export const ZTenantOverviewRequest = z.object({ id: ZOrganizationId });
export type TTenantOverviewRequest = z.infer<typeof ZTenantOverviewRequest>;

/**
 * GET /v1/tenants/{id}/overview: what an organization's Overview page shows, read in one statement.
 * Counts and flags only, never a record.
 */
export const ZTenantOverview = z
  .object({
    counts: z.object({
      /** Memberships in any status (invited, active, suspended), as the Members page lists them. */
      members: z.number().int(),
      applications: z.number().int(),
      /** Sessions live now in the organization (not revoked, not expired), as the Sessions page lists them. */
      activeSessions: z.number().int(),
    }),
    usage: z.object({
      /** The calendar month (UTC) counted: `periodStart <= occurredAt < periodEnd`. */
      periodStart: z.string(),
      periodEnd: z.string(),
      /** Usage events recorded for the month, every event type. */
      events: z.number().int(),
      /**
       * The subscription plan's monthly limits, one per limited event type, with the month's
       * quantity of that type (what the limit counts). Empty when the plan sets none or there is no
       * subscription: nothing is limited.
       */
      limits: z.array(z.object({ eventType: z.string(), limit: z.number().int(), quantity: z.number().int() })),
    }),
    /** The getting-started checklist, each item from what the organization holds now or ever did. */
    checklist: z.object({
      /** It has an application. */
      applicationCreated: z.boolean(),
      /**
       * Someone has signed in to one of its applications (or to an application for it) through
       * svc's OpenID Provider, ever: its audit log holds a `session.created` entry, which each such
       * sign-in (the console's Try sign-in included) appends and nothing removes.
       */
      signInTried: z.boolean(),
      /** It has sent an invitation, ever (revoked, expired and accepted ones count). */
      memberInvited: z.boolean(),
      /** It has a webhook endpoint. */
      webhookAdded: z.boolean(),
    }),
  })
  .meta({ id: 'TenantOverview' });
export type TTenantOverview = z.infer<typeof ZTenantOverview>;
