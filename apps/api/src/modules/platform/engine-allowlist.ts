/**
 * The engine admin API paths `/v1/platform/engine/*` forwards: read-only views of Authentik's API
 * v3, relative to ENGINE_ADMIN_API_URL. Everything else answers 404 without reaching the engine.
 *
 * Left out on purpose, because the answer would carry a secret or the request would change state:
 * - `providers/oauth2/` (its serializer includes each provider's client secret), `core/tokens/`
 *   and its `view_key/` (API tokens), `sources/oauth/` (consumer keys);
 * - `admin/system/` (it echoes the request's HTTP headers, so it would echo svc's bearer token);
 * - `core/users/me/` (the token's own account), `core/users/{id}/set_password/`,
 *   `core/users/{id}/recovery/` and anything else that writes or mints links;
 * - every method but GET and HEAD.
 */

/** What a path parameter may be. Each shape also keeps `.`, `%`, `/` and `\` out of a segment. */
const PARAMS = {
  /** Authentik's integer primary keys (users, providers). */
  int: /^[1-9][0-9]{0,17}$/,
  /** Authentik's UUID primary keys (groups). */
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  /** Django slugs (applications, flows, sources). */
  slug: /^[A-Za-z0-9_-]{1,128}$/,
} as const;

type ParamKind = keyof typeof PARAMS;

export type EngineProxyRoute = {
  /** Authentik path template relative to the API base, e.g. `core/users/{id:int}/`. */
  template: string;
  /** One line for the OpenAPI document and the README. */
  summary: string;
};

export const ENGINE_PROXY_ALLOWLIST: readonly EngineProxyRoute[] = [
  {
    template: 'core/users/',
    summary: 'Engine users (Authentik core/users/, paginated; filters such as search, email, username, page, page_size)',
  },
  { template: 'core/users/{id:int}/', summary: 'One engine user by its integer pk' },
  { template: 'core/groups/', summary: 'Engine groups (Authentik core/groups/, paginated)' },
  { template: 'core/groups/{id:uuid}/', summary: 'One engine group by its UUID pk' },
  { template: 'core/applications/', summary: 'Engine applications (Authentik core/applications/, paginated)' },
  { template: 'core/applications/{slug:slug}/', summary: 'One engine application by slug' },
  { template: 'flows/instances/', summary: 'Engine flows (Authentik flows/instances/, paginated)' },
  { template: 'flows/instances/{slug:slug}/', summary: 'One engine flow by slug' },
  { template: 'sources/all/', summary: 'Engine sign-in sources, social included (Authentik sources/all/, paginated)' },
  { template: 'sources/all/{slug:slug}/', summary: 'One engine source by slug' },
  { template: 'providers/all/', summary: 'Engine providers without their secrets (Authentik providers/all/, paginated)' },
  { template: 'providers/all/{id:int}/', summary: 'One engine provider by its integer pk' },
  { template: 'admin/version/', summary: 'The engine version (Authentik admin/version/)' },
];

/** Longest query string forwarded to the engine (filters and paging need far less). */
export const MAX_ENGINE_QUERY_CHARS = 2048;

type CompiledSegment = { literal: string } | { param: string; kind: ParamKind };
type CompiledRoute = { route: EngineProxyRoute; segments: CompiledSegment[] };

function compile(route: EngineProxyRoute): CompiledRoute {
  if (!route.template.endsWith('/') || route.template.startsWith('/')) {
    throw new Error(`engine proxy template ${route.template} must be relative and end with /`);
  }
  const segments = route.template
    .slice(0, -1)
    .split('/')
    .map((part): CompiledSegment => {
      const param = /^\{([a-z]+):([a-z]+)\}$/.exec(part);
      if (param?.[1] && param[2]) {
        if (!(param[2] in PARAMS)) {
          throw new Error(`engine proxy template ${route.template}: unknown parameter kind ${param[2]}`);
        }
        return { param: param[1], kind: param[2] as ParamKind };
      }
      if (!/^[a-z0-9_-]+$/.test(part)) {
        throw new Error(`engine proxy template ${route.template}: bad segment ${part}`);
      }
      return { literal: part };
    });
  return { route, segments };
}

const COMPILED = ENGINE_PROXY_ALLOWLIST.map(compile);

/** Longest raw path (after `/v1/platform/engine/`) worth looking at. */
const MAX_RAW_PATH = 512;

/** A path segment after decoding: letters, digits, `-` and `_` only (no dots, slashes, `%`, `\`). */
const SAFE_SEGMENT = /^[A-Za-z0-9_-]+$/;

export type EngineProxyMatch = {
  route: EngineProxyRoute;
  /** The canonical path to call, relative to the API base: built from the template, never the input. */
  path: string;
};

/**
 * Matches the part of a request path after `/v1/platform/engine/` (still percent-encoded, no
 * query) against the allowlist. Normalize, then match: the raw path is split on `/` first, so an
 * encoded slash stays inside its segment; each segment is percent-decoded once and must then be
 * letters, digits, `-` or `_`. That refuses `..` and `.` (plain or encoded as `%2e`), `//` (an
 * empty segment), backslashes, encoded slashes, double encoding (`%252e`: a `%` is left) and
 * control characters. One trailing slash is optional. Null: not allowlisted.
 */
export function matchEngineProxyPath(rawPath: string): EngineProxyMatch | null {
  if (rawPath.length === 0 || rawPath.length > MAX_RAW_PATH) {
    return null;
  }
  const raw = rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
  const segments: string[] = [];
  for (const part of raw.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(part);
    } catch {
      return null;
    }
    if (!SAFE_SEGMENT.test(decoded)) {
      return null;
    }
    segments.push(decoded);
  }
  for (const { route, segments: pattern } of COMPILED) {
    if (pattern.length !== segments.length) {
      continue;
    }
    const out: string[] = [];
    const ok = pattern.every((p, i) => {
      const s = segments[i] as string;
      if ('literal' in p) {
        out.push(p.literal);
        return s === p.literal;
      }
      const value = p.kind === 'uuid' ? s.toLowerCase() : s;
      out.push(value);
      return PARAMS[p.kind].test(value);
    });
    if (ok) {
      return { route, path: `${out.join('/')}/` };
    }
  }
  return null;
}

/**
 * `core/users/{id:int}/` as OpenAPI writes it (`core/users/{id}`), with the parameter names. The
 * trailing slash is Authentik's and optional here (matchEngineProxyPath forwards either form to
 * the canonical path): the document names the form without it, as OpenAPI paths are written.
 */
export function openApiTemplate(route: EngineProxyRoute): { path: string; params: { name: string; kind: ParamKind }[] } {
  const params: { name: string; kind: ParamKind }[] = [];
  const path = route.template.slice(0, -1).replace(/\{([a-z]+):([a-z]+)\}/g, (_m, name: string, kind: string) => {
    params.push({ name, kind: kind as ParamKind });
    return `{${name}}`;
  });
  return { path, params };
}
