import { z } from 'zod';
import { ZInstant, ZListQuery, ZOrganizationId, ZSlug } from './lists.ts';

/** Most events one request may carry (docs/api.md). */
export const MAX_USAGE_EVENTS_PER_REQUEST = 1000;
/** Largest quantity of one event: bigger counts go in a coarser unit (KB rather than bytes). */
export const MAX_USAGE_QUANTITY = 1_000_000_000;
/** How far back an event may have happened (Stripe's meter events allow 35 days). */
export const USAGE_BACKDATE_LIMIT_MS = 35 * 24 * 3_600_000;
/** How far ahead of svc's clock an event may be dated (senders' clock skew). */
export const USAGE_FUTURE_SKEW_MS = 5 * 60_000;
/** Size of an event's `properties` once serialized as JSON (UTF-8 bytes). */
export const MAX_USAGE_PROPERTIES_BYTES = 4096;
/** Nesting depth of `properties` (the object itself is depth 1). */
export const MAX_USAGE_PROPERTIES_DEPTH = 5;

/**
 * Event types: lower-case letters and digits in words joined by one `.`, `_`, `:` or `-`,
 * starting with a letter, at most 64 characters (`api_call`, `storage.gb_hours`, `llm:tokens`).
 * The same names key a plan's usage limits.
 */
export const USAGE_EVENT_TYPE_PATTERN = /^[a-z][a-z0-9]*(?:[._:-][a-z0-9]+)*$/;
export const ZUsageEventType = z
  .string()
  .min(1)
  .max(64)
  .regex(USAGE_EVENT_TYPE_PATTERN, 'an event type is lower-case letters and digits in words joined by . _ : or - (e.g. api_call)');

/**
 * Idempotency keys: 1-255 printable ASCII characters without spaces (a UUID, a ULID, an order
 * line id). Unique per organization: the same key is the same event forever.
 */
export const ZIdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'an idempotency key is printable ASCII without spaces');

export const ZUsageQuantity = z.number().int('quantity must be a whole number').min(0).max(MAX_USAGE_QUANTITY);

/** An ISO 8601 instant with Z or an offset, within the last 35 days and at most 5 minutes ahead. */
export const ZUsageOccurredAt = z.iso.datetime({ offset: true }).refine(
  (v) => {
    const at = Date.parse(v);
    const now = Date.now();
    return at >= now - USAGE_BACKDATE_LIMIT_MS && at <= now + USAGE_FUTURE_SKEW_MS;
  },
  { message: 'occurredAt must be within the last 35 days and at most 5 minutes ahead' },
);

/**
 * Walks a JSON value once: its nesting depth, whether a NUL character is in any key or string,
 * and an upper bound of its JSON size in UTF-8 bytes (6 per UTF-16 unit covers every escape).
 */
function measure(value: unknown, depth: number, acc: { depth: number; nul: boolean; bound: number }): void {
  if (typeof value === 'string') {
    acc.bound += value.length * 6 + 2;
    if (value.includes('\u0000')) {
      acc.nul = true;
    }
    return;
  }
  if (value === null || typeof value !== 'object') {
    acc.bound += 24;
    return;
  }
  const level = depth + 1;
  if (level > acc.depth) {
    acc.depth = level;
  }
  acc.bound += 2;
  if (Array.isArray(value)) {
    for (const item of value) {
      acc.bound += 1;
      measure(item, level, acc);
    }
    return;
  }
  for (const key in value) {
    acc.bound += key.length * 6 + 4;
    if (key.includes('\u0000')) {
      acc.nul = true;
    }
    measure((value as Record<string, unknown>)[key], level, acc);
  }
}

/** Why `properties` is refused, or undefined: depth, size, and no NUL (PostgreSQL's jsonb refuses \u0000). */
function propertiesProblem(value: Record<string, unknown>): string | undefined {
  const acc = { depth: 0, nul: false, bound: 0 };
  measure(value, 0, acc);
  if (acc.depth > MAX_USAGE_PROPERTIES_DEPTH) {
    return `properties may nest at most ${MAX_USAGE_PROPERTIES_DEPTH} levels`;
  }
  if (acc.nul) {
    return 'properties may not contain the NUL character';
  }
  // Serialized only when the bound says it might be too large.
  if (acc.bound > MAX_USAGE_PROPERTIES_BYTES && new TextEncoder().encode(JSON.stringify(value)).length > MAX_USAGE_PROPERTIES_BYTES) {
    return `properties may take at most ${MAX_USAGE_PROPERTIES_BYTES} bytes as JSON`;
  }
  return undefined;
}

/** Free-form facts about the event (a JSON object: at most 4 KiB, 5 levels, no NUL). */
export const ZUsageProperties = z.record(z.string().max(128), z.unknown()).superRefine((value, ctx) => {
  const problem = propertiesProblem(value);
  if (problem) {
    ctx.addIssue({ code: 'custom', message: problem });
  }
});

const eventFields = {
  /** Deduplicates the event per organization (Stripe's idempotency semantics). */
  idempotencyKey: ZIdempotencyKey,
  eventType: ZUsageEventType,
  /** A whole number, 0 to 1,000,000,000; default 1. */
  quantity: ZUsageQuantity.optional(),
  /** When it happened (default: when svc received it). */
  occurredAt: ZUsageOccurredAt.optional(),
  properties: ZUsageProperties.optional(),
};

/** One event of `{ events: [...] }`. Unknown fields are refused: a misspelt `quantity` is a 400, not a silent 1. */
export const ZUsageEventInput = z.strictObject(eventFields).meta({ id: 'UsageEventInput' });
export type TUsageEventInput = z.infer<typeof ZUsageEventInput>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; required with a session unless its active workspace is meant; a key's own organization by default",
);

/**
 * POST /v1/usage/events and POST /v1/usage-events (docs/api.md): one event at the top level, or
 * `{ events: [...] }` with 1-1000 events whose idempotency keys differ. One object schema (the
 * REST adapter documents object bodies only), so the rules between its fields are checked here.
 */
export const ZIngestUsageRequest = z
  .strictObject({
    organization_slug: organizationSlug,
    events: z.array(ZUsageEventInput).min(1).max(MAX_USAGE_EVENTS_PER_REQUEST).optional(),
    idempotencyKey: ZIdempotencyKey.optional(),
    eventType: ZUsageEventType.optional(),
    quantity: ZUsageQuantity.optional(),
    occurredAt: ZUsageOccurredAt.optional(),
    properties: ZUsageProperties.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.events !== undefined) {
      for (const field of ['idempotencyKey', 'eventType', 'quantity', 'occurredAt', 'properties'] as const) {
        if (body[field] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [field], message: 'send either one event or { events: [...] }, not both' });
        }
      }
      const seen = new Map<string, number>();
      body.events.forEach((event, index) => {
        const first = seen.get(event.idempotencyKey);
        if (first !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['events', index, 'idempotencyKey'],
            message: `repeats the idempotency key of events[${first}]: one request may not carry the same event twice`,
          });
        } else {
          seen.set(event.idempotencyKey, index);
        }
      });
      return;
    }
    if (body.idempotencyKey === undefined) {
      ctx.addIssue({ code: 'custom', path: ['idempotencyKey'], message: 'idempotencyKey is required' });
    }
    if (body.eventType === undefined) {
      ctx.addIssue({ code: 'custom', path: ['eventType'], message: 'eventType is required' });
    }
  });
export type TIngestUsageRequest = z.infer<typeof ZIngestUsageRequest>;

/** Which route recorded an event: POST /v1/usage/events (`usage`) or POST /v1/usage-events (`metering`). */
export const ZUsageChannel = z.enum(['usage', 'metering']);
export type TUsageChannel = z.infer<typeof ZUsageChannel>;

/** A recorded usage event (append-only: it never changes). */
export const ZUsageEvent = z
  .object({
    id: z.string(),
    idempotencyKey: z.string(),
    eventType: z.string(),
    quantity: z.number(),
    occurredAt: z.string(),
    properties: z.record(z.string(), z.unknown()),
    channel: ZUsageChannel,
    /** Who sent it: an application (`app_...`), a tenant API key (`key_...`) or a user (`usr_...`). */
    sourceId: z.string().nullable(),
    /** When svc recorded it. */
    createdAt: z.string(),
  })
  .meta({ id: 'UsageEvent' });
export type TUsageEvent = z.infer<typeof ZUsageEvent>;

/** One event's outcome: the event as recorded; `duplicate` when an earlier request recorded it. */
export const ZUsageEventResult = z.object({ event: ZUsageEvent, duplicate: z.boolean() }).meta({ id: 'UsageEventResult' });
export type TUsageEventResult = z.infer<typeof ZUsageEventResult>;

/** Single event: 201 `{ event, duplicate: false }` or 200 `{ event, duplicate: true }`; batch: 200 `{ results }` in request order. */
export const ZIngestUsageResponse = z
  .union([ZUsageEventResult, z.object({ results: z.array(ZUsageEventResult) })])
  .meta({ id: 'IngestUsageResponse' });
export type TIngestUsageResponse = z.infer<typeof ZIngestUsageResponse>;

const fromNotAfterTo = (v: { from?: string; to?: string }) =>
  v.from === undefined || v.to === undefined || Date.parse(v.from) <= Date.parse(v.to);
const FROM_AFTER_TO = { message: 'from must not be after to', path: ['from'] };

/** The filters of the event list, as the console holds them (empty fields unset). */
export const ZUsageEventFilters = z.object({
  event_type: ZUsageEventType.optional(),
  /** Events that occurred at or after this instant. */
  from: ZInstant.optional(),
  /** Events that occurred strictly before this instant. */
  to: ZInstant.optional(),
  /** The one event with this idempotency key. */
  idempotency_key: ZIdempotencyKey.optional(),
});

/** GET /v1/tenants/{id}/usage/events: newest `occurredAt` first, `from <= occurredAt < to`. */
export const ZListUsageEventsRequest = ZListQuery.extend({ id: ZOrganizationId, ...ZUsageEventFilters.shape }).refine(
  fromNotAfterTo,
  FROM_AFTER_TO,
);
export type TListUsageEventsRequest = z.infer<typeof ZListUsageEventsRequest>;

export const ZUsageEventPage = z.object({ data: z.array(ZUsageEvent), nextCursor: z.string().nullable() }).meta({ id: 'UsageEventPage' });
export type TUsageEventPage = z.infer<typeof ZUsageEventPage>;

export const ZUsageBucket = z.enum(['day', 'hour']);
export type TUsageBucket = z.infer<typeof ZUsageBucket>;

/** Longest range of one summary, per bucket size: 31 days of hours, 400 days of days. */
export const MAX_SUMMARY_RANGE_MS: Record<TUsageBucket, number> = { hour: 31 * 86_400_000, day: 400 * 86_400_000 };

const wholeHour = (v: string | undefined) => v === undefined || Date.parse(v) % 3_600_000 === 0;

/**
 * GET /v1/tenants/{id}/usage/summary. The range defaults to the current calendar month (UTC);
 * `from` and `to` are whole hours (totals are kept per hour) and `from <= hour < to`.
 */
export const ZUsageSummaryRequest = z
  .object({
    id: ZOrganizationId,
    from: ZInstant.optional(),
    to: ZInstant.optional(),
    bucket: ZUsageBucket.default('day'),
    event_type: ZUsageEventType.optional(),
  })
  .refine(fromNotAfterTo, FROM_AFTER_TO)
  .refine((v) => wholeHour(v.from), { message: 'from must be a whole hour (usage is totalled per hour)', path: ['from'] })
  .refine((v) => wholeHour(v.to), { message: 'to must be a whole hour (usage is totalled per hour)', path: ['to'] });
export type TUsageSummaryRequest = z.infer<typeof ZUsageSummaryRequest>;

const ZUsageTotals = { events: z.number(), quantity: z.number() };

export const ZUsageSummary = z
  .object({
    from: z.string(),
    to: z.string(),
    bucket: ZUsageBucket,
    /** One entry per event type with usage in the range, by name; `points` are the non-empty buckets, oldest first. */
    data: z.array(
      z.object({
        eventType: z.string(),
        ...ZUsageTotals,
        points: z.array(z.object({ start: z.string(), ...ZUsageTotals })),
      }),
    ),
  })
  .meta({ id: 'UsageSummary' });
export type TUsageSummary = z.infer<typeof ZUsageSummary>;

/** GET /v1/usage?organization_slug=: this calendar month's counters against the plan's limits. */
export const ZUsageCountersRequest = z.object({ organization_slug: organizationSlug });
export type TUsageCountersRequest = z.infer<typeof ZUsageCountersRequest>;

export const ZUsageCounters = z
  .object({
    organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    /** The calendar month (UTC) the counters cover: `start <= occurredAt < end`. */
    period: z.object({ start: z.string(), end: z.string() }),
    plan: z.object({ key: z.string(), name: z.string() }).nullable(),
    /** The subscription's status (active, trialing, inactive, cancelled, expired); null without one. */
    status: z.string().nullable(),
    /** Every type used this month or limited by the plan, by name. `limit` null is unlimited. */
    usage: z.array(
      z.object({
        eventType: z.string(),
        ...ZUsageTotals,
        limit: z.number().nullable(),
        /** `limit - quantity`, never below 0; null when unlimited. */
        remaining: z.number().nullable(),
        /** At the limit: POST /v1/usage-events refuses more of this type until next month. */
        reached: z.boolean(),
        /**
         * The plan's usage thresholds for this limit (empty when unlimited or the plan has none):
         * the quantity at which each is reached and when it was this month (a usage.threshold_reached
         * event), null while it is not.
         */
        thresholds: z.array(
          z.object({
            threshold: z.number().int().describe('percentage of the limit'),
            quantity: z.number().int().describe('the quantity at which it is reached (rounded up)'),
            reachedAt: z.string().nullable().describe('ISO 8601 instant it was reached this month; null while it is not'),
          }),
        ),
      }),
    ),
    /** Members of the organization against the subscription's seats (null is unlimited). */
    seats: z.object({ used: z.number(), limit: z.number().nullable() }),
  })
  .meta({ id: 'UsageCounters' });
export type TUsageCounters = z.infer<typeof ZUsageCounters>;

/**
 * The usage event types svc itself records for an organization (docs/api.md "Usage event types
 * svc records"): each is metered like any usage event, so a plan's `usageLimits` can cap it per
 * month and a blocked subscription stops it with the usual 402.
 */
export const SVC_USAGE_EVENT_TYPES = {
  /** An access token a machine client got (client credentials); properties `clientId`, `resource`. */
  machineToken: 'machine_token.issued',
  /**
   * An access token a third-party client (an agent) got for a person of the organization: each
   * code or refresh token redeemed; properties `clientId`, `resource`.
   */
  agentToken: 'agent_token.issued',
  /** A call to one of the tools of svc's own MCP server (`/mcp`); properties `clientId`, `resource` (`tool:<name>`). */
  mcpToolCall: 'mcp.tool_call',
} as const;
