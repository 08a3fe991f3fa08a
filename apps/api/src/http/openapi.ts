import { generateOpenApiDocument } from 'trpc-to-openapi';
import type { AuthKind, Meta } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';

const SECURITY: Record<Exclude<AuthKind, 'none'>, Record<string, string[]>> = {
  publishableKey: { publishableKey: [] },
  secretKey: { secretKey: [] },
  session: { sessionCookie: [] },
};

type Operation = { operationId?: string; security?: Record<string, string[]>[]; summary?: string };
type PathItem = Record<string, Operation>;

/** Routes served by plain Express under /v1 (they cannot be procedures); documented here. */
const EXPRESS_PATHS = {
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
  }) as unknown as { paths: Record<string, PathItem> };

  const authByOperation = new Map<string, AuthKind>();
  for (const [path, procedure] of Object.entries(appRouter._def.procedures)) {
    const meta = (procedure as unknown as { _def: { meta?: Meta } })._def.meta;
    authByOperation.set(path.replace(/\./g, '-'), meta?.auth ?? 'none');
  }
  for (const item of Object.values(doc.paths)) {
    for (const operation of Object.values(item)) {
      const auth = operation.operationId ? authByOperation.get(operation.operationId) : undefined;
      if (auth === undefined || auth === 'none') {
        operation.security = [];
      } else {
        operation.security = [SECURITY[auth]];
      }
    }
  }
  return doc as unknown as Record<string, unknown>;
}
