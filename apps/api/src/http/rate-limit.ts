import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { Db } from '@svc/db/client';
import { incrementRateLimitCounter } from '@svc/db/queries/rate-limits';
import type { Logger } from 'pino';
import { sendError } from './errors.ts';

const WINDOW_SECONDS = 60;
/** Largest lease one process takes at once; bounds how many tokens one process may hold idle. */
const MAX_LEASE = 256;

type Bucket = {
  windowStart: number;
  /** Tokens leased from the shared counter and not yet spent by this process. */
  local: number;
  /** Shared counter total after this process's last lease (all processes' leases). */
  lastTotal: number;
  /** Once a lease came back empty, the window is spent: deny without asking the database. */
  exhausted: boolean;
  pending: Promise<void> | undefined;
};

export type Decision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

/**
 * Fixed-window rate limiter whose counters live in PostgreSQL, so every API process shares them.
 *
 * Each process leases tokens from the shared counter (`granted = granted + want`, atomically) and
 * spends them locally. The lease size shrinks with what is left (an eighth of the remainder, at
 * least 1), so near the limit every request is counted in the database and the limit is exact
 * across processes: the total granted never exceeds the limit. Far from the limit, one round trip
 * serves many requests, which keeps the limiter off the hot path. Tokens a process leased but did
 * not spend are forfeited at the window's end (the only error: admitting slightly fewer).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  async take(key: string, limit: number, now = Date.now()): Promise<Decision> {
    const nowSeconds = now / 1000;
    const windowStart = Math.floor(nowSeconds / WINDOW_SECONDS) * WINDOW_SECONDS;
    const resetSeconds = Math.max(1, Math.ceil(windowStart + WINDOW_SECONDS - nowSeconds));
    let bucket = this.buckets.get(key);
    if (!bucket || bucket.windowStart !== windowStart) {
      bucket = { windowStart, local: 0, lastTotal: 0, exhausted: false, pending: undefined };
      this.buckets.set(key, bucket);
      this.sweep(windowStart);
    }
    for (;;) {
      if (bucket.local > 0) {
        bucket.local--;
        return { allowed: true, limit, remaining: Math.max(0, limit - bucket.lastTotal) + bucket.local, resetSeconds };
      }
      if (bucket.exhausted) {
        return { allowed: false, limit, remaining: 0, resetSeconds };
      }
      if (!bucket.pending) {
        bucket.pending = this.lease(key, bucket, limit).finally(() => {
          (bucket as Bucket).pending = undefined;
        });
      }
      await bucket.pending;
    }
  }

  private async lease(key: string, bucket: Bucket, limit: number): Promise<void> {
    const want = Math.min(MAX_LEASE, Math.max(1, Math.floor((limit - bucket.lastTotal) / 8)));
    let total: number;
    try {
      total = await incrementRateLimitCounter(this.db, { key, windowStart: bucket.windowStart, want });
    } catch (error) {
      // The counter store failing must not take the API down with it: admit this request.
      this.logger.error({ err: error }, 'rate-limit counter unavailable; admitting request');
      bucket.local += 1;
      return;
    }
    const before = total - want;
    const granted = Math.max(0, Math.min(want, limit - before));
    bucket.lastTotal = total;
    bucket.local += granted;
    if (granted === 0) {
      bucket.exhausted = true;
    }
  }

  private sweep(currentWindow: number): void {
    if (this.buckets.size < 10_000) {
      return;
    }
    for (const [key, bucket] of this.buckets) {
      if (bucket.windowStart !== currentWindow) {
        this.buckets.delete(key);
      }
    }
  }
}

export type RateLimitSettings = { enabled: boolean; publicPerMinute: number; backendPerMinute: number };

/** Routes authenticated by a backend credential; limited per key, not per IP. */
const BACKEND_PREFIXES = ['/v1/backend/', '/v1/usage/events', '/v1/usage-events'];
/** Never limited: load balancers probe it. */
const EXEMPT = new Set(['/healthz']);

function subjectOf(req: IncomingMessage, path: string, clientIp: string): { scope: 'public' | 'backend'; subject: string } {
  const auth = req.headers.authorization;
  const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
  // Only a well-formed key earns its own budget; anything else counts against the client IP, so
  // a client cannot mint a fresh budget per request by changing a made-up bearer value.
  if (token && SECRET_KEY_PATTERN.test(token) && BACKEND_PREFIXES.some((p) => path.startsWith(p))) {
    // Hash so that no secret is ever stored or logged as a counter key.
    const digest = createHash('sha256').update(token).digest('hex').slice(0, 32);
    return { scope: 'backend', subject: digest };
  }
  return { scope: 'public', subject: clientIp };
}

/**
 * Counts the request and sets RateLimit-Policy and RateLimit; answers 429 rate_limited with
 * Retry-After and returns true when the limit is spent.
 */
export async function applyRateLimit(
  limiter: RateLimiter,
  settings: RateLimitSettings,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  clientIp: string,
): Promise<boolean> {
  if (!settings.enabled || EXEMPT.has(path) || req.method === 'OPTIONS') {
    return false;
  }
  const { scope, subject } = subjectOf(req, path, clientIp);
  const limit = scope === 'backend' ? settings.backendPerMinute : settings.publicPerMinute;
  const decision = await limiter.take(`${scope}:${subject}`, limit);
  res.setHeader('RateLimit-Policy', `"${scope}";q=${limit};w=${WINDOW_SECONDS}`);
  res.setHeader('RateLimit', `"${scope}";r=${decision.remaining};t=${decision.resetSeconds}`);
  if (!decision.allowed) {
    res.setHeader('Retry-After', String(decision.resetSeconds));
    sendError(req, res, 'rate_limited', `rate limit of ${limit} requests per minute exceeded; retry in ${decision.resetSeconds} s`);
    return true;
  }
  return false;
}
