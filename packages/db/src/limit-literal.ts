import { type SQL, sql } from 'drizzle-orm';

/**
 * A LIMIT written into the statement as a number, for claims of the shape
 * `where id in (select ... limit n for update skip locked)` joined to other tables. Sent as a bind
 * parameter, PostgreSQL plans such a LIMIT as a tenth of the table, and for that many rows it
 * joins by sequential scans, a cost that grows with the table; with the number it walks the
 * indexes. Only ever a positive safe integer, so nothing but digits reaches the SQL.
 */
export function limitLiteral(limit: number): SQL {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new Error(`a claim limit must be a positive integer, got ${limit}`);
  }
  return sql.raw(String(limit));
}
