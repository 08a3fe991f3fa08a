import { describe, expect, it } from 'vitest';
import { normalizePath } from './edge.ts';
import { ROUTE_POLICY, routePolicyOf } from './route-policy.ts';

describe('route policy from the procedures’ meta', () => {
  it('backend routes, on /v1 and /trpc (batches included), and nothing else', () => {
    for (const path of [
      '/v1/backend/application',
      '/v1/usage/events',
      '/v1/usage-events',
      '/v1/permissions/check',
      '/trpc/backend.application',
      '/trpc/permissions.check',
      '/trpc/permissions.check,backend.application',
      '/trpc/usage.events.create',
      '/V1/Permissions/Check/',
    ]) {
      expect(ROUTE_POLICY.isBackend(normalizePath(path)), path).toBe(true);
    }
    for (const path of [
      '/v1/tenants',
      '/v1/tenants/ten_1/usage/events',
      '/v1/usage/summary',
      '/trpc/tenants.list',
      '/v1/permissions',
      '/trpc/usage.events.list',
    ]) {
      expect(ROUTE_POLICY.isBackend(normalizePath(path)), path).toBe(false);
    }
  });

  it('public CORS for the credential-free routes only', () => {
    expect([...ROUTE_POLICY.publicPaths].sort()).toEqual(['/v1/client/config', '/v1/config', '/v1/setup/agent-context']);
  });

  it('a route with parameters is a prefix for the backend class, and refused as public', () => {
    const policy = routePolicyOf({
      'things.get': { _def: { meta: { rateLimit: 'backend', openapi: { method: 'GET', path: '/things/{id}' } } } },
    });
    expect(policy.isBackend('/v1/things/th_1')).toBe(true);
    expect(policy.isBackend('/v1/thing')).toBe(false);
    expect(() => routePolicyOf({ 'a.b': { _def: { meta: { publicCors: true, openapi: { method: 'GET', path: '/a/{id}' } } } } })).toThrow(
      /publicCors/,
    );
  });
});
