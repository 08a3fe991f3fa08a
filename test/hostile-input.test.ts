import { ID_PREFIXES } from '@svc/contracts/ids';
import { PERMISSIONS } from '@svc/contracts/permissions';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_INPUT_DEPTH } from '../apps/api/src/http/input-guard.ts';
import type { RunningServer } from '../apps/api/src/server.ts';
import { seedApplication } from './support/factories.ts';
import { startTestServer } from './support/server.ts';
import { type SignedIn, seedApiKey, seedOrganization, seedSignedIn } from './support/tenancy.ts';

/**
 * Bad input is a 400 (or 413), never a 500: every operation of the served OpenAPI document gets
 * generated hostile input in its path, query and body (NUL, unpaired surrogates, huge and
 * non-numbers, wrong types, deep nesting, tampered cursors, very long and exotic strings, ids of
 * the right prefix), sent over real HTTP with credentials that pass authentication, and must
 * never answer 5xx. The seed is random per run and printed on failure; HOSTILE_INPUT_SEED=<n>
 * replays a run.
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
};
type Parameter = { in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema?: Schema };
type Operation = {
  method: string;
  template: string;
  parameters: Parameter[];
  body?: Schema;
  security: string[];
};
type Document = {
  paths: Record<
    string,
    Record<
      string,
      { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> }; security?: Record<string, unknown>[] }
    >
  >;
  components?: { schemas?: Record<string, Schema> };
};

const SEED = Number(process.env.HOSTILE_INPUT_SEED ?? Math.floor(Math.random() * 2 ** 31));
/**
 * Runs per operation: ~90 operations x 30 runs takes about 20 s on a 2-core machine running this
 * file alone, and minutes beside other test files (its time limit, below, only catches a hang).
 */
const RUNS_PER_OPERATION = 30;
/** Nesting sent to every JSON route: far beyond MAX_INPUT_DEPTH, and beyond what recursion survives. */
const DEEP = 5_000;

let server: RunningServer;
let admin: SignedIn;
let apiKey: string;
let publishableKey: string;
let secretKey: string;
let doc: Document;
let operations: Operation[];
/** Real cursors of real lists, by OpenAPI path: tampered copies keep a valid scope. */
const cursors = new Map<string, string[]>();

beforeAll(async () => {
  server = await startTestServer({ env: process.env.HOSTILE_INPUT_LOG ? { LOG_LEVEL: 'error' } : {} });
  const db = server.services.db;
  // A platform admin: every route, platform ones included, gets past authentication and
  // authorization into its service, where bad input used to meet PostgreSQL.
  admin = await seedSignedIn(db, { platformAdmin: true });
  apiKey = (await seedApiKey(db, { tenantId: admin.organization.id, scopes: [...PERMISSIONS] })).authorization;
  await seedApiKey(db, { tenantId: admin.organization.id, scopes: ['tenant.read'] });
  const app = await seedApplication(db, { org: admin.organization.slug });
  await seedApplication(db, { org: admin.organization.slug });
  publishableKey = app.publishableKey;
  secretKey = app.secretKey;
  doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Document;
  operations = operationsOf(doc);
  // Two rows in a few more lists (roles, audit log, usage events, tenants); lists with two rows or
  // more give a next cursor at limit=1, whose scope tampered cursors then keep.
  await seedOrganization(db);
  const json = { cookie: admin.cookie, 'content-type': 'application/json', origin: server.services.config.publicUrl.replace(/\/$/, '') };
  for (const n of [1, 2]) {
    const role = await fetch(`${server.url}/v1/roles`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ key: `seeded_${n}`, name: `Seeded ${n}`, permissions: ['tenant.read'] }),
    });
    const event = await fetch(`${server.url}/v1/usage/events`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ idempotencyKey: `seed-${n}`, eventType: 'api.call' }),
    });
    expect([role.status, event.status]).toEqual([201, 201]);
  }
  for (const op of operations) {
    if (op.method !== 'GET' || !op.parameters.some((p) => p.name === 'cursor')) {
      continue;
    }
    const path = op.template.replace(/\{[^}]+\}/g, admin.organization.id);
    const res = await fetch(`${server.url}/v1${path}?limit=1`, { headers: { cookie: admin.cookie } });
    const next = ((await res.json()) as { nextCursor?: string | null }).nextCursor;
    if (next) {
      cursors.set(op.template, [next]);
    }
  }
  expect(cursors.size).toBeGreaterThanOrEqual(5);
}, 120_000);

afterAll(async () => {
  await server?.close();
});

function operationsOf(document: Document): Operation[] {
  const out: Operation[] = [];
  for (const [template, methods] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      out.push({
        method: method.toUpperCase(),
        template,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.['application/json']?.schema,
        security: (op.security ?? []).flatMap((s) => Object.keys(s)),
      });
    }
  }
  return out;
}

function resolve(schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 10; i++) {
    s = doc.components?.schemas?.[s.$ref.replace('#/components/schemas/', '')] ?? {};
  }
  return s;
}

// ---- hostile values -------------------------------------------------------------------------

/** Marks a value serialized as raw JSON text (nesting deeper than JSON.stringify recurses). */
class RawJson {
  constructor(readonly text: string) {}
}
const nested = (depth: number, open: string, close: string, inner = '1') => new RawJson(open.repeat(depth) + inner + close.repeat(depth));

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const idPrefix = fc.constantFrom(...Object.values(ID_PREFIXES));
const base62 = fc.string({
  unit: fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'),
  minLength: 20,
  maxLength: 20,
});
const prefixedId = fc.tuple(idPrefix, base62).map(([p, r]) => `${p}_${r}`);
const cursorOf = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
const badInstants = [
  '0000-01-01T00:00:00.000Z',
  '0000-12-31T23:59:59Z',
  '0001-01-01T00:00:00+14:00',
  '9999-12-31T23:59:59-14:00',
  '+275760-09-13T00:00:00.000Z',
  '-271821-04-20T00:00:00.000Z',
  '2026-02-30T00:00:00Z',
  '2026-01-01T00:00:00.000Z\u0000',
  '99999',
  '1e400',
];
/** Cursors a client might forge: real scopes with bad dates and ids, NUL, wrong types, junk. */
function tamperedCursor(template: string): fc.Arbitrary<string> {
  const real = cursors.get(template) ?? [];
  // Most cursors are encodeCursor's base64url JSON, whose scope a forger keeps; a sealed one
  // (the events feed's) has no readable scope, only its bytes to alter.
  const scopes = real.flatMap((c) => {
    try {
      return [(JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown[])[0]];
    } catch {
      return [];
    }
  });
  const scope = scopes.length > 0 ? fc.constantFrom(...scopes) : fc.string();
  return fc.oneof(
    fc.tuple(scope, fc.constantFrom(...badInstants), prefixedId).map(cursorOf),
    fc.tuple(scope, fc.constant(new Date().toISOString()), fc.constantFrom('usr_\u0000', 'x'.repeat(400), '', '\ud800', '1')).map(cursorOf),
    fc.tuple(scope, fc.anything(), fc.anything()).map(cursorOf),
    fc.string({ maxLength: 500 }),
    fc.constantFrom('%%%', '!!!!', 'AAAA', Buffer.from('[]').toString('base64url'), Buffer.from('\u0000').toString('base64url')),
    ...(real.length > 0 ? [fc.constantFrom(...real).map((c) => `${c}A`), fc.constantFrom(...real)] : []),
  );
}

const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'a\udc00b', '\udfff\ud800', '\ud83d'),
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\u0000', '\ud800', '\udfff'), fc.string({ maxLength: 20 }))
    .map((p) => p.join('')),
  fc.string({
    unit: fc.oneof(loneSurrogate, fc.constant('\u0000'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })),
    maxLength: 40,
  }),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '-1', '0', '-0', '1e400', '0x10', '9'.repeat(400), '', ' ', 'null', 'true', '[]', '{}'),
  fc.constantFrom(...badInstants),
  fc.constantFrom('../../etc/passwd', "'; drop table users; --", '<script>alert(1)</script>', '%00', '\\u0000', 'https://127.0.0.1/'),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => 'x'.repeat(n)),
  prefixedId,
  fc.tuple(idPrefix, fc.string({ maxLength: 30 })).map(([p, r]) => `${p}_${r}`),
);

const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(Number.MAX_VALUE, -Number.MAX_VALUE, Number.MAX_SAFE_INTEGER + 2, -1, 0, -0, 1.5, 1e21, 2 ** 31, -(2 ** 63)),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);

/** Any JSON at all: scalars, wrong-typed containers, keys that PostgreSQL refuses, deep nesting. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileScalar },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(hostileScalar, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(hostileString, hostileScalar, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_INPUT_DEPTH - 1, max: DEEP }).map((d) => nested(d, '[', ']')) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_INPUT_DEPTH - 1, max: DEEP }).map((d) => nested(d, '{"a":', '}')) },
);

// ---- values of the operation's own schema (so hostile parts reach past the first check) -------

function validFor(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (s.enum && s.enum.length > 0) {
    return fc.constantFrom(...s.enum);
  }
  if (s.const !== undefined) {
    return fc.constant(s.const);
  }
  const options = s.anyOf ?? s.oneOf;
  if (options && options.length > 0) {
    return fc.oneof(...options.map((o) => validFor(o, depth)));
  }
  if (s.allOf && s.allOf.length > 0) {
    return validFor(s.allOf[0], depth);
  }
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'integer':
      return fc.integer({ min: Math.max(s.minimum ?? 0, -1e9), max: Math.min(s.maximum ?? 1_000, 1e9) });
    case 'number':
      return fc.double({ min: s.minimum ?? 0, max: s.maximum ?? 1_000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return depth > 3 ? fc.constant([]) : fc.array(validFor(s.items, depth + 1), { maxLength: 3 });
    case 'object': {
      if (depth > 3 || !s.properties) {
        return fc.constant({});
      }
      const required = new Set(s.required ?? []);
      const shape: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, prop] of Object.entries(s.properties)) {
        shape[key] = validFor(prop, depth + 1);
      }
      return fc.record(shape, { requiredKeys: [...required].filter((k) => k in shape) });
    }
    case 'string':
      return validString(s);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function validString(s: Schema): fc.Arbitrary<string> {
  if (s.format === 'date-time') {
    return fc
      .date({ min: new Date(Date.now() - 86_400_000), max: new Date(Date.now() + 60_000), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  if (s.format === 'email') {
    return fc.constantFrom('someone@example.com', `new-${Math.random().toString(36).slice(2)}@example.com`);
  }
  if (s.pattern?.includes('_[0-9A-Za-z]{20}')) {
    return prefixedId;
  }
  if (s.pattern) {
    try {
      return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? 200));
    } catch {
      // A pattern JavaScript cannot compile: plain words stand in.
    }
  }
  return fc.string({ minLength: Math.max(s.minLength ?? 1, 1), maxLength: Math.min(s.maxLength ?? 40, 40) });
}

/** A field of the schema: mostly a valid value, often a hostile one, so each run breaks a little. */
function fieldFor(schema: Schema | undefined, name: string, template: string): fc.Arbitrary<unknown> {
  const hostile =
    name === 'cursor'
      ? fc.oneof(tamperedCursor(template), hostileValue)
      : resolve(schema).format === 'date-time'
        ? fc.oneof(fc.constantFrom(...badInstants), hostileValue)
        : hostileValue;
  return fc.oneof({ weight: 3, arbitrary: validFor(schema) }, { weight: 2, arbitrary: hostile });
}

function bodyFor(op: Operation): fc.Arbitrary<unknown> {
  const s = resolve(op.body);
  if (!s.properties) {
    return fc.oneof(validFor(s), hostileValue);
  }
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, prop] of Object.entries(s.properties)) {
    shape[key] = fieldFor(prop, key, op.template);
  }
  const required = (s.required ?? []).filter((k) => k in shape);
  return fc.oneof(
    { weight: 8, arbitrary: fc.record(shape, { requiredKeys: required }) },
    // Unknown keys, hostile keys, or no object at all.
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.record(shape, { requiredKeys: required }), fc.dictionary(hostileString, hostileValue, { maxKeys: 3 }))
        .map(([a, b]) => ({ ...b, ...a })),
    },
    { weight: 1, arbitrary: hostileValue },
  );
}

// ---- sending ------------------------------------------------------------------------------

/** JSON text of a generated body; RawJson parts are spliced in as they are. */
function serialize(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v) => {
    if (v instanceof RawJson) {
      raws.push(v.text);
      return `\u0001raw${raws.length - 1}\u0001`;
    }
    return v;
  });
  return (text ?? 'null').replace(/"\\u0001raw(\d+)\\u0001"/g, (_m, i) => raws[Number(i)] as string);
}

/**
 * A URL component: UTF-8 percent-encoding (an unpaired surrogate becomes U+FFFD, as any client's
 * encoder makes it), or, for a few runs, raw escapes that do not decode (`%`, `%zz`, `%ED%A0%80`).
 */
function urlComponent(value: unknown): string {
  if (value instanceof RawJson) {
    return encodeBytes(value.text);
  }
  const text = typeof value === 'string' ? value : (serialize(value) ?? '');
  return encodeBytes(text);
}
function encodeBytes(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`,
    )
    .join('');
}
const rawEscape = fc.constantFrom('%', '%zz', '%ED%A0%80', '%C0%80', '%FF', '%E2%82', '%2500', '%u0000');

type Credential = 'cookie' | 'apiKey' | 'secretKey' | 'publishableKey' | 'none';

function credentialsFor(op: Operation): fc.Arbitrary<Credential> {
  const options: Credential[] = [];
  if (op.security.includes('sessionCookie')) {
    options.push('cookie');
  }
  if (op.security.includes('secretKey')) {
    // A control-plane route takes a tenant API key; a backend route an application's secret key.
    options.push(op.security.includes('sessionCookie') ? 'apiKey' : 'secretKey');
  }
  if (op.security.includes('publishableKey')) {
    options.push('publishableKey');
  }
  return fc.constantFrom(...(options.length > 0 ? options : ['none' as const]));
}

type Sample = { path: string; query: string; body?: string; credential: Credential };

function requestFor(op: Operation): fc.Arbitrary<Sample> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const pathArb = fc.tuple(
    ...pathParams.map((p) =>
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(admin.organization.id).map(urlComponent) },
        { weight: 2, arbitrary: fieldFor(p.schema, p.name, op.template).map(urlComponent) },
        { weight: 2, arbitrary: prefixedId },
        { weight: 1, arbitrary: rawEscape },
      ),
    ),
  );
  const queryArb = fc.tuple(
    ...queryParams.map((p) =>
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(undefined) },
        {
          weight: 5,
          arbitrary: fieldFor(p.schema, p.name, op.template).map((v) => (v === undefined ? undefined : urlComponent(v))),
        },
        { weight: 1, arbitrary: rawEscape },
        // Repeated parameters arrive as arrays.
        { weight: 1, arbitrary: fc.tuple(hostileString, hostileString).map(([a, b]) => [urlComponent(a), urlComponent(b)]) },
      ),
    ),
  );
  return fc
    .record({
      pathValues: pathArb,
      queryValues: queryArb,
      body: op.body ? bodyFor(op).map(serialize) : fc.constant(undefined),
      credential: credentialsFor(op),
      usePublishableKey: fc.boolean(),
    })
    .map(({ pathValues, queryValues, body, credential, usePublishableKey }) => {
      let i = 0;
      const path = op.template.replace(/\{[^}]+\}/g, () => pathValues[i++] as string);
      const parts: string[] = [];
      queryParams.forEach((p, index) => {
        const v = queryValues[index];
        if (p.name === 'publishable_key' && credential === 'publishableKey' && usePublishableKey) {
          parts.push(`publishable_key=${publishableKey}`);
        } else if (Array.isArray(v)) {
          parts.push(...v.map((x) => `${p.name}=${x}`));
        } else if (v !== undefined) {
          parts.push(`${p.name}=${v}`);
        }
      });
      return { path, query: parts.join('&'), body, credential };
    });
}

/** Headers that pass authentication and the CSRF rule (docs/api.md: cookie mutations, DELETE included, send JSON). */
function headersFor(credential: Credential, json: boolean): Record<string, string> {
  const headers: Record<string, string> = { origin: server.services.config.publicUrl.replace(/\/$/, '') };
  if (json) {
    headers['content-type'] = 'application/json';
  }
  if (credential === 'cookie') {
    headers.cookie = admin.cookie;
  } else if (credential === 'apiKey') {
    headers.authorization = apiKey;
  } else if (credential === 'secretKey') {
    headers.authorization = `Bearer ${secretKey}`;
  } else if (credential === 'publishableKey') {
    headers['x-svc-publishable-key'] = publishableKey;
  }
  return headers;
}

async function send(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : (body ?? '{}'),
    redirect: 'manual',
  });
  return { status: res.status, text: await res.text() };
}

async function healthy(): Promise<void> {
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  const me = await fetch(`${server.url}/v1/me`, { headers: { cookie: admin.cookie } });
  expect(me.status).toBe(200);
}

/** Rows a rejected request must not have added. */
async function writtenRows(): Promise<Record<string, number>> {
  const [row] = await server.services.sql<{ audit: number; usage: number; apps: number; roles: number; hooks: number }[]>`
    select (select count(*)::int from audit_logs) as audit,
           (select count(*)::int from usage_events) as usage,
           (select count(*)::int from applications) as apps,
           (select count(*)::int from roles) as roles,
           (select count(*)::int from webhook_endpoints) as hooks`;
  return row as Record<string, number>;
}

describe('hostile input at every route of the OpenAPI document', () => {
  it('covers the document', () => {
    // The document is served and lists the routes (a broken fetch would make the walk vacuous).
    expect(operations.length).toBeGreaterThan(50);
    expect(operations.filter((o) => o.body).length).toBeGreaterThan(20);
  });

  it(`answers no 5xx for generated hostile input (seed ${SEED}, ${RUNS_PER_OPERATION} runs per operation)`, async () => {
    const failures: string[] = [];
    const statuses = new Map<string, number>();
    for (const [index, op] of operations.entries()) {
      try {
        await fc.assert(
          fc.asyncProperty(requestFor(op), async (sample) => {
            const url = `${server.url}/v1${sample.path}${sample.query ? `?${sample.query}` : ''}`;
            const { status, text } = await send(op.method, url, headersFor(sample.credential, op.method !== 'GET'), sample.body);
            statuses.set(`${status}`, (statuses.get(`${status}`) ?? 0) + 1);
            if (status >= 500) {
              throw new Error(
                `${op.method} ${url} (${sample.credential}) body ${sample.body?.slice(0, 300)} -> ${status} ${text.slice(0, 300)}`,
              );
            }
          }),
          // A seed per operation, derived from the run's: one failing operation replays alone.
          { numRuns: RUNS_PER_OPERATION, seed: SEED + index, endOnFailure: true },
        );
      } catch (error) {
        failures.push(`${op.method} ${op.template}: ${(error as Error).message.split('\n').slice(0, 6).join('\n')}`);
      }
    }
    if (process.env.HOSTILE_INPUT_STATS) {
      console.log(Object.fromEntries(statuses));
    }
    expect(failures, `HOSTILE_INPUT_SEED=${SEED}\n${failures.join('\n\n')}`).toEqual([]);
    await healthy();
  }, 300_000);

  it('refuses a deeply nested body and a body with an unpaired surrogate on every JSON route, writing nothing', async () => {
    const before = await writtenRows();
    const answers: string[] = [];
    const jsonRoutes = operations.filter((o) => o.body);
    for (const op of jsonRoutes) {
      const path = op.template.replace(/\{[^}]+\}/g, admin.organization.id);
      const credential: Credential = op.security.includes('sessionCookie') ? 'cookie' : 'apiKey';
      const headers = headersFor(credential, true);
      const deep = `{"name":${nested(DEEP, '[', ']').text}}`;
      const valid = (fc.sample(validFor(op.body), { numRuns: 1, seed: SEED })[0] ?? {}) as Record<string, unknown>;
      // An otherwise acceptable body whose strings carry an unpaired surrogate (or a NUL): without
      // the rule it would be written.
      const surrogate = serialize(withText(valid, '\ud800'));
      const nul = serialize(withText(valid, 'a\u0000b'));
      for (const [name, body] of [
        ['deep', deep],
        ['surrogate', surrogate],
        ['nul', nul],
      ] as const) {
        const { status, text } = await send(op.method, `${server.url}/v1${path}`, headers, body);
        const error = (JSON.parse(text) as { error?: { code?: string; issues?: unknown[] } }).error;
        // Refused like any invalid input: 400 validation_failed with issues naming where.
        if (status !== 400 || error?.code !== 'validation_failed' || !error.issues?.length) {
          answers.push(`${op.method} ${op.template} ${name}: ${status} ${text.slice(0, 200)}`);
        }
      }
    }
    expect(answers).toEqual([]);
    expect(await writtenRows()).toEqual(before);
    await healthy();
  }, 60_000);

  it('refuses instants outside the years 0001-9999 in every date-time parameter and field', async () => {
    const answers: string[] = [];
    const instants = ['0000-12-31T23:59:59Z', '0001-01-01T00:00:00+14:00', '9999-12-31T23:59:59-14:00', '+275760-09-13T00:00:00Z'];
    let checked = 0;
    for (const op of operations) {
      const path = `${server.url}/v1${op.template.replace(/\{[^}]+\}/g, admin.organization.id)}`;
      const headers = headersFor('cookie', op.method !== 'GET');
      for (const p of op.parameters.filter((x) => x.in === 'query' && resolve(x.schema).format === 'date-time')) {
        for (const at of instants) {
          checked++;
          const res = await send(op.method, `${path}?${p.name}=${encodeURIComponent(at)}`, headers);
          if (res.status !== 400) {
            answers.push(`${op.method} ${op.template} ${p.name}=${at}: ${res.status} ${res.text.slice(0, 200)}`);
          }
        }
      }
      const body = resolve(op.body);
      for (const [name] of Object.entries(body.properties ?? {}).filter(([, x]) => resolve(x).format === 'date-time')) {
        const valid = (fc.sample(validFor(op.body), { numRuns: 1, seed: SEED })[0] ?? {}) as Record<string, unknown>;
        for (const at of instants) {
          checked++;
          const res = await send(op.method, path, headers, JSON.stringify({ ...valid, [name]: at }));
          if (res.status !== 400) {
            answers.push(`${op.method} ${op.template} body ${name}=${at}: ${res.status} ${res.text.slice(0, 200)}`);
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(answers).toEqual([]);
  });

  it('refuses hostile input on /trpc too, and nesting deeper than any recursion survives', async () => {
    const headers = headersFor('cookie', true);
    const before = await writtenRows();
    for (const body of [
      serialize({ name: 'Shop\ud800' }),
      serialize({ name: 'Shop\u0000' }),
      `{"name":${nested(DEEP, '{"a":', '}').text}}`,
      `{"name":${nested(400_000, '[', ']').text}}`,
    ]) {
      const res = await send('POST', `${server.url}/trpc/applications.create`, headers, body);
      expect(res.status, res.text).toBe(400);
      expect(JSON.parse(res.text).error.data.code).toBe('validation_failed');
    }
    const input = encodeURIComponent(JSON.stringify({ organization_slug: admin.organization.slug, email: 'a\u0000b' }));
    const query = await send('GET', `${server.url}/trpc/users.list?input=${input}`, { cookie: admin.cookie });
    expect(query.status, query.text).toBe(400);
    // ~400,000 levels in under 1 MB: the usage properties schema walked this recursively, and
    // the /v1 adapter re-serialized it.
    for (const path of ['/v1/applications', '/v1/roles']) {
      const res = await send('POST', `${server.url}${path}`, headers, `{"name":${nested(400_000, '[', ']').text}}`);
      expect(res.status, res.text).toBe(400);
    }
    const huge = `{"idempotencyKey":"k1","eventType":"api.call","properties":{"a":${nested(400_000, '[', ']').text}}}`;
    for (const path of ['/v1/usage/events', '/v1/usage-events']) {
      const res = await send('POST', `${server.url}${path}`, { ...headers, authorization: apiKey }, huge);
      expect(res.status, res.text).toBe(400);
      expect(JSON.parse(res.text).error.code).toBe('validation_failed');
    }
    const tooLarge = await send(
      'POST',
      `${server.url}/v1/usage/events`,
      { ...headers, authorization: apiKey },
      `{"a":"${'x'.repeat(1_100_000)}"}`,
    );
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.text).error.code).toBe('payload_too_large');
    expect(await writtenRows()).toEqual(before);
    await healthy();
  });

  it('refuses a NUL anywhere in the URL, on routes outside the OpenAPI document too', async () => {
    for (const path of [
      `/v1/exports/exp_%00/download?organization_slug=${admin.organization.slug}`,
      `/v1/users?email=a%00b`,
      '/signin?return_to=/%00',
      '/v1/client/config?publishable_key=pk_%00',
      `/v1/tenants/${admin.organization.id}%00`,
    ]) {
      const res = await send('GET', `${server.url}${path}`, { cookie: admin.cookie });
      expect(res.status, `${path} ${res.text}`).toBe(400);
      expect(JSON.parse(res.text).error.code).toBe('validation_failed');
    }
    await healthy();
  });
});

/** A copy of a generated body with `text` inside every string (and in one extra key). */
function withText(value: unknown, text: string): unknown {
  if (typeof value === 'string') {
    return `${value}${text}`;
  }
  if (Array.isArray(value)) {
    return value.length > 0 ? value.map((v) => withText(v, text)) : [`x${text}`];
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = withText(v, text);
    }
    if (Object.keys(out).length === 0) {
      out[`k${text}`] = 'v';
    }
    return out;
  }
  return value;
}
