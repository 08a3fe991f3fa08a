import { bigint, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

/**
 * Fixed-window request counters shared by every API process. The table is UNLOGGED (see the
 * custom migration): losing counts in a crash only forgives one window, and it saves a WAL write.
 */
export const rateLimitCounters = pgTable(
  'rate_limit_counters',
  {
    /** `<scope>:<subject>`, e.g. `public:203.0.113.7` or `backend:<key hash prefix>`. */
    key: text('key').notNull(),
    /** Window start, in epoch seconds. */
    windowStart: bigint('window_start', { mode: 'number' }).notNull(),
    /** Tokens granted to API processes in this window (granted in leases, see rate-limit.ts). */
    granted: integer('granted').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.key, t.windowStart] })],
);
