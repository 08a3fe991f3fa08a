import { ERROR_CODES, type ErrorCode } from '@svc/contracts/errors';
import { ZSubscriptionRefusal } from '@svc/contracts/subscriptions';
import { generateOpenApiDocument } from 'trpc-to-openapi';
import { ENGINE_PROXY_ALLOWLIST, MAX_ENGINE_QUERY_CHARS, openApiTemplate } from '../modules/platform/engine-allowlist.ts';
import { ENGINE_RELAYED_CODES } from '../modules/platform/engine-client.ts';
import type { AuthKind, Meta } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';

/** Alternatives: any one of the listed requirements authenticates the operation. */
const SECURITY: Record<Exclude<AuthKind, 'none'>, Record<string, string[]>[]> = {
  publishableKey: [{ publishableKey: [] }],
  secretKey: [{ secretKey: [] }],
  session: [{ sessionCookie: [] }],
  sessionOrApiKey: [{ sessionCookie: [] }, { secretKey: [] }],
};

type Operation = {
  operationId?: string;
  security?: Record<string, string[]>[];
  summary?: string;
  responses?: Record<string, unknown>;
  /**
   * The control-plane permission the route checks (its procedure's `access` meta); a list when
   * its input picks one of them (the permission check: members.read, or subscription.read for a feature).
   */
  'x-svc-permission'?: string | readonly string[];
};
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

/** Codes any operation may answer: its input refused, throttled, headers too large, a fault, the database unreachable. */
const EVERY_OPERATION_CODES: readonly ErrorCode[] = [
  'validation_failed',
  'rate_limited',
  'header_too_large',
  'internal',
  'service_unavailable',
];
/** A request that changes something: refused when it carries a cookie from another site (http/csrf.ts). */
const MUTATION_CODES: readonly ErrorCode[] = ['csrf_rejected'];
/** A JSON body (POST, PATCH, PUT): not JSON, too large, not declared JSON (http/json-body.ts). */
const BODY_CODES: readonly ErrorCode[] = ['malformed_request', 'payload_too_large', 'unsupported_media_type'];
/** What authenticating each way may answer (trpc/procedures.ts). */
const AUTH_CODES: Record<AuthKind, readonly ErrorCode[]> = {
  none: [],
  publishableKey: ['invalid_publishable_key', 'keyless_disabled', 'application_not_found', 'application_disabled'],
  secretKey: ['invalid_secret_key', 'application_disabled'],
  session: ['unauthenticated'],
  sessionOrApiKey: ['unauthenticated', 'invalid_secret_key'],
};
/** The control-plane ladder: a tenant API key, an organization the caller cannot see, a permission it lacks (modules/access). */
const CONTROL_CODES: readonly ErrorCode[] = ['invalid_secret_key', 'not_found', 'forbidden'];

/**
 * The codes an operation may answer: those of its method and authentication, then its own (meta
 * `errors`), in the error table's order. A 402's codes are the SubscriptionRefusal's.
 */
function errorCodesOf(method: string, meta: Pick<Meta, 'auth' | 'control' | 'errors'>): ErrorCode[] {
  const codes = new Set<ErrorCode>([
    ...EVERY_OPERATION_CODES,
    ...(method === 'get' || method === 'head' ? [] : MUTATION_CODES),
    ...(method === 'post' || method === 'patch' || method === 'put' ? BODY_CODES : []),
    ...AUTH_CODES[meta.auth ?? 'none'],
    ...(meta.control ? CONTROL_CODES : []),
    ...(meta.errors ?? []),
  ]);
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => codes.has(code) && ERROR_CODES[code].status !== 402);
}

/**
 * The error responses of an operation that answers `codes`: one per status, each the Error body
 * (or `schema`) with `error.code` narrowed to that status's codes, so a generated client knows
 * exactly which codes to expect. `notes` say more about a status than its codes do.
 */
function errorResponses(
  codes: readonly ErrorCode[],
  notes: Readonly<Record<number, string>> = {},
  schema: Record<string, string> = ERROR_REF,
): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const note = notes[status];
    responses[String(status)] = {
      description: note ? `${list.join(', ')}: ${note}` : `One of: ${list.join(', ')}`,
      content: {
        'application/json': {
          schema: {
            allOf: [
              schema,
              {
                type: 'object',
                required: ['error'],
                properties: { error: { type: 'object', required: ['code'], properties: { code: { enum: list } } } },
              },
            ],
          },
        },
      },
      ...(status === 503 || status === 429
        ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' } } }
        : {}),
    };
  }
  return responses;
}

/** A mutation under the subscription rule (trpc/subscription-gate.ts). */
const SUBSCRIPTION_REFUSAL_RESPONSE = {
  description:
    "subscription_inactive (the organization's subscription is inactive, cancelled or expired: `status`) or subscription_limit_exceeded (over its seats or a monthly usage limit, or no free seat for a new member: `limit`, `max`, `used`, `requested`, `periodEnd`, `plan`); the message says what to do, `upgradeUrl` where (docs/api.md, Subscription limits)",
  content: { 'application/json': { schema: { $ref: '#/components/schemas/SubscriptionRefusal' } } },
};

/**
 * `/v1/platform/engine/*` (http/engine-proxy.ts): one GET per allowlisted engine
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
          ...errorResponses(
            [
              ...EVERY_OPERATION_CODES,
              'unauthenticated',
              'forbidden',
              'not_found',
              // The engine's own 4xx, relayed under our code for its status (engine-client.ts).
              ...ENGINE_RELAYED_CODES,
              'engine_unreachable',
              'engine_bad_response',
              'engine_timeout',
            ],
            {
              400: 'the query string is too long, or the engine refused the request',
              403: 'not a platform admin (the same answer for every path)',
              404: 'not allowlisted, or the engine has no such record',
              503: 'ENGINE_ADMIN_API_URL and ENGINE_ADMIN_TOKEN are not set',
              504: 'no answer within ENGINE_ADMIN_TIMEOUT_MS',
            },
            ENGINE_ERROR_REF,
          ),
        },
      },
    };
  }
  return paths;
}

/** GET /v1/exports/{id}/download (http/exports-download.ts): a streamed file, so plain Express. */
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
          ...errorResponses(
            [
              ...EVERY_OPERATION_CODES,
              'malformed_request',
              ...AUTH_CODES.sessionOrApiKey,
              ...CONTROL_CODES,
              'export_not_ready',
              'export_failed',
            ],
            {
              400: 'not an export id, a path that does not decode, or format is not json or csv',
              403: 'needs exports.create (and, for a person, org_admin)',
              404: 'no such export in an organization the caller can see',
              409: 'the export is pending or running, or failed',
              503: 'too many downloads streaming on this server; Retry-After',
            },
          ),
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
  { name: 'roles', description: "System roles, product roles and an organization's custom roles" },
  { name: 'authorization', description: "The product's own authorization: API resources, their permissions, product roles" },
  { name: 'users', description: "An organization's users: pre-provisioning, role, suspension, removal" },
  { name: 'invitations', description: 'Invitations by email, and accepting them' },
  { name: 'sessions', description: "The sessions of an organization's members, and revoking them" },
  { name: 'applications', description: 'Applications that sign people in through svc: keys, redirect URLs, status' },
  { name: 'api-keys', description: 'Tenant API keys, scoped by permission; each secret is shown once' },
  { name: 'audit-logs', description: "An organization's audit log" },
  { name: 'domains', description: "An organization's email domains: DNS TXT verification and what each does at sign-in" },
  { name: 'sso-connections', description: "An organization's SAML and OIDC connections to its own identity provider" },
  {
    name: 'setup-links',
    description: "Links that let an organization's IT admin set up SSO, directory sync or a domain without a console account",
  },
  {
    name: 'directories',
    description: "An organization's SCIM 2.0 directories: the identity provider provisions people as memberships and groups as roles",
  },
  { name: 'connected apps', description: 'Which third-party apps and agents may connect to an organization' },
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
      responses: {
        '200': { description: 'The OpenAPI document', content: { 'application/json': {} } },
        ...errorResponses(['rate_limited', 'header_too_large', 'internal']),
      },
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

  const metaByOperation = new Map<string, Meta>();
  for (const [path, procedure] of Object.entries(appRouter._def.procedures)) {
    metaByOperation.set(path.replace(/\./g, '-'), (procedure as unknown as { _def: { meta?: Meta } })._def.meta ?? {});
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
      const meta = operation.operationId ? metaByOperation.get(operation.operationId) : undefined;
      if (meta === undefined) {
        // Plain Express routes state their own errors and security (public when they do not).
        operation.security ??= [];
        continue;
      }
      const { '200': ok, ...generated } = operation.responses ?? {};
      // trpc-to-openapi's error responses (`{ message, code }` with tRPC's codes) describe no
      // answer svc sends: the operation's own codes replace them.
      const successes = Object.fromEntries(Object.entries(generated).filter(([status]) => Number(status) < 400));
      const status = meta.successStatus;
      // trpc-to-openapi documents every success as 200; creates answer their own status, and a
      // route that creates only sometimes answers 200 otherwise.
      const success =
        status === undefined
          ? { '200': ok }
          : { [String(status)]: ok, ...(meta.created ? { '200': { ...(ok as object), description: meta.created.otherwise } } : {}) };
      operation.responses = {
        ...success,
        ...successes,
        ...errorResponses(errorCodesOf(method, meta)),
        ...(meta.subscription ? { '402': SUBSCRIPTION_REFUSAL_RESPONSE } : {}),
      };
      operation.security = meta.auth === undefined || meta.auth === 'none' ? [] : SECURITY[meta.auth];
      if (meta.access) {
        const { permission } = meta.access;
        operation['x-svc-permission'] = typeof permission === 'string' ? permission : permission.oneOf;
      }
    }
  }
  (doc as unknown as { tags: typeof TAGS }).tags = TAGS;
  documentAgentContextRepresentations(doc.paths['/setup/agent-context']?.get);
  return doc as unknown as Record<string, unknown>;
}

/**
 * GET /setup/agent-context also answers Markdown and 304 (http/agent-context.ts), which the
 * generator, knowing only the procedure's JSON output, cannot say.
 */
function documentAgentContextRepresentations(operation: Operation | undefined): void {
  const ok = operation?.responses?.['200'] as { content?: Record<string, unknown>; headers?: unknown } | undefined;
  if (!operation?.responses || !ok?.content) {
    throw new Error('the OpenAPI document lost GET /setup/agent-context');
  }
  ok.content['text/markdown'] = { schema: { type: 'string', description: 'format=markdown: the same context as one Markdown document' } };
  const { '200': _, ...rest } = operation.responses;
  operation.responses = {
    '200': ok,
    '304': { description: 'Not modified: If-None-Match named the current ETag', headers: ok.headers },
    ...rest,
  };
}
