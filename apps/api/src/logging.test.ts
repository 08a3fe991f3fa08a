import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { createDatabase, type Database } from '@svc/db/client';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/db.ts';
import { createLogger, describeError, formatPretty, QUERY_FAILED_MESSAGE, serializeError } from './logging.ts';

/** A logger writing JSON lines into memory. */
function memoryLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      callback();
    },
  });
  const logger = createLogger({ logLevel: 'trace' }, sink);
  return { logger, text: () => lines.join('\n'), records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function caught(promise: PromiseLike<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

// What a secret-key lookup and a rate-limit counter bind as parameters.
const SECRET_KEY = `sk_live_${'A1b2C3d4'.repeat(5)}`;
const SECRET_HASH = createHash('sha256').update(SECRET_KEY).digest('hex');
const COUNTER_KEY = 'backend:key:zzcounterkeyzz';

function expectNoSecrets(text: string): void {
  expect(text).not.toContain(SECRET_HASH);
  expect(text).not.toContain(SECRET_KEY);
  expect(text).not.toContain(COUNTER_KEY);
  expect(text).not.toContain('zzcounterkeyzz');
  expect(text).not.toMatch(/params:/);
  expect(text).not.toMatch(/Failed query/);
  expect(text).not.toMatch(/no_such_table"? where/);
}

describe('logging never writes query parameters or secrets', () => {
  let database: Database;

  beforeAll(async () => {
    database = createDatabase({ url: await createTestDatabase(), max: 1 });
  });

  afterAll(async () => {
    await database?.close();
  });

  /** A real Drizzle 0.45 failure: its message is `Failed query: <sql>\nparams: <params>`. */
  async function failedQuery(): Promise<Error> {
    return caught(database.db.execute(sql`select * from no_such_table where hash = ${SECRET_HASH} and key = ${COUNTER_KEY}`));
  }

  it('precondition: Drizzle puts the parameters in the message and on the error', async () => {
    const error = await failedQuery();
    expect(error.message).toContain(SECRET_HASH);
    expect(error.message).toContain(COUNTER_KEY);
    expect((error as unknown as { params: unknown[] }).params).toContain(SECRET_HASH);
    expect(error.stack).toContain(SECRET_HASH);
  });

  it('a failed query is logged as "database query failed" with the PostgreSQL cause, not the SQL or params', async () => {
    const error = await failedQuery();
    const { logger, text, records } = memoryLogger();
    logger.error({ err: error, requestId: 'req_1' }, 'unhandled error');
    logger.error(error, 'unhandled error');
    logger.error({ error }, 'under the other key');
    expectNoSecrets(text());
    const [first, second] = records() as { err: Record<string, unknown> }[];
    for (const record of [first, second]) {
      expect(record?.err).toMatchObject({
        type: 'DrizzleQueryError',
        message: QUERY_FAILED_MESSAGE,
        cause: { type: 'PostgresError', code: '42P01', message: 'relation "no_such_table" does not exist' },
      });
      expect(record?.err).not.toHaveProperty('query');
      expect(record?.err).not.toHaveProperty('params');
      // The stack frames survive (the log is where a 500's cause is found), re-headed.
      expect(String(record?.err.stack)).toMatch(/^DrizzleQueryError: database query failed\n\s+at /);
    }
  });

  it('a value PostgreSQL quotes in its own message is redacted', async () => {
    const error = await caught(database.db.execute(sql`select ${SECRET_HASH}::uuid`));
    expect((error.cause as Error).message).toContain(SECRET_HASH);
    const { logger, text } = memoryLogger();
    logger.error({ err: error }, 'unhandled error');
    expectNoSecrets(text());
    expect(text()).toContain('22P02');
    expect(text()).toContain('invalid input syntax for type uuid');
  });

  it('a unique violation does not log the conflicting key from PostgreSQL detail', async () => {
    await database.db.execute(sql`create temporary table hashes (hash text primary key)`);
    await database.db.execute(sql`insert into hashes values (${SECRET_HASH})`);
    const error = await caught(database.db.execute(sql`insert into hashes values (${SECRET_HASH})`));
    expect(JSON.stringify(error.cause)).toContain(SECRET_HASH);
    const { logger, text, records } = memoryLogger();
    logger.error({ err: error }, 'unhandled error');
    expectNoSecrets(text());
    expect(records()[0]).toMatchObject({ err: { cause: { code: '23505' } } });
  });

  it('a query on a closed pool is logged without its parameters', async () => {
    const closed = createDatabase({ url: await createTestDatabase(), max: 1 });
    await closed.close();
    const error = await caught(closed.db.execute(sql`select ${SECRET_HASH} as h, ${COUNTER_KEY} as k`));
    const { logger, text, records } = memoryLogger();
    logger.error({ err: error }, 'rate-limit counter unavailable; admitting request');
    expectNoSecrets(text());
    expect(records()[0]).toMatchObject({ err: { message: QUERY_FAILED_MESSAGE, cause: { code: 'CONNECTION_ENDED' } } });
  });

  it('a postgres.js error thrown without Drizzle keeps its message but never its query or parameters', async () => {
    const raw = postgres(await createTestDatabase(), { max: 1, onnotice: () => {}, debug: true });
    try {
      const error = await caught(raw`select * from no_such_table where hash = ${SECRET_HASH}`);
      // With debug on, postgres.js makes query and parameters enumerable.
      expect(Object.keys(error)).toContain('parameters');
      const { logger, text, records } = memoryLogger();
      logger.error({ err: error }, 'failed');
      expectNoSecrets(text());
      expect(records()[0]).toMatchObject({
        err: { type: 'PostgresError', code: '42P01', message: 'relation "no_such_table" does not exist' },
      });
    } finally {
      await raw.end({ timeout: 1 });
    }
  });

  it('error text logged as a string (Graphile Worker "Failed task" lines) is scrubbed at warn and above', async () => {
    const error = await failedQuery();
    const { logger, text } = memoryLogger();
    const stack = String(error.stack).replace(/\n/g, '\n  ');
    logger.error({ failure: true }, `Failed task 7 (maintenance:prune_rate_limits) with error '${error.message}':\n  ${stack}`);
    logger.warn(`retrying after ${error.message}`);
    expectNoSecrets(text());
    expect(text()).toContain('Failed task 7');
    expect(text()).toContain(QUERY_FAILED_MESSAGE);
  });

  it('causes are sanitized recursively and cycles end', async () => {
    const inner = await failedQuery();
    const outer = new Error('could not resolve the application', { cause: new Error('lookup failed', { cause: inner }) });
    const looped = new Error(`loop ${SECRET_KEY}`) as Error & { cause?: unknown };
    looped.cause = looped;
    const serialized = serializeError(outer);
    expect(serialized.cause?.cause).toMatchObject({ message: QUERY_FAILED_MESSAGE, cause: { code: '42P01' } });
    expectNoSecrets(JSON.stringify(serialized));
    expectNoSecrets(JSON.stringify(serializeError(looped)));
    expect(serializeError(looped).message).toBe('loop sk_live_[redacted]');
    // Whatever is thrown, a serializer must not throw.
    expect(serializeError('plain string').message).toBe('plain string');
    expect(serializeError(undefined).type).toBe('undefined');
    expect(serializeError({ message: `params: ${SECRET_HASH}` }).message).toBe('');
  });

  it('describeError gives the CLI a scrubbed headline, stack frames and the cause chain', async () => {
    const error = await failedQuery();
    const text = describeError(error);
    expectNoSecrets(text);
    const lines = text.split('\n');
    expect(lines[0]).toBe(`DrizzleQueryError: ${QUERY_FAILED_MESSAGE}`);
    expect(lines.some((l) => /^\s+at /.test(l))).toBe(true);
    expect(lines.at(-1)).toBe('caused by: PostgresError [42P01]: relation "no_such_table" does not exist');
    expect(describeError(new TypeError('x is not a function'))).toMatch(/^TypeError: x is not a function\n\s+at /);
    expect(describeError(42)).toBe('number: 42');
  });
});

describe('LOG_FORMAT=pretty: readable lines, request lines summarised, nothing JSON would not show', () => {
  function prettyLogger() {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        callback();
      },
    });
    return { logger: createLogger({ logLevel: 'info', logFormat: 'pretty' }, sink), lines };
  }

  it('an entry is one line: time, level, message and its fields, without pid, hostname or service', () => {
    const { logger, lines } = prettyLogger();
    logger.info({ issuer: 'http://127.0.0.1:7151/application/o/svc/', offered: ['password', 'mfa'] }, 'identity engine: authentik');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}identity engine: authentik issuer=http:\/\/127\.0\.0\.1:7151\/application\/o\/svc\/ offered=\["password","mfa"\]$/,
    );
    expect(lines[0]).not.toMatch(/pid|hostname|service|\{"level"/);
  });

  it('a request line is summarised: method, path, status and time; a failed one keeps its request id', () => {
    const { logger, lines } = prettyLogger();
    logger.info({ requestId: 'req_1', method: 'GET', path: '/v1/me', status: 200, ms: 3.1 }, 'request');
    logger.error({ requestId: 'req_2', method: 'POST', path: '/v1/usage/events', status: 500, ms: 12 }, 'request failed');
    expect(lines[0]).toMatch(/^\S+ INFO {2}GET \/v1\/me 200 3\.1 ms$/);
    expect(lines[1]).toMatch(/^\S+ ERROR POST \/v1\/usage\/events 500 12 ms request req_2$/);
  });

  it('an error prints its scrubbed stack indented below the line, never its query or a secret', () => {
    const { logger, lines } = prettyLogger();
    const error = Object.assign(new Error(`Failed query: select 1 where k = $1\nparams: ${SECRET_HASH}`), { params: [SECRET_HASH] });
    logger.error({ err: error }, `lookup failed for ${SECRET_KEY}`);
    const text = lines.join('\n');
    expect(lines[0]).toMatch(/^\S+ ERROR lookup failed for sk_live_\[redacted\]$/);
    expect(lines[1]).toMatch(new RegExp(`^ {4}Error: ${QUERY_FAILED_MESSAGE}$`));
    expect(lines[2]).toMatch(/^ {4}at /);
    expectNoSecrets(text);
  });

  it('text that is not a JSON entry passes through unchanged', () => {
    expect(formatPretty('not json')).toBe('not json\n');
  });
});
