import { MACHINE_TOKEN_EVENT_TYPE } from '@svc/contracts/authorization';
import { AppError } from '@svc/contracts/errors';
import { describe, expect, it } from 'vitest';
import type { Submission, SubmissionOutcome } from './ingester.ts';
import { type MachineToken, MachineTokenMeter } from './machine-tokens.ts';

/**
 * The meter's rules without a database (the provider's tests, oidc-provider/machine-tokens.test.ts,
 * run them against PostgreSQL): when a token waits for its count, which count a failed write
 * writes again, and what a change of the subscription does to the judgement.
 */

const unavailable = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

let seq = 0;
const token = (organizationId = 'ten_a'): MachineToken => ({
  organizationId,
  clientId: 'app_machine',
  tokenId: `jti${++seq}`,
  resource: 'https://api.example',
});

/** A submit that holds every write until released, and remembers what it was given. */
function heldSubmit() {
  const writes: { submission: Submission; release: (error?: unknown) => void }[] = [];
  const submit = (submission: Submission) =>
    new Promise<SubmissionOutcome>((resolve, reject) => {
      writes.push({ submission, release: (error) => (error ? reject(error) : resolve([])) });
    });
  return { writes, submit };
}

const settledWithin = async (promise: Promise<unknown>, ms = 50) =>
  Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))]);

describe('MachineTokenMeter', () => {
  it('without a limit a token goes at once and its event follows, marked issued', async () => {
    const { writes, submit } = heldSubmit();
    const meter = new MachineTokenMeter({ submit, judge: async () => ({ limit: undefined }), changes: () => 0 });
    expect(await settledWithin(meter.record(token()))).toBe(true);
    expect(writes).toHaveLength(1);
    expect(writes[0]?.submission).toMatchObject({
      tenantId: 'ten_a',
      issued: true,
      events: [{ eventType: MACHINE_TOKEN_EVENT_TYPE, quantity: 1 }],
    });
    const flushed = meter.flush();
    expect(await settledWithin(flushed)).toBe(false);
    writes[0]?.release();
    expect(await settledWithin(flushed)).toBe(true);
  });

  it('with a limit a token waits for its event, and the 402 of a group is asked one token at a time', async () => {
    const { writes, submit } = heldSubmit();
    const meter = new MachineTokenMeter({ submit, judge: async () => ({ limit: 5 }), changes: () => 0 });
    const first = meter.record(token());
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(writes[0]?.submission.issued).toBeUndefined();
    expect(await settledWithin(first)).toBe(false);
    writes[0]?.release();
    expect(await settledWithin(first)).toBe(true);
  });

  it('a write the database could not take is written again with the same key and quantity, never merged with later tokens', async () => {
    const tried: Submission[] = [];
    const written: Submission[] = [];
    const errors: unknown[] = [];
    const meter = new MachineTokenMeter({
      submit: async (submission) => {
        const first = tried.push(submission) === 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (first) {
          throw unavailable();
        }
        written.push(submission);
        return [];
      },
      judge: async () => ({ limit: undefined }),
      changes: () => 0,
      retryMs: 20,
      onError: (error) => errors.push(error),
    });
    for (let i = 0; i < 4; i++) {
      await meter.record(token());
    }
    await meter.flush();
    const failed = (tried[0] as Submission).events[0];
    const again = written.filter((w) => w.events[0]?.idempotencyKey === failed?.idempotencyKey);
    expect(again).toHaveLength(1);
    expect(again[0]?.events[0]?.requestHash).toBe(failed?.requestHash);
    expect(written.reduce((n, w) => n + (w.events[0]?.quantity ?? 0), 0)).toBe(4);
    expect(new Set(written.map((w) => w.events[0]?.idempotencyKey)).size).toBe(written.length);
    expect(errors).toHaveLength(1);
  });

  it('at its deadline flush gives up a write that keeps failing, and says which count was lost', async () => {
    const lost: unknown[] = [];
    const meter = new MachineTokenMeter({
      submit: async () => {
        throw unavailable();
      },
      judge: async () => ({ limit: undefined }),
      changes: () => 0,
      retryMs: 5,
      onError: (_error, l) => l && lost.push(l),
    });
    await meter.record(token('ten_gone'));
    await meter.flush(30);
    await expect.poll(() => lost).toEqual([{ organizationId: 'ten_gone', quantity: 1 }]);
  });

  it('judges once per organization until the access facts change, and never remembers a refusal', async () => {
    let changes = 0;
    let judged = 0;
    let refuse = false;
    const meter = new MachineTokenMeter({
      submit: async () => [],
      judge: async () => {
        judged++;
        if (refuse) {
          throw new AppError('subscription_inactive', 'inactive');
        }
        return { limit: undefined };
      },
      changes: () => changes,
    });
    await meter.record(token());
    await meter.record(token());
    expect(judged).toBe(1);
    changes++;
    refuse = true;
    await expect(meter.record(token())).rejects.toMatchObject({ code: 'subscription_inactive' });
    await expect(meter.record(token())).rejects.toMatchObject({ code: 'subscription_inactive' });
    expect(judged).toBe(3);
    refuse = false;
    await meter.record(token());
    expect(judged).toBe(4);
    await meter.flush();
  });
});
