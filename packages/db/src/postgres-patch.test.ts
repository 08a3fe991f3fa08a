import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { createDatabase, type Database } from './client.ts';

/**
 * What svc's patch of postgres.js (patches/postgres@3.4.9.patch) changes in its bookkeeping.
 *
 * The Queue (src/queue.js): the pool's open, busy, full and
 * closed connection lists and its waiting queries. The patch drops the slots that `shift` leaves
 * behind once they are most of the array, so a queue that never drains stops growing; these
 * tests hold its answers to what a queue must answer across those compactions. The growth itself
 * is measured by bench/pool-queue.ts (pool-steady).
 */
type Queue<T> = { readonly length: number; push: (x: T) => T; shift: () => T | undefined; remove: (x: T) => T | null };

const require = createRequire(import.meta.url);
const queueModule = path.join(path.dirname(require.resolve('postgres')), 'queue.js');
const Queue = require(queueModule) as <T>(initial?: T[]) => Queue<T>;

/** What is queued, front first, read through the queue's own operations (and restored). */
function contents<T>(queue: Queue<T>): T[] {
  const out: T[] = [];
  for (let n = queue.length; n > 0; n--) {
    const x = queue.shift() as T;
    out.push(x);
    queue.push(x);
  }
  return out;
}

describe("postgres.js's queue (svc's patch)", () => {
  it('stays first in, first out, with the right length, across many compactions of a queue that never drains', () => {
    const queue = Queue<number>();
    const model: number[] = [];
    let next = 0;
    for (let i = 0; i < 5; i++) {
      model.push(queue.push(next++));
    }
    for (let i = 0; i < 10_000; i++) {
      expect(queue.shift()).toBe(model.shift());
      model.push(queue.push(next++));
      if (i % 7 === 0) {
        model.push(queue.push(next++));
      }
      if (i % 11 === 0) {
        expect(queue.shift()).toBe(model.shift());
      }
      expect(queue.length).toBe(model.length);
    }
    expect(contents(queue)).toEqual(model);
  });

  it('removes a queued item wherever it stands, and answers null for one already shifted out or never queued', () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ i }));
    const queue = Queue(items);
    const shifted = Array.from({ length: 150 }, () => queue.shift());
    expect(shifted).toEqual(items.slice(0, 150));
    expect(queue.length).toBe(50);
    expect(queue.remove(items[10] as { i: number })).toBeNull();
    expect(queue.remove({ i: 175 })).toBeNull();
    expect(queue.remove(items[175] as { i: number })).toBe(items[175]);
    expect(queue.remove(items[175] as { i: number })).toBeNull();
    expect(queue.length).toBe(49);
    expect(contents(queue)).toEqual([...items.slice(150, 175), ...items.slice(176)]);
  });

  it('empties completely and starts again', () => {
    const queue = Queue<string>();
    for (let round = 0; round < 3; round++) {
      for (const x of ['a', 'b', 'c']) {
        queue.push(x);
      }
      expect([queue.shift(), queue.shift(), queue.shift()]).toEqual(['a', 'b', 'c']);
      expect(queue.length).toBe(0);
      expect(queue.shift()).toBeUndefined();
      expect(queue.length).toBe(0);
    }
  });
});

describe("postgres.js's prepared statements (svc's patch)", () => {
  let database: Database;
  beforeAll(async () => {
    database = createDatabase({ url: await createTestDatabase(), max: 1 });
  });
  afterAll(async () => {
    await database?.close();
  });

  it('one text with other parameter types is another statement, however often each runs', async () => {
    // The signature is kept per text and per parameter types: an int4 and a text parameter make
    // two statements of one text. Were the text alone the key, the text would be bound to the
    // int4 statement and refused.
    const text = 'select $1 as v, pg_typeof($1)::text as type';
    const { sql } = database;
    for (let round = 0; round < 3; round++) {
      const [integer] = await sql.unsafe(text, [sql.typed(7, 23)], { prepare: true });
      expect(integer).toEqual({ v: 7, type: 'integer' });
      const [texted] = await sql.unsafe(text, [sql.typed('seven', 25)], { prepare: true });
      expect(texted).toEqual({ v: 'seven', type: 'text' });
    }
  });
});
