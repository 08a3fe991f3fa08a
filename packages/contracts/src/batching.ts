/**
 * Most procedures one tRPC batch may name. The server refuses a longer batch whole (400) before
 * any procedure runs, and the rate limiter charges a batch one token per procedure; the console's
 * batch link splits its calls into batches of at most this many.
 */
export const MAX_TRPC_BATCH = 20;
