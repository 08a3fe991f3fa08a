import { AppError } from '@svc/contracts/errors';
import { EVENT_TYPES } from '@svc/contracts/events';
import type { TFeedEvent, TFeedEventPage, ZListFeedEventsRequest } from '@svc/contracts/events-feed';
import { isIdOf } from '@svc/contracts/ids';
import type { Db } from '@svc/db/client';
import { type FeedCursor, listFeedEvents } from '@svc/db/queries/events-feed';
import type { SecretBox } from '@svc/db/secret-box';
import type { z } from 'zod';
import type { Access } from '../access/authorize.ts';
import { assertReadable, checkEventTypes, isReadable } from './service.ts';

/** What the feed needs besides the database. */
export type EventsFeedSettings = {
  /** Seals cursors (AES-256-GCM with SVC_ENCRYPTION_KEY), bound to organization and filters. */
  secretBox: SecretBox;
  /** EVENTS_RETENTION_DAYS in ms: the feed's window. */
  retentionMs: number;
  now?: () => Date;
};

/**
 * Requested types up to this many are read type by type (an index range each, merged), so a
 * rare type costs what its own events cost however many others the organization has; more, and
 * the default (every readable type), read one range in (xid, id) order.
 */
const PER_TYPE_MAX = 5;

/**
 * What a cursor holds: the position (xid, id) of the last event served and `seenUpToMs`, the
 * instant up to which its holder has seen every event: the last event's createdAt while more
 * pages were ready, the time of the request once the feed was caught up (so a consumer polling a
 * quiet organization keeps a valid cursor). A cursor whose `seenUpToMs` is before the retention
 * window answers 410 cursor_expired: events after it may be outside the window.
 */
type SealedCursor = FeedCursor & { seenUpToMs: number };

type FeedFilters = { tenantId: string; typesKey: string; from: string; to: string };

/**
 * A cursor is sealed with the filters it continues as additional authenticated data: opened with
 * another organization, other types or another range, or altered by one bit, it does not open.
 */
function cursorContext(f: FeedFilters): string {
  return `events-feed:v1:${f.tenantId}:${f.typesKey}:${f.from}:${f.to}`;
}

const INVALID_CURSOR = 'cursor is not one svc issued for this organization and these filters: start again without it';

function sealCursor(box: SecretBox, filters: FeedFilters, cursor: SealedCursor): string {
  return box.seal(JSON.stringify([cursor.xid, cursor.id, cursor.seenUpToMs]), cursorContext(filters));
}

function openCursor(box: SecretBox, filters: FeedFilters, raw: string): SealedCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(box.open(raw, cursorContext(filters)));
  } catch {
    throw new AppError('invalid_cursor', INVALID_CURSOR);
  }
  const [xid, id, seenUpToMs] = Array.isArray(parsed) ? (parsed as unknown[]) : [];
  if (
    typeof xid !== 'string' ||
    !/^\d{1,20}$/.test(xid) ||
    typeof id !== 'string' ||
    !isIdOf('event', id) ||
    typeof seenUpToMs !== 'number' ||
    !Number.isFinite(seenUpToMs)
  ) {
    throw new AppError('invalid_cursor', INVALID_CURSOR);
  }
  return { xid, id, seenUpToMs };
}

/** The types to serve and how to read them: the requested ones (each readable), or all readable. */
function typesToServe(access: Access, raw: string | undefined): { types: string[]; typesKey: string; perType: boolean } {
  if (raw === undefined) {
    const types = EVENT_TYPES.filter((t) => isReadable(access, t));
    if (types.length === 0) {
      throw new AppError('forbidden', 'you may read none of the event types (each needs the read permission of what it is about)');
    }
    return { types, typesKey: '*', perType: false };
  }
  const listed = raw
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (listed.length === 0) {
    throw new AppError('validation_failed', 'types: list at least one event type, comma-separated');
  }
  const types = checkEventTypes(listed);
  assertReadable(access, types, 'you cannot read events about what you may not read');
  return { types, typesKey: types.join(','), perType: types.length <= PER_TYPE_MAX };
}

/**
 * GET /v1/events: every event svc recorded for the organization, oldest first in commit-safe
 * order (packages/db queries/events-feed.ts explains it), of the types the caller may read (as
 * for a webhook subscription: webhooks.read, plus each type's read permission). A type the caller
 * may not read is refused as a filter (403 forbidden naming it) and never served. `webhook.test`
 * events (one endpoint's test) are not the organization's events and are not served.
 */
export async function listEvents(
  db: Db,
  settings: EventsFeedSettings,
  access: Access,
  input: z.output<typeof ZListFeedEventsRequest>,
): Promise<TFeedEventPage> {
  const tenantId = access.organization.id;
  const { types, typesKey, perType } = typesToServe(access, input.types);
  const from = input.from === undefined ? undefined : new Date(input.from);
  const to = input.to === undefined ? undefined : new Date(input.to);
  const filters: FeedFilters = { tenantId, typesKey, from: from?.toISOString() ?? '', to: to?.toISOString() ?? '' };
  const now = (settings.now ?? (() => new Date()))();
  const windowStart = new Date(now.getTime() - settings.retentionMs);
  const after = input.cursor === undefined ? undefined : openCursor(settings.secretBox, filters, input.cursor);
  if (after && after.seenUpToMs < windowStart.getTime()) {
    throw new AppError(
      'cursor_expired',
      'this cursor points before the retention window (EVENTS_RETENTION_DAYS): events after it may be gone; start again without a cursor',
    );
  }
  const rows = await listFeedEvents(db, {
    tenantId,
    types,
    perType,
    after,
    notBefore: from && from > windowStart ? from : windowStart,
    before: to,
    limit: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  const hasMore = rows.length > input.limit;
  const last = page[page.length - 1];
  let nextCursor: string | null = input.cursor ?? null;
  if (last) {
    nextCursor = sealCursor(settings.secretBox, filters, {
      xid: last.xid,
      id: last.id,
      seenUpToMs: hasMore ? last.createdAt.getTime() : now.getTime(),
    });
  } else if (after) {
    // Caught up: the same position, seen up to now.
    nextCursor = sealCursor(settings.secretBox, filters, { ...after, seenUpToMs: now.getTime() });
  }
  return {
    data: page.map((r): TFeedEvent => ({ id: r.id, type: r.type, createdAt: r.createdAt.toISOString(), data: r.data })),
    nextCursor,
    hasMore,
  };
}
