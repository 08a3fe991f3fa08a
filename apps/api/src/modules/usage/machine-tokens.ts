import { MACHINE_TOKEN_EVENT_TYPE } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { prepareEvent } from './ingest.ts';
import type { Submission, SubmissionOutcome } from './ingester.ts';

/** One machine client's token about to be issued (its id is the token's `jti`). */
export type MachineToken = { organizationId: string; clientId: string; tokenId: string; resource: string };

type Waiting = { token: MachineToken; resolve: () => void; reject: (error: unknown) => void };

/** Submissions in flight per client and API before the next ones wait and join one event. */
const IN_FLIGHT_PER_GROUP = 2;

/**
 * The usage events of machine clients' tokens (docs/authorization.md "Metering"), recorded before
 * each token is issued. Tokens that one client asks for the same API at the same time are one
 * event of type `machine_token.issued` whose quantity is their number (idempotency key
 * `machine_token:<jti of the first>`): while a client's earlier tokens are being recorded, the
 * next ones wait and are recorded together, so a client asking for hundreds of tokens a second
 * costs a few rows a second rather than one each. A token alone (the usual case) is an event of
 * quantity 1. Nothing is counted that was not issued and nothing issued is uncounted: every token
 * waits for its event's commit, and a group refused by the month's limit is asked again one token
 * at a time, so exactly the tokens the limit allows are issued.
 */
export class MachineTokenMeter {
  readonly #groups = new Map<string, { queue: Waiting[]; inFlight: number }>();

  constructor(private readonly submit: (submission: Submission) => Promise<SubmissionOutcome>) {}

  /** Resolves once the token is counted; rejects with the 402 of the subscription rule (or a database error). */
  record(token: MachineToken): Promise<void> {
    return new Promise((resolve, reject) => {
      const key = `${token.organizationId}\n${token.clientId}\n${token.resource}`;
      let group = this.#groups.get(key);
      if (!group) {
        group = { queue: [], inFlight: 0 };
        this.#groups.set(key, group);
      }
      group.queue.push({ token, resolve, reject });
      this.#drain(key, group);
    });
  }

  #drain(key: string, group: { queue: Waiting[]; inFlight: number }): void {
    if (group.inFlight >= IN_FLIGHT_PER_GROUP || group.queue.length === 0) {
      if (group.inFlight === 0 && group.queue.length === 0) {
        this.#groups.delete(key);
      }
      return;
    }
    const batch = group.queue.splice(0);
    group.inFlight++;
    void this.#count(batch).finally(() => {
      group.inFlight--;
      this.#drain(key, group);
    });
  }

  /** Counts `batch` as one event; a batch over the month's limit is counted one token at a time. */
  async #count(batch: Waiting[]): Promise<void> {
    const first = (batch[0] as Waiting).token;
    try {
      await this.submit({
        tenantId: first.organizationId,
        channel: 'metering',
        actor: { type: 'application', id: first.clientId },
        events: [
          prepareEvent(
            {
              idempotencyKey: `machine_token:${first.tokenId}`,
              eventType: MACHINE_TOKEN_EVENT_TYPE,
              quantity: batch.length,
              properties: { clientId: first.clientId, resource: first.resource },
            },
            Date.now(),
          ),
        ],
      });
    } catch (error) {
      if (batch.length > 1 && error instanceof AppError && error.code === 'subscription_limit_exceeded') {
        for (const one of batch) {
          await this.#count([one]);
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
}
