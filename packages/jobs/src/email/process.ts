import { AppError } from '@svc/contracts/errors';
import type { Db } from '@svc/db/client';
import {
  type ClaimedEmailDelivery,
  claimEmailDeliveries,
  type EmailDeliveryRow,
  recordEmailFailure,
  recordEmailSent,
} from '@svc/db/queries/email-deliveries';
import type { SecretBox } from '@svc/db/secret-box';
import type { JobLogger } from '../logger.ts';
import { createEmailProvider, type EmailOutboxSettings, type EmailProvider } from './providers.ts';
import type { EmailContent } from './template.ts';

/**
 * Delay before each attempt: the first at once, then 30 s, 2 min, 10 min, 1 h and 6 h later.
 * After the last one fails the delivery is failed (about 7 hours after it was queued).
 */
export const EMAIL_RETRY_SCHEDULE_MS = [0, 30_000, 120_000, 600_000, 3_600_000, 21_600_000];

/** How long one send may take before it counts as failed. */
export const EMAIL_SEND_TIMEOUT_MS = 30_000;

/** Sends at once per claim: a small batch, so a claim's lease covers one round of sends. */
const SEND_CONCURRENCY = 5;

/** Private error text is capped: enough to diagnose, never a dump of the provider's answer. */
const ERROR_LIMIT = 500;

/** Everything processing needs besides the database. */
export type EmailOutbox = {
  settings: EmailOutboxSettings;
  /** Opens the sealed bodies (context `email_delivery:<id>`). */
  secretBox: SecretBox;
  logger: JobLogger;
  /** Defaults to EMAIL_RETRY_SCHEDULE_MS; its length is the number of attempts. */
  retryScheduleMs?: number[];
  /** Defaults to EMAIL_SEND_TIMEOUT_MS. */
  sendTimeoutMs?: number;
};

/** The SecretBox context of a delivery's body: a body copied into another row does not open. */
export function emailBodyContext(deliveryId: string): string {
  return `email_delivery:${deliveryId}`;
}

export type ProcessEmailOptions = {
  /** Only this organization's deliveries. */
  tenantId?: string;
  /** Exactly these deliveries (due or not); without, the due ones. */
  ids?: string[];
  /** At most this many attempts in this call. */
  limit: number;
  /** Once aborted (a graceful stop), no more deliveries are claimed; claimed ones are finished. */
  signal?: AbortSignal;
};

export type ProcessEmailResult = {
  /** Attempts made (each delivery at most once per call). */
  processed: number;
  sent: number;
  failed: number;
  retrying: number;
  /** The attempted deliveries as recorded. */
  deliveries: EmailDeliveryRow[];
};

/**
 * Claims due (or the selected) deliveries, sends each once and records the outcome: sent (the
 * provider's message id kept privately, the body erased), or retrying at the next step of the
 * schedule, or failed once the schedule is spent (body erased). Safe to run in any number of
 * processes at once: a delivery is claimed by one of them (`for update skip locked`, then a
 * lease), and a result is only recorded while its claim still holds.
 *
 * Disabled email (EMAIL_ENABLED=false or no provider) is `email_delivery_disabled`.
 */
export async function processEmailDeliveries(db: Db, outbox: EmailOutbox, opts: ProcessEmailOptions): Promise<ProcessEmailResult> {
  if (!outbox.settings.enabled) {
    throw new AppError('email_delivery_disabled', 'email delivery is disabled: set EMAIL_ENABLED=true and EMAIL_PROVIDER');
  }
  const timeoutMs = outbox.sendTimeoutMs ?? EMAIL_SEND_TIMEOUT_MS;
  // Longer than any one round of sends: a live claimer never loses its rows to another.
  const leaseMs = timeoutMs + 60_000;
  const result: ProcessEmailResult = { processed: 0, sent: 0, failed: 0, retrying: 0, deliveries: [] };
  const provider = createEmailProvider(outbox.settings, { timeoutMs });
  try {
    // With ids, each is claimed at most once: the loop stops when none of them is left to claim.
    const remainingIds = opts.ids ? new Set(opts.ids) : undefined;
    while (result.processed < opts.limit && !opts.signal?.aborted) {
      if (remainingIds && remainingIds.size === 0) {
        break;
      }
      const claimed = await claimEmailDeliveries(db, {
        tenantId: opts.tenantId,
        ids: remainingIds ? [...remainingIds] : undefined,
        limit: Math.min(SEND_CONCURRENCY, opts.limit - result.processed),
        leaseMs,
      });
      if (claimed.length === 0) {
        break;
      }
      const outcomes = await Promise.all(claimed.map((delivery) => attempt(db, outbox, provider, delivery)));
      for (const [i, delivery] of claimed.entries()) {
        remainingIds?.delete(delivery.id);
        const recorded = outcomes[i];
        result.processed += 1;
        if (!recorded) {
          continue;
        }
        result.deliveries.push(recorded);
        if (recorded.status === 'sent') {
          result.sent += 1;
        } else if (recorded.status === 'failed') {
          result.failed += 1;
        } else if (recorded.status === 'retrying') {
          result.retrying += 1;
        }
      }
    }
  } finally {
    provider.close();
  }
  return result;
}

/** One attempt of one claimed delivery; the recorded row, or undefined when the claim was lost. */
async function attempt(
  db: Db,
  outbox: EmailOutbox,
  provider: EmailProvider,
  delivery: ClaimedEmailDelivery,
): Promise<EmailDeliveryRow | undefined> {
  const claim = { tenantId: delivery.tenantId, id: delivery.id, lockedUntil: delivery.lockedUntil };
  const schedule = outbox.retryScheduleMs ?? EMAIL_RETRY_SCHEDULE_MS;
  const log = { deliveryId: delivery.id, tenantId: delivery.tenantId, attempt: delivery.attemptCount, provider: provider.name };
  let recorded: EmailDeliveryRow | undefined;

  if (delivery.invitationClosed) {
    // The link in it no longer works: sending it would only confuse the invitee.
    recorded = await recordEmailFailure(db, claim, {
      provider: null,
      error: `not sent: ${delivery.invitationClosed.replace('_', ' ')}`,
      retryInMs: null,
      publicMetadata: { notSentReason: delivery.invitationClosed },
    });
    outbox.logger.info({ ...log, reason: delivery.invitationClosed }, 'email delivery not sent: its invitation is closed');
    return recorded ?? lost(outbox, log);
  }

  let content: EmailContent;
  try {
    if (delivery.bodyCiphertext === null) {
      throw new Error('no body');
    }
    content = {
      subject: delivery.subject,
      ...(JSON.parse(outbox.secretBox.open(delivery.bodyCiphertext, emailBodyContext(delivery.id))) as Omit<EmailContent, 'subject'>),
    };
  } catch {
    // No retry can help: the key changed (SVC_ENCRYPTION_KEY) or the row was tampered with.
    recorded = await recordEmailFailure(db, claim, {
      provider: null,
      error: 'the queued body could not be opened (was SVC_ENCRYPTION_KEY changed?)',
      retryInMs: null,
    });
    outbox.logger.error(log, 'email delivery failed: its body could not be opened');
    return recorded ?? lost(outbox, log);
  }

  try {
    const { messageId } = await provider.send({
      deliveryId: delivery.id,
      to: delivery.recipient,
      subject: content.subject,
      text: content.text,
      html: content.html,
    });
    recorded = await recordEmailSent(db, claim, { provider: provider.name, providerMessageId: messageId });
    if (recorded) {
      outbox.logger.info(log, 'email delivery sent');
    }
  } catch (error) {
    // attemptCount already counts this attempt: schedule[attemptCount] is the wait before the next.
    const retryInMs = delivery.attemptCount < schedule.length ? (schedule[delivery.attemptCount] as number) : null;
    recorded = await recordEmailFailure(db, claim, {
      provider: provider.name,
      error: privateError(error, outbox.settings),
      retryInMs,
    });
    if (recorded) {
      // The provider's text stays in the row (private); the log says what happened, not what it said.
      outbox.logger.info(
        { ...log, status: recorded.status, nextAttemptAt: recorded.nextAttemptAt },
        retryInMs === null ? 'email delivery failed: no attempts left' : 'email delivery attempt failed: will retry',
      );
    }
  }
  return recorded ?? lost(outbox, log);
}

function lost(outbox: EmailOutbox, log: Record<string, unknown>): undefined {
  outbox.logger.error(log, 'email delivery claim expired before its result was recorded (another processor owns it now)');
  return undefined;
}

/**
 * The provider's error for the private `last_error` column: our configured secrets masked should
 * the provider echo them, control characters flattened, capped.
 */
function privateError(error: unknown, settings: EmailOutboxSettings): string {
  let text = error instanceof Error ? error.message : String(error);
  for (const secret of secretsOf(settings)) {
    text = text.split(secret).join('[redacted]');
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: flattening control characters is the point
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, ERROR_LIMIT);
}

function secretsOf(settings: EmailOutboxSettings): string[] {
  const out: string[] = [];
  if (settings.resendApiKey) {
    out.push(settings.resendApiKey);
  }
  if (settings.smtpUrl) {
    try {
      const password = decodeURIComponent(new URL(settings.smtpUrl).password);
      if (password) {
        out.push(password);
      }
    } catch {
      // Not a URL: nothing more to mask than the whole value.
    }
    out.push(settings.smtpUrl);
  }
  return out.filter((s) => s.length >= 4);
}
