import type { Meta } from '../trpc/init.ts';
import { appRouter } from '../trpc/router.ts';

/**
 * The edge's route classes, read once from the procedures' meta (docs/architecture.md section 3,
 * "The edge"), so a route's CORS and rate-limit class are declared where the route is:
 * - `publicCors`: a credential-free `/v1` route browsers on any origin may call (http/cors.ts);
 * - `rateLimit: 'backend'`: a route a backend calls with its secret key, which then spends the
 *   key's own budget (http/edge.ts). Served on `/v1` (its OpenAPI path) and `/trpc` (its name).
 * Paths are as `normalizePath` gives them (lower case, no trailing slash).
 */
export type RoutePolicy = {
  /** `/v1` paths of public routes. */
  publicPaths: ReadonlySet<string>;
  /** True for a path (normalized) served by a backend route. */
  isBackend: (path: string) => boolean;
};

type Procedures = Record<string, { _def: { meta?: Meta } }>;

/** The literal part of an OpenAPI path template before its first parameter. */
const literalPrefix = (template: string) => template.slice(0, template.includes('{') ? template.indexOf('{') : undefined);

export function routePolicyOf(procedures: Procedures): RoutePolicy {
  const publicPaths = new Set<string>();
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const [name, procedure] of Object.entries(procedures)) {
    const meta = procedure._def.meta;
    const template = meta?.openapi ? `/v1${meta.openapi.path}`.toLowerCase() : undefined;
    if (meta?.publicCors) {
      if (!template || template.includes('{')) {
        throw new Error(`${name}: publicCors needs a /v1 path without parameters`);
      }
      publicPaths.add(template);
    }
    if (meta?.rateLimit === 'backend') {
      // A batch (`/trpc/a,b`) starts with its first procedure's name, as tRPC routes it.
      prefixes.push(`/trpc/${name.toLowerCase()}`);
      if (template?.includes('{')) {
        prefixes.push(literalPrefix(template));
      } else if (template) {
        exact.add(template);
      }
    }
  }
  return {
    publicPaths,
    isBackend: (path) => exact.has(path) || prefixes.some((p) => path.startsWith(p)),
  };
}

/** The policy of svc's own procedures. */
export const ROUTE_POLICY: RoutePolicy = routePolicyOf(appRouter._def.procedures as unknown as Procedures);
