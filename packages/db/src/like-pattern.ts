/**
 * LIKE / ILIKE patterns from a person's text, matched literally: `%`, `_` and the escape
 * character `\` (PostgreSQL's default ESCAPE) are escaped, so a search for `50%_off` finds that
 * text and not every name with `50` in it. Sent as a bind parameter, never spliced into SQL.
 */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The pattern of "starts with `prefix`". */
export function likeStartingWith(prefix: string): string {
  return `${escapeLike(prefix)}%`;
}

/** The pattern of "contains `text`". */
export function likeContaining(text: string): string {
  return `%${escapeLike(text)}%`;
}
