import { z } from 'zod';

/** Query of every list (docs/api.md): newest first, `limit` 1-200 (default 50), `cursor`. */
export const ZListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** Opaque; the `nextCursor` of the previous page. */
  cursor: z.string().min(1).max(512).optional(),
});
export type TListQuery = z.infer<typeof ZListQuery>;

const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Instants in requests: ISO 8601 with Z or an offset, falling in years 0001-9999 once in UTC.
 * Outside them JavaScript writes the instant as year 0000 or `+010000-...`, which PostgreSQL
 * refuses as a timestamptz parameter (a 500 for `from=0000-01-01T00:00:00Z` before this rule).
 */
export const ZInstant = z.iso.datetime({ offset: true }).refine(
  (v) => {
    const at = Date.parse(v);
    return at >= FIRST_INSTANT && at <= LAST_INSTANT;
  },
  { message: 'an instant must fall within the years 0001-9999 (UTC)' },
);

/** `{ data, nextCursor }`: nextCursor is null on the last page. */
export function ZPage<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), nextCursor: z.string().nullable() });
}

/**
 * `ten_` + 20 base62: an organization id. Anything else is a 400, never a lookup. Here beside the
 * other shared fields rather than in tenants.ts, which imports the subscription and usage schemas.
 */
export const ZOrganizationId = z.string().regex(/^ten_[0-9A-Za-z]{20}$/, 'expected an organization id (ten_...)');

/** Organization slugs: lower-case letters, digits and single hyphens, 2-48 characters. */
export const ZSlug = z
  .string()
  .min(2)
  .max(48)
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'a slug is lower-case letters, digits and single hyphens');

/** Display names: trimmed, 1-100 characters, no control characters. */
export const ZName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'names may not contain control characters');

/** Emails as svc stores them: trimmed and lower-cased. */
export const ZEmail = z.string().trim().toLowerCase().max(254).pipe(z.email());
