import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { limitLiteral } from '../limit-literal.ts';

/**
 * The events feed (GET /v1/events): an organization's events, oldest first, in an order no
 * commit can add to behind a reader.
 *
 * Why not created_at or id: an event's row becomes visible when its transaction commits, not
 * when it is written. A transaction that wrote event A and is still open while a later one
 * writes and commits B lets a reader see B without A; a cursor placed after B would then skip A
 * for ever once A commits. Every feed row carries its writing transaction's id (`xid`, an xid8
 * from the column default `pg_current_xact_id()`), and the feed serves only rows whose xid is
 * below `pg_snapshot_xmin(pg_current_snapshot())`: the oldest transaction still running when the
 * statement took its snapshot. Every transaction below it has committed or rolled back, and new
 * ones get larger ids, so the rows below it are final: no row with a smaller xid can appear
 * later. Ordered by (xid, id), the served rows are a growing prefix of one fixed order, and a
 * cursor (xid, id) never passes an event that is yet to commit. The price: the feed lags behind
 * the oldest open writing transaction of the whole PostgreSQL cluster (a transaction left open
 * holds every organization's feed back until it ends).
 */
export type FeedCursor = { xid: string; id: string };

export type FeedEventRow = { id: string; type: string; data: Record<string, unknown>; createdAt: Date; xid: string };

export type FeedQuery = {
  tenantId: string;
  /** The types to serve (the caller's readable ones, or those asked for of them); at least one. */
  types: readonly string[];
  /**
   * `perType`: read type by type along (tenant_id, type, xid, id) and merge, for a few requested
   * types (the other types' events are never read); otherwise one range along (tenant_id, xid,
   * id), skipping the few rows of types not served.
   */
  perType: boolean;
  after: FeedCursor | undefined;
  /** created_at >= this (the later of `from` and the retention window's start). */
  notBefore: Date;
  /** created_at < this (`to`), if given. */
  before: Date | undefined;
  limit: number;
};

/** Up to `limit` rows after the cursor in (xid, id) order, all of finished transactions. */
export async function listFeedEvents(db: DbOrTx, q: FeedQuery): Promise<FeedEventRow[]> {
  const limit = limitLiteral(q.limit);
  const after = q.after ? sql`and (ev.xid, ev.id) > (${q.after.xid}::xid8, ${q.after.id}::text)` : sql``;
  const before = q.before ? sql`and ev.created_at < ${q.before.toISOString()}::timestamptz` : sql``;
  const finished = sql`ev.xid < pg_snapshot_xmin(pg_current_snapshot())`;
  const notBefore = sql`ev.created_at >= ${q.notBefore.toISOString()}::timestamptz`;
  // The time as epoch milliseconds and the data as its text: the same values whatever type parsers
  // the connection has (created_at has millisecond precision).
  const columns = sql`ev.id, ev.type, ev.data::text as "dataJson", (extract(epoch from ev.created_at) * 1000)::float8 as "createdAtMs", ev.xid::text as xid`;
  const rows = q.perType
    ? await db.execute(sql`
      select e.* from unnest(${sql.param([...q.types])}::text[]) as t(type)
      cross join lateral (
        select ${columns}, ev.xid as sort_xid
        from webhook_events ev
        where ev.tenant_id = ${q.tenantId} and ev.type = t.type and ${finished} ${after} and ${notBefore} ${before}
        order by ev.xid, ev.id
        limit ${limit}
      ) e
      order by e.sort_xid, e.id
      limit ${limit}`)
    : await db.execute(sql`
      select ${columns}
      from webhook_events ev
      where ev.tenant_id = ${q.tenantId} and ev.type = any(${sql.param([...q.types])}::text[])
        and ${finished} ${after} and ${notBefore} ${before}
      order by ev.xid, ev.id
      limit ${limit}`);
  return (rows as unknown as { id: string; type: string; dataJson: string; createdAtMs: number; xid: string }[]).map((r) => ({
    id: r.id,
    type: r.type,
    data: JSON.parse(r.dataJson) as Record<string, unknown>,
    createdAt: new Date(r.createdAtMs),
    xid: r.xid,
  }));
}
