import { z } from 'zod';

/** Query of every list (API.md "General"): newest first, `limit` 1-200 (default 50), `cursor`. */
export const ZListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** Opaque; the `nextCursor` of the previous page. */
  cursor: z.string().min(1).max(512).optional(),
});
export type TListQuery = z.infer<typeof ZListQuery>;

/** `{ data, nextCursor }`: nextCursor is null on the last page. */
export function ZPage<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), nextCursor: z.string().nullable() });
}

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
