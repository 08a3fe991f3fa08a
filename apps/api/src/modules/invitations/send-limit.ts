import type { ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import type { AppServices } from '../../context.ts';
import { RateLimiter } from '../../http/rate-limit.ts';

/**
 * One limiter per process for invitation sends. Its counters are the shared PostgreSQL ones (key
 * `invite:<email>`), so the limit holds across every API process like all others.
 */
const limiters = new WeakMap<AppServices, RateLimiter>();

/**
 * The per-email budget of invitation sends (ARCHITECTURE.md 7: "tight per email on ... invitation
 * sends"): RATE_LIMIT_INVITATIONS_PER_MINUTE per address per minute, counted across all
 * organizations, so nobody can use svc to flood one inbox however many workspaces they open.
 * A spent budget answers 429 `rate_limited` with Retry-After.
 */
export function invitationSendLimit(services: AppServices, res: ServerResponse): (email: string) => Promise<void> {
  return async (email) => {
    const { rateLimit } = services.config;
    if (!rateLimit.enabled) {
      return;
    }
    let limiter = limiters.get(services);
    if (!limiter) {
      limiter = new RateLimiter(services.db, services.logger);
      limiters.set(services, limiter);
    }
    const decision = await limiter.take(`invite:${email}`, rateLimit.invitationsPerMinute);
    if (!decision.allowed) {
      res.setHeader('Retry-After', String(decision.resetSeconds));
      throw new AppError(
        'rate_limited',
        `at most ${rateLimit.invitationsPerMinute} invitations per email address per minute; retry in ${decision.resetSeconds} s`,
      );
    }
  };
}
