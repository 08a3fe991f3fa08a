import { ERROR_CODES } from '@svc/contracts/errors';
import { ZSubscriptionRefusal } from '@svc/contracts/subscriptions';
import { generateOpenApiDocument } from 'trpc-to-openapi';
import { ENGINE_PROXY_ALLOWLIST, MAX_ENGINE_QUERY_CHARS, openApiTemplate } from '../modules/platform/engine-allowlist.ts';
import type { AuthKind, Meta } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';

/** Alternatives: any one of the listed requirements authenticates the operation. */
const SECURITY: Record<Exclude<AuthKind, 'none'>, Record<string, string[]>[]> = {
  publishableKey: [{ publishableKey: [] }],
  secretKey: [{ secretKey: [] }],
  session: [{ sessionCookie: [] }],
  sessionOrApiKey: [{ sessionCookie: [] }, { secretKey: [] }],
};

type Operation = { operationId?: string; security?: Record<string, string[]>[]; summary?: string; responses?: Record<string, unknown> };
type PathItem = Record<string, Operation>;

const ENGINE_PARAM_SCHEMAS = {
  int: { type: 'integer', minimum: 1 },
  uuid: { type: 'string', format: 'uuid' },
  slug: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' },
} as const;

/** Every non-2xx answer of /v1 but a 402: `{ error: { code, message, requestId, issues? } }` (http/errors.ts, trpc/init.ts). */
const ERROR_BODY_SCHEMA = errorBodySchema({});

/** The error body, with `extra` properties beside `error` (the engine proxy adds the engine's own answer). */
function errorBodySchema(extra: Record<string, unknown>) {
  return {
    type: 'object',
    required: ['error'],
    additionalProperties: false,
    properties: {
      ...extra,
      error: {
        type: 'object',
        required: ['code', 'message', 'requestId'],
        properties: {
          code: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'stable snake_case code (docs/api.md, Errors)' },
          message: { type: 'string', description: 'what went wrong and what to do, in words; its wording may change, the code does not' },
          requestId: { type: 'string', description: 'the X-Request-Id of the request' },
          issues: {
            type: 'array',
            description: 'validation_failed: each field refused, with why',
            items: {
              type: 'object',
              required: ['path', 'message'],
              properties: { path: { type: 'array', items: { type: ['string', 'integer'] } }, message: { type: 'string' } },
            },
          },
        },
      },
    },
  };
}

const ERROR_REF = { $ref: '#/components/schemas/Error' };
const ENGINE_ERROR_REF = { $ref: '#/components/schemas/EngineError' };

const errorResponse = (description: string, schema: Record<string, string> = ERROR_REF) => ({
  description,
  content: { 'application/json': { schema } },
});

/** The codes of the error table answered with `status`, for a response's description. */
function codesOf(status: number): string[] {
  return Object.entries(ERROR_CODES)
    .filter(([, e]) => e.status === status)
    .map(([code]) => code);
}

/**
 * Statuses every operation may answer: a bad query or body (400), no or a bad credential (401),
 * not allowed (403), an id or organization the caller cannot see (404), the state of what it
 * names (409), throttled (429), headers too large (431), a fault (500), the database unreachable
 * (503). With a JSON body,
 * also too large (413) and not declared JSON (415).
 */
const EVERY_OPERATION_ERRORS = [400, 401, 403, 404, 409, 429, 431, 500, 503] as const;
const BODY_ERRORS = [413, 415] as const;

/**
 * `/v1/platform/engine/*` (modules/platform/engine-proxy.ts): one GET per allowlisted engine
 * admin API path, so the document lists exactly what the proxy forwards.
 */
function enginePaths(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const route of ENGINE_PROXY_ALLOWLIST) {
    const { path, params } = openApiTemplate(route);
    paths[`/platform/engine/${path}`] = {
      get: {
        operationId: `platform-engine-${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '-')}`,
        summary: route.summary,
        description: `Platform admins only. Forwarded to the engine's admin API (ENGINE_ADMIN_API_URL) with svc's server-side token; the query string (at most ${MAX_ENGINE_QUERY_CHARS} characters) is passed on, the caller's cookies and Authorization are not. The engine's status and JSON body are relayed (an engine error answers our error body plus 'engine', the engine's own). Paths not in this document answer 404 not_found.`,
        tags: ['platform'],
        security: [{ sessionCookie: [] }],
        parameters: params.map((p) => ({ name: p.name, in: 'path', required: true, schema: ENGINE_PARAM_SCHEMAS[p.kind] })),
        responses: {
          '200': { description: "The engine's answer (Authentik lists: { pagination, results })", content: { 'application/json': {} } },
          '400': errorResponse('validation_failed: query string too long', ENGINE_ERROR_REF),
          '401': errorResponse('unauthenticated: no valid session', ENGINE_ERROR_REF),
          '403': errorResponse('forbidden: not a platform admin (the same answer for every path)', ENGINE_ERROR_REF),
          '404': errorResponse('not_found: not allowlisted, or the engine has no such record', ENGINE_ERROR_REF),
          '502': errorResponse('engine_unreachable or engine_bad_response', ENGINE_ERROR_REF),
          '503': errorResponse('service_unavailable: ENGINE_ADMIN_API_URL and ENGINE_ADMIN_TOKEN are not set', ENGINE_ERROR_REF),
          '504': errorResponse('engine_timeout: no answer within ENGINE_ADMIN_TIMEOUT_MS', ENGINE_ERROR_REF),
        },
      },
    };
  }
  return paths;
}

/** GET /v1/exports/{id}/download (modules/exports/download.ts): a streamed file, so plain Express. */
function exportPaths(): Record<string, unknown> {
  return {
    '/exports/{id}/download': {
      get: {
        operationId: 'exports-download',
        summary: 'Download a completed export as JSON or CSV (its own format unless format= asks for the other); streamed',
        description:
          'JSON: one document { export, organization, subscription, members, ..., usageEvents }. CSV (RFC 4180): one header row, columns resource, id, then every other field; each row names its resource; text cells starting with = + - @ tab or CR are prefixed with a single quote. Secret-shaped fields are never included (docs/api.md, Exports).',
        tags: ['exports'],
        security: [{ sessionCookie: [] }, { secretKey: [] }],
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^exp_[0-9A-Za-z]{20}$' } },
          { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: ['json', 'csv'] } },
          { name: 'organization_slug', in: 'query', required: false, schema: { type: 'string' } },
        ],
        responses: {
          '200': {
            description: 'The export, as an attachment (Content-Disposition)',
            content: { 'application/json': {}, 'text/csv': {} },
          },
          '400': errorResponse('validation_failed: not an export id, or format is not json or csv'),
          '401': errorResponse('unauthenticated or invalid_secret_key'),
          '403': errorResponse('forbidden: needs exports.create (and, for a person, org_admin)'),
          '404': errorResponse('not_found: no such export in an organization the caller can see'),
          '409': errorResponse('export_not_ready (pending or running) or export_failed'),
          '503': errorResponse('service_unavailable: too many downloads streaming on this server; Retry-After'),
        },
      },
    },
  };
}

/**
 * The document's tags, one per domain, in the order a reader meets them (Redocly's
 * tag-description; every operation's tag is one of these: openapi-lint.test.ts).
 */
const TAGS: readonly { name: string; description: string }[] = [
  { name: 'public', description: 'Public configuration by publishable key (or keyless development) and setup context for coding agents' },
  { name: 'backend', description: 'Checks a backend service makes with its application secret key' },
  { name: 'session', description: 'The signed-in user: who they are, their memberships and active workspace' },
  { name: 'tenants', description: 'Organizations (tenants) and their members' },
  { name: 'permissions', description: 'The permission catalog and permission checks' },
  { name: 'roles', description: "System roles and an organization's custom roles" },
  { name: 'users', description: "An organization's users: pre-provisioning, role, suspension, removal" },
  { name: 'invitations', description: 'Invitations by email, and accepting them' },
  { name: 'sessions', description: "The sessions of an organization's members, and revoking them" },
  { name: 'applications', description: 'Applications that sign people in through svc: keys, redirect URLs, status' },
  { name: 'api-keys', description: 'Tenant API keys, scoped by permission; each secret is shown once' },
  { name: 'audit-logs', description: "An organization's audit log" },
  { name: 'events', description: "An organization's event feed, read after a cursor" },
  { name: 'webhooks', description: 'Webhook endpoints, their signing secrets, deliveries and replays' },
  { name: 'email', description: 'Invitation email deliveries' },
  { name: 'usage', description: 'Usage events (idempotent ingestion and metering), totals and counters' },
  { name: 'subscriptions', description: "Subscription plans and an organization's subscription: seats and usage limits" },
  { name: 'billing', description: 'Payment providers, usage-to-provider mappings and sync logs' },
  { name: 'exports', description: 'Exports of everything an organization owns, as JSON or CSV' },
  { name: 'platform', description: "Platform admins only: the job queue and a read-only view of the engine's admin API" },
  { name: 'meta', description: 'This document' },
];

/** Routes served by plain Express under /v1 (they cannot be procedures); documented here. */
const EXPRESS_PATHS = {
  ...enginePaths(),
  ...exportPaths(),
  '/openapi.json': {
    get: {
      operationId: 'openapi-document',
      summary: 'This OpenAPI 3.1 document',
      tags: ['meta'],
      responses: { '200': { description: 'The OpenAPI document', content: { 'application/json': {} } } },
    },
  },
};

/**
 * The OpenAPI 3.1 document of the /v1 surface, generated from the routers. Each operation's
 * security comes from its procedure's `auth` meta (publishable key, bearer secret, session).
 */
export function buildOpenApiDocument(publicUrl: string): Record<string, unknown> {
  const doc = generateOpenApiDocument(appRouter, {
    title: 'svc API',
    version: '1.0.0',
    description:
      'Identity and access control plane. Errors answer { "error": { "code", "message", "requestId" } } with a stable snake_case code.',
    baseUrl: `${publicUrl}/v1`,
    docsUrl: `${publicUrl}/docs`,
    securitySchemes: {
      publishableKey: {
        type: 'apiKey',
        in: 'header',
        name: 'X-SVC-Publishable-Key',
        description: 'pk_live_... (or query publishable_key)',
      },
      secretKey: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer sk_live_...' },
      sessionCookie: { type: 'apiKey', in: 'cookie', name: 'svc_session', description: 'Hosted session cookie (HttpOnly)' },
    },
    paths: EXPRESS_PATHS,
    defs: { SubscriptionRefusal: ZSubscriptionRefusal },
  }) as unknown as { paths: Record<string, PathItem> };

  const authByOperation = new Map<string, AuthKind>();
  const statusByOperation = new Map<string, number>();
  /** Mutations under the subscription rule (trpc/subscription-gate.ts): they may answer 402. */
  const subscriptionRuled = new Set<string>();
  /** Operations that create only sometimes: 201 when they did, else 200 (meta `created`). */
  const sometimesCreated = new Map<string, string>();
  /** Error statuses particular to an operation (meta `errorStatuses`). */
  const particularErrors = new Map<string, Readonly<Record<number, string>>>();
  for (const [path, procedure] of Object.entries(appRouter._def.procedures)) {
    const meta = (procedure as unknown as { _def: { meta?: Meta } })._def.meta;
    authByOperation.set(path.replace(/\./g, '-'), meta?.auth ?? 'none');
    if (meta?.successStatus) {
      statusByOperation.set(path.replace(/\./g, '-'), meta.successStatus);
    }
    if (meta?.created) {
      sometimesCreated.set(path.replace(/\./g, '-'), meta.created.otherwise);
    }
    if (meta?.errorStatuses) {
      particularErrors.set(path.replace(/\./g, '-'), meta.errorStatuses);
    }
    if (meta?.subscription) {
      subscriptionRuled.add(path.replace(/\./g, '-'));
    }
  }
  const components = (doc as unknown as { components?: { schemas?: Record<string, unknown> } }).components ?? {};
  const schemas = components.schemas ?? {};
  // trpc-to-openapi's own error schemas (`{ message, code, issues }` with tRPC's codes) describe
  // no answer svc sends: every error response below points at Error instead.
  for (const name of Object.keys(schemas)) {
    if (name.startsWith('error.')) {
      delete schemas[name];
    }
  }
  schemas.Error = ERROR_BODY_SCHEMA;
  schemas.EngineError = errorBodySchema({ engine: { description: "the engine's own error answer, as it sent it" } });
  components.schemas = schemas;
  (doc as unknown as { components: unknown }).components = components;
  for (const item of Object.values(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, description] of Object.entries(particularErrors.get(operation.operationId ?? '') ?? {})) {
        operation.responses = { ...operation.responses, [status]: errorResponse(description) };
      }
      documentErrors(operation, method);
      // trpc-to-openapi documents every success as 200; creates answer their own status.
      const status = operation.operationId ? statusByOperation.get(operation.operationId) : undefined;
      if (status && operation.responses?.['200']) {
        const { '200': ok, ...rest } = operation.responses;
        const otherwise = operation.operationId ? sometimesCreated.get(operation.operationId) : undefined;
        const changed = otherwise ? { '200': { ...(ok as object), description: otherwise } } : {};
        operation.responses = { [String(status)]: ok, ...changed, ...rest };
      }
      if (operation.operationId && subscriptionRuled.has(operation.operationId)) {
        operation.responses = {
          ...operation.responses,
          '402': {
            description:
              "subscription_inactive (the organization's subscription is inactive, cancelled or expired: `status`) or subscription_limit_exceeded (over its seats or a monthly usage limit, or no free seat for a new member: `limit`, `max`, `used`, `requested`, `periodEnd`, `plan`); the message says what to do, `upgradeUrl` where (docs/api.md, Subscription limits)",
            content: { 'application/json': { schema: { $ref: '#/components/schemas/SubscriptionRefusal' } } },
          },
        };
      }
      const auth = operation.operationId ? authByOperation.get(operation.operationId) : undefined;
      if (auth === undefined) {
        // Plain Express routes state their own security (public when they do not).
        operation.security ??= [];
      } else if (auth === 'none') {
        operation.security = [];
      } else {
        operation.security = SECURITY[auth];
      }
    }
  }
  (doc as unknown as { tags: typeof TAGS }).tags = TAGS;
  documentAgentContextRepresentations(doc.paths['/setup/agent-context']?.get);
  // Its responses were replaced whole: the statuses every operation may answer again.
  documentErrors(doc.paths['/setup/agent-context']?.get as Operation, 'get');
  return doc as unknown as Record<string, unknown>;
}

/**
 * Points every error response of an operation at the Error schema, with the error table's codes
 * for its status in the description, and adds the statuses any operation may answer (429, 503).
 * A 402 keeps its SubscriptionRefusal schema.
 */
function documentErrors(operation: Operation, method: string): void {
  operation.responses ??= {};
  const responses = operation.responses;
  const statuses: readonly number[] =
    method === 'post' || method === 'patch' || method === 'put' ? [...EVERY_OPERATION_ERRORS, ...BODY_ERRORS] : EVERY_OPERATION_ERRORS;
  for (const status of statuses) {
    responses[String(status)] ??= { description: '' };
  }
  for (const [status, response] of Object.entries(responses)) {
    const n = Number(status);
    if (!(n >= 400) || n === 402) {
      continue;
    }
    const codes = codesOf(n);
    const given = (response as { description?: string }).description ?? '';
    // trpc-to-openapi's generic wording ("Invalid input data") gives way to the codes.
    const own = /^(Invalid input data|Authorization not provided|Insufficient access|Not found|Internal server error)$/.test(given)
      ? ''
      : given;
    // A schema of ours (EngineError) stays; trpc-to-openapi's `error.*` ones give way to Error.
    const schema = (response as { content?: Record<string, { schema?: { $ref?: string } }> }).content?.['application/json']?.schema;
    const ours = schema?.$ref !== undefined && !schema.$ref.startsWith('#/components/schemas/error.');
    responses[status] = {
      description: own || (codes.length > 0 ? `One of: ${codes.join(', ')}` : 'An error'),
      content: { 'application/json': { schema: ours ? schema : ERROR_REF } },
      ...(n === 503 || n === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' } } } : {}),
    };
  }
}

/**
 * GET /setup/agent-context also answers Markdown and 304 (modules/setup/documents.ts), which the
 * generator, knowing only the procedure's JSON output, cannot say.
 */
function documentAgentContextRepresentations(operation: Operation | undefined): void {
  const ok = operation?.responses?.['200'] as { content?: Record<string, unknown>; headers?: unknown } | undefined;
  if (!operation?.responses || !ok?.content) {
    throw new Error('the OpenAPI document lost GET /setup/agent-context');
  }
  ok.content['text/markdown'] = { schema: { type: 'string', description: 'format=markdown: the same context as one Markdown document' } };
  operation.responses = {
    '200': ok,
    '304': { description: 'Not modified: If-None-Match named the current ETag', headers: ok.headers },
    '400': errorResponse(
      'invalid_publishable_key, unsupported_framework (not one of the nine), unsupported_format (neither json nor markdown) or validation_failed',
    ),
    '403': errorResponse('keyless_disabled: keyless=1 on an installation without keyless development'),
    '404': errorResponse('application_not_found: no application has this publishable key'),
    '409': errorResponse('application_disabled'),
  };
}
