import type express from 'express';
import type { Meta } from '../trpc/init.ts';

/**
 * svc's route table: every method and path the server answers, read at start from the Express
 * application (the one module that reads Express's router stack) and the `/v1` procedures
 * (http/rest.ts serves them before Express). A path served twice is refused at start
 * (`assertOneOwnerPerRoute`): the second owner would never be reached, or would shadow the first
 * depending on mount order, which no reader of either file could tell.
 */
export type RouteEntry = { method: string; path: string; owner: string };

type Layer = {
  name?: string;
  rawPath?: string;
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
};

/** `/tenants/:id` and `/tenants/{id}` are one route. */
const shapeOf = (path: string) =>
  path
    .replace(/:[A-Za-z0-9_]+/g, '{}')
    .replace(/\{[^}]*\}/g, '{}')
    .toLowerCase();

function walk(stack: Layer[], prefix: string, owner: string, out: RouteEntry[]): void {
  for (const layer of stack) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
      for (const method of Object.keys(layer.route.methods).filter((m) => m !== '_all')) {
        for (const path of paths) {
          out.push({ method: method.toUpperCase(), path: `${prefix}${path}`, owner });
        }
      }
    } else if (layer.name === 'router' && layer.handle?.stack) {
      const mount = layer.rawPath && layer.rawPath !== '/' ? layer.rawPath : '';
      walk(layer.handle.stack, `${prefix}${mount}`, owner, out);
    }
  }
}

/** The routes of an Express application, each with the router it was declared in (by order). */
export function expressRoutesOf(app: express.Express): RouteEntry[] {
  const root = (app as unknown as { router: { stack: Layer[] } }).router;
  const out: RouteEntry[] = [];
  root.stack.forEach((layer, index) => {
    walk([layer], '', layer.route ? 'app' : `router #${index}`, out);
  });
  return out;
}

/** The `/v1` routes of the procedures. */
export function procedureRoutesOf(procedures: Record<string, { _def: { meta?: Meta } }>): RouteEntry[] {
  return Object.entries(procedures).flatMap(([name, p]) => {
    const openapi = p._def.meta?.openapi;
    return openapi ? [{ method: openapi.method, path: `/v1${openapi.path}`, owner: `procedure ${name}` }] : [];
  });
}

/** Throws, naming both owners, when one method and path shape is served twice. */
export function assertOneOwnerPerRoute(routes: readonly RouteEntry[]): void {
  const seen = new Map<string, RouteEntry>();
  const twice: string[] = [];
  for (const route of routes) {
    const key = `${route.method} ${shapeOf(route.path)}`;
    const first = seen.get(key);
    if (first && first.owner !== route.owner) {
      twice.push(`${route.method} ${route.path}: ${first.owner} and ${route.owner}`);
    }
    seen.set(key, first ?? route);
  }
  if (twice.length > 0) {
    throw new Error(`routes served twice:\n${twice.join('\n')}`);
  }
}
