import { z } from 'zod';
import { ZInstant, ZListQuery, ZPage, ZSlug } from './lists.ts';

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

// The id shapes of ids.ts, written out: that module draws random bytes with node:crypto at load,
// and this one is also bundled into the console (audit-logs tests check the two agree).

const ACTOR_ID = /^(?:usr|key|setl)_[0-9A-Za-z]{20}$/;
/** A person's email as svc stores it (lowercase, `name@host`), without z.email's transform. */
const ACTOR_EMAIL = /^[^\s@|]+@[^\s@|]+\.[^\s@|]+$/;

/**
 * Who acted: a user (`usr_...`), a tenant API key (`key_...`), a setup link (`setl_...`), or a person's email, which the
 * service resolves to the users it names (case does not matter).
 */
export const ZAuditActorFilter = z
  .string()
  .trim()
  .max(254)
  .refine(
    (v) => ACTOR_ID.test(v) || ACTOR_EMAIL.test(v),
    "expected a person's email, a user id (usr_...), an API key id (key_...) or a setup link id (setl_...)",
  );

/** Whether an actor filter is an email (else an id). */
export const isActorEmail = (actor: string) => !ACTOR_ID.test(actor) && ACTOR_EMAIL.test(actor);

/** What was acted on: an id as svc issues them, a short prefix and 20 base62 (`ten_...`, `usr_...`). */
export const ZAuditTargetFilter = z.string().regex(/^[a-z]{2,4}_[0-9A-Za-z]{20}$/, 'expected an id svc issued (e.g. usr_...)');

const fromNotAfterTo = (v: { from?: string; to?: string }) =>
  v.from === undefined || v.to === undefined || Date.parse(v.from) <= Date.parse(v.to);
const FROM_AFTER_TO = { message: 'from must not be after to', path: ['from'] };

const filterShape = {
  action: ZAuditActionFilter.optional(),
  actor: ZAuditActorFilter.optional(),
  target: ZAuditTargetFilter.optional(),
  /** Entries at or after this instant (ISO 8601 with Z or an offset). */
  from: ZInstant.optional(),
  /** Entries strictly before this instant. */
  to: ZInstant.optional(),
};

/** The filters of the audit log, as the console's filter form holds them (empty fields unset). */
export const ZAuditLogFilters = z.object(filterShape).refine(fromNotAfterTo, FROM_AFTER_TO);
export type TAuditLogFilters = z.infer<typeof ZAuditLogFilters>;

/**
 * GET /v1/audit-logs. `from` is inclusive and `to` exclusive (`from <= createdAt < to`), so
 * consecutive ranges never show an entry twice; `from` after `to` is a 400.
 */
export const ZListAuditLogsRequest = ZListQuery.extend({
  /** The organization whose log to read; default: the session's active workspace (or the API key's). */
  organization_slug: ZSlug.optional(),
  ...filterShape,
}).refine(fromNotAfterTo, FROM_AFTER_TO);
export type TListAuditLogsRequest = z.infer<typeof ZListAuditLogsRequest>;

export const ZAuditLogEntryId = z.string().regex(/^aud_[0-9A-Za-z]{20}$/, 'expected an audit log entry id (aud_...)');

/** One entry, by id, of the organization's log (GET /v1/audit-logs/{id}). */
export const ZGetAuditLogEntryRequest = z.object({
  id: ZAuditLogEntryId,
  /** The organization whose log holds it; default: the session's active workspace (or the API key's). */
  organization_slug: ZSlug.optional(),
});
export type TGetAuditLogEntryRequest = z.infer<typeof ZGetAuditLogEntryRequest>;

export const ZAuditLogEntry = z
  .object({
    id: z.string(),
    /** The organization acted on; null for platform-level entries. */
    tenantId: z.string().nullable(),
    actor: z.object({
      type: z.enum(['user', 'api_key', 'system', 'setup_link']),
      /** `usr_...`, `key_...` or `setl_...` (docs/enterprise.md "Setup links"); null for the system. */
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
