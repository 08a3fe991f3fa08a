import { z } from 'zod';
import { ZListQuery, ZName, ZOrganizationId, ZPage, ZSlug } from './lists.ts';
import { PERMISSIONS, ZRoleKey } from './permissions.ts';

/**
 * The product's own authorization (docs/authorization.md): API resources the platform registers,
 * their permissions (the product's catalog), and product roles every organization shares. svc's
 * control-plane catalog (permissions.ts) is a different thing and never mixes with this one.
 */

/**
 * OpenID and svc scopes: a product permission is also an OAuth scope of its resource's tokens,
 * so it may never be one of these.
 */
export const RESERVED_SCOPES: ReadonlySet<string> = new Set([
  'openid',
  'email',
  'profile',
  'offline_access',
  'organization',
  'entitlements',
  'address',
  'phone',
]);

const CONTROL_PLANE: ReadonlySet<string> = new Set(PERMISSIONS);

/**
 * Product permission names: lower-case ASCII letters, digits, `_` and `-`, in segments joined by
 * `.` or `:` (`invoices.create`, `read:reports`), 1-100 characters. Nothing is normalized: an
 * upper-case letter, a space or a look-alike from another script is refused, never folded into a
 * name that means something else.
 */
export const PRODUCT_PERMISSION_PATTERN = /^[a-z][a-z0-9_-]*(?:[.:][a-z0-9_-]+)*$/;

/** Why svc reserves a product permission name, or undefined when it is the product's to take. */
export function reservedPermissionReason(name: string): string | undefined {
  if (CONTROL_PLANE.has(name)) {
    return `${name} is one of svc's control-plane permissions`;
  }
  if (RESERVED_SCOPES.has(name)) {
    return `${name} is an OpenID Connect or svc scope`;
  }
  if (name === 'svc' || /^svc[.:_-]/.test(name)) {
    return 'names starting with svc are reserved';
  }
  return undefined;
}

export const ZProductPermissionName = z
  .string()
  .min(1)
  .max(100)
  .regex(PRODUCT_PERMISSION_PATTERN, 'a permission name is lower-case letters, digits, _ and -, in segments joined by . or :')
  .describe('A product permission (`invoices.create`): unique across the product, never one of svc’s own');

/** Permission lists in requests: well-formed names, no repeats (sorted). Existence is checked by the service. */
export const ZProductPermissionList = z
  .array(ZProductPermissionName)
  .max(500)
  .transform((list) => [...new Set(list)].sort());

/** Descriptions: trimmed, at most 500 characters, no control characters but newlines. */
export const ZDescription = z
  .string()
  .trim()
  .max(500)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  .regex(/^[^\u0000-\u0009\u000b-\u001f\u007f]*$/, 'descriptions may not contain control characters');

/**
 * An API resource identifier: an absolute https (or, for local development, http) URI with no
 * credentials, query or fragment (RFC 8707 section 2), written as svc will compare it: exactly
 * its own canonical form, less at most the trailing slash of an empty path. So `HTTPS://API.Example`,
 * a unicode host, a space or `https://api.example/#x` are refused rather than silently becoming
 * another audience. `urn:svc:` is svc's own.
 */
export function resourceIdentifierProblem(value: string): string | undefined {
  const url = URL.parse(value);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    return 'an API identifier is an absolute https URL, such as https://api.example.com';
  }
  if (url.username !== '' || url.password !== '') {
    return 'an API identifier may not carry credentials';
  }
  if (value.includes('#')) {
    return 'an API identifier may not have a fragment';
  }
  if (value.includes('?')) {
    return 'an API identifier may not have a query';
  }
  if (url.href !== value && url.href !== `${value}/`) {
    return `write the identifier in its canonical form: ${url.pathname === '/' ? url.origin : url.href}`;
  }
  return undefined;
}

export const ZResourceIdentifier = z
  .string()
  .min(1)
  .max(2048)
  .superRefine((value, ctx) => {
    const problem = resourceIdentifierProblem(value);
    if (problem) {
      ctx.addIssue({ code: 'custom', message: problem });
    }
  })
  .describe('Absolute https URL naming the API: the `resource` parameter and the `aud` of its access tokens');

export const ZApiResourceId = z.string().regex(/^res_[0-9A-Za-z]{20}$/, 'expected an API resource id (res_...)');

export const ZApiPermission = z.object({ name: z.string(), description: z.string(), createdAt: z.string() }).meta({ id: 'ApiPermission' });
export type TApiPermission = z.infer<typeof ZApiPermission>;

export const ZApiResource = z
  .object({
    id: z.string(),
    identifier: z.string(),
    name: z.string(),
    description: z.string(),
    /** Sorted by name. */
    permissions: z.array(ZApiPermission),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ApiResource' });
export type TApiResource = z.infer<typeof ZApiResource>;
export const ZApiResourcePage = ZPage(ZApiResource).meta({ id: 'ApiResourcePage' });

export const ZPermissionInput = z.object({ name: ZProductPermissionName, description: ZDescription.default('') });

/**
 * Reading the catalog: platform admins, and whoever holds roles.read in the organization named
 * by `organization_slug` (default: the session's workspace, an API key's own organization), who
 * need it to build custom roles. The catalog is the same for every organization.
 */
const readerOrganization = ZSlug.optional().describe(
  "the organization whose roles.read lets you read the catalog; default: the session's active workspace or the API key's organization",
);

export const ZListApiResourcesRequest = ZListQuery.extend({ organization_slug: readerOrganization });
export type TListApiResourcesRequest = z.infer<typeof ZListApiResourcesRequest>;
export const ZGetApiResourceRequest = z.object({ id: ZApiResourceId, organization_slug: readerOrganization });
export type TGetApiResourceRequest = z.infer<typeof ZGetApiResourceRequest>;
export const ZCreateApiResourceRequest = z.object({
  identifier: ZResourceIdentifier,
  name: ZName,
  description: ZDescription.default(''),
  permissions: z
    .array(ZPermissionInput)
    .max(500)
    .default([])
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      for (const [index, p] of list.entries()) {
        if (seen.has(p.name)) {
          ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `${p.name} is listed twice` });
        }
        seen.add(p.name);
      }
    }),
});
export type TCreateApiResourceRequest = z.infer<typeof ZCreateApiResourceRequest>;
export const ZUpdateApiResourceRequest = z
  .object({ id: ZApiResourceId, name: ZName.optional(), description: ZDescription.optional() })
  .refine((v) => v.name !== undefined || v.description !== undefined, { message: 'send name or description' });
export type TUpdateApiResourceRequest = z.infer<typeof ZUpdateApiResourceRequest>;
export const ZDeleteApiResourceRequest = z.object({ id: ZApiResourceId });
export type TDeleteApiResourceRequest = z.infer<typeof ZDeleteApiResourceRequest>;
export const ZDeletedApiResource = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedApiResource' });
export type TDeletedApiResource = z.infer<typeof ZDeletedApiResource>;

/** POST /v1/api-resources/{id}/permissions. */
export const ZCreateApiPermissionRequest = ZPermissionInput.extend({ id: ZApiResourceId });
export type TCreateApiPermissionRequest = z.infer<typeof ZCreateApiPermissionRequest>;
/** PATCH /v1/api-resources/{id}/permissions/{name}: only the description changes (names are what roles and tokens hold). */
export const ZUpdateApiPermissionRequest = z.object({ id: ZApiResourceId, name: ZProductPermissionName, description: ZDescription });
export type TUpdateApiPermissionRequest = z.infer<typeof ZUpdateApiPermissionRequest>;
/** DELETE /v1/api-resources/{id}/permissions/{name}: also taken out of every role and machine client holding it. */
export const ZDeleteApiPermissionRequest = z.object({ id: ZApiResourceId, name: ZProductPermissionName });
export type TDeleteApiPermissionRequest = z.infer<typeof ZDeleteApiPermissionRequest>;
/** `id` is the resource's. */
export const ZDeletedApiPermission = z
  .object({ id: z.string(), name: z.string(), deleted: z.literal(true) })
  .meta({ id: 'DeletedApiPermission' });
export type TDeletedApiPermission = z.infer<typeof ZDeletedApiPermission>;

export const ZProductRoleId = z.string().regex(/^prl_(?:[0-9A-Za-z]{20}|org_admin|org_member)$/, 'expected a product role id (prl_...)');

export const ZProductRole = z
  .object({
    id: z.string(),
    /** What memberships and invitations name (`roleKey`), like a custom role's key. */
    key: z.string(),
    name: z.string(),
    description: z.string(),
    /** Product permission names, sorted. */
    permissions: z.array(z.string()),
    /** org_admin and org_member: their product permissions change, nothing else. */
    builtin: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ProductRole' });
export type TProductRole = z.infer<typeof ZProductRole>;
export const ZProductRolePage = ZPage(ZProductRole).meta({ id: 'ProductRolePage' });

/** The first page starts with the two built-in rows, then product roles newest first. */
export const ZListProductRolesRequest = ZListQuery.extend({ organization_slug: readerOrganization });
export type TListProductRolesRequest = z.infer<typeof ZListProductRolesRequest>;
export const ZCreateProductRoleRequest = z.object({
  key: ZRoleKey,
  name: ZName,
  description: ZDescription.default(''),
  permissions: ZProductPermissionList.default([]),
});
export type TCreateProductRoleRequest = z.infer<typeof ZCreateProductRoleRequest>;
export const ZUpdateProductRoleRequest = z
  .object({
    id: ZProductRoleId,
    name: ZName.optional(),
    description: ZDescription.optional(),
    permissions: ZProductPermissionList.optional(),
  })
  .refine((v) => v.name !== undefined || v.description !== undefined || v.permissions !== undefined, {
    message: 'send name, description or permissions',
  });
export type TUpdateProductRoleRequest = z.infer<typeof ZUpdateProductRoleRequest>;
export const ZDeleteProductRoleRequest = z.object({ id: ZProductRoleId });
export type TDeleteProductRoleRequest = z.infer<typeof ZDeleteProductRoleRequest>;
export const ZDeletedProductRole = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedProductRole' });
export type TDeletedProductRole = z.infer<typeof ZDeletedProductRole>;

/**
 * The usage event type of every access token a machine client gets (client credentials): one
 * per token, in the client's organization, metered like any usage event, so a plan can limit
 * machine tokens per month and a blocked subscription stops them (docs/authorization.md).
 */
export const MACHINE_TOKEN_EVENT_TYPE = 'machine_token.issued';

/** `usr_` + 20 base62. */
export const ZUserId = z.string().regex(/^usr_[0-9A-Za-z]{20}$/, 'expected a user id (usr_...)');

/** Plan feature keys (`sso`, `audit_export`): lower-case letters, digits and underscores. */
export const ZFeatureKey = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9_]*$/, 'a feature key is lower-case letters, digits and underscores, starting with a letter');

/**
 * POST /v1/permissions/check: may user `userId`, in the organization, do `permission` (a product
 * or a control-plane permission)? Or, with `feature` and no user, may the organization use the
 * feature now? The organization is `organizationId` or `organization_slug`; a tenant API key may
 * leave both out (its own organization).
 */
export const ZPermissionCheckRequest = z
  .object({
    userId: ZUserId.optional(),
    organizationId: ZOrganizationId.optional(),
    organization_slug: ZSlug.optional(),
    permission: z.string().min(1).max(100).optional(),
    feature: ZFeatureKey.optional(),
  })
  // One pass over the three rules (the check is on a product's hot path); each keeps its message.
  .superRefine((v, ctx) => {
    if ((v.permission === undefined) === (v.feature === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'send either permission or feature' });
    }
    if (v.permission !== undefined && v.userId === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a permission check names the userId' });
    }
    if (v.organizationId !== undefined && v.organization_slug !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'name the organization once: organizationId or organization_slug' });
    }
  });
export type TPermissionCheckRequest = z.infer<typeof ZPermissionCheckRequest>;

export const ZPermissionCheckResult = z
  .object({
    allowed: z.boolean(),
    organizationId: z.string(),
    /** For a permission check. */
    userId: z.string().optional(),
    permission: z.string().optional(),
    /** The person's role key in the organization; null when not an active member. */
    role: z.string().nullable().optional(),
    /** For a feature check. */
    feature: z.string().optional(),
    /** The organization's plan key and subscription status (feature checks). */
    plan: z.string().optional(),
    status: z.string().optional(),
    /** Usage left this month when the feature is also a usage-limited event type; null: unlimited. */
    remaining: z.number().int().nullable().optional(),
  })
  .meta({ id: 'PermissionCheckResult' });
export type TPermissionCheckResult = z.infer<typeof ZPermissionCheckResult>;
