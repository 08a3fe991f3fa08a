import { describe, expect, it } from 'vitest';
import { ENGINE_PROXY_ALLOWLIST, matchEngineProxyPath, openApiTemplate } from './engine-allowlist.ts';

const GROUP = '6f2b8c1e-3a4d-4b5e-a6f7-0123456789ab';

describe('matchEngineProxyPath', () => {
  it.each([
    ['core/users/', 'core/users/'],
    ['core/users', 'core/users/'],
    ['core/users/42/', 'core/users/42/'],
    ['core/users/42', 'core/users/42/'],
    ['core/groups/', 'core/groups/'],
    [`core/groups/${GROUP}/`, `core/groups/${GROUP}/`],
    [`core/groups/${GROUP.toUpperCase()}/`, `core/groups/${GROUP}/`],
    ['core/applications/', 'core/applications/'],
    ['core/applications/my_app-2/', 'core/applications/my_app-2/'],
    ['flows/instances/', 'flows/instances/'],
    ['flows/instances/default-authentication-flow/', 'flows/instances/default-authentication-flow/'],
    ['sources/all/', 'sources/all/'],
    ['sources/all/google/', 'sources/all/google/'],
    ['providers/all/', 'providers/all/'],
    ['providers/all/7/', 'providers/all/7/'],
    ['admin/version/', 'admin/version/'],
    // Percent-encoded unreserved characters are the same path (RFC 3986 6.2.2.2).
    ['core/%75sers/', 'core/users/'],
  ])('%s is allowlisted as %s', (raw, canonical) => {
    expect(matchEngineProxyPath(raw)?.path).toBe(canonical);
  });

  it.each([
    // Not on the list: secrets, the token's own account, writes, everything else.
    'admin/system/',
    'core/tokens/',
    'core/tokens/svc/view_key/',
    'providers/oauth2/',
    'providers/oauth2/1/',
    'sources/oauth/',
    'core/users/me/',
    'core/users/1/set_password/',
    'core/users/1/recovery/',
    'core/users/1/impersonate/',
    'events/events/',
    'core/',
    'core',
    '',
    '/',
    'Core/Users/',
    // Parameters of the wrong shape.
    'core/users/0/',
    'core/users/-1/',
    'core/users/1e3/',
    'core/users/01/',
    'core/users/abc/',
    'core/users/1234567890123456789/',
    'core/groups/not-a-uuid/',
    'core/groups/42/',
    `flows/instances/${'a'.repeat(129)}/`,
  ])('%s is not allowlisted', (raw) => {
    expect(matchEngineProxyPath(raw)).toBeNull();
  });

  it.each([
    'core/users/../../admin/system/',
    'core/users/../users/',
    'core/users/%2e%2e/%2e%2e/admin/system/',
    'core/users/%2E%2E/%2E%2E/admin/system/',
    'core/users/.%2e/.%2e/admin/system/',
    'core/users/..%2f..%2fadmin%2fsystem/',
    'core/users/%252e%252e/%252e%252e/admin/system/',
    'core/users/.',
    'core/users/./',
    'core/./users/',
    './core/users/',
    'core//users/',
    'core/users//',
    '/core/users/',
    'core\\users\\',
    'core/users\\..\\..\\admin\\system\\',
    'core%5cusers%5c',
    'core%2fusers/',
    'core%2Fusers%2F',
    'core/users/1%00/',
    'core/users/1%0a/',
    'core/users/%',
    'core/users/%zz/',
    'core/users/%c0%ae%c0%ae/',
    'core/users/ 1/',
    'core/users/1?x=/../../admin/system/',
    'core/users/1#/../../admin/system/',
    `core/users/${'a/'.repeat(300)}`,
  ])('traversal or smuggling %s is refused', (raw) => {
    expect(matchEngineProxyPath(raw)).toBeNull();
  });

  it('builds the forwarded path from the template, never from the input', () => {
    for (const route of ENGINE_PROXY_ALLOWLIST) {
      const sample = route.template.replace('{id:int}', '5').replace('{id:uuid}', GROUP).replace('{slug:slug}', 'abc');
      const match = matchEngineProxyPath(sample);
      expect(match?.route).toBe(route);
      expect(match?.path).toBe(sample);
      expect(match?.path).toMatch(/^[a-z0-9_/-]+\/$/i);
    }
  });
});

describe('the allowlist', () => {
  it('is read-only views of Authentik API v3, relative, each ending in /', () => {
    for (const route of ENGINE_PROXY_ALLOWLIST) {
      expect(route.template).toMatch(/^(core|flows|sources|providers|admin)\/[a-z0-9_/{}:-]+\/$/);
      expect(route.summary.length).toBeGreaterThan(5);
    }
    const templates = ENGINE_PROXY_ALLOWLIST.map((r) => r.template);
    expect(templates).toEqual(expect.arrayContaining(['core/users/', 'core/users/{id:int}/', 'core/groups/', 'core/groups/{id:uuid}/']));
    expect(new Set(templates).size).toBe(templates.length);
  });

  it('gives OpenAPI templates and their parameters', () => {
    const users = ENGINE_PROXY_ALLOWLIST.find((r) => r.template === 'core/users/{id:int}/');
    expect(users && openApiTemplate(users)).toEqual({ path: 'core/users/{id}', params: [{ name: 'id', kind: 'int' }] });
  });
});
