import { z } from 'zod';
import { ZInstant, ZSlug } from './lists.ts';

/** GET /v1/events: at most this many events per page (default EVENTS_FEED_DEFAULT_LIMIT). */
export const EVENTS_FEED_MAX_LIMIT = 500;
export const EVENTS_FEED_DEFAULT_LIMIT = 100;

/** EVENTS_RETENTION_DAYS when unset: how far back the feed reaches (and a cursor stays valid). */
export const EVENTS_RETENTION_DEFAULT_DAYS = 30;

/**
 * One event as webhooks carry it: `id` is every delivery's `webhook-id` (and the payload's `id`),
 * `createdAt` the payload's `timestamp`, `data` the payload's `data`. A receiver fed by both the
 * feed and webhooks deduplicates on `id`.
 */
export const ZFeedEvent = z
  .object({ id: z.string(), type: z.string(), createdAt: z.string(), data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'FeedEvent' });
export type TFeedEvent = z.infer<typeof ZFeedEvent>;

const fromBeforeTo = (v: { from?: string; to?: string }) =>
  v.from === undefined || v.to === undefined || Date.parse(v.from) < Date.parse(v.to);

/**
 * GET /v1/events. `types` is a comma-separated list of catalogued event types (default: every
 * type the caller may read); `from` is inclusive, `to` exclusive (`from <= createdAt < to`). The
 * cursor is bound to the organization and these filters.
 */
export const ZListFeedEventsRequest = z
  .object({
    organization_slug: ZSlug.optional().describe("the organization; default: the session's active workspace or the API key's organization"),
    types: z
      .string()
      .trim()
      .min(1)
      .max(2400)
      .optional()
      .describe('comma-separated event types, e.g. user.created,user.updated; default: every type you may read'),
    from: ZInstant.optional().describe('events created at or after this instant'),
    to: ZInstant.optional().describe('events created strictly before this instant'),
    limit: z.coerce.number().int().min(1).max(EVENTS_FEED_MAX_LIMIT).default(EVENTS_FEED_DEFAULT_LIMIT),
    /** Opaque; the `nextCursor` of the previous page (same organization and filters). */
    cursor: z.string().min(1).max(512).optional(),
  })
  .refine(fromBeforeTo, { message: 'from must be before to', path: ['from'] });
export type TListFeedEventsRequest = z.input<typeof ZListFeedEventsRequest>;

/**
 * A page of the feed. `nextCursor` continues after the last event of this page (after the
 * request's cursor when the page is empty; null only when nothing has been served yet): keep it
 * and ask again later to receive what happens next. `hasMore` says another page is ready now.
 */
export const ZFeedEventPage = z
  .object({ data: z.array(ZFeedEvent), nextCursor: z.string().nullable(), hasMore: z.boolean() })
  .meta({ id: 'FeedEventPage' });
export type TFeedEventPage = z.infer<typeof ZFeedEventPage>;
