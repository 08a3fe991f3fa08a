import { z } from 'zod';
import { ID_PREFIXES } from './ids.ts';
import { ZListQuery, ZPage, ZSlug } from './lists.ts';

const WORD = '[a-z][a-z0-9_]*';
/** `resource.verb` (more dotted parts allowed), e.g. `api_key.created`. */
const ACTION = new RegExp(`^${WORD}(?:\\.${WORD})+$`);
/** `resource.*`: every action of one resource. */
const ACTION_PREFIX = new RegExp(`^(${WORD})\\.\\*$`);

/**
 * The action filter: an exact action (`tenant.updated`) or every action of one resource
 * (`tenant.*`). Nothing else is a pattern: `%`, `_` wildcards and partial words are refused.
 */
export const ZAuditActionFilter = z
  .string()
  .max(100)
  .refine((v) => ACTION.test(v) || ACTION_PREFIX.test(v), 'expected an action (resource.verb) or resource.*');

/** Splits an action filter into an exact action or a resource prefix. */
export function parseAuditActionFilter(value: string): { action: string } | { resource: string } {
  const prefix = ACTION_PREFIX.exec(value);
  return prefix?.[1] !== undefined ? { resource: prefix[1] } : { action: value };
}

/** Who acted: a user (`usr_...`) or a tenant API key (`key_...`). */
export const ZAuditActorFilter = z
  .string()
  .regex(
    new RegExp(`^(?:${ID_PREFIXES.user}|${ID_PREFIXES.apiKey})_[0-9A-Za-z]{20}$`),
    'expected a user id (usr_...) or an API key id (key_...)',
  );

/** What was acted on: any id svc issues (`ten_`, `usr_`, `inv_`, `key_`, `app_`, ...). */
export const ZAuditTargetFilter = z
  .string()
  .regex(new RegExp(`^(?:${Object.values(ID_PREFIXES).join('|')})_[0-9A-Za-z]{20}$`), 'expected an id svc issued (e.g. usr_...)');

const ZInstant = z.iso.datetime({ offset: true });

/**
 * GET /v1/audit-logs. `from` is inclusive and `to` exclusive (`from <= createdAt < to`), so
 * consecutive ranges never show an entry twice; `from` after `to` is a 400.
 */
export const ZListAuditLogsRequest = ZListQuery.extend({
  /** The organization whose log to read; default: the session's active workspace (or the API key's). */
  organization_slug: ZSlug.optional(),
  action: ZAuditActionFilter.optional(),
  actor: ZAuditActorFilter.optional(),
  target: ZAuditTargetFilter.optional(),
  /** Entries at or after this instant (ISO 8601 with Z or an offset). */
  from: ZInstant.optional(),
  /** Entries strictly before this instant. */
  to: ZInstant.optional(),
}).refine((v) => v.from === undefined || v.to === undefined || Date.parse(v.from) <= Date.parse(v.to), {
  message: 'from must not be after to',
  path: ['from'],
});
export type TListAuditLogsRequest = z.infer<typeof ZListAuditLogsRequest>;

export const ZAuditLogEntry = z
  .object({
    id: z.string(),
    /** The organization acted on; null for platform-level entries. */
    tenantId: z.string().nullable(),
    actor: z.object({
      type: z.enum(['user', 'api_key', 'system']),
      /** `usr_...` or `key_...`; null for the system. */
      id: z.string().nullable(),
      /** The user's email or the key's name when it acted. */
      label: z.string().nullable(),
    }),
    /** `resource.verb`, e.g. `tenant.updated`. */
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string().nullable() }),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    requestId: z.string().nullable(),
    /** What changed, redacted: never a secret, token, hash or cookie. */
    summary: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .meta({ id: 'AuditLogEntry' });
export type TAuditLogEntry = z.infer<typeof ZAuditLogEntry>;

export const ZAuditLogPage = ZPage(ZAuditLogEntry).meta({ id: 'AuditLogPage' });
export type TAuditLogPage = z.infer<typeof ZAuditLogPage>;
