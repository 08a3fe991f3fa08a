import { MACHINE_TOKEN_EVENT_TYPE } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { isDatabaseUnavailable } from '@svc/db/client';
import type { Submission, SubmissionOutcome, UsageActor } from './ingester.ts';
import { prepareEvent } from './prepare-event.ts';

/**
 * One machine client's token about to be issued (its id is the token's `jti`); with another
 * `eventType`, one metered use of the same shape (an agent's token, a call to one of svc's MCP tools).
 */
export type MachineToken = {
  organizationId: string;
  clientId: string;
  tokenId: string;
  resource: string;
  /** Who the usage event names as its source; default: the application `clientId`. */
  actor?: UsageActor;
};

type Waiting = { token: MachineToken; resolve: () => void; reject: (error: unknown) => void };

type Group = { queue: Waiting[]; inFlight: number; issued: boolean };

/**
 * How an organization's tokens are counted now. `exact`: its plan limits machine tokens, so each
 * token waits for its event's commit under the limit's lock. `issued`: nothing limits them, so a
 * token is issued at once and counted by the next write.
 */
type Judgement = { mode: 'exact' | 'issued'; changes: number; until: number };

export type MachineTokenMeterOptions = {
  /**
   * The usage event type counted (default `machine_token.issued`); its idempotency keys are
   * `<eventType>:<id of the first>` (`machine_token:<jti>` for the default, as before).
   */
  eventType?: string;
  submit: (submission: Submission) => Promise<SubmissionOutcome>;
  /**
   * The subscription rule for the organization now (subscriptions/enforce.ts): rejects with its
   * 402; resolves with the month's limit on machine tokens, undefined when there is none.
   */
  judge: (organizationId: string) => Promise<{ limit: number | undefined }>;
  /** Changes whenever access facts (subscriptions, plans) may have changed: AccessCache `changes`. */
  changes: () => number;
  /** How long a judgement stands at most (ms). */
  judgementMs?: number;
  /** Wait before writing issued tokens again after the database could not be reached (ms). */
  retryMs?: number;
  /** A write of issued tokens failed: `lost` is set when their count is given up. */
  onError?: (error: unknown, lost?: { organizationId: string; quantity: number }) => void;
};

/** Submissions in flight per client and API before the next ones wait and join one event. */
const IN_FLIGHT_PER_GROUP = 2;

/**
 * The usage events of machine clients' tokens (docs/authorization.md "Metering"). Tokens that one
 * client asks for the same API at the same time are one event of type `machine_token.issued`
 * whose quantity is their number (idempotency key `machine_token:<jti of the first>`): while a
 * client's earlier tokens are being written, the next ones wait and are written together, so a
 * client asking for hundreds of tokens a second costs a few rows a second rather than one each.
 *
 * Before a token, the organization's subscription is judged (the 402 of an inactive, cancelled or
 * expired subscription, or of one over a limit), once per second at most and again as soon as
 * the access cache hears of a change. Then:
 * - when the plan limits machine tokens, the token waits for its event's commit, counted under the
 *   limit's lock: exactly the tokens the limit allows are issued (a group refused is asked again
 *   one token at a time);
 * - otherwise the token is issued at once and its event written right after, marked `issued`
 *   (recorded even if the subscription changes meanwhile: the token exists). A write that cannot
 *   reach the database is tried again, the same event (same key and quantity, so a write that did
 *   commit is not counted twice), until it succeeds or `flush` (at shutdown) gives up at its
 *   deadline, which logs what it gave up. A process killed outright loses the count of the tokens
 *   it issued in the last write's time (milliseconds).
 */
export class MachineTokenMeter {
  readonly #groups = new Map<string, Group>();
  readonly #judged = new Map<string, Judgement>();
  readonly #settled = new Set<() => void>();
  #stopping = false;

  constructor(private readonly opts: MachineTokenMeterOptions) {}

  /** Resolves once the token may be issued; rejects with the 402 of the subscription rule (or a database error). */
  async record(token: MachineToken): Promise<void> {
    const mode = await this.#modeOf(token.organizationId);
    await new Promise<void>((resolve, reject) => {
      const key = `${mode}\n${token.organizationId}\n${token.clientId}\n${token.resource}\n${token.actor?.type ?? ''}\n${token.actor?.id ?? ''}`;
      let group = this.#groups.get(key);
      if (!group) {
        group = { queue: [], inFlight: 0, issued: mode === 'issued' };
        this.#groups.set(key, group);
      }
      if (group.issued) {
        group.queue.push({ token, resolve: () => {}, reject: () => {} });
        resolve();
      } else {
        group.queue.push({ token, resolve, reject });
      }
      this.#drain(key, group);
    });
  }

  /**
   * Resolves once every issued token's event is written (tests), or at shutdown once they are or
   * `deadlineMs` has passed: writes still failing then are given up (onError names them).
   */
  async flush(deadlineMs?: number): Promise<void> {
    if (this.#groups.size === 0) {
      return;
    }
    const settled = new Promise<void>((resolve) => this.#settled.add(resolve));
    if (deadlineMs === undefined) {
      return settled;
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deadlineMs);
    });
    await Promise.race([settled, deadline]);
    clearTimeout(timer);
    this.#stopping = true;
  }

  async #modeOf(organizationId: string): Promise<'exact' | 'issued'> {
    const now = Date.now();
    const changes = this.opts.changes();
    const known = this.#judged.get(organizationId);
    if (known && known.changes === changes && known.until > now) {
      return known.mode;
    }
    // Rejects with the 402: nothing is remembered, so the next token is judged afresh.
    const { limit } = await this.opts.judge(organizationId);
    const mode = limit === undefined ? 'issued' : 'exact';
    if (this.#judged.size >= 10_000) {
      this.#judged.clear();
    }
    this.#judged.set(organizationId, { mode, changes, until: now + (this.opts.judgementMs ?? 1000) });
    return mode;
  }

  #drain(key: string, group: Group): void {
    if (group.inFlight >= IN_FLIGHT_PER_GROUP || group.queue.length === 0) {
      if (group.inFlight === 0 && group.queue.length === 0) {
        this.#groups.delete(key);
        if (this.#groups.size === 0) {
          for (const settled of this.#settled) {
            settled();
          }
          this.#settled.clear();
        }
      }
      return;
    }
    const batch = group.queue.splice(0);
    group.inFlight++;
    void this.#count(batch, group).finally(() => {
      group.inFlight--;
      this.#drain(key, group);
    });
  }

  /** Counts `batch` as one event; a batch over the month's limit is counted one token at a time. */
  async #count(batch: Waiting[], group: Group): Promise<void> {
    const first = (batch[0] as Waiting).token;
    const eventType = this.opts.eventType ?? MACHINE_TOKEN_EVENT_TYPE;
    const submission: Submission = {
      tenantId: first.organizationId,
      channel: 'metering',
      actor: first.actor ?? { type: 'application', id: first.clientId },
      events: [
        prepareEvent(
          {
            idempotencyKey: eventType === MACHINE_TOKEN_EVENT_TYPE ? `machine_token:${first.tokenId}` : `${eventType}:${first.tokenId}`,
            eventType,
            quantity: batch.length,
            properties: { clientId: first.clientId, resource: first.resource },
          },
          Date.now(),
        ),
      ],
      ...(group.issued ? { issued: true as const } : {}),
    };
    if (group.issued) {
      await this.#write(submission);
      return;
    }
    try {
      await this.opts.submit(submission);
    } catch (error) {
      if (batch.length > 1 && error instanceof AppError && error.code === 'subscription_limit_exceeded') {
        for (const one of batch) {
          await this.#count([one], group);
        }
        return;
      }
      for (const w of batch) {
        w.reject(error);
      }
      return;
    }
    for (const w of batch) {
      w.resolve();
    }
  }

  /** Writes the event of tokens already issued, again while the database cannot be reached. */
  async #write(submission: Submission): Promise<void> {
    for (;;) {
      try {
        await this.opts.submit(submission);
        return;
      } catch (error) {
        const lost = { organizationId: submission.tenantId, quantity: (submission.events[0] as { quantity: number }).quantity };
        if (!isDatabaseUnavailable(error) || this.#stopping) {
          // Not the database's absence (the organization was deleted meanwhile), or shutting down.
          this.opts.onError?.(error, lost);
          return;
        }
        this.opts.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, this.opts.retryMs ?? 1000));
      }
    }
  }
}
