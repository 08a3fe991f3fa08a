import { AppError } from '@svc/contracts/errors';
import { ID_PREFIXES, type IdKind, isIdOf } from '@svc/contracts/ids';
import { type AnyColumn, type SQL, sql } from 'drizzle-orm';

/**
 * Keyset pagination (docs/api.md lists: newest first, `{ data, nextCursor }`). A cursor names the
 * last row of a page by (created_at, id) and the list it came from; the next page is the rows
 * strictly after it, found through an index on (…, created_at desc, id desc), so page 100 costs
 * what page 1 costs. The `scope` (organization and filters) is inside the cursor: a cursor
 * replayed against another list or other filters is refused, never silently misapplied.
 */
export type Cursor = { createdAt: Date; id: string };

export function encodeCursor(scope: string, last: Cursor): string {
  return Buffer.from(JSON.stringify([scope, last.createdAt.toISOString(), last.id])).toString('base64url');
}

/**
 * What encodeCursor writes: `Date.prototype.toISOString` of a year PostgreSQL's timestamptz can
 * hold (it refuses year 0, and toISOString writes other years as `+275760-...`/`-000001-...`).
 */
const CURSOR_INSTANT = /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const ID_KINDS = Object.keys(ID_PREFIXES) as IdKind[];

const MALFORMED = 'cursor is malformed: start again from the first page';

/**
 * The cursor a list was given, or undefined for the first page. A cursor is the client's to
 * tamper with: anything but what encodeCursor wrote for this list (an instant that does not
 * round-trip or is outside PostgreSQL's range, an id svc never issues, a NUL character, another
 * list's scope) is a 400 validation_failed, never a statement PostgreSQL refuses.
 */
export function decodeCursor(scope: string, raw: string | undefined): Cursor | undefined {
  if (raw === undefined) {
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw new AppError('validation_failed', MALFORMED);
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) {
    throw new AppError('validation_failed', MALFORMED);
  }
  const [cursorScope, at, id] = parsed as unknown[];
  if (typeof cursorScope !== 'string' || typeof at !== 'string' || typeof id !== 'string') {
    throw new AppError('validation_failed', MALFORMED);
  }
  const createdAt = new Date(at);
  if (!CURSOR_INSTANT.test(at) || Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== at || !isIssuedId(id)) {
    throw new AppError('validation_failed', MALFORMED);
  }
  if (cursorScope !== scope) {
    throw new AppError('validation_failed', 'cursor belongs to another list or other filters: start again from the first page');
  }
  return { createdAt, id };
}

/** An id of a shape svc issues (`newId`: a known prefix and 20 base62): nothing else is a row's id. */
function isIssuedId(id: string): boolean {
  return ID_KINDS.some((kind) => isIdOf(kind, id));
}

/**
 * `(created_at, id) < (cursor)`: the rows after the cursor, newest first. Written as a row
 * comparison, which PostgreSQL uses as the bound of the index range scan (page 100 starts where
 * page 99 ended); the equivalent `created_at < x or (created_at = x and id < y)` is only a filter,
 * so every page would walk all the rows before it. The instant goes as ISO text with a cast: a
 * bare Date in `sql` reaches postgres.js unencoded (drizzle turns its date serializer off).
 */
export function afterCursor(createdAt: AnyColumn, id: AnyColumn, cursor: Cursor | undefined): SQL | undefined {
  if (!cursor) {
    return undefined;
  }
  return sql`(${createdAt}, ${id}) < (${cursor.createdAt.toISOString()}::timestamptz, ${cursor.id})`;
}

/**
 * Turns `limit + 1` fetched rows into a page: the extra row only says there is a next page.
 */
export function toPage<T extends { createdAt: Date; id: string }, U>(
  scope: string,
  rows: T[],
  limit: number,
  map: (row: T) => U,
): { data: U[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { data: page.map(map), nextCursor: rows.length > limit && last ? encodeCursor(scope, last) : null };
}
