import type { ServerResponse } from 'node:http';
import type { AppServices } from '../context.ts';
import { spendBudget } from '../http/rate-limit.ts';

/**
 * The per-email budget of invitation sends (docs/architecture.md section 7: "tight per email on ... invitation
 * sends"): RATE_LIMIT_INVITATIONS_PER_MINUTE per address per minute, counted across all
 * organizations (key `invite:<email>`), so nobody can use svc to flood one inbox however many
 * workspaces they open. A spent budget answers 429 `rate_limited` with Retry-After.
 */
export function invitationSendLimit(services: AppServices, res: ServerResponse): (email: string) => Promise<void> {
  return (email) => {
    const perMinute = services.config.rateLimit.invitationsPerMinute;
    return spendBudget(services, res, {
      key: `invite:${email}`,
      perMinute,
      refusal: `at most ${perMinute} invitations per email address per minute`,
    });
  };
}
