import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, executePrepared } from '../client.ts';
import { addJobSql } from '../jobs.ts';
import { limitLiteral } from '../limit-literal.ts';
import type { WebhookAttemptOutcome } from '../schema/webhooks.ts';
import { WEBHOOK_DISPATCH_JOB_KEY } from './webhook-events.ts';

/**
 * The webhook worker's statements (packages/jobs/src/webhooks/dispatch.ts). Unlike every other
 * query module these are not scoped to one tenant: the dispatcher serves the whole queue, and the
 * rows it claims carry their own tenant_id into the attempts it writes.
 */

/** The key of the delayed job that wakes the dispatcher when the next retry falls due. */
export const WEBHOOK_WAKE_JOB_KEY = 'webhooks:wake';

/** A delivery claimed for one attempt, with what it takes to sign and send it. */
export type ClaimedDelivery = {
  id: string;
  tenantId: string;
  endpointId: string;
  /** `evt_` id: the `webhook-id` header of every attempt. */
  eventId: string;
  eventType: string;
  /** The event's `data` as PostgreSQL prints jsonb: spliced into the body as is. */
  eventDataJson: string;
  eventCreatedAt: Date;
  /** The number this attempt gets (1 for the first). */
  attemptNumber: number;
  url: string;
  endpointEnabled: boolean;
  secretCiphertext: string;
  /** The previous secret, only while its grace period lasts (null after it expired). */
  previousSecretCiphertext: string | null;
};

type ClaimedRow = {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  event_data: string;
  /** Epoch ms: a number is cheaper to decode than timestamp text, once per delivery. */
  event_created_ms: number;
  attempt_count: number;
  url: string;
  enabled: boolean;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
};

/**
 * The claim statement of claimDueDeliveries. Its limit is a literal (limitLiteral): as a bind
 * parameter it made every claim scan webhook_deliveries and webhook_events in full, 7 ms for 64
 * rows at 30,000 deliveries and growing with the backlog.
 */
export function claimStatement(opts: { token: string; limit: number; lockMs: number; deliveryIds?: string[] }): SQL {
  const limit = limitLiteral(opts.limit);
  const only = opts.deliveryIds ? sql`and id = any(${sql.param(opts.deliveryIds)}::text[])` : sql``;
  return sql`
    with lease as (
      select set_config('synchronous_commit', 'off', true)
    ),
    claimed as (
      update webhook_deliveries d
      set locked_until = now() + ${opts.lockMs}::int * interval '1 millisecond', locked_by = ${opts.token}
      where d.id in (
        select id from webhook_deliveries
        where status in ('pending', 'retrying') and next_attempt_at <= now()
          and (locked_until is null or locked_until < now()) ${only}
        order by next_attempt_at
        limit ${limit}
        for update skip locked
      )
      returning d.id, d.tenant_id, d.endpoint_id, d.event_id, d.attempt_count, d.next_attempt_at
    )
    select c.id, c.tenant_id, c.endpoint_id, c.event_id, c.attempt_count,
      ev.type as event_type, ev.data::text as event_data, (extract(epoch from ev.created_at) * 1000)::float8 as event_created_ms,
      e.url, e.enabled, e.secret_ciphertext,
      case when e.previous_secret_expires_at > now() then e.previous_secret_ciphertext end as previous_secret_ciphertext
    from claimed c
    cross join lease
    join webhook_endpoints e on e.id = c.endpoint_id
    join webhook_events ev on ev.id = c.event_id
    order by c.next_attempt_at, c.id`;
}

/**
 * Claims up to `limit` due deliveries, oldest due first, for `lockMs`, and answers them in that
 * order, the order the dispatcher starts their sends in (a replay's deliveries go out in the order
 * of their events). `locked_by = token` marks whose claim it is, so results are written only by
 * the claimant (recordDeliveryResults). Rows
 * another worker holds are skipped (SKIP LOCKED while claiming, `locked_until` after), so a
 * dispatch job that runs twice never sends the same attempt twice while a claim holds; a claim
 * left by a worker that died expires and the row is due again.
 *
 * One statement, committed without waiting for its WAL flush (`lease`: synchronous_commit off
 * for this implicit transaction only). A claim is a lease, not a record: were PostgreSQL to crash
 * before the commit reached disk, the rows would just be unclaimed again, and deliveries are at
 * least once anyway. That keeps an fsync off the path between a due delivery and its request.
 */
export async function claimDueDeliveries(
  db: DbOrTx,
  opts: { token: string; limit: number; lockMs: number; deliveryIds?: string[] },
): Promise<ClaimedDelivery[]> {
  const rows = await executePrepared<ClaimedRow>(db, claimStatement(opts));
  return rows.map((r) => ({
    id: r.id,
    tenantId: r.tenant_id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    eventType: r.event_type,
    eventDataJson: r.event_data,
    eventCreatedAt: new Date(r.event_created_ms),
    attemptNumber: r.attempt_count + 1,
    url: r.url,
    endpointEnabled: r.enabled,
    secretCiphertext: r.secret_ciphertext,
    previousSecretCiphertext: r.previous_secret_ciphertext,
  }));
}

/**
 * Gives back claims that were never attempted (a stopping worker's queued deliveries): due again
 * at once for any worker, without waiting for the lease to run out. Only this claimant's rows.
 */
export async function releaseClaims(db: DbOrTx, claims: { deliveryId: string; token: string }[]): Promise<void> {
  if (claims.length === 0) {
    return;
  }
  await db.execute(sql`
    update webhook_deliveries d set locked_until = null, locked_by = null
    from unnest(${sql.param(claims.map((c) => c.deliveryId))}::text[], ${sql.param(claims.map((c) => c.token))}::text[]) as c(id, token)
    where d.id = c.id and d.locked_by = c.token`);
}

/** One finished attempt and the state it moves its delivery to. */
export type DeliveryResult = {
  deliveryId: string;
  /** The claim token the delivery was claimed with. */
  token: string;
  attemptNumber: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: WebhookAttemptOutcome;
  error: string | null;
  responseExcerpt: string | null;
  signatureCount: number;
  status: 'retrying' | 'failed' | 'succeeded';
  /** With status retrying: how long from now until the next attempt is due. */
  retryInMs: number | null;
};

/**
 * Writes a batch of attempts in one statement: the deliveries' new state (claim released), their
 * attempt rows, and, for a 410, the endpoint disabled (reason `gone`). A result whose claim is no
 * longer this worker's (it expired and another worker took the row) writes nothing: that worker
 * owns the row now. Returns the ids of the deliveries written.
 */
export async function recordDeliveryResults(db: DbOrTx, results: DeliveryResult[]): Promise<string[]> {
  if (results.length === 0) {
    return [];
  }
  const payload = JSON.stringify(
    results.map((r) => ({
      id: r.deliveryId,
      token: r.token,
      attempt_number: r.attemptNumber,
      started_at: r.startedAt.toISOString(),
      duration_ms: r.durationMs,
      status_code: r.statusCode,
      outcome: r.outcome,
      error: r.error,
      excerpt: r.responseExcerpt,
      signature_count: r.signatureCount,
      status: r.status,
      retry_in_ms: r.retryInMs,
    })),
  );
  // The deliveries whose receiver answered 410, by id: matched against the rows written (the
  // claim guard) without a join of the whole batch with itself.
  const gone = results.filter((r) => r.outcome === 'gone').map((r) => r.deliveryId);
  const rows = await executePrepared<{ id: string }>(
    db,
    sql`
    with v as (
      select * from json_to_recordset(${payload}::text::json) as v(
        id text, token text, attempt_number int, started_at timestamptz, duration_ms int, status_code int,
        outcome text, error text, excerpt text, signature_count int, status text, retry_in_ms bigint
      )
    ),
    updated as (
      update webhook_deliveries d set
        status = v.status,
        attempt_count = v.attempt_number,
        next_attempt_at = case when v.status = 'retrying' then now() + v.retry_in_ms * interval '1 millisecond' end,
        locked_until = null,
        locked_by = null,
        last_attempt_at = v.started_at,
        last_status_code = v.status_code,
        last_outcome = v.outcome,
        succeeded_at = case when v.status = 'succeeded' then now() else d.succeeded_at end,
        updated_at = now()
      from v
      where d.id = v.id and d.locked_by = v.token
      returning d.id, d.tenant_id, d.endpoint_id
    ),
    attempts as (
      insert into webhook_delivery_attempts
        (tenant_id, delivery_id, attempt_number, started_at, duration_ms, status_code, outcome, error, response_excerpt, signature_count)
      select u.tenant_id, v.id, v.attempt_number, v.started_at, v.duration_ms, v.status_code, v.outcome, v.error, v.excerpt, v.signature_count
      from updated u join v on v.id = u.id
      on conflict (delivery_id, attempt_number) do nothing
    ),
    gone as (
      update webhook_endpoints e
      set enabled = false, disabled_reason = 'gone', disabled_at = now(), updated_at = now()
      where e.enabled and e.id in (select u.endpoint_id from updated u where u.id = any(${sql.param(gone)}::text[]))
    )
    select id from updated`,
  );
  return rows.map((r) => r.id);
}

/**
 * After a dispatch run: queues another run now when unclaimed deliveries are still due (the run
 * ran out of time, or work arrived meanwhile), and a wake-up run at the earliest time a waiting
 * delivery falls due (its next_attempt_at, or when another worker's claim on it expires). One
 * statement; the wake job is keyed, so there is one at a time.
 */
export async function scheduleNextDispatch(db: DbOrTx): Promise<{ dueNow: boolean; wakeAt: Date | null }> {
  const rows = (await db.execute(sql`
    with s as (
      select
        exists (
          select 1 from webhook_deliveries
          where status in ('pending', 'retrying') and next_attempt_at <= now()
            and (locked_until is null or locked_until < now())
        ) as due_now,
        least(
          (select min(next_attempt_at) from webhook_deliveries
            where status in ('pending', 'retrying') and next_attempt_at > now()),
          (select min(locked_until) from webhook_deliveries
            where status in ('pending', 'retrying') and next_attempt_at <= now() and locked_until >= now())
        ) as wake_at
    )
    select s.due_now, s.wake_at,
      case when s.due_now then (${addJobSql('webhooks:dispatch', {}, { jobKey: WEBHOOK_DISPATCH_JOB_KEY })}).id end as dispatch_job,
      case when s.wake_at is not null then (${addJobSql('webhooks:dispatch', {}, { runAt: sql`s.wake_at`, jobKey: WEBHOOK_WAKE_JOB_KEY })}).id end as wake_job
    from s`)) as unknown as { due_now: boolean; wake_at: string | Date | null }[];
  const row = rows[0];
  return { dueNow: row?.due_now ?? false, wakeAt: row?.wake_at ? new Date(row.wake_at) : null };
}
