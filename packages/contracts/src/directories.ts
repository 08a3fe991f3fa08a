import { z } from 'zod';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';
import { ZRoleKey } from './permissions.ts';

// An organization's SCIM directories (docs/enterprise.md "Directory sync"). The id shape of ids.ts
// is written out: that module draws random bytes with node:crypto at load, and this one is also
// bundled into the console.

/** `dir_` + 20 base62: a directory id. Anything else is a 400, never a lookup. */
export const ZDirectoryId = z.string().regex(/^dir_[0-9A-Za-z]{20}$/, 'expected a directory id (dir_...)');

/** The bearer token's prefix: `scim_` + 40 base62 (~238 bits), stored only as SHA-256. */
export const DIRECTORY_TOKEN_PREFIX = 'scim_';

/** The path under which a directory's SCIM 2.0 service lives: `<PUBLIC_URL>/scim/v2/<directory id>`. */
export function scimBaseUrl(publicUrl: string, directoryId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/scim/v2/${directoryId}`;
}

/** A group of the directory, by its SCIM displayName (case-insensitive), and the role its members get. */
export const ZGroupRole = z
  .object({
    group: z.string().trim().min(1).max(256),
    roleKey: ZRoleKey,
  })
  .meta({ id: 'DirectoryGroupRole' });
export type TGroupRole = z.infer<typeof ZGroupRole>;

/** The mapping, first match wins: a person in several mapped groups gets the first one's role. */
export const ZGroupRoles = z
  .array(ZGroupRole)
  .max(100)
  .refine((list) => new Set(list.map((m) => m.group.toLowerCase())).size === list.length, {
    message: 'each group may be mapped once',
  });

export const ZDirectory = z
  .object({
    id: z.string(),
    name: z.string(),
    /** What the identity provider is given as the SCIM base URL (tenant URL). */
    scimBaseUrl: z.string(),
    /** The first characters of the bearer token, to tell tokens apart; never the token. */
    tokenPrefix: z.string(),
    /** The role of a provisioned person in no mapped group. */
    defaultRoleKey: z.string(),
    groupRoles: z.array(ZGroupRole),
    userCount: z.number().int(),
    groupCount: z.number().int(),
    lastRequestAt: z.string().nullable(),
    tokenRotatedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Directory' });
export type TDirectory = z.infer<typeof ZDirectory>;

/** A directory with its bearer token: only the answers of create and rotate carry it, once. */
export const ZDirectoryWithToken = ZDirectory.extend({ token: z.string() }).meta({ id: 'DirectoryWithToken' });
export type TDirectoryWithToken = z.infer<typeof ZDirectoryWithToken>;

export const ZDirectoryPage = ZPage(ZDirectory).meta({ id: 'DirectoryPage' });
export type TDirectoryPage = z.infer<typeof ZDirectoryPage>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

export const ZListDirectoriesRequest = ZListQuery.extend({ organization_slug: organizationSlug });
export type TListDirectoriesRequest = z.infer<typeof ZListDirectoriesRequest>;

export const ZCreateDirectoryRequest = z.object({
  organization_slug: organizationSlug,
  name: ZName,
  defaultRoleKey: ZRoleKey.optional().describe('default org_member'),
  groupRoles: ZGroupRoles.optional(),
});
export type TCreateDirectoryRequest = z.infer<typeof ZCreateDirectoryRequest>;

export const ZDirectoryRef = z.object({ id: ZDirectoryId, organization_slug: organizationSlug });
export type TDirectoryRef = z.infer<typeof ZDirectoryRef>;

export const ZUpdateDirectoryRequest = z.object({
  id: ZDirectoryId,
  organization_slug: organizationSlug,
  name: ZName.optional(),
  defaultRoleKey: ZRoleKey.optional(),
  groupRoles: ZGroupRoles.optional(),
});
export type TUpdateDirectoryRequest = z.infer<typeof ZUpdateDirectoryRequest>;

export const ZDeletedDirectory = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedDirectory' });
export type TDeletedDirectory = z.infer<typeof ZDeletedDirectory>;

/** One SCIM request the directory received: what was asked and the answer's status, nothing else. */
export const ZDirectoryRequest = z
  .object({
    at: z.string(),
    method: z.string(),
    path: z.string(),
    status: z.number().int(),
  })
  .meta({ id: 'DirectoryRequest' });

export const ZDirectoryRequestLog = z
  .object({ data: z.array(ZDirectoryRequest), nextCursor: z.null().describe('always null: the log keeps the last requests only') })
  .meta({ id: 'DirectoryRequestLog' });
export type TDirectoryRequestLog = z.infer<typeof ZDirectoryRequestLog>;
