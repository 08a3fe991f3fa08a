import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '@svc/contracts/ids';
import type { Permission } from '@svc/contracts/permissions';
import { createDatabase, type Database } from '@svc/db/client';
import { recordEvent, recordEvents } from '@svc/db/queries/webhook-events';
import { webhookEvents } from '@svc/db/schema/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedApiKey, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';

/**
 * GET /v1/events (docs/api.md "Events feed") over real HTTP on a real PostgreSQL: what it serves
 * and to whom, its cursors, its retention window, and the order that no concurrent commit can
 * slip an event behind.
 */

type Json = Record<string, any>;
type FeedEvent = { id: string; type: string; createdAt: string; data: Json };

let server: Awaited<ReturnType<typeof startTestServer>>;
/** Writers of their own, outside the server's pool (open transactions, concurrent commits). */
let writers: Database;

beforeAll(async () => {
  server = await startTestServer({ env: { EVENTS_RETENTION_DAYS: '1' } });
  writers = createDatabase({ url: server.databaseUrl, max: 24, applicationName: 'svc-test-writers' });
});
afterAll(async () => {
  await server?.close();
  await writers?.close();
});

async function get(path: string, authorization: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server.url}${path}`, { headers: { authorization } });
  return { status: res.status, body: (await res.json()) as Json };
}

function feedPath(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined) {
      params.set(k, String(v));
    }
  }
  return `/v1/events?${params}`;
}

async function page(
  authorization: string,
  query: Record<string, string | number | undefined>,
): Promise<{ data: FeedEvent[]; nextCursor: string | null; hasMore: boolean }> {
  const res = await get(feedPath(query), authorization);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { data: FeedEvent[]; nextCursor: string | null; hasMore: boolean };
}

/** Every page until caught up; the events in the order served and the last cursor. */
async function readAll(
  authorization: string,
  query: Record<string, string | number | undefined>,
): Promise<{ events: FeedEvent[]; cursor: string | null }> {
  const events: FeedEvent[] = [];
  let cursor = query.cursor as string | undefined;
  for (;;) {
    const p = await page(authorization, { ...query, cursor });
    events.push(...p.data);
    cursor = p.nextCursor ?? undefined;
    if (!p.hasMore) {
      return { events, cursor: cursor ?? null };
    }
  }
}

/** Reads until `ids` all arrived (other tests' open transactions on the cluster delay the feed). */
async function readUntil(authorization: string, query: Record<string, string | number | undefined>, ids: string[]) {
  const events: FeedEvent[] = [];
  let cursor = query.cursor as string | undefined;
  const deadline = Date.now() + 100_000;
  while (!ids.every((id) => events.some((e) => e.id === id))) {
    expect(Date.now() < deadline, `feed did not deliver ${ids.length} events in time`).toBe(true);
    const p = await page(authorization, { ...query, cursor });
    events.push(...p.data);
    cursor = p.nextCursor ?? undefined;
    if (!p.hasMore) {
      await sleep(25);
    }
  }
  return { events, cursor };
}

const ALL_READS: Permission[] = [
  'webhooks.read',
  'usage.read',
  'invitations.read',
  'members.read',
  'users.read',
  'sessions.read',
  'roles.read',
  'api_keys.read',
  'applications.read',
  'tenant.read',
  'subscription.read',
  'exports.create',
];

// Long timeouts: the feed serves only what is below every open transaction's xid on the whole
// PostgreSQL server, so another test file's long transaction holds it back until it ends.
describe('GET /v1/events', { timeout: 150_000 }, () => {
  it('serves the organization its own events, oldest first, with the id, type, time and data webhooks carry', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    const recorded: string[] = [];
    for (const [i, type] of ['user.created', 'api_key.created', 'user.updated', 'role.created', 'user.created'].entries()) {
      const { id } = await writers.db.transaction((tx) =>
        recordEvent(tx, { tenantId: org.id, type, data: { object: 'x', id: `n${i}`, i } }),
      );
      recorded.push(id);
      await writers.db.transaction((tx) => recordEvent(tx, { tenantId: other.id, type, data: { i } }));
    }
    // A test delivery's event is one endpoint's, not the organization's: never served.
    await writers.db.insert(webhookEvents).values({ id: newId('event'), tenantId: org.id, type: 'webhook.test', data: {} });

    const { events } = await readUntil(key.authorization, { limit: 2 }, recorded);
    expect(events.map((e) => e.id)).toEqual(recorded);
    const rows = await writers.db.select().from(webhookEvents);
    for (const event of events) {
      const row = rows.find((r) => r.id === event.id);
      expect(event).toEqual({ id: row?.id, type: row?.type, createdAt: row?.createdAt.toISOString(), data: row?.data });
    }
    // Filters: types, and a time range from the events' own times.
    const users = await readAll(key.authorization, { types: 'user.updated,user.created', limit: 1 });
    expect(users.events.map((e) => e.id)).toEqual([recorded[0], recorded[2], recorded[4]]);
    const from = events[1]?.createdAt as string;
    const to = events[3]?.createdAt as string;
    const ranged = await readAll(key.authorization, { from, to });
    expect(ranged.events.map((e) => e.id)).toEqual(events.filter((e) => e.createdAt >= from && e.createdAt < to).map((e) => e.id));
    expect(ranged.events.length).toBeGreaterThan(0);
  });

  it('serves only the event types the caller may read; an unreadable or unknown type as a filter is refused', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const recorded = await writers.db.transaction((tx) =>
      recordEvents(tx, [
        { tenantId: org.id, type: 'user.created', data: { id: 'u1' } },
        { tenantId: org.id, type: 'api_key.created', data: { id: 'k1' } },
        { tenantId: org.id, type: 'usage_event.created', data: { id: 'e1' } },
      ]),
    );
    const reader = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read', 'users.read'] });
    const all = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    // Once a full reader sees all three, the partial reader's view is final too.
    await readUntil(
      all.authorization,
      {},
      recorded.map((r) => r.id),
    );
    const seen = (await readAll(reader.authorization, {})).events;
    expect(seen.map((e) => e.id)).toEqual([recorded[0]?.id]);

    const refused = await get(feedPath({ types: 'user.created,api_key.created' }), reader.authorization);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect(refused.body.error.message).toContain('api_key.created (needs api_keys.read)');
    const unknown = await get(feedPath({ types: 'user.created,nope.made_up' }), reader.authorization);
    expect([unknown.status, unknown.body.error.code]).toEqual([400, 'unknown_event_type']);
    const test = await get(feedPath({ types: 'webhook.test' }), all.authorization);
    expect([test.status, test.body.error.code]).toEqual([400, 'unknown_event_type']);
    const empty = await get(feedPath({ types: ' , ' }), reader.authorization);
    expect([empty.status, empty.body.error.code]).toEqual([400, 'validation_failed']);

    // webhooks.read is the feed's own permission; a key reading users without it gets nothing.
    const noFeed = await seedApiKey(db, { tenantId: org.id, scopes: ['users.read'] });
    expect((await get(feedPath({}), noFeed.authorization)).status).toBe(403);
    // webhooks.read alone reads no event type.
    const nothing = await seedApiKey(db, { tenantId: org.id, scopes: ['webhooks.read'] });
    const none = await get(feedPath({}), nothing.authorization);
    expect([none.status, none.body.error.code]).toEqual([403, 'forbidden']);
    // A member (session) whose role lacks api_keys.read: same rule.
    const member = await seedSignedIn(db, { organization: org, roleKey: 'org_member' });
    const res = await fetch(`${server.url}${feedPath({ organization_slug: org.slug, types: 'api_key.created' })}`, {
      headers: { cookie: member.cookie },
    });
    expect(res.status).toBe(403);
    // Another organization's feed through organization_slug: not found, as for every route.
    const stranger = await seedOrganization(db);
    const elsewhere = await get(feedPath({ organization_slug: stranger.slug }), all.authorization);
    expect(elsewhere.status).toBe(404);
  });

  it('limits: 1-500, default 100; bad input is a 400, never a 500', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    const recorded = await writers.db.transaction((tx) =>
      recordEvents(
        tx,
        Array.from({ length: 130 }, (_, i) => ({ tenantId: org.id, type: 'user.created', data: { i } })),
      ),
    );
    await readUntil(
      key.authorization,
      { limit: 500 },
      recorded.map((r) => r.id),
    );
    const defaultPage = await page(key.authorization, {});
    // One transaction's events share its xid: they come in id order.
    const inOrder = recorded.map((r) => r.id).sort((a, b) => (a < b ? -1 : 1));
    expect(defaultPage.data.map((e) => e.id)).toEqual(inOrder.slice(0, 100));
    expect(defaultPage.hasMore).toBe(true);
    const max = await page(key.authorization, { limit: 500 });
    expect([max.data.length, max.hasMore]).toEqual([130, false]);
    for (const query of [
      { limit: 501 },
      { limit: 0 },
      { limit: 'x' },
      { from: 'yesterday' },
      { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' },
      { from: '0000-01-01T00:00:00Z' },
      { types: 'a'.repeat(3000) },
      { cursor: 'x'.repeat(600) },
    ]) {
      const res = await get(feedPath(query), key.authorization);
      expect([res.status, res.body.error.code], JSON.stringify(query)).toEqual([400, 'validation_failed']);
    }
  });

  it('a cursor continues only the feed it came from: another organization, other filters or a changed byte is 400 invalid_cursor', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const other = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    const otherKey = await seedApiKey(db, { tenantId: other.id, scopes: ALL_READS });
    const ids: string[] = [];
    for (const tenantId of [org.id, org.id, org.id, other.id, other.id]) {
      ids.push((await writers.db.transaction((tx) => recordEvent(tx, { tenantId, type: 'user.created', data: {} }))).id);
    }
    await readUntil(key.authorization, {}, ids.slice(0, 3));
    const first = await page(key.authorization, { limit: 1 });
    const cursor = first.nextCursor as string;
    expect(first.hasMore).toBe(true);
    expect((await page(key.authorization, { limit: 1, cursor })).data[0]?.id).toBe(ids[1]);

    const otherCursor = (await page(otherKey.authorization, { limit: 1 })).nextCursor as string;
    const cases: [string, Record<string, string | number>][] = [
      ['another organization', { cursor: otherCursor }],
      ['other types', { cursor, types: 'user.created' }],
      ['another range', { cursor, from: '2020-01-01T00:00:00Z' }],
      ['a changed character', { cursor: cursor.slice(0, 20) + (cursor[20] === 'A' ? 'B' : 'A') + cursor.slice(21) }],
      ['a truncated cursor', { cursor: cursor.slice(0, -2) }],
      ['not a cursor', { cursor: 'bm90IGEgY3Vyc29y' }],
    ];
    for (const [label, query] of cases) {
      const res = await get(feedPath(query), key.authorization);
      expect([res.status, res.body.error.code], label).toEqual([400, 'invalid_cursor']);
    }
    // The same filters written differently (an equal instant, types reordered) are the same feed.
    const typed = await page(key.authorization, { limit: 1, types: 'user.updated,user.created', from: '2020-01-01T00:00:00Z' });
    const same = await page(key.authorization, {
      limit: 1,
      types: 'user.created,user.updated',
      from: '2020-01-01T00:00:00.000+00:00',
      cursor: typed.nextCursor as string,
    });
    expect(same.data[0]?.id).toBe(ids[1]);
  });

  it('retention: events before the window are not served; a cursor before it answers 410 cursor_expired', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    const day = 86_400_000;
    const ancient = newId('event');
    const edge = [newId('event'), newId('event')];
    // EVENTS_RETENTION_DAYS=1: one event well before the window, two just inside it.
    await writers.db
      .insert(webhookEvents)
      .values([
        { id: ancient, tenantId: org.id, type: 'user.created', data: {}, createdAt: new Date(Date.now() - 2 * day) },
        ...edge.map((id) => ({ id, tenantId: org.id, type: 'user.created', data: {}, createdAt: new Date(Date.now() - day + 4000) })),
      ]);
    const { events } = await readUntil(key.authorization, {}, edge);
    expect(events.map((e) => e.id)).not.toContain(ancient);
    const first = await page(key.authorization, { limit: 1 });
    expect(first.hasMore).toBe(true);
    // A caught-up cursor stays valid while the organization is quiet: it was seen up to now.
    const caughtUp = (await readAll(key.authorization, {})).cursor as string;
    // The edge events leave the window 4 s after they were written.
    await sleep(4500);
    const expired = await get(feedPath({ limit: 1, cursor: first.nextCursor as string }), key.authorization);
    expect([expired.status, expired.body.error.code]).toEqual([410, 'cursor_expired']);
    const quiet = await get(feedPath({ cursor: caughtUp }), key.authorization);
    expect(quiet.status).toBe(200);
    expect(quiet.body.data).toEqual([]);
  });
});

describe('GET /v1/events under concurrent writes', { timeout: 150_000 }, () => {
  it('an event whose transaction commits after later ones is served after them, from the old cursor', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    const before = await writers.db.transaction((tx) => recordEvent(tx, { tenantId: org.id, type: 'user.created', data: { n: 0 } }));
    const start = await readUntil(key.authorization, {}, [before.id]);

    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let slowId!: string;
    let slowRecorded!: () => void;
    const recordedSlow = new Promise<void>((resolve) => {
      slowRecorded = resolve;
    });
    // Recorded first, committed last.
    const slow = writers.db.transaction(async (tx) => {
      slowId = (await recordEvent(tx, { tenantId: org.id, type: 'user.created', data: { n: 1 } })).id;
      slowRecorded();
      await held;
    });
    await recordedSlow;
    const later: string[] = [];
    for (const n of [2, 3]) {
      later.push((await writers.db.transaction((tx) => recordEvent(tx, { tenantId: org.id, type: 'user.created', data: { n } }))).id);
    }
    // Both later events are committed and visible to any reader, yet the feed holds them back.
    const visible = await writers.sql`select id from webhook_events where id = any(${later})`;
    expect(visible).toHaveLength(2);
    const meanwhile = await page(key.authorization, { cursor: start.cursor as string });
    expect(meanwhile.data).toEqual([]);
    expect(meanwhile.hasMore).toBe(false);

    release();
    await slow;
    const after = await readUntil(key.authorization, { cursor: meanwhile.nextCursor as string }, [slowId, ...later]);
    expect(after.events.map((e) => e.id)).toEqual([slowId, ...later]);
  });

  it('many writers, one reader paging all along: the pages hold every committed event once, none rolled back', async () => {
    const db = server.services.db;
    const org = await seedOrganization(db);
    const key = await seedApiKey(db, { tenantId: org.id, scopes: ALL_READS });
    const committed = new Set<string>();
    const rolledBack = new Set<string>();
    let writing = true;
    const writer = async (w: number) => {
      for (let i = 0; i < 40; i++) {
        const rollback = (w + i) % 7 === 0;
        const n = 1 + ((w * 31 + i) % 3);
        let ids: string[] = [];
        try {
          await writers.db.transaction(async (tx) => {
            const recorded = await recordEvents(
              tx,
              Array.from({ length: n }, (_, k) => ({ tenantId: org.id, type: k % 2 ? 'user.updated' : 'user.created', data: { w, i, k } })),
            );
            ids = recorded.map((r) => r.id);
            // A third of the transactions stay open while others commit after them.
            await sleep((w * 7 + i * 13) % 3 === 0 ? 40 + ((w + i) % 5) * 20 : 0);
            if (rollback) {
              throw new Error('rollback');
            }
          });
          for (const id of ids) {
            committed.add(id);
          }
        } catch {
          for (const id of ids) {
            rolledBack.add(id);
          }
        }
        // Paced, so the reader is at the head of the feed, where a late commit could be skipped.
        await sleep(15);
      }
    };
    const served: string[] = [];
    let caughtUpWhileWriting = 0;
    let writingEndedAt = 0;
    const reader = async () => {
      let cursor: string | undefined;
      for (;;) {
        const done = !writing;
        // A skipped event never arrives: give up 100 s after the last commit and compare the sets.
        // (Long: any open transaction on the PostgreSQL server, another test file's export
        // download say, holds the feed back until it ends.)
        if (done && Date.now() - writingEndedAt > 100_000) {
          return;
        }
        const p = await page(key.authorization, { limit: 7, cursor });
        served.push(...p.data.map((e) => e.id));
        cursor = p.nextCursor ?? undefined;
        if (done && [...committed].every((id) => served.includes(id))) {
          return;
        }
        if (!p.hasMore) {
          caughtUpWhileWriting += done ? 0 : 1;
          await sleep(5);
        }
      }
    };
    const readerDone = reader();
    await Promise.all(Array.from({ length: 10 }, (_, w) => writer(w)));
    writing = false;
    writingEndedAt = Date.now();
    await readerDone;
    expect(committed.size).toBeGreaterThan(300);
    // The reader reached the head of the feed while transactions were open behind it.
    expect(caughtUpWhileWriting, 'times the reader caught up while writers wrote').toBeGreaterThan(0);
    expect(rolledBack.size).toBeGreaterThan(0);
    expect(new Set(served).size).toBe(served.length);
    expect(
      [...committed].filter((id) => !served.includes(id)),
      'committed events never served',
    ).toEqual([]);
    expect(new Set(served)).toEqual(committed);
    // And in the feed's order each time: a fresh read serves the same sequence.
    expect((await readAll(key.authorization, { limit: 500 })).events.map((e) => e.id)).toEqual(served);
  }, 180_000);
});
