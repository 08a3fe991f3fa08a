import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, expect, inject } from 'vitest';

/**
 * Every answer the API test suite receives from /v1 is checked against the OpenAPI document svc
 * serves: its status must be documented for the operation, and a JSON body must match that
 * response's schema (the operation's output; Error with the operation's own codes; a 402's
 * SubscriptionRefusal). A setup file of the api project (vitest.config.ts): it wraps `fetch`,
 * keeps each /v1 answer of a local svc, and fails the test file in its afterAll when one does
 * not match.
 */

type Json = Record<string, any>;
/** `body` is the text of a JSON answer, null for any other. */
type Seen = { method: string; path: string; status: number; body: string | null };

// Built once for the run by test/global-setup.ts.
const doc = JSON.parse(inject('openapiDocument')) as Json;
const ajv = new Ajv2020({ strict: false, allErrors: false });
ajv.addSchema({ $id: 'svc-openapi', components: doc.components }, 'svc-openapi');

/** Path templates of the document, literal segments first (so /tenants/members beats /tenants/{id}). */
const templates = Object.keys(doc.paths as Json)
  .map((template) => ({
    template,
    params: (template.match(/\{/g) ?? []).length,
    pattern: new RegExp(`^/v1${template.replace(/\{[^}]+\}/g, '[^/]+').replace(/\/$/, '')}/?$`),
  }))
  .sort((a, b) => a.params - b.params);

function operationOf(method: string, path: string): { template: string; operation: Json } | undefined {
  for (const t of templates) {
    if (t.pattern.test(path)) {
      const operation = (doc.paths as Json)[t.template]?.[method.toLowerCase()];
      if (operation) {
        return { template: t.template, operation };
      }
    }
  }
  return undefined;
}

const validators = new Map<string, ReturnType<typeof ajv.compile>>();
function validatorOf(schema: Json): ReturnType<typeof ajv.compile> {
  const key = JSON.stringify(schema);
  let validate = validators.get(key);
  if (!validate) {
    // $refs point into the document's components, registered above as `svc-openapi`.
    const rewritten = JSON.parse(key.replaceAll('"#/components/', '"svc-openapi#/components/')) as Json;
    validate = ajv.compile(rewritten);
    validators.set(key, validate);
  }
  return validate;
}

/** Why an answer does not match the document, or null when it does. */
export function answerProblem(seen: Seen): string | null {
  const found = operationOf(seen.method, seen.path);
  if (!found) {
    return null; // no such route: the catch-all 404, documented for none
  }
  const where = `${seen.method} ${found.template} answered ${seen.status}`;
  const response = found.operation.responses?.[String(seen.status)];
  if (!response) {
    return `${where}, which the document does not list (${Object.keys(found.operation.responses ?? {}).join(', ')})`;
  }
  if (seen.body === null) {
    return null; // not JSON: a Markdown context, an empty 204 or 304
  }
  const schema = response.content?.['application/json']?.schema;
  if (!schema) {
    return seen.status < 400 ? null : `${where} with a body the document gives no schema`;
  }
  let body: unknown;
  try {
    body = JSON.parse(seen.body);
  } catch {
    return `${where} with a body that is not JSON: ${seen.body.slice(0, 120)}`;
  }
  const validate = validatorOf(schema);
  if (!validate(body)) {
    return `${where} with a body the document does not describe (${ajv.errorsText(validate.errors)}): ${seen.body.slice(0, 300)}`;
  }
  return null;
}

/** The answers, once their bodies have arrived. */
const pending: Promise<Seen>[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const res = await realFetch(input, init);
  const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url);
  if (url.hostname === '127.0.0.1' && url.pathname.startsWith('/v1/') && url.pathname !== '/v1/openapi.json') {
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    // A download (an export's file) is streamed, and the document gives it no schema: its body is
    // not read here, so a test reading it chunk by chunk is not held up.
    const json = res.headers.get('content-type')?.includes('json') === true && !res.headers.has('content-disposition');
    pending.push(
      (json ? res.clone().text() : Promise.resolve(null)).then((body) => ({ method, path: url.pathname, status: res.status, body })),
    );
  }
  return res;
};

afterAll(async () => {
  globalThis.fetch = realFetch;
  // A body a test stopped reading may never end: those are left out after a second.
  const settled = await Promise.all(
    pending.map((answer) => Promise.race([answer.catch(() => null), new Promise<null>((resolve) => setTimeout(resolve, 1000).unref())])),
  );
  const seen = settled.filter((answer): answer is Seen => answer !== null);
  const problems = [...new Set(seen.map(answerProblem).filter((p): p is string => p !== null))];
  expect(problems, 'answers the OpenAPI document does not describe').toEqual([]);
});
