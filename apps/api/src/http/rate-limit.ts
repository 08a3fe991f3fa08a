import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import type { Db } from '@svc/db/client';
import { incrementRateLimitCounter } from '@svc/db/queries/rate-limits';
import type { Logger } from 'pino';
import type { AppServices } from '../context.ts';
import { rateLimitRefusals } from '../metrics.ts';
import { asAppError, sendError } from './errors.ts';

const WINDOW_SECONDS = 60;
/** Largest lease one process takes at once; bounds how many tokens one process may hold idle. */
const MAX_LEASE = 1024;

type Bucket = {
  /** Tokens leased from the shared counter and not yet spent by this process. */
  local: number;
  /** Shared counter total after this process's last lease (all processes' leases). */
  lastTotal: number;
  /** Size of this process's last lease; the next one doubles it while there is room. */
  lastLease: number;
  /**
   * This process's estimated share of the key's traffic: its last lease against what the other
   * processes leased meanwhile. Leases are sized to it, so with N busy processes each holds about
   * 1/N of a quarter of what is left, and few tokens sit idle when the window runs out.
   */
  share: number;
  /** Once a lease came back empty, the window is spent: deny without asking the database. */
  exhausted: boolean;
  /** The lease under way; false when the counter store could not be reached. */
  pending: Promise<boolean> | undefined;
};

export type Decision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

/**
 * Fixed-window rate limiter whose counters live in PostgreSQL, so every API process shares them.
 *
 * Each process leases tokens from the shared counter (`granted = granted + want`, atomically; the
 * row lock makes the total before our increment exact) and spends them locally, so the total
 * admitted across processes never exceeds the limit. A process's first lease in a window is one
 * token (it learns the shared total); each later lease doubles, capped by this process's share of
 * a quarter of what is left, so a busy process makes few round trips while idle tokens stay few.
 * Near the limit leases shrink to one token and every request is counted in the database. Tokens
 * leased and not spent are forfeited at the window's end: the only error is admitting fewer.
 */
export class RateLimiter {
  private windowStart = 0;
  /** Buckets of the current window only: the map is replaced when the window turns. */
  private buckets = new Map<string, Bucket>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  /** True when this process already knows the key's window is spent (no database access). */
  isExhausted(key: string, now = Date.now()): boolean {
    const windowStart = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    return windowStart === this.windowStart && (this.buckets.get(key)?.exhausted ?? false);
  }

  /**
   * Decides at once when this process can (tokens in hand, or the window known to be spent);
   * undefined when a lease is needed. The hot path takes no promise and no microtask.
   */
  takeNow(key: string, limit: number, cost = 1, now = Date.now()): Decision | undefined {
    const { bucket, windowStart, resetSeconds } = this.bucketFor(key, now);
    if (bucket.local >= cost) {
      bucket.local -= cost;
      // Refill in the background at half a lease left, so a busy key never makes its requests
      // wait for the database round trip (they would all queue behind one lease).
      if (!bucket.pending && !bucket.exhausted && bucket.lastLease >= 4 && bucket.local < bucket.lastLease / 2) {
        bucket.pending = this.lease(key, windowStart, bucket, limit, 0).finally(() => {
          bucket.pending = undefined;
        });
      }
      return { allowed: true, limit, remaining: Math.max(0, limit - bucket.lastTotal) + bucket.local, resetSeconds };
    }
    if (bucket.exhausted || cost > limit) {
      // The class is the key's prefix (`public`, `backend`, `signin`, `invite`, ...), never its subject.
      rateLimitRefusals.inc({ class: key.slice(0, Math.max(0, key.indexOf(':'))) || 'other' });
      return { allowed: false, limit, remaining: Math.max(0, limit - bucket.lastTotal) + bucket.local, resetSeconds };
    }
    return undefined;
  }

  /**
   * Rejects with 503 service_unavailable when a lease is needed and the counter store cannot be
   * reached: nothing is admitted unmetered (callers may still choose to admit a read).
   */
  async take(key: string, limit: number, cost = 1, now = Date.now()): Promise<Decision> {
    for (;;) {
      const decided = this.takeNow(key, limit, cost, now);
      if (decided) {
        return decided;
      }
      const { bucket, windowStart } = this.bucketFor(key, now);
      if (!bucket.pending) {
        bucket.pending = this.lease(key, windowStart, bucket, limit, cost - bucket.local).finally(() => {
          bucket.pending = undefined;
        });
      }
      if (!(await bucket.pending)) {
        throw new AppError('service_unavailable', 'the rate limiter cannot reach its counters; retry shortly');
      }
    }
  }

  private bucketFor(key: string, now: number): { bucket: Bucket; windowStart: number; resetSeconds: number } {
    const nowSeconds = now / 1000;
    const windowStart = Math.floor(nowSeconds / WINDOW_SECONDS) * WINDOW_SECONDS;
    const resetSeconds = Math.max(1, Math.ceil(windowStart + WINDOW_SECONDS - nowSeconds));
    if (windowStart !== this.windowStart) {
      this.windowStart = windowStart;
      this.buckets = new Map();
    }
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { local: 0, lastTotal: 0, lastLease: 0, share: 1, exhausted: false, pending: undefined };
      this.buckets.set(key, bucket);
    }
    return { bucket, windowStart, resetSeconds };
  }

  /** Never rejects: false when the counter store could not be reached (nothing was leased). */
  private async lease(key: string, windowStart: number, bucket: Bucket, limit: number, needed: number): Promise<boolean> {
    const room = Math.floor(((limit - bucket.lastTotal) * bucket.share) / 4);
    const grow = bucket.lastLease === 0 ? 1 : Math.min(MAX_LEASE, bucket.lastLease * 2, room);
    const want = Math.max(needed, grow, 1);
    let total: number;
    try {
      total = await incrementRateLimitCounter(this.db, { key, windowStart, want });
    } catch (error) {
      // Fail closed: tokens nobody counted would let a flood of writes through while the
      // database is down (applyRateLimit still admits reads).
      this.logger.warn({ err: error }, 'rate-limit counter unavailable; nothing leased');
      return false;
    }
    const before = total - want;
    if (bucket.lastLease > 0) {
      const others = Math.max(0, before - bucket.lastTotal);
      bucket.share = Math.max(0.01, bucket.lastLease / (bucket.lastLease + others));
    }
    const granted = Math.max(0, Math.min(want, limit - before));
    bucket.lastTotal = total;
    bucket.lastLease = want;
    bucket.local += granted;
    if (granted < Math.max(needed, 1)) {
      bucket.exhausted = true;
    }
    return true;
  }
}

export type RateLimitSettings = { enabled: boolean; publicPerMinute: number; backendPerMinute: number };

/** Whose budget a request spends, decided by the edge (see edge.ts). */
export type RateLimitSubject = { scope: 'public' | 'backend'; subject: string; limit: number; cost: number };

/**
 * Counts the request and sets RateLimit-Policy and RateLimit; answers 429 rate_limited with
 * Retry-After and returns true when the limit is spent. Synchronous when the limiter can decide
 * without the database (almost always). When the counters cannot be reached (the database is
 * down) a write (any method but GET, HEAD, OPTIONS: REST writes and tRPC mutations) answers 503
 * service_unavailable with Retry-After, so nothing unmetered changes anything; a read is admitted
 * uncounted (it answers from caches where it can, or 503 itself when it needs the database).
 */
export function applyRateLimit(
  limiter: RateLimiter,
  req: IncomingMessage,
  res: ServerResponse,
  subject: RateLimitSubject,
): boolean | Promise<boolean> {
  const key = `${subject.scope}:${subject.subject}`;
  const now = limiter.takeNow(key, subject.limit, subject.cost);
  if (now) {
    return answer(req, res, subject, now);
  }
  return limiter.take(key, subject.limit, subject.cost).then(
    (decision) => answer(req, res, subject, decision),
    (error: unknown) => {
      if (READ_METHODS.has(req.method ?? 'GET')) {
        return false;
      }
      const appError = asAppError(error) ?? new AppError('service_unavailable', 'the rate limiter is unavailable; retry shortly');
      sendError(req, res, appError.code, appError.message);
      return true;
    },
  );
}

/** Methods that change nothing: admitted uncounted while the counters are unreachable. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const policies = new Map<string, string>();

function policyOf(scope: string, limit: number): string {
  const key = `${scope}:${limit}`;
  let policy = policies.get(key);
  if (policy === undefined) {
    policy = `"${scope}";q=${limit};w=${WINDOW_SECONDS}`;
    policies.set(key, policy);
  }
  return policy;
}

function answer(req: IncomingMessage, res: ServerResponse, { scope, limit }: RateLimitSubject, decision: Decision): boolean {
  res.setHeader('RateLimit-Policy', policyOf(scope, limit));
  res.setHeader('RateLimit', `"${scope}";r=${decision.remaining};t=${decision.resetSeconds}`);
  if (!decision.allowed) {
    res.setHeader('Retry-After', String(decision.resetSeconds));
    sendError(req, res, 'rate_limited', `rate limit of ${limit} requests per minute exceeded; retry in ${decision.resetSeconds} s`);
    return true;
  }
  return false;
}

/** One limiter per process for the per-key budgets of spendBudget. */
const budgetLimiters = new WeakMap<AppServices, RateLimiter>();

/**
 * Spends one unit of a route's own budget beside the edge's per-caller limit: `perMinute` per
 * `key` per minute (invitation sends per email address, webhook replays per endpoint), counted
 * in the shared PostgreSQL counters, so it holds across every API process. A spent budget sets
 * Retry-After on `res` and throws 429 `rate_limited` with `refusal` and the wait. Does nothing
 * while RATE_LIMIT_ENABLED is false.
 */
export async function spendBudget(
  services: AppServices,
  res: ServerResponse,
  opts: { key: string; perMinute: number; refusal: string },
): Promise<void> {
  if (!services.config.rateLimit.enabled) {
    return;
  }
  let limiter = budgetLimiters.get(services);
  if (!limiter) {
    limiter = new RateLimiter(services.db, services.logger);
    budgetLimiters.set(services, limiter);
  }
  const decision = await limiter.take(opts.key, opts.perMinute);
  if (!decision.allowed) {
    res.setHeader('Retry-After', String(decision.resetSeconds));
    throw new AppError('rate_limited', `${opts.refusal}; retry in ${decision.resetSeconds} s`);
  }
}
