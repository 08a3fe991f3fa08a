import { z } from 'zod';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';

// Setup links (docs/enterprise.md "Setup links"): an organization admin hands one to the
// customer's IT admin, who sets up one thing (SSO, directory sync, a domain) on a hosted page
// without a console account. The id shape of ids.ts is written out: this module is also bundled
// into the console.

/** `setl_` + 20 base62: a setup link id. Anything else is a 400, never a lookup. */
export const ZSetupLinkId = z.string().regex(/^setl_[0-9A-Za-z]{20}$/, 'expected a setup link id (setl_...)');

/** The link's token: 43 base62 (~256 bits), stored only as SHA-256. */
export const SETUP_LINK_TOKEN_PATTERN = /^[0-9A-Za-z]{43}$/;

/** The longest a link lives: a day. */
export const SETUP_LINK_MAX_HOURS = 24;

/** What a link lets its holder set up, and nothing else. */
export const ZSetupLinkPurpose = z.enum(['sso', 'directory', 'domain']).meta({ id: 'SetupLinkPurpose' });
export type TSetupLinkPurpose = z.infer<typeof ZSetupLinkPurpose>;

/** unused: not opened yet; opened: bound to the browser that opened it; expired or revoked: refused. */
export const ZSetupLinkStatus = z.enum(['unused', 'opened', 'expired', 'revoked']).meta({ id: 'SetupLinkStatus' });
export type TSetupLinkStatus = z.infer<typeof ZSetupLinkStatus>;

export const ZSetupLink = z
  .object({
    id: z.string(),
    purpose: ZSetupLinkPurpose,
    label: z.string(),
    status: ZSetupLinkStatus,
    /** The SSO connection, directory or domain the page made, once it has made one. */
    targetId: z.string().nullable(),
    createdBy: z.string().nullable(),
    expiresAt: z.string(),
    openedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'SetupLink' });
export type TSetupLink = z.infer<typeof ZSetupLink>;

/** The answer of create: the link with its URL, which carries the token and is shown once. */
export const ZSetupLinkWithUrl = ZSetupLink.extend({ url: z.string() }).meta({ id: 'SetupLinkWithUrl' });
export type TSetupLinkWithUrl = z.infer<typeof ZSetupLinkWithUrl>;

export const ZSetupLinkPage = ZPage(ZSetupLink).meta({ id: 'SetupLinkPage' });
export type TSetupLinkPage = z.infer<typeof ZSetupLinkPage>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

export const ZListSetupLinksRequest = ZListQuery.extend({ organization_slug: organizationSlug });
export type TListSetupLinksRequest = z.infer<typeof ZListSetupLinksRequest>;

export const ZCreateSetupLinkRequest = z.object({
  organization_slug: organizationSlug,
  purpose: ZSetupLinkPurpose,
  label: ZName.optional().describe('who or what the link is for, shown in the console (default: the purpose)'),
  expiresInHours: z
    .number()
    .int()
    .min(1)
    .max(SETUP_LINK_MAX_HOURS)
    .optional()
    .describe(`how long the link lives, 1-${SETUP_LINK_MAX_HOURS} hours (default ${SETUP_LINK_MAX_HOURS})`),
});
export type TCreateSetupLinkRequest = z.infer<typeof ZCreateSetupLinkRequest>;

export const ZSetupLinkRef = z.object({ id: ZSetupLinkId, organization_slug: organizationSlug });
export type TSetupLinkRef = z.infer<typeof ZSetupLinkRef>;
